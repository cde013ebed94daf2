//! `nxlock check`: the conformance suite against a backend.

use std::process::ExitCode;

use clap::Args;
use nxlock::MemoryHarness;

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Print `{"target", "passed", "failed", "cases": [{"name", "ok", "detail"}]}`.
    #[arg(long)]
    json: bool,
}

pub fn run(args: CheckArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("nxlock: cannot start a tokio runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let report = runtime.block_on(nxlock::conformance::run_all(&MemoryHarness));
    if args.json {
        println!("{}", report.to_json());
    } else {
        println!("{report}");
    }
    if report.failed() == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
