//! `nxlock explore --exec`: lock code in any language, run as processes against a fresh
//! `nxlock serve` per run. Only the runner is of its own; the search is the explorer's.

use nxlock::explore::Explorer;
use nxlock::wire_explore::{WireRunner, wire};

use super::ExploreArgs;

/// The explorer of `command` as processes, with `--exec`'s defaults (a 200 ms TTL, 100
/// runs) where the command line says nothing.
pub(super) fn explorer(command: &str, args: &ExploreArgs) -> Explorer {
    wire(WireRunner::new(command).long_lived(args.long_lived))
}
