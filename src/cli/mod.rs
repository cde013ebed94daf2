//! Subcommands of the `nxlock` binary, one file each.

/// `println!` that goes on quietly when stdout is closed (`nxlock check --list | head`):
/// `println!` panics there. What is not read is lost, and the exit status still says
/// what the subcommand found.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

mod bench;
mod check;
mod explore;
mod serve;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Test, validate and benchmark Redis-style (SETNX family) distributed locks.
#[derive(Debug, Parser)]
#[command(name = "nxlock", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the conformance suite and print a table (or JSON); exits 1 if any case fails.
    Check(check::CheckArgs),
    /// Contention benchmark: clients loop acquire -> hold -> release; prints throughput,
    /// latency percentiles, fairness, commands per cycle and violations.
    Bench(bench::BenchArgs),
    /// Search fault schedules for violations of one of nxlock's algorithms on the double,
    /// or of lock code in any language (--exec); prints the shrunk counterexample and
    /// exits 1 if one is found.
    Explore(Box<explore::ExploreArgs>),
    /// Serve the in-memory double over the Redis protocol (RESP2, and RESP3 after
    /// `HELLO 3`), for clients in any language; `NXLOCK.FASTFORWARD <ms>` moves its clock.
    Serve(serve::ServeArgs),
}

impl Cli {
    /// Runs the chosen subcommand.
    pub fn run(self) -> ExitCode {
        match self.command {
            Command::Check(args) => check::run(args),
            Command::Bench(args) => bench::run_bench(args),
            Command::Explore(args) => explore::run(*args),
            Command::Serve(args) => serve::run(args),
        }
    }
}
