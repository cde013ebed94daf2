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
mod junit;
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

#[cfg(test)]
mod tests {
    use std::any::TypeId;

    use clap::CommandFactory;

    use super::*;

    /// The words a numeric flag's help uses for its range.
    fn states_a_range(help: &str) -> bool {
        [" to ", "at least", "at most", "any 64-bit", "more than"]
            .iter()
            .any(|words| help.contains(words))
    }

    #[test]
    fn every_numeric_flag_states_its_range_in_its_help() {
        let numeric = [
            TypeId::of::<u16>(),
            TypeId::of::<u32>(),
            TypeId::of::<u64>(),
            TypeId::of::<usize>(),
            TypeId::of::<f64>(),
        ];
        let command = Cli::command();
        let mut checked = 0;
        for sub in command.get_subcommands() {
            for arg in sub.get_arguments() {
                let parsed = arg.get_value_parser().type_id();
                if !numeric.iter().any(|t| parsed == *t) {
                    continue;
                }
                checked += 1;
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                assert!(
                    states_a_range(&help),
                    "nxlock {} --{}: {help:?} states no range",
                    sub.get_name(),
                    arg.get_id()
                );
            }
        }
        assert!(checked >= 20, "only {checked} numeric flags seen");
    }

    #[test]
    fn a_numeric_flag_outside_its_range_is_refused_before_anything_runs() {
        for args in [
            &["nxlock", "bench", "--hold-us", "3600000001"][..],
            &["nxlock", "bench", "--ttl-ms", "0"],
            &["nxlock", "bench", "--algorithm", "fenced"],
            &["nxlock", "bench", "--topology", "replicated"],
            &["nxlock", "check", "--instances", "101"],
            &["nxlock", "explore", "--runs", "0"],
            &["nxlock", "explore", "--threads", "0"],
            &["nxlock", "explore", "--nodes", "17"],
            &["nxlock", "explore", "--max-pause-ms", "3600001"],
            &["nxlock", "explore", "--algorithm", "tokn"],
            &["nxlock", "check", "--topology", "singel"],
        ] {
            assert!(Cli::try_parse_from(args).is_err(), "{args:?} was accepted");
        }
        for args in [
            &[
                "nxlock",
                "bench",
                "--algorithm",
                "watch",
                "--hold-us",
                "3600000000",
            ][..],
            &[
                "nxlock",
                "explore",
                "--algorithm",
                "locked",
                "--threads",
                "1024",
            ],
            &[
                "nxlock",
                "check",
                "--topology",
                "redlock",
                "--instances",
                "99",
            ],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?} was refused");
        }
    }
}
