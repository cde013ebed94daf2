//! The keyspace: a map of live and not-yet-reaped keys, with Redis's expiry rules.

use std::collections::HashMap;

use std::sync::Arc;

use lock_core::Channels;
use parking_lot::Mutex;

/// foldhash instead of SipHash: the double is not exposed to untrusted keys, and hashing
/// is a large part of a command's cost here.
type Map = HashMap<Vec<u8>, Entry, foldhash::fast::RandomState>;

/// One stored string and its absolute expiry (Unix ms), if any.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) value: Vec<u8>,
    pub(crate) expires_at: Option<i64>,
}

impl Entry {
    /// Redis's `keyIsExpired`: strictly after the expiry time.
    fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now > at)
    }
}

/// Below this many keys a sweep is not worth its cost.
const MIN_SWEEP_INTERVAL: usize = 1024;

/// The store behind one [`MemoryBackend`](crate::MemoryBackend).
///
/// Expired keys are removed when touched (lazy expiry, as in Redis) and by a full sweep
/// once every `max(len after the last sweep, 1024)` commands. A sweep then scans at most
/// twice that many keys, so it costs O(1) amortised per command, and memory stays within a
/// small factor of the live keys whatever the churn.
#[derive(Debug)]
pub(crate) struct Store {
    map: Map,
    /// The current command's time. Set once per command (and per script, so time stands
    /// still inside scripts, as in Redis 7).
    now: i64,
    commands_since_sweep: usize,
    /// Fixed at each sweep: measuring against the current length would never trigger when
    /// every command inserts a key.
    sweep_every: usize,
    /// Pub/sub lives beside the keyspace so scripts can publish atomically with their
    /// writes; FLUSHALL leaves it alone, as in Redis. Several stores may share one table
    /// (Redis's databases share pub/sub).
    pub(crate) channels: Arc<Mutex<Channels>>,
}

impl Default for Store {
    fn default() -> Self {
        Self {
            map: Map::default(),
            now: 0,
            commands_since_sweep: 0,
            sweep_every: MIN_SWEEP_INTERVAL,
            channels: Arc::default(),
        }
    }
}

impl Store {
    /// Starts a command at `now` (Unix ms).
    pub(crate) fn begin(&mut self, now: i64) {
        self.now = now;
        self.commands_since_sweep += 1;
        if self.commands_since_sweep >= self.sweep_every {
            self.sweep();
        }
    }

    fn sweep(&mut self) {
        let now = self.now;
        self.map.retain(|_, entry| !entry.is_expired(now));
        if self.map.capacity() > 4 * self.map.len() + MIN_SWEEP_INTERVAL {
            self.map.shrink_to(2 * self.map.len());
        }
        self.commands_since_sweep = 0;
        self.sweep_every = self.map.len().max(MIN_SWEEP_INTERVAL);
    }

    pub(crate) fn now(&self) -> i64 {
        self.now
    }

    /// The live entry at `key`; an expired one is removed and reported absent.
    pub(crate) fn live(&mut self, key: &[u8]) -> Option<&mut Entry> {
        if self.map.get(key)?.is_expired(self.now) {
            self.map.remove(key);
            return None;
        }
        self.map.get_mut(key)
    }

    pub(crate) fn insert(&mut self, key: &[u8], entry: Entry) {
        match self.map.get_mut(key) {
            Some(slot) => *slot = entry,
            None => {
                self.map.insert(key.to_vec(), entry);
            }
        }
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let entry = self.map.remove(key)?;
        (!entry.is_expired(self.now)).then_some(entry)
    }

    /// Live keys, sorted, with their entries (for dumps).
    pub(crate) fn live_entries(&self) -> Vec<(&[u8], &Entry)> {
        let mut entries: Vec<_> = self
            .map
            .iter()
            .filter(|(_, e)| !e.is_expired(self.now))
            .map(|(k, e)| (k.as_slice(), e))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        entries
    }

    /// Keys held in memory, expired-but-unreaped ones included.
    pub(crate) fn stored_keys(&self) -> usize {
        self.map.len()
    }

    /// Slots the map has allocated.
    pub(crate) fn capacity(&self) -> usize {
        self.map.capacity()
    }

    pub(crate) fn flush(&mut self) {
        self.map = Map::default();
    }
}
