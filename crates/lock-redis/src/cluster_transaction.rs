//! `WATCH` … `EXEC` on a Redis Cluster: every command routed to the primary of the keys'
//! one slot, on the backend's second cluster connection, held for the whole transaction.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lock_core::{Error, ErrorKind, Result, Session, TxWrite};
use redis::cluster_async::ClusterConnection;
use tokio::sync::OwnedMutexGuard;

use crate::cluster_backend::{routed, to_primary};
use crate::errors;

/// An open transaction: the connection (locked to it) and the slot its keys are in.
pub(crate) struct Watching {
    /// `None` once `exec` took it.
    pub(crate) connection: Option<OwnedMutexGuard<ClusterConnection>>,
    pub(crate) slot: u16,
    pub(crate) limit: Duration,
}

impl Session for Watching {
    fn exec(
        mut self: Box<Self>,
        writes: Vec<TxWrite>,
    ) -> Pin<Box<dyn Future<Output = Result<bool>> + Send>> {
        let connection = self.connection.take();
        let (slot, limit) = (self.slot, self.limit);
        Box::pin(async move {
            let mut connection = connection
                .ok_or_else(|| Error::new(ErrorKind::Response, "ERR EXEC without MULTI"))?;
            let run = async {
                routed(&mut connection, redis::cmd("MULTI"), to_primary(slot)).await?;
                for write in &writes {
                    let command = match write {
                        TxWrite::Set { key, value, px } => {
                            let mut set = redis::cmd("SET");
                            set.arg(key).arg(value);
                            if let Some(px) = px {
                                set.arg("PX").arg(*px);
                            }
                            set
                        }
                        TxWrite::Del { key } => {
                            let mut del = redis::cmd("DEL");
                            del.arg(key);
                            del
                        }
                        _ => continue,
                    };
                    routed(&mut connection, command, to_primary(slot)).await?;
                }
                let exec = routed(&mut connection, redis::cmd("EXEC"), to_primary(slot)).await?;
                Ok(!matches!(exec, redis::Value::Nil))
            };
            match tokio::time::timeout(limit, run).await {
                Ok(applied) => applied,
                Err(_) => Err(errors::timed_out(limit)),
            }
        })
    }
}

impl Drop for Watching {
    /// Never executed: the shared connection must not keep the watch for its next user.
    fn drop(&mut self) {
        let (Some(mut connection), Ok(runtime)) = (
            self.connection.take(),
            tokio::runtime::Handle::try_current(),
        ) else {
            return;
        };
        let slot = self.slot;
        runtime.spawn(async move {
            let _ = routed(&mut connection, redis::cmd("UNWATCH"), to_primary(slot)).await;
        });
    }
}
