//! `WATCH` … `EXEC` through redis-rs, on a connection of the transaction's own.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lock_core::{Result, Session, TxWrite};
use redis::aio::MultiplexedConnection;

use crate::errors;

/// `MULTI`, `writes`, `EXEC` as one pipeline.
pub(crate) fn multi_exec(writes: &[TxWrite]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.atomic();
    for write in writes {
        match write {
            TxWrite::Set { key, value, px } => {
                let set = pipe.cmd("SET").arg(key).arg(value);
                if let Some(px) = px {
                    set.arg("PX").arg(*px);
                }
            }
            TxWrite::Del { key } => {
                pipe.cmd("DEL").arg(key);
            }
            _ => {}
        }
    }
    pipe
}

/// `WATCH keys` then `GET` each, pipelined: the values.
pub(crate) fn watch_and_get(keys: &[&[u8]]) -> redis::Pipeline {
    let mut pipe = redis::pipe();
    pipe.cmd("WATCH").arg(keys).ignore();
    for key in keys {
        pipe.cmd("GET").arg(*key);
    }
    pipe
}

/// An open transaction on a dedicated connection; dropping it drops the connection, and
/// with it the watch.
pub(crate) struct Watching {
    pub(crate) connection: MultiplexedConnection,
    pub(crate) limit: Duration,
    /// Where the connection goes back once `EXEC` cleared its watch.
    pub(crate) give_back: Box<dyn FnOnce(MultiplexedConnection) + Send>,
}

impl Session for Watching {
    fn exec(
        self: Box<Self>,
        writes: Vec<TxWrite>,
    ) -> Pin<Box<dyn Future<Output = Result<bool>> + Send>> {
        let Watching {
            mut connection,
            limit,
            give_back,
        } = *self;
        Box::pin(async move {
            let pipe = multi_exec(&writes);
            let exec = pipe.query_async::<Option<Vec<redis::Value>>>(&mut connection);
            let applied = match tokio::time::timeout(limit, exec).await {
                Ok(reply) => reply.map_err(errors::from_redis)?.is_some(),
                Err(_) => return Err(errors::timed_out(limit)),
            };
            give_back(connection);
            Ok(applied)
        })
    }
}
