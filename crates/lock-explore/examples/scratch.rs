use std::time::Duration;
use lock_explore::*;
fn main() {
    let algorithm: Algorithm = std::env::args().nth(1).unwrap().parse().unwrap();
    let topology: Topology = std::env::args().nth(2).unwrap().parse().unwrap();
    let faults: Vec<FaultKind> = std::env::args().nth(3).unwrap().split(',').map(|f| f.parse().unwrap()).collect();
    let runs: u64 = std::env::args().nth(4).unwrap().parse().unwrap();
    let report = algorithm.explorer(topology, Duration::from_millis(1000)).faults(&faults).clients(3).cycles(4).seed(1).runs(runs).threads(1).explore().unwrap();
    println!("runs {} in {:?} = {:.0}/s", report.runs, report.elapsed, report.runs as f64 / report.elapsed.as_secs_f64());
    if let Some(c) = report.counterexample { println!("{c}"); std::fs::write("/tmp/timeline.html", c.timeline_html()).unwrap(); }
}
