//! `WATCH` … `EXEC` on the double: the watch marks a transaction took, checked and
//! released in the atomic section that applies its writes.

use std::future::Future;
use std::pin::Pin;

use lock_core::{Result, Session, SetOptions, SlotLayout, TxWrite};

use crate::MemoryBackend;
use crate::cluster::one_node;
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
        Box::pin(async move {
            let backend = self.backend.clone();
            // The marks stay in `self` until the atomic section takes them: if this future
            // is dropped before (cancelled in injected latency) or a fault stops EXEC
            // ahead of it, dropping `self` ends the watches.
            let marks = &mut self.marks;
            let layout = backend.cluster_rules();
            backend
                .atomically(|store| apply(store, layout, std::mem::take(marks), &writes))
                .await?
        })
    }
}

/// EXEC's atomic section: releases the marks, and applies every write unless one was
/// broken. As in Redis, a write that fails does not undo the others; the first failure
/// is the answer.
///
/// In cluster mode, the writes must share one slot (`CROSSSLOT`, as EXEC answers when the
/// queued commands span slots), served by the node the watched keys live on (the
/// transaction's connection is to that node: a write of another node's slot is refused
/// while queued, with `MOVED`, which aborts EXEC). Nothing is written then.
fn apply(
    store: &mut dyn Keyspace,
    layout: Option<SlotLayout>,
    marks: Vec<(Vec<u8>, WatchMark)>,
    writes: &[TxWrite],
) -> Result<bool> {
    let broken = marks
        .iter()
        .any(|(key, mark)| store.watch_broken(key, *mark));
    for (key, _) in &marks {
        store.unwatch(key);
    }
    if let Some(layout) = layout {
        let watched: Vec<&[u8]> = marks.iter().map(|(key, _)| key.as_slice()).collect();
        let written: Vec<&[u8]> = writes.iter().map(TxWrite::key).collect();
        one_node(&layout, &watched, &written)?;
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
