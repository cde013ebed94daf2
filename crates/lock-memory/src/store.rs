//! The keyspace: a map of live and not-yet-reaped keys, with Redis's expiry rules.

use std::sync::Arc;

use hashbrown::hash_map::EntryRef;

use lock_core::{RedisVersion, SlotLayout};

use crate::entry::Entry;
use crate::keyspace::WatchMark;
use crate::notifications::{KeyspaceEvents, Notifier};
use crate::pubsub::Channels;
use crate::replication::{Effect, Stream};
use parking_lot::Mutex;

/// hashbrown with foldhash instead of std's SipHash map: the double is not exposed to
/// untrusted keys, hashing is a large part of a command's cost here, and `entry_ref` finds
/// or places a borrowed key with one probe.
type Map<V> = hashbrown::HashMap<Vec<u8>, V>;

/// Every key again, in a vector with a hash index (the same hasher), so that a random
/// key costs O(1) (RANDOMKEY) and expired keys can be reaped a few at a time from a
/// cursor (DBSIZE), as Redis's dict allows. Kept only for a server that asks
/// ([`MemoryBackend::index_keys`](crate::MemoryBackend::index_keys)): the double's other
/// users would pay for it on every new or deleted key.
type KeyIndex = indexmap::IndexSet<Vec<u8>, hashbrown::DefaultHashBuilder>;

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
    map: Map<Entry>,
    /// See [`KeyIndex`]; `None` unless asked for.
    key_index: Option<KeyIndex>,
    /// Where the next incremental reaping of expired keys resumes in the index.
    reap_cursor: usize,
    /// Keys under WATCH, with the stamp of their last write and how many watch them.
    watched: Map<Watched>,
    /// The last write stamp handed out.
    stamp: u64,
    /// The current command's time. Set once per command (and per script, so time stands
    /// still inside scripts, as in Redis 7).
    now: i64,
    /// The same instant in microseconds (TIME).
    now_us: i64,
    /// Commands run with faults idle (see [`MemoryStats::commands`](crate::MemoryStats)).
    pub(crate) commands: u64,
    commands_since_sweep: usize,
    /// Fixed at each sweep: measuring against the current length would never trigger when
    /// every command inserts a key.
    sweep_every: usize,
    /// Pub/sub lives beside the keyspace so scripts can publish atomically with their
    /// writes; FLUSHALL leaves it alone, as in Redis. Several stores may share one table
    /// (Redis's databases share pub/sub).
    pub(crate) channels: Arc<Mutex<Channels>>,
    /// Keyspace notifications: the server's settings and this database's number.
    pub(crate) notifier: Notifier,
    /// A collection just created empty, whose `new` event waits until something is
    /// put in it: Redis creates a key only once it has something to add, so a command
    /// that leaves it empty (`ZADD XX` on a missing key) raises no event at all.
    unannounced: Option<Vec<u8>>,
    /// Where this store's writes are shipped when it is a replicated primary (see
    /// [`crate::replication`]), and the keys the current command wrote.
    pub(crate) replication: Option<Arc<Stream>>,
    written: Vec<Vec<u8>>,
    /// Redis Cluster's key rules, when the backend is in cluster mode (see
    /// [`crate::cluster`]).
    pub(crate) cluster: Option<SlotLayout>,
    /// The keys written, expired or flushed since a server last took them, while it
    /// asks for them (client-side caching's invalidations).
    pub(crate) recorded: Option<Writes>,
    /// Every write, in the order granted, while a test asks for it.
    pub(crate) write_log: Option<WriteLog>,
    /// The Redis version the store answers as, where versions differ.
    pub(crate) version: RedisVersion,
}

/// One write the store granted to a key (see
/// [`MemoryBackend::log_writes`](crate::MemoryBackend::log_writes)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyWrite {
    /// Its place in the store's order of writes, from 1.
    pub seq: u64,
    /// The store's clock when it was made (Unix ms).
    pub at_ms: i64,
    /// The key.
    pub key: Vec<u8>,
    /// The key's string value after it, `None` once deleted (or for another type).
    pub value: Option<Vec<u8>>,
}

/// The last writes a store granted, oldest first, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct WriteLog {
    pub(crate) entries: std::collections::VecDeque<KeyWrite>,
    pub(crate) capacity: usize,
    pub(crate) seq: u64,
}

/// Keys a store changed: written, deleted or found expired, and whether it was flushed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Writes {
    /// Each changed key, in the order changed (a key may appear more than once).
    pub keys: Vec<Vec<u8>>,
    /// Whether every key went at once (FLUSHDB, FLUSHALL).
    pub flushed: bool,
}

