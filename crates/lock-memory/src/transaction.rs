//! `WATCH` … `EXEC` on the double: the watch marks a transaction took, checked and
//! released in the atomic section that applies its writes.

use std::future::Future;
use std::pin::Pin;

use lock_core::{Result, Session, SetOptions, TxWrite};

use crate::MemoryBackend;
use crate::keyspace::{Keyspace, WatchMark};

/// One open transaction: the keys it watches and what each looked like then.
pub(crate) struct Watching {
    pub(crate) backend: MemoryBackend,
    /// Taken by `exec`; what is left when dropped is unwatched then.
    pub(crate) marks: Vec<(Vec<u8>, WatchMark)>,
}

impl Session for Watching {
    fn exec(
        mut self: Box<Self>,
        writes: Vec<TxWrite>,
    ) -> Pin<Box<dyn Future<Output = Result<bool>> + Send>> {
        let marks = std::mem::take(&mut self.marks);
        let backend = self.backend.clone();
        Box::pin(async move {
            match backend
                .atomically(|store| apply(store, &marks, &writes))
                .await
            {
                Ok(applied) => applied,
                Err(fault) => {
                    // An injected fault stopped EXEC before its atomic section: the marks
                    // were not released there.
                    let keys: Vec<&[u8]> = marks.iter().map(|(key, _)| key.as_slice()).collect();
                    backend.unwatch(&keys);
                    Err(fault)
                }
            }
        })
    }
}

/// EXEC's atomic section: releases the marks, and applies every write unless one was
/// broken. As in Redis, a write that fails does not undo the others; the first failure
/// is the answer.
fn apply(
    store: &mut dyn Keyspace,
    marks: &[(Vec<u8>, WatchMark)],
    writes: &[TxWrite],
) -> Result<bool> {
    let broken = marks
        .iter()
        .any(|(key, mark)| store.watch_broken(key, *mark));
    for (key, _) in marks {
        store.unwatch(key);
    }
    if broken {
        return Ok(false);
    }
    let mut first_error = None;
    for write in writes {
        let written = match write {
            TxWrite::Set { key, value, px } => {
                let options = px.map_or(SetOptions::new(), |ms| SetOptions::new().px(ms));
                store.set(key, value, options).map(drop)
            }
            TxWrite::Del { key } => store.del(&[key]).map(drop),
            _ => Ok(()),
        };
        if let Err(error) = written {
            first_error.get_or_insert(error);
        }
    }
    first_error.map_or(Ok(true), Err)
}

impl Drop for Watching {
    fn drop(&mut self) {
        let keys: Vec<&[u8]> = self.marks.iter().map(|(key, _)| key.as_slice()).collect();
        self.backend.unwatch(&keys);
    }
}
