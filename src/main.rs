//! The `nxlock` command line.

mod cli;

/// mimalloc rather than the system allocator, as Redis links jemalloc rather than libc's:
/// `nxlock serve` allocates for every request and reply, and glibc's malloc was the
/// largest user-space cost in its profile (see README, Performance).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::Cli::parse().run()
}