impl Default for Store {
    fn default() -> Self {
        Self {
            map: Map::default(),
            key_index: None,
            reap_cursor: 0,
            watched: Map::default(),
            stamp: 0,
            now: 0,
            now_us: 0,
            commands: 0,
            commands_since_sweep: 0,
            sweep_every: MIN_SWEEP_INTERVAL,
            channels: Arc::default(),
            notifier: Notifier::default(),
            unannounced: None,
            replication: None,
            written: Vec::new(),
            cluster: None,
            recorded: None,
            write_log: None,
            version: RedisVersion::default(),
        }
    }
}

impl Store {
    /// Starts a command at `now_us` (Unix µs).
    pub(crate) fn begin(&mut self, now_us: i64) {
        self.now = now_us.div_euclid(1000);
        self.now_us = now_us;
        self.unannounced = None;
        self.commands_since_sweep += 1;
        if self.commands_since_sweep >= self.sweep_every {
            self.sweep();
        }
    }

    /// Sets the time without starting a command (active expiry between commands).
    pub(crate) fn set_time(&mut self, now_us: i64) {
        self.now = now_us.div_euclid(1000);
        self.now_us = now_us;
    }

    /// Keeps a [`KeyIndex`] from now on.
    pub(crate) fn index_keys(&mut self) {
        if self.key_index.is_none() {
            self.key_index = Some(self.map.keys().cloned().collect());
        }
    }

    fn sweep(&mut self) {
        let now = self.now;
        let recorded = &mut self.recorded;
        let index = &mut self.key_index;
        let mut notify = self
            .notifier
            .events
            .get()
            .publishes(KeyspaceEvents::EXPIRED)
            .then(Vec::new);
        self.map.retain(|key, entry| {
            let expired = entry.is_expired(now);
            if expired {
                if let Some(index) = index.as_mut() {
                    index.swap_remove(key);
                }
                if let Some(recorded) = recorded.as_mut() {
                    recorded.keys.push(key.clone());
                }
                if let Some(notify) = notify.as_mut() {
                    notify.push(key.clone());
                }
            }
            !expired
        });
        for key in notify.unwrap_or_default() {
            self.notify(KeyspaceEvents::EXPIRED, "expired", &key);
        }
        if self.map.capacity() > 4 * self.map.len() + MIN_SWEEP_INTERVAL {
            self.map.shrink_to(2 * self.map.len());
        }
        self.commands_since_sweep = 0;
        self.sweep_every = self.map.len().max(MIN_SWEEP_INTERVAL);
    }

    pub(crate) fn now(&self) -> i64 {
        self.now
    }

    /// The current command's time in Unix microseconds.
    pub(crate) fn now_us(&self) -> i64 {
        self.now_us
    }

    /// The live entry at `key`; an expired one is removed and reported absent.
    pub(crate) fn live(&mut self, key: &[u8]) -> Option<&mut Entry> {
        match self.map.entry_ref(key) {
            EntryRef::Occupied(found) if found.get().is_expired(self.now) => {
                let (key, _) = found.remove_entry();
                if let Some(index) = &mut self.key_index {
                    index.swap_remove(&key);
                }
                reaped(&self.notifier, &self.channels, &mut self.recorded, key);
                None
            }
            EntryRef::Occupied(found) => Some(found.into_mut()),
            EntryRef::Vacant(_) => None,
        }
    }

    pub(crate) fn insert(&mut self, key: &[u8], mut entry: Entry) {
        entry.accessed = self.now;
        let now = self.now;
        // Known before the entry moves into the map: no second lookup on every new key.
        let empty_collection = entry.value.is_empty_collection();
        let created = match self.map.entry_ref(key) {
            EntryRef::Occupied(mut found) => {
                // Redis looks an expired key up (and reaps it) before it adds the new.
                let expired = found.get().is_expired(now);
                found.insert(entry);
                if expired {
                    self.notify(KeyspaceEvents::EXPIRED, "expired", key);
                }
                expired
            }
            EntryRef::Vacant(slot) => {
                slot.insert(entry);
                if let Some(index) = &mut self.key_index {
                    index.insert(key.to_vec());
                }
                true
            }
        };
        if created {
            if empty_collection {
                self.announce_pending();
                self.unannounced = Some(key.to_vec());
            } else {
                self.notify(KeyspaceEvents::NEW, "new", key);
            }
        }
        self.touch(key);
    }

    /// Publishes the `new` event a collection created empty still owes.
    fn announce_pending(&mut self) {
        if let Some(key) = self.unannounced.take() {
            self.notify(KeyspaceEvents::NEW, "new", &key);
        }
    }

