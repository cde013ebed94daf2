//! `nxlock check`: the conformance suite against a backend.

use std::process::ExitCode;

use clap::Args;
use nxlock::conformance::{Report, run_all};
use nxlock::{MemoryHarness, RedisHarness};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Check the server at this URL (any Redis-protocol server: Redis, Valkey, KeyDB,
    /// Dragonfly, Garnet, …) through RedisBackend, instead of the embedded double.
    #[arg(long, value_name = "redis://HOST:PORT")]
    url: Option<String>,
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
    let report: Report = runtime.block_on(async {
        match &args.url {
            Some(url) => run_all(&RedisHarness::at(url)).await,
            None => run_all(&MemoryHarness).await,
        }
    });
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
