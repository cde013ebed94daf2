//! [`StallMeter`]: how late the machine let a run's processes go. A client that is
//! runnable but not running, or a server whose timers fire late, acts as if paused; a
//! pause nobody scheduled can make a correct lock look broken. The meter samples, every
//! few milliseconds, each client process's run-queue delay (`/proc/PID/schedstat`,
//! summed over the process and what it started) and the lateness of the server's own
//! timer, and keeps the longest stall of each; a run whose worst stall outlasts the
//! slack a validity allows is voided.
//!
//! A client is measured from its first command (its interpreter's start-up is no part
//! of the lock) until it ends its part of the run.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often the meter looks.
const EVERY: Duration = Duration::from_millis(5);

/// A window in which a process waited at least this share of the time to run is part of
/// a stall.
const STALLED_SHARE: f64 = 0.5;

#[derive(Debug, Default)]
struct Process {
    /// The process the client's command line started (`sh -c`).
    root: u32,
    /// It and its descendants, found again now and then.
    tree: Vec<u32>,
    /// Run-queue delay of the tree at the last look, ns.
    last_delay_ns: u64,
    /// The stall under way, ns.
    current_ns: u64,
    /// Whether it is measured now (from its first command to its end).
    measuring: bool,
}

#[derive(Debug, Default)]
struct Meter {
    clients: HashMap<usize, Process>,
    /// The longest stall seen: who, and ns.
    worst: Option<(String, u64)>,
}

/// Shared by a run's processes (which register and start and stop being measured) and
/// its sampling task.
#[derive(Clone, Debug, Default)]
pub(crate) struct StallMeter {
    inner: Arc<Mutex<Meter>>,
}

impl StallMeter {
    /// Client `client`'s command line runs as process `root`.
    pub(crate) fn register(&self, client: usize, root: u32) {
        self.inner.lock().clients.insert(
            client,
            Process {
                root,
                tree: vec![root],
                ..Process::default()
            },
        );
    }

    /// Client `client` sent its first command: it is measured from now.
    pub(crate) fn started(&self, client: usize) {
        let mut meter = self.inner.lock();
        if let Some(p) = meter.clients.get_mut(&client) {
            p.tree = tree(p.root);
            p.last_delay_ns = run_delay_ns(&p.tree);
            p.current_ns = 0;
            p.measuring = true;
        }
    }

    /// Client `client` ended its part of the run.
    pub(crate) fn ended(&self, client: usize) {
        if let Some(p) = self.inner.lock().clients.get_mut(&client) {
            p.measuring = false;
        }
    }

    /// The longest stall seen so far: who, and for how long.
    pub(crate) fn worst(&self) -> Option<(String, Duration)> {
        let meter = self.inner.lock();
        meter
            .worst
            .as_ref()
            .map(|(who, ns)| (who.clone(), Duration::from_nanos(*ns)))
    }

    fn note(meter: &mut Meter, who: impl FnOnce() -> String, ns: u64) {
        if meter.worst.as_ref().is_none_or(|(_, worst)| ns > *worst) {
            meter.worst = Some((who(), ns));
        }
    }

    /// Samples until dropped: run it in a task of the run and abort it at the end.
    pub(crate) async fn sample(self) {
        let mut looks = 0u64;
        let mut last = Instant::now();
        loop {
            tokio::time::sleep(EVERY).await;
            let now = Instant::now();
            let window = now - last;
            last = now;
            let window_ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
            looks += 1;
            let mut meter = self.inner.lock();
            // The server's own timer: how much later than asked it woke.
            let late = window.saturating_sub(EVERY);
            let late_ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
            Self::note(&mut meter, || "the server".to_owned(), late_ns);
            let meter = &mut *meter;
            for (client, p) in &mut meter.clients {
                if !p.measuring {
                    continue;
                }
                // What the client started (the interpreter under `sh -c`) is found again
                // every 20 looks: cheap, and a process it forks later still counts.
                if looks.is_multiple_of(20) {
                    p.tree = tree(p.root);
                }
                let delay = run_delay_ns(&p.tree);
                let waited = delay.saturating_sub(p.last_delay_ns);
                p.last_delay_ns = delay;
                if waited as f64 >= STALLED_SHARE * window_ns as f64 {
                    p.current_ns += waited;
                } else {
                    p.current_ns = waited;
                }
                let (client, ns) = (*client, p.current_ns);
                if meter.worst.as_ref().is_none_or(|(_, worst)| ns > *worst) {
                    meter.worst = Some((format!("client {client}"), ns));
                }
            }
        }
    }
}

/// `root` and its descendants, from `/proc/PID/task/TID/children`.
fn tree(root: u32) -> Vec<u32> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() && found.len() < 64 {
        let pid = found[i];
        i += 1;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let path = task.path().join("children");
            if let Ok(text) = std::fs::read_to_string(path) {
                found.extend(
                    text.split_whitespace()
                        .filter_map(|c| c.parse::<u32>().ok()),
                );
            }
        }
    }
    found
}

/// The summed run-queue delay of `pids` (the second field of `/proc/PID/schedstat`),
/// ns; a process that is gone counts nothing.
fn run_delay_ns(pids: &[u32]) -> u64 {
    pids.iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok())
        .filter_map(|text| text.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_tree_and_its_run_queue_delay_are_read_from_proc() {
        let me = std::process::id();
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5"])
            .spawn()
            .unwrap();
        let sh = child.id();
        // The shell's sleep shows as its child once it has forked.
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut found = tree(sh);
        while found.len() < 2 && Instant::now() < deadline {
            std::thread::yield_now();
            found = tree(sh);
        }
        child.kill().unwrap();
        let _ = child.wait();
        assert!(found.len() >= 2, "{found:?}");
        assert!(tree(me).contains(&me));
        if std::path::Path::new("/proc/self/schedstat").exists() {
            // This process has run, so it has waited a little at some point, or not:
            // the reading is a number either way, and a gone process reads nothing.
            assert!(run_delay_ns(&[me]) < u64::MAX);
            assert_eq!(run_delay_ns(&[u32::MAX]), 0);
        }
    }

    #[tokio::test]
    async fn a_blocked_runtime_is_seen_as_a_stall_of_the_server() {
        let meter = StallMeter::default();
        let sampling = tokio::spawn(meter.clone().sample());
        tokio::time::sleep(Duration::from_millis(20)).await;
        // The runtime's one thread blocked: the sampler's timer cannot fire meanwhile.
        std::thread::sleep(Duration::from_millis(60));
        tokio::time::sleep(Duration::from_millis(20)).await;
        sampling.abort();
        let worst = meter.worst().expect("a reading");
        assert_eq!(worst.0, "the server");
        assert!(worst.1 >= Duration::from_millis(20), "{worst:?}");
    }
}