    /// After a command changed the collection at `key` in place: announces it if it was
    /// just created, and deletes it if it is empty now (a `del` event, unless it was
    /// created by this command and so never announced).
    pub(crate) fn settle_collection(&mut self, key: &[u8]) {
        let empty = self
            .live(key)
            .is_some_and(|entry| entry.value.is_empty_collection());
        let created = self.unannounced.as_deref() == Some(key);
        if empty {
            self.remove(key);
            if !created {
                self.notify(KeyspaceEvents::GENERIC, "del", key);
            }
        } else {
            if created {
                self.announce_pending();
            }
            self.touch(key);
        }
    }

    /// Publishes the keyspace event `event` of `class` on `key`, as far as the server's
    /// `notify-keyspace-events` asks (nothing, by default).
    pub(crate) fn notify(&mut self, class: KeyspaceEvents, event: &str, key: &[u8]) {
        if self.unannounced.as_deref() == Some(key) {
            // The key was created for this event: `new` comes first, as in Redis.
            self.announce_pending();
        }
        publish_event(&self.notifier, &self.channels, class, event, key);
    }

    /// A random live key, as Redis's RANDOMKEY picks one: O(1) with a [`KeyIndex`],
    /// reaping the expired keys it meets on the way (O(n) without one). `pick(n)`
    /// chooses an index below `n`.
    pub(crate) fn random_key(&mut self, pick: &mut dyn FnMut(usize) -> usize) -> Option<Vec<u8>> {
        if self.key_index.is_none() {
            let keys = self.matching_keys(b"*");
            return (!keys.is_empty()).then(|| keys[pick(keys.len()).min(keys.len() - 1)].clone());
        }
        loop {
            let index = self.key_index.as_ref()?;
            if index.is_empty() {
                return None;
            }
            let key = index
                .get_index(pick(index.len()).min(index.len() - 1))?
                .clone();
            if self.live(&key).is_some() {
                return Some(key);
            }
        }
    }

    /// Keys held: with a [`KeyIndex`], in O(budget), after reaping expired keys among
    /// the next `budget` from a cursor that goes round the keyspace (Redis's DBSIZE too
    /// counts keys whose TTL passed until its active expiry reaches them); without one,
    /// the live keys, counted.
    pub(crate) fn len_reaping(&mut self, budget: usize) -> usize {
        let now = self.now;
        let Some(index) = &mut self.key_index else {
            return self.map.values().filter(|e| !e.is_expired(now)).count();
        };
        for _ in 0..budget {
            if index.is_empty() {
                break;
            }
            if self.reap_cursor >= index.len() {
                self.reap_cursor = 0;
            }
            let Some(key) = index.get_index(self.reap_cursor) else {
                break;
            };
            if self
                .map
                .get(key)
                .is_some_and(|entry| !entry.is_expired(now))
            {
                self.reap_cursor += 1;
                continue;
            }
            // Reaped: the last key moves into this place, to be looked at next.
            let Some(key) = index.swap_remove_index(self.reap_cursor) else {
                break;
            };
            self.map.remove(&key);
            reaped(&self.notifier, &self.channels, &mut self.recorded, key);
        }
        self.map.len()
    }

