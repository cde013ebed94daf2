//! Server commands: INFO, CONFIG, CLUSTER, PUBSUB, DEBUG (refused, as Redis refuses it by
//! default), FLUSHDB, FLUSHALL, `NXLOCK.FASTFORWARD` and `NXLOCK.FAULT`.

use std::time::Duration;

use lock_core::Value;

use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok};
use crate::state::shared::Shared;

/// The commands that act on the whole server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admin {
    Info,
    Config,
    Debug,
    FlushAll,
    FastForward,
    Fault,
    Cluster,
    PubSub,
}

/// Runs `which` (its arity already checked) for the client tagged `client` (CLUSTER
/// answers with its own addresses of the shards).
pub(crate) fn run(shared: &Shared, client: Option<usize>, which: Admin, args: &[Vec<u8>]) -> Value {
    match which {
        Admin::Info => Value::Data(super::info::info(shared, &args[1..]).into_bytes()),
        Admin::Config => super::config_command::config(shared, args),
        Admin::Debug => Value::Error(DEBUG_REFUSED.into()),
        Admin::Cluster => super::cluster::cluster(shared, client, args),
        Admin::PubSub => super::pubsub_command::pubsub(shared, args),
        Admin::Fault => super::client_fault::run(&shared.client_faults, args),
        Admin::FlushAll => {
            if !flush_mode_ok(args) {
                return Value::Error(SYNTAX_ERROR.into());
            }
            for db in shared.dbs() {
                db.flush();
            }
            ok()
        }
        Admin::FastForward => match integer(&args[1]) {
            Some(ms) if ms >= 0 => {
                shared.clock.advance(Duration::from_millis(ms as u64));
                ok()
            }
            // Time only goes forward: a number below zero is a number still.
            Some(_) => Value::Error(FAST_FORWARD_NEGATIVE.into()),
            None => Value::Error(NOT_AN_INTEGER.into()),
        },
    }
}

/// NXLOCK.FASTFORWARD's answer to a negative number of milliseconds.
const FAST_FORWARD_NEGATIVE: &str =
    "ERR NXLOCK.FASTFORWARD takes milliseconds to move forward, 0 or more";

/// FLUSHDB and FLUSHALL take nothing, or one of ASYNC and SYNC (Redis's
/// `getFlushCommandFlags`).
pub(crate) fn flush_mode_ok<A: AsRef<[u8]>>(args: &[A]) -> bool {
    match args {
        [_] => true,
        [_, mode] => {
            mode.as_ref().eq_ignore_ascii_case(b"async")
                || mode.as_ref().eq_ignore_ascii_case(b"sync")
        }
        _ => false,
    }
}

/// Redis 7.0's answer while `enable-debug-command` is `no`, its default.
const DEBUG_REFUSED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";
