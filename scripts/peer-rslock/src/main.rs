//! rslock, 8 clients on one key, hold 0: cycles/s, per-client min/max, worst acquire wait.
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let url = std::env::args().nth(1).unwrap_or("redis://127.0.0.1:6390".into());
    let secs: u64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (url, stop) = (url.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let manager = rslock::LockManager::new(vec![url]);
            let (mut cycles, mut worst) = (0u64, Duration::ZERO);
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let lock = manager.acquire_no_guard("peer-bench", Duration::from_secs(10)).await.unwrap();
                worst = worst.max(started.elapsed());
                manager.unlock(&lock).await;
                cycles += 1;
            }
            (cycles, worst)
        }));
    }
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut results = Vec::new();
    for t in tasks { results.push(t.await.unwrap()); }
    let total: u64 = results.iter().map(|r| r.0).sum();
    let min = results.iter().map(|r| r.0).min().unwrap();
    let max = results.iter().map(|r| r.0).max().unwrap();
    let worst = results.iter().map(|r| r.1).max().unwrap();
    println!("rslock 8x1: {:.0} cycles/s, min/max {:.2}, worst wait {:?}", total as f64 / started.elapsed().as_secs_f64(), min as f64 / max as f64, worst);
}
