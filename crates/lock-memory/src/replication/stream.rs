//! A primary's replication stream: every write, in order, as the state it left its keys
//! in (Redis 7 replicates a script by its effects, and `SET … PX` as `PXAT`: the
//! absolute expiry travels, so a replica expires the key when the primary would).

use std::collections::VecDeque;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::entry::Entry;

/// What one write did to one key: its new state, or `None` when it was removed.
#[derive(Clone, Debug)]
pub(crate) struct Effect {
    pub(crate) key: Vec<u8>,
    pub(crate) state: Option<Entry>,
}

/// One write on the stream.
#[derive(Clone, Debug)]
pub(crate) struct Shipped {
    /// Its replication offset: the count of writes since the stream began, this one
    /// included. (Redis counts bytes; only the order matters here.)
    pub(crate) offset: u64,
    /// When the primary ran it (Unix ms on the topology's clock).
    pub(crate) at_ms: i64,
    pub(crate) effects: Arc<[Effect]>,
}

/// The writes a primary has made and not every replica has applied yet.
#[derive(Debug, Default)]
pub(crate) struct Stream {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: VecDeque<Shipped>,
    /// The offset of the last write.
    offset: u64,
}

impl Stream {
    /// A stream whose next write has offset `offset + 1` (a promoted replica keeps
    /// counting from what it had applied, as PSYNC2 does).
    pub(crate) fn after(offset: u64) -> Self {
        Self {
            inner: Mutex::new(Inner {
                entries: VecDeque::new(),
                offset,
            }),
        }
    }

    /// Appends a write made at `at_ms`: its offset.
    pub(crate) fn append(&self, at_ms: i64, effects: Vec<Effect>) -> u64 {
        let mut inner = self.inner.lock();
        inner.offset += 1;
        let offset = inner.offset;
        inner.entries.push_back(Shipped {
            offset,
            at_ms,
            effects: effects.into(),
        });
        offset
    }

    /// The offset of the last write.
    /// How many writes wait in the stream for some replica.
    pub(crate) fn backlog(&self) -> usize {
        self.inner.lock().entries.len()
    }

    pub(crate) fn offset(&self) -> u64 {
        self.inner.lock().offset
    }

    /// The writes after `applied`, in order, as far as `due` allows (it is asked about
    /// each write's time; the first one it refuses ends the list).
    pub(crate) fn due_after(&self, applied: u64, due: impl Fn(i64) -> bool) -> Vec<Shipped> {
        let inner = self.inner.lock();
        inner
            .entries
            .iter()
            .skip_while(|entry| entry.offset <= applied)
            .take_while(|entry| due(entry.at_ms))
            .cloned()
            .collect()
    }

    /// When the first write after `applied` was made, if there is one.
    pub(crate) fn next_after(&self, applied: u64) -> Option<i64> {
        let inner = self.inner.lock();
        inner
            .entries
            .iter()
            .find(|entry| entry.offset > applied)
            .map(|entry| entry.at_ms)
    }

    /// Forgets the writes up to `offset`, which every replica has.
    pub(crate) fn trim(&self, offset: u64) {
        let mut inner = self.inner.lock();
        while inner.entries.front().is_some_and(|e| e.offset <= offset) {
            inner.entries.pop_front();
        }
    }
}
