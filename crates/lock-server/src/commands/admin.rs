//! Server commands: INFO, DBSIZE, FLUSHDB, FLUSHALL, TIME and `NXLOCK.FASTFORWARD`.

use std::time::Duration;

use lock_core::Value;

use super::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok};
use crate::client::Client;
use crate::shared::Shared;

/// The version `INFO` and `HELLO` report: the Redis whose behaviour the server matches.
pub const REDIS_VERSION: &str = "7.0.15";

/// The commands that act on the whole server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admin {
    Info,
    DbSize,
    FlushDb,
    FlushAll,
    Time,
    FastForward,
}

/// Runs `which` (its arity already checked).
pub(crate) fn run(shared: &Shared, client: &Client, which: Admin, args: &[Vec<u8>]) -> Value {
    match which {
        Admin::Info => Value::Data(info(shared).into_bytes()),
        Admin::DbSize => Value::Int(shared.db(client.db).dump().keys.len() as i64),
        Admin::FlushDb | Admin::FlushAll => {
            if !flush_mode_ok(args) {
                return Value::Error(SYNTAX_ERROR.into());
            }
            let flushed = match which {
                Admin::FlushDb => std::slice::from_ref(shared.db(client.db)),
                _ => shared.dbs(),
            };
            for db in flushed {
                db.flush();
            }
            ok()
        }
        Admin::Time => {
            let us = shared.clock.now_us();
            Value::Array(vec![
                Value::Data(us.div_euclid(1_000_000).to_string().into_bytes()),
                Value::Data(us.rem_euclid(1_000_000).to_string().into_bytes()),
            ])
        }
        Admin::FastForward => match integer(&args[1]) {
            Some(ms) if ms >= 0 => {
                shared.clock.advance(Duration::from_millis(ms as u64));
                ok()
            }
            _ => Value::Error(NOT_AN_INTEGER.into()),
        },
    }
}

/// FLUSHDB and FLUSHALL take nothing, or one of ASYNC and SYNC (Redis's
/// `getFlushCommandFlags`).
fn flush_mode_ok(args: &[Vec<u8>]) -> bool {
    match args {
        [_] => true,
        [_, mode] => mode.eq_ignore_ascii_case(b"async") || mode.eq_ignore_ascii_case(b"sync"),
        _ => false,
    }
}

fn info(shared: &Shared) -> String {
    format!(
        "# Server\r\nredis_version:{REDIS_VERSION}\r\nredis_mode:standalone\r\nnxlock_version:{}\r\nprocess_id:{}\r\ntcp_port:{}\r\n\r\n# Clients\r\nconnected_clients:{}\r\nmaxclients:{}\r\nblocked_clients:{}\r\n\r\n# Keyspace\r\n",
        env!("CARGO_PKG_VERSION"),
        std::process::id(),
        shared.port,
        shared.clients(),
        shared.options.max_clients,
        shared.blocked.len(),
    )
}
