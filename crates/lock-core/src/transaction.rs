//! [`Transaction`]: `WATCH`, read, then `MULTI` … `EXEC` — optimistic concurrency the way
//! Redis itself offers it, on a connection of the transaction's own.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use crate::Result;

/// One write of a transaction's `MULTI` block.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TxWrite {
    /// `SET key value`, with `PX ms` when `px` is set (a new TTL; without it the TTL is
    /// discarded, as by SET).
    Set {
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
        /// Milliseconds to live.
        px: Option<i64>,
    },
    /// `DEL key`.
    Del {
        /// The key.
        key: Vec<u8>,
    },
}

impl TxWrite {
    /// `SET key value`.
    pub fn set(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Self {
        TxWrite::Set {
            key: key.into(),
            value: value.into(),
            px: None,
        }
    }

    /// `DEL key`.
    pub fn del(key: impl Into<Vec<u8>>) -> Self {
        TxWrite::Del { key: key.into() }
    }

    /// The key it writes.
    pub fn key(&self) -> &[u8] {
        match self {
            TxWrite::Set { key, .. } | TxWrite::Del { key } => key,
        }
    }
}

/// What a backend keeps of one open transaction: its connection (a server's) or its
/// watch marks (a double's). Dropping it ends the transaction without writing anything.
pub trait Session: Send {
    /// `MULTI`, `writes`, `EXEC`: true when they were applied, false (nothing written)
    /// when a watched key was written, deleted or expired since the `WATCH`.
    fn exec(
        self: Box<Self>,
        writes: Vec<TxWrite>,
    ) -> Pin<Box<dyn Future<Output = Result<bool>> + Send>>;
}

/// An open transaction from [`KvBackend::watch`](crate::KvBackend::watch): the watched
/// keys' values as they were when watched, and the means to write if none changed.
///
/// Dropping it (or a cancelled [`Transaction::exec`] before it sent `EXEC`) writes
/// nothing: the writes go out together in one `MULTI` block or not at all.
pub struct Transaction {
    values: Vec<Option<Vec<u8>>>,
    session: Box<dyn Session>,
}

impl Transaction {
    /// For backend implementors: the watched keys' `values` (in the order watched) and
    /// the `session` that will run `EXEC`.
    pub fn new(values: Vec<Option<Vec<u8>>>, session: Box<dyn Session>) -> Self {
        Self { values, session }
    }

    /// The watched keys' values when they were watched (`None`: absent).
    pub fn values(&self) -> &[Option<Vec<u8>>] {
        &self.values
    }

    /// Writes `writes` atomically unless a watched key changed (was written, deleted or
    /// expired) since it was watched: true when written, false when nothing was.
    pub async fn exec(self, writes: Vec<TxWrite>) -> Result<bool> {
        self.session.exec(writes).await
    }
}

impl fmt::Debug for Transaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transaction")
            .field("values", &self.values)
            .finish_non_exhaustive()
    }
}