    pub(crate) fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        if self.unannounced.as_deref() == Some(key) {
            self.unannounced = None;
        }
        let entry = self.map.remove(key)?;
        if let Some(index) = &mut self.key_index {
            index.swap_remove(key);
        }
        if entry.is_expired(self.now) {
            // Reaping is not a write: WATCH judges expiry by liveness instead.
            self.notify(KeyspaceEvents::EXPIRED, "expired", key);
            return None;
        }
        self.touch(key);
        Some(entry)
    }

    /// Records a write to `key` for WATCH, and for replication; free when nothing is
    /// watched and nothing replicated.
    pub(crate) fn touch(&mut self, key: &[u8]) {
        if self.replication.is_some() {
            self.written.push(key.to_vec());
        }
        if let Some(recorded) = &mut self.recorded {
            recorded.keys.push(key.to_vec());
        }
        if self.write_log.is_some() {
            self.log_write(key);
        }
        if self.watched.is_empty() {
            return;
        }
        if let Some(watched) = self.watched.get_mut(key) {
            self.stamp += 1;
            watched.stamp = self.stamp;
        }
    }

    fn log_write(&mut self, key: &[u8]) {
        let value = match self.map.get(key).map(|e| &e.value) {
            Some(crate::Data::String(bytes)) => Some(bytes.clone()),
            _ => None,
        };
        let now = self.now;
        let Some(log) = &mut self.write_log else {
            return;
        };
        log.seq += 1;
        if log.entries.len() == log.capacity {
            log.entries.pop_front();
        }
        log.entries.push_back(KeyWrite {
            seq: log.seq,
            at_ms: now,
            key: key.to_vec(),
            value,
        });
    }

    /// Live keys matching the glob `pattern` (a lone `*` takes every key, as in Redis).
    pub(crate) fn matching_keys(&self, pattern: &[u8]) -> Vec<Vec<u8>> {
        self.map
            .iter()
            .filter(|(key, entry)| {
                !entry.is_expired(self.now) && (pattern == b"*" || crate::glob_match(pattern, key))
            })
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Live keys, sorted, with their entries (for dumps).
    /// The entry at `key` if it is live at `now` (Unix ms), changing nothing: no lazy
    /// expiry, no access time, no command counted.
    pub(crate) fn peek(&self, key: &[u8], now: i64) -> Option<&Entry> {
        self.map.get(key).filter(|entry| !entry.is_expired(now))
    }

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

    /// Keys some client watches.
    pub(crate) fn watched_keys(&self) -> usize {
        self.watched.len()
    }

    /// Slots the map has allocated.
    /// Ships what the current command wrote to the replication stream, if this store
    /// has one: the offset of the entry it became, or `None` when nothing was written.
    /// Called at the end of every command, under the store's lock, so the stream is in
    /// the order the writes happened.
    pub(crate) fn ship(&mut self) -> Option<u64> {
        let stream = self.replication.clone()?;
        if self.written.is_empty() {
            return None;
        }
        let mut keys = std::mem::take(&mut self.written);
        keys.sort_unstable();
        keys.dedup();
        let effects = keys
            .into_iter()
            .map(|key| {
                let state = self.live(&key).cloned();
                Effect { key, state }
            })
            .collect();
        Some(stream.append(self.now, effects))
    }

    /// Applies a replicated write: each key takes the state the primary gave it.
    pub(crate) fn apply(&mut self, effects: &[Effect]) {
        for effect in effects {
            match &effect.state {
                Some(entry) => self.insert(&effect.key, entry.clone()),
                None => {
                    self.map.remove(&effect.key[..]);
                    if let Some(index) = &mut self.key_index {
                        index.swap_remove(&effect.key[..]);
                    }
                    self.touch(&effect.key);
                }
            }
        }
    }

    /// Replaces the whole keyspace with `other`'s (a replica's full resynchronisation).
    pub(crate) fn copy_from(&mut self, other: &Store) {
        self.map = other.map.clone();
        if self.key_index.is_some() {
            self.key_index = Some(self.map.keys().cloned().collect());
        }
        let keys: Vec<Vec<u8>> = self.watched.keys().cloned().collect();
        for key in keys {
            self.touch(&key);
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.map.capacity()
    }

    pub(crate) fn flush(&mut self) {
        let flushed = std::mem::take(&mut self.map);
        if let Some(index) = &mut self.key_index {
            index.clear();
        }
        if let Some(recorded) = &mut self.recorded {
            recorded.flushed = true;
        }
        if self.replication.is_some() {
            self.written.extend(flushed.keys().cloned());
        }
        for (key, watched) in &mut self.watched {
            if flushed.contains_key(key) {
                self.stamp += 1;
                watched.stamp = self.stamp;
            }
        }
    }

    pub(crate) fn watch(&mut self, key: &[u8]) -> WatchMark {
        let live = self.live(key).is_some();
        let watched = self.watched.entry_ref(key).or_default();
        watched.watchers += 1;
        WatchMark {
            stamp: watched.stamp,
            live,
        }
    }

    pub(crate) fn watch_broken(&mut self, key: &[u8], mark: WatchMark) -> bool {
        let stamp = self.watched.get(key).map_or(u64::MAX, |w| w.stamp);
        stamp != mark.stamp || (mark.live && self.live(key).is_none())
    }

    pub(crate) fn unwatch(&mut self, key: &[u8]) {
        if let Some(watched) = self.watched.get_mut(key) {
            watched.watchers -= 1;
            if watched.watchers == 0 {
                self.watched.remove(key);
            }
        }
    }
}

/// One watched key.
#[derive(Debug, Default)]
struct Watched {
    stamp: u64,
    watchers: usize,
}

/// Records that the expired `key` was just reaped: for client-side caching, and as an
/// `expired` keyspace event. (Free of `Store` so that it borrows only these fields,
/// beside a borrow of the map.)
fn reaped(
    notifier: &Notifier,
    channels: &Mutex<Channels>,
    recorded: &mut Option<Writes>,
    key: Vec<u8>,
) {
    publish_event(notifier, channels, KeyspaceEvents::EXPIRED, "expired", &key);
    if let Some(recorded) = recorded {
        recorded.keys.push(key);
    }
}

fn publish_event(
    notifier: &Notifier,
    channels: &Mutex<Channels>,
    class: KeyspaceEvents,
    event: &str,
    key: &[u8],
) {
    let publications = notifier.publications(class, event, key);
    if publications.is_empty() {
        return;
    }
    let mut channels = channels.lock();
    for (channel, message) in publications {
        channels.publish(&channel, &message);
    }
}
