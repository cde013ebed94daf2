//! `WATCH` … `EXEC` on a Redis Cluster: every command routed to the primary of the keys'
//! one slot, on the backend's second cluster connection, held for the whole transaction.
//! `MULTI`, the writes and `EXEC` go out as one pipeline.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lock_core::{Error, ErrorKind, Result, Session, TxWrite};
use redis::cluster_async::ClusterConnection;
use tokio::sync::OwnedMutexGuard;

use redis::cluster_routing::{Route, SingleNodeRoutingInfo, SlotAddr};

use super::routing::{routed, server_error, to_primary};
use crate::errors;
use crate::transaction::multi_exec;

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
            // One pipeline, handed to the connection's driver whole: a cancelled exec
            // never leaves the shared connection inside MULTI with writes queued.
            let block = multi_exec(&writes);
            let exec_reply =
                SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
            let run = async {
                let replies = connection
                    .route_pipeline(block, writes.len() + 1, 1, exec_reply)
                    .await
                    .map_err(errors::from_redis)?;
                match replies.into_iter().next() {
                    Some(redis::Value::ServerError(error)) => Err(server_error(error)),
                    Some(redis::Value::Nil) | None => Ok(false),
                    Some(_) => Ok(true),
                }
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
