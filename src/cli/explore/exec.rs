//! `nxlock explore --exec`: lock code in any language, run as processes against a fresh
//! `nxlock serve` per run.

use std::process::ExitCode;
use std::time::Duration;

use nxlock::wire_explore::{WIRE_FAULTS_ALL, WireExplorer, WireReplay, wire_faults};

use super::ExploreArgs;

pub(super) fn run(command: &str, args: &ExploreArgs) -> ExitCode {
    let topology = super::topology(args);
    let faults: Vec<_> = match &args.faults {
        Some(faults) => {
            let unsupported: Vec<_> = faults
                .iter()
                .filter(|f| !WIRE_FAULTS_ALL.contains(f) || !topology.supports(**f))
                .collect();
            if !unsupported.is_empty() {
                let names: Vec<_> = unsupported.iter().map(|f| f.to_string()).collect();
                let applies: Vec<_> = WIRE_FAULTS_ALL
                    .iter()
                    .filter(|f| topology.supports(**f))
                    .map(|f| f.to_string())
                    .collect();
                eprintln!(
                    "nxlock explore --exec cannot apply {} on {topology} through serve; it applies {}",
                    names.join(", "),
                    applies.join(", ")
                );
                return ExitCode::from(2);
            }
            faults.clone()
        }
        None => wire_faults(topology),
    };
    let mut explorer = WireExplorer::new(command)
        .topology(topology)
        .clients(args.clients as usize)
        .cycles(args.cycles)
        .ttl(Duration::from_millis(args.ttl_ms.unwrap_or(200)))
        .faults(&faults)
        .runs(args.runs.unwrap_or(100))
        .seed(args.seed)
        .replays(args.replays)
        .long_lived(args.long_lived);
    if let Some(threads) = args.threads {
        explorer = explorer.parallel(threads);
    }
    if args.max_steps > 0 {
        explorer = explorer.max_steps(args.max_steps as usize);
    }
    if let Some(path) = &args.replay {
        return replay(&explorer, path, args.replays);
    }
    match explorer.explore() {
        Ok(report) => {
            print!("{report}");
            if let (Some(path), Some(page)) = (&args.html, report.timeline_html()) {
                if let Err(error) = std::fs::write(path, page) {
                    eprintln!("nxlock explore --exec: {}: {error}", path.display());
                    return ExitCode::from(2);
                }
                println!("timeline written to {}", path.display());
            }
            if let (Some(path), Some(file)) = (&args.save, report.replay_file()) {
                if let Err(error) = file.save(path) {
                    eprintln!("nxlock explore --exec: {error}");
                    return ExitCode::from(2);
                }
                println!("saved to {}", path.display());
            }
            if report.finding.is_some() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("nxlock explore --exec: {error}");
            ExitCode::from(2)
        }
    }
}

/// Replays a saved finding: exits 1 when a replay broke the lock again.
fn replay(explorer: &WireExplorer, path: &std::path::Path, replays: u32) -> ExitCode {
    let file = match WireReplay::load(path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("nxlock explore --exec: {error}");
            return ExitCode::from(2);
        }
    };
    match explorer.replay_file(&file) {
        Ok((reproduced, outcome)) => {
            println!(
                "found before: {}",
                file.violation.lines().next().unwrap_or("")
            );
            match outcome.and_then(|o| o.violation) {
                Some(violation) => {
                    println!("VIOLATION {violation}");
                    println!("reproduced in {reproduced} of {replays} replays");
                    ExitCode::from(1)
                }
                None => {
                    println!("not reproduced in any replay");
                    ExitCode::SUCCESS
                }
            }
        }
        Err(error) => {
            eprintln!("nxlock explore --exec: {error}");
            ExitCode::from(2)
        }
    }
}
