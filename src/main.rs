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
    return_freed_memory_at_once();
    cli::Cli::parse().run()
}

/// mimalloc keeps freed pages for a while (`purge_delay`, 10 ms) and hands them back
/// only when it next does deferred work, which an idle server never asks for: after a
/// 512 MB value was stored and deleted, `nxlock serve` kept 1.5 GB. With no delay, freed
/// pages go back to the system as they are freed.
#[allow(unsafe_code)] // A foreign call: see the SAFETY note.
fn return_freed_memory_at_once() {
    /// `mi_option_purge_delay` in mimalloc 2's `mi_option_e` (the crate names only some
    /// options).
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    // SAFETY: `mi_option_set` takes an option number and a value and has no other
    // precondition; it may be called at any time, from any thread.
    unsafe {
        libmimalloc_sys::mi_option_set(PURGE_DELAY, 0);
    }
}
