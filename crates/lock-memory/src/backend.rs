//! [`MemoryBackend`]: the [`KvBackend`] implementation over the in-process store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lock_core::{
    Clock, Error, ErrorKind, ExpireCondition, KvBackend, RedisVersion, Replicated, Replication,
    Result, Script, ScriptContext, SetOptions, SetReply, SlotLayout, Subscription, Transaction,
    Value,
};
use parking_lot::Mutex;

use crate::cluster::{ClusterScope, one_slot};
use crate::dump::{Dump, KeyDump};
use crate::faults::{Faults, Phase};
use crate::interrupted::Interrupted;
use crate::keyspace::Keyspace;
use crate::notifications::KeyspaceEvents;
use crate::pubsub::InboxAddress;
use crate::replication::{Effect, Stream, lone_wait, no_waitaof};
use crate::script_runner::ScriptRunner;
use crate::store::{KeyWrite, Store, Writes};
use crate::transaction::Watching;

/// An in-process Redis double with exact Redis 7 semantics for the lock command set.
///
/// Clones share one keyspace, one clock and one set of faults. Every command takes the
/// store's lock for the duration of that command only (never across an `.await`), so the
/// backend is safe from any number of tasks on a multi-threaded runtime. Scripts run their
/// native body under the same lock, which makes them atomic, and see one frozen time.
///
/// # Time
///
/// By default the clock is [`Clock::tokio`]: in a test with `tokio::time::pause()` (or
/// `#[tokio::test(start_paused = true)]`), `tokio::time::advance` moves key expiry and every
/// lock's retry sleeps together, and a test that waits out a 30 s TTL takes milliseconds.
/// [`MemoryBackend::advance`] moves this backend's clock directly (like miniredis's
/// `FastForward`), also waking retry sleeps on it.
#[derive(Clone, Debug)]
pub struct MemoryBackend {
    shared: Arc<Shared>,
    /// For a connection of a replicated primary's own: the replication offset of its
    /// last write, what `WAIT` counts (see [`crate::replication`]).
    last_write: Option<Arc<AtomicU64>>,
}

#[derive(Debug)]
struct Shared {
    store: Mutex<Store>,
    clock: Clock,
    faults: Faults,
    /// Commands counted on arrival, while faults or latency were armed; the others are
    /// counted in [`Store::commands`], under the lock they take anyway.
    commands_on_arrival: AtomicU64,
    /// Runs scripts without a native body, when one is installed.
    scripts: parking_lot::RwLock<Option<Arc<dyn ScriptRunner>>>,
}

/// Counters of one [`MemoryBackend`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryStats {
    /// Commands received (scripts count as one), failed ones included.
    pub commands: u64,
    /// Keys held in memory, including expired keys not yet reaped.
    pub stored_keys: usize,
    /// Slots allocated by the key map.
    pub capacity: usize,
    /// Keys under WATCH by at least one open transaction: [`KvBackend::watch`]'s on this
    /// backend, and a server's clients' (`WATCH` on `nxlock serve`).
    pub watched_keys: usize,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    /// An empty backend on [`Clock::tokio`].
    pub fn new() -> Self {
        Self::with_clock(Clock::tokio())
    }

    /// An empty backend whose expiry follows `clock`.
    pub fn with_clock(clock: Clock) -> Self {
        Self {
            shared: Arc::new(Shared {
                store: Mutex::new(Store::default()),
                clock,
                faults: Faults::default(),
                commands_on_arrival: AtomicU64::new(0),
                scripts: parking_lot::RwLock::new(None),
            }),
            last_write: None,
        }
    }

    /// This backend as a connection of its own, which remembers the replication offset
    /// of its last write ([`MemoryBackend::last_write`]).
    pub(crate) fn connection(&self) -> MemoryBackend {
        MemoryBackend {
            shared: self.shared.clone(),
            last_write: Some(Arc::new(AtomicU64::new(0))),
        }
    }

    /// The replication offset of this connection's last write (0 before any).
    pub(crate) fn last_write(&self) -> u64 {
        self.last_write
            .as_ref()
            .map_or(0, |offset| offset.load(Ordering::Acquire))
    }

    /// Ships this store's writes to `stream` from now on (it became a primary), or
    /// stops shipping them (`None`).
    pub(crate) fn replicate_to(&self, stream: Option<Arc<Stream>>) {
        self.shared.store.lock().replication = stream;
    }

    /// Applies writes a primary shipped.
    pub(crate) fn apply(&self, effects: &[Effect]) {
        let mut store = self.shared.store.lock();
        store.begin(self.shared.clock.now_us());
        store.apply(effects);
    }

    /// Replaces this store's keyspace with `primary`'s (a full resynchronisation).
    pub(crate) fn copy_from(&self, primary: &MemoryBackend) {
        if Arc::ptr_eq(&self.shared, &primary.shared) {
            return;
        }
        let source = primary.shared.store.lock();
        self.shared.store.lock().copy_from(&source);
    }

    /// An empty backend on `clock` that shares pub/sub with `other`: a message published
    /// on either reaches subscribers of both, as Redis's databases share pub/sub.
    pub fn with_shared_pubsub(clock: Clock, other: &MemoryBackend) -> Self {
        let backend = Self::with_clock(clock);
        let (channels, events) = {
            let other = other.shared.store.lock();
            (other.channels.clone(), other.notifier.events.clone())
        };
        let mut store = backend.shared.store.lock();
        store.channels = channels;
        // Keyspace notifications are configured server-wide, as pub/sub is shared.
        store.notifier.events = events;
        drop(store);
        backend
    }

    /// This backend as database `index` of a server: keyspace notifications name it in
    /// their channels (`__keyspace@<index>__:…`). Database 0 unless set.
    pub fn with_database_index(self, index: u32) -> Self {
        self.shared.store.lock().notifier.database = index;
        self
    }

    /// Publishes keyspace notifications for the classes `events` names from now on,
    /// as `CONFIG SET notify-keyspace-events` does (off by default). The setting is
    /// shared with every backend made [`with_shared_pubsub`](Self::with_shared_pubsub)
    /// of this one.
    ///
    /// Every command that changes a key raises Redis 7.0's event for it, and a key found
    /// expired raises `expired`. The double has no active expiry of its own: an expired
    /// key is found when a command touches it, at a periodic sweep, or by
    /// [`reap_expired`](Self::reap_expired), which a server calls on a timer.
    ///
    /// ```
    /// use lock_core::{KvBackend, SetOptions};
    /// use lock_memory::{KeyspaceEvents, MemoryBackend};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let backend = MemoryBackend::new();
    /// backend.set_keyspace_events(KeyspaceEvents::parse(b"Eg").unwrap());
    /// let mut deletions = backend.subscribe(b"__keyevent@0__:del").await.unwrap();
    /// backend.set(b"lock", b"token", SetOptions::new()).await.unwrap();
    /// backend.del(&[b"lock".as_slice()]).await.unwrap();
    /// assert_eq!(deletions.recv().await.unwrap().as_ref(), b"lock");
    /// # }
    /// ```
    pub fn set_keyspace_events(&self, events: KeyspaceEvents) {
        self.shared.store.lock().notifier.events.set(events);
    }

    /// The keyspace-event classes published now ([`set_keyspace_events`](Self::set_keyspace_events)).
    pub fn keyspace_events(&self) -> KeyspaceEvents {
        self.shared.store.lock().notifier.events.get()
    }

    /// This backend (and its clones) in cluster mode: it refuses what a Redis Cluster whose
    /// primaries split the slots as `layout` says would refuse, with Redis's error texts:
    /// `CROSSSLOT` for one command's keys in two slots, and a script's access to a key
    /// another node serves. Commands on any single slot still work, as through a cluster
    /// client that routes them.
    ///
    /// ```
    /// use lock_core::{ErrorKind, KvBackend, Script, SlotLayout, Value};
    /// use lock_memory::MemoryBackend;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let cluster = MemoryBackend::new().with_cluster_rules(SlotLayout::even(3));
    /// let two_keys = Script::new("two", "return redis.call('DEL', KEYS[1], KEYS[2])")
    ///     .with_native(|store, keys, _| Ok(Value::Int(store.del(keys)?)));
    /// let refused = cluster.eval(&two_keys, &[b"orders", b"invoices"], &[]).await.unwrap_err();
    /// assert_eq!(refused.kind(), ErrorKind::CrossSlot);
    /// assert_eq!(refused.message(), "CROSSSLOT Keys in request don't hash to the same slot");
    /// // One hash tag, one slot: allowed.
    /// assert!(cluster.eval(&two_keys, &[b"{o}:lock", b"{o}:fence"], &[]).await.is_ok());
    /// # }
    /// ```
    pub fn with_cluster_rules(self, layout: SlotLayout) -> Self {
        self.shared.store.lock().cluster = Some(layout);
        self
    }

    /// This backend (and its clones) runs scripts that have no native body with
    /// `runner`: a user's own Lua, exactly as a server would run it, where the double
    /// otherwise answers [`ErrorKind::Unsupported`]. Scripts with a native body keep it.
    pub fn with_script_runner(self, runner: Arc<dyn ScriptRunner>) -> Self {
        self.set_script_runner(runner);
        self
    }

    /// [`MemoryBackend::with_script_runner`] on a backend already shared (a node of a
    /// replica set, a Redlock instance).
    pub fn set_script_runner(&self, runner: Arc<dyn ScriptRunner>) {
        *self.shared.scripts.write() = Some(runner);
    }

    /// This backend (and its clones) answers as Redis `version` does where versions
    /// differ ([`RedisVersion`]): `WAITAOF` before 7.2, a cluster script's cross-slot
    /// error text before 7.4. The default is the newest, [`RedisVersion::V7_4`].
    pub fn with_redis_version(self, version: RedisVersion) -> Self {
        self.set_redis_version(version);
        self
    }

    /// [`MemoryBackend::with_redis_version`] on a backend already shared.
    pub fn set_redis_version(&self, version: RedisVersion) {
        self.shared.store.lock().version = version;
    }

    /// The Redis version this backend answers as.
    pub fn redis_version(&self) -> RedisVersion {
        self.shared.store.lock().version
    }

    /// The slot layout whose rules this backend enforces, if it is in cluster mode.
    pub fn cluster_rules(&self) -> Option<SlotLayout> {
        self.shared.store.lock().cluster.clone()
    }

    /// Keeps an index of this database's keys from now on, so that `RANDOMKEY` and
    /// `DBSIZE` ([`Keyspace::random_key`](crate::Keyspace::random_key),
    /// [`Keyspace::size`](crate::Keyspace::size)) cost O(1), as in Redis. A server turns
    /// it on; the double's other users would only pay for it, on every new or deleted key.
    pub fn index_keys(&self) {
        self.shared.store.lock().index_keys();
    }

    /// Reaps expired keys among the next `budget` keys, going round the keyspace, as
    /// Redis's active expiry does between commands: how many keys are left. A server
    /// calls it on a timer so that `DBSIZE` stops counting keys whose TTL has passed
    /// even when no command touches them.
    pub fn reap_expired(&self, budget: usize) -> usize {
        let mut store = self.shared.store.lock();
        store.set_time(self.shared.clock.now_us());
        store.len_reaping(budget)
    }

    /// Moves the backend's clock forward (keys expire, clock sleeps wake).
    pub fn advance(&self, by: Duration) {
        self.shared.clock.advance(by);
    }

    /// The fault injector.
    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// One live key with its value and PTTL, or `None`: what [`dump`](Self::dump) would
    /// show of it, without copying the rest of the keyspace. A look from outside, not a
    /// command: it meets no injected fault or latency, is not counted in
    /// [`stats`](Self::stats), expires nothing and leaves `OBJECT IDLETIME` alone, so a
    /// checker may call it after every step of a run without changing the run.
    pub fn peek(&self, key: &[u8]) -> Option<KeyDump> {
        let now_ms = self.shared.clock.now_us().div_euclid(1000);
        let store = self.shared.store.lock();
        store
            .peek(key, now_ms)
            .map(|entry| KeyDump::of(key, entry, now_ms))
    }

    /// How many µs of this backend's clock `key` stays live holding the string
    /// `expected` (`i64::MAX` without a TTL), or `None` if it does not hold it now: a
    /// look from outside, as [`peek`](Self::peek) is, that copies nothing (a checker
    /// asks it after every command of a run).
    pub fn string_live_us(&self, key: &[u8], expected: &[u8]) -> Option<i64> {
        let now_us = self.shared.clock.now_us();
        let store = self.shared.store.lock();
        let entry = store.peek(key, now_us.div_euclid(1000))?;
        match &entry.value {
            crate::data::Data::String(bytes) if bytes.as_slice() == expected => {
                // Live while the clock's ms reading is at most `expires_at`.
                Some(entry.expires_at.map_or(i64::MAX, |at| {
                    at.saturating_add(1)
                        .saturating_mul(1000)
                        .saturating_sub(now_us)
                }))
            }
            _ => None,
        }
    }

    /// Every live key with its value and PTTL.
    pub fn dump(&self) -> Dump {
        let mut store = self.shared.store.lock();
        store.begin(self.shared.clock.now_us());
        let now_ms = store.now();
        let keys = store
            .live_entries()
            .into_iter()
            .map(|(key, entry)| KeyDump::of(key, entry, now_ms))
            .collect();
        Dump { now_ms, keys }
    }

    /// Counters, for tests of memory use and benchmarks of command counts.
    pub fn stats(&self) -> MemoryStats {
        let store = self.shared.store.lock();
        MemoryStats {
            commands: self.shared.commands_on_arrival.load(Ordering::Relaxed) + store.commands,
            stored_keys: store.stored_keys(),
            capacity: store.capacity(),
            watched_keys: store.watched_keys(),
        }
    }

    /// Subscribes `inbox` to `channel` (`SUBSCRIBE` for a server connection, which reads
    /// all of its subscriptions from one [`Inbox`](crate::Inbox)).
    pub async fn subscribe_inbox(&self, channel: &[u8], inbox: &InboxAddress) -> Result<()> {
        self.run("SUBSCRIBE", |s| s.subscribe_inbox(channel, inbox))
            .await
    }

    /// Subscribes `inbox` to every channel matching the glob `pattern` (`PSUBSCRIBE`).
    pub async fn psubscribe_inbox(&self, pattern: &[u8], inbox: &InboxAddress) -> Result<()> {
        self.run("PSUBSCRIBE", |s| s.psubscribe_inbox(pattern, inbox))
            .await
    }

    /// Ends `inbox`'s subscription to `channel`, bypassing faults: leaving must not fail.
    pub fn unsubscribe_inbox(&self, channel: &[u8], inbox: &InboxAddress) {
        let store = self.shared.store.lock();
        store.channels.lock().unsubscribe_inbox(channel, inbox);
    }

    /// Ends `inbox`'s subscription to `pattern`, bypassing faults.
    pub fn punsubscribe_inbox(&self, pattern: &[u8], inbox: &InboxAddress) {
        let store = self.shared.store.lock();
        store.channels.lock().punsubscribe_inbox(pattern, inbox);
    }

    /// The channels server connections subscribe to, matching the glob `pattern` if
    /// given, sorted (`PUBSUB CHANNELS`).
    pub fn pubsub_channels(&self, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let store = self.shared.store.lock();
        let channels = store.channels.lock();
        channels.active_channels(pattern)
    }

    /// How many server connections subscribe to `channel` (`PUBSUB NUMSUB`).
    pub fn pubsub_numsub(&self, channel: &[u8]) -> usize {
        let store = self.shared.store.lock();
        let channels = store.channels.lock();
        channels.subscribers(channel)
    }

    /// How many patterns server connections subscribe to (`PUBSUB NUMPAT`).
    pub fn pubsub_numpat(&self) -> usize {
        let store = self.shared.store.lock();
        let channels = store.channels.lock();
        channels.patterns()
    }

    /// Runs `step` against the keyspace in one atomic section with one frozen time, as a
    /// script's native body runs: for faults, latency and [`MemoryStats::commands`] it is
    /// one `EVALSHA`. For servers built on this backend, which run a client's pipelined
    /// commands in one step, as Redis does in one event-loop turn.
    pub async fn atomically<T>(&self, step: impl FnOnce(&mut dyn Keyspace) -> T) -> Result<T> {
        self.run("EVALSHA", |store| Ok(step(store))).await
    }

    /// Runs `step` with the keyspaces of every one of `backends` (a server's databases)
    /// locked together, in one atomic section with one frozen time: for a server's
    /// command that spans databases (a script that SELECTs, `COPY … DB`). For faults,
    /// latency and [`MemoryStats::commands`] it is one `EVALSHA` on `backends[first]`,
    /// the database the command was sent to.
    ///
    /// The stores are locked in the order given; every caller that locks several passes
    /// them in the same order (all of a server's databases, by index), so two such steps
    /// never wait for each other's locks.
    pub async fn atomically_across<T>(
        backends: &[MemoryBackend],
        first: usize,
        step: impl FnOnce(&mut crate::Databases<'_>) -> T,
    ) -> Result<T> {
        let Some(caller) = backends.get(first) else {
            return Err(Error::new(
                ErrorKind::Response,
                "ERR DB index is out of range",
            ));
        };
        let armed = caller.arrive("EVALSHA").await?;
        let now_us = caller.shared.clock.now_us();
        let mut guards: Vec<_> = backends.iter().map(|b| b.shared.store.lock()).collect();
        if !armed {
            guards[first].commands += 1;
        }
        let stores = guards
            .iter_mut()
            .map(|guard| {
                guard.begin(now_us);
                &mut **guard
            })
            .collect();
        let reply = step(&mut crate::Databases::new(stores));
        for (backend, guard) in backends.iter().zip(guards.iter_mut()) {
            if let (Some(offset), Some(last_write)) = (guard.ship(), &backend.last_write) {
                last_write.store(offset, Ordering::Release);
            }
        }
        drop(guards);
        caller.reply("EVALSHA", armed, Ok(reply))
    }

    /// Ends one watch on each of `keys` (see [`Keyspace::watch`]), bypassing faults
    /// and latency: for servers whose EXEC failed by an injected fault and whose cleanup
    /// must not fail as well.
    pub fn unwatch(&self, keys: &[&[u8]]) {
        let mut store = self.shared.store.lock();
        for key in keys {
            store.unwatch(key);
        }
    }

    /// Starts (or stops) recording which keys this store changes, for a server's
    /// client-side caching: [`MemoryBackend::take_writes`] hands them over.
    pub fn record_writes(&self, on: bool) {
        let mut store = self.shared.store.lock();
        store.recorded = on.then(Writes::default);
    }

    /// The keys changed since the last call (written, deleted, found expired, or all of
    /// them flushed), while recording.
    pub fn take_writes(&self) -> Writes {
        let mut store = self.shared.store.lock();
        match &mut store.recorded {
            Some(recorded) => std::mem::take(recorded),
            None => Writes::default(),
        }
    }

    /// Starts logging every write this store grants, in order, keeping the last
    /// `capacity` (bounded, so a long test cannot grow it without limit); `0` stops and
    /// discards the log. For checkers that ask who got a key when: the order the server
    /// granted writes in, which no client-side view shows.
    pub fn log_writes(&self, capacity: usize) {
        let mut store = self.shared.store.lock();
        store.write_log = (capacity > 0).then(|| crate::store::WriteLog {
            entries: std::collections::VecDeque::with_capacity(capacity.min(1024)),
            capacity,
            seq: 0,
        });
    }

    /// The logged writes to `key`, in the order granted (see [`MemoryBackend::log_writes`]).
    pub fn writes_to(&self, key: &[u8]) -> Vec<KeyWrite> {
        let store = self.shared.store.lock();
        store.write_log.as_ref().map_or_else(Vec::new, |log| {
            log.entries
                .iter()
                .filter(|w| w.key == key)
                .cloned()
                .collect()
        })
    }

    /// Moves every live key of `slot` to `target` with its value and expiry, in one
    /// step, as `MIGRATE` moves a slot's keys between cluster nodes; both stores ship
    /// the change to their replicas. For [`MemoryCluster`](crate::MemoryCluster), which
    /// runs one migration at a time (two in opposite directions would lock the stores in
    /// opposite orders).
    pub(crate) fn migrate_slot(&self, slot: u16, target: &MemoryBackend) -> usize {
        if Arc::ptr_eq(&self.shared, &target.shared) {
            return 0;
        }
        let now_us = self.shared.clock.now_us();
        let mut source = self.shared.store.lock();
        let mut destination = target.shared.store.lock();
        source.begin(now_us);
        destination.begin(now_us);
        let keys: Vec<Vec<u8>> = source
            .live_entries()
            .into_iter()
            .filter(|(key, _)| lock_core::hash_slot(key) == slot)
            .map(|(key, _)| key.to_vec())
            .collect();
        for key in &keys {
            if let Some(entry) = source.remove(key) {
                destination.insert(key, entry);
            }
        }
        source.ship();
        destination.ship();
        keys.len()
    }

    /// Removes every key (FLUSHALL).
    pub fn flush(&self) {
        let mut store = self.shared.store.lock();
        store.flush();
        store.ship();
    }

    /// Runs one command: latency, then injected faults, then the command under the lock.
    async fn run<T>(
        &self,
        command: &'static str,
        f: impl FnOnce(&mut Store) -> Result<T>,
    ) -> Result<T> {
        let armed = self.arrive(command).await?;
        let shared = &*self.shared;
        let reply = {
            let mut store = shared.store.lock();
            if !armed {
                store.commands += 1;
            }
            store.begin(shared.clock.now_us());
            let reply = f(&mut store);
            if let (Some(offset), Some(last_write)) = (store.ship(), &self.last_write) {
                last_write.store(offset, Ordering::Release);
            }
            reply
        };
        self.reply(command, armed, reply)
    }

    /// A command arrives: with faults or latency armed it is counted now, waits out the
    /// latency, and may fail before it runs. Whether faults were armed.
    async fn arrive(&self, command: &'static str) -> Result<bool> {
        let shared = &*self.shared;
        let armed = !shared.faults.idle();
        if armed {
            // A command that sleeps in injected latency or fails by injection has still
            // been received, so it counts now.
            shared.commands_on_arrival.fetch_add(1, Ordering::Relaxed);
            if let Some(latency) = shared.faults.latency() {
                shared.clock.sleep(latency).await;
            }
            if let Some(error) = shared.faults.take(command, Phase::Before) {
                return Err(error);
            }
        }
        Ok(armed)
    }

    /// The reply of a command that ran, unless an armed fault loses it.
    fn reply<T>(&self, command: &'static str, armed: bool, reply: Result<T>) -> Result<T> {
        match armed.then(|| self.shared.faults.take(command, Phase::After)) {
            Some(Some(lost)) => Err(lost),
            _ => reply,
        }
    }
}

fn no_native_body(script: &Script) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!(
            "ERR script '{}' has no native body; the memory backend runs Lua only with a script runner (MemoryBackend::with_script_runner, nxlock's `lua` feature)",
            script.name()
        ),
    )
}

/// A native body against `store`, cut short when `interruption` says so, and held to
/// Redis Cluster's rules when `layout` is set (`CROSSSLOT` for its `KEYS` is not the
/// body's error, so it is not a script error either).
fn run_native(
    store: &mut Store,
    rules: Option<(&SlotLayout, RedisVersion)>,
    interruption: Option<(u32, Error)>,
    keys: &[&[u8]],
    body: impl FnOnce(&mut dyn ScriptContext) -> Result<Value>,
) -> Result<Value> {
    let mut interrupted;
    let context: &mut dyn ScriptContext = match interruption {
        Some((after, error)) => {
            interrupted = Interrupted::new(store, after, error);
            &mut interrupted
        }
        None => store,
    };
    match rules {
        Some((layout, version)) => body(&mut ClusterScope::new(context, layout, version, keys)?),
        None => body(context),
    }
    .map_err(raised_in_script)
}

/// An error a script body raised, as Redis reports it: [`ErrorKind::Script`], whatever the
/// command inside failed with (Redis adds ` script: <sha1>, on @user_script:<line>.` to the
/// text, which a native body has no line for). Injected faults never reach a body.
fn raised_in_script(error: Error) -> Error {
    match error.kind() {
        ErrorKind::Unsupported | ErrorKind::Script => error,
        _ => Error::new(ErrorKind::Script, error.message()),
    }
}

impl KvBackend for MemoryBackend {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.run("SET", |s| s.set(key, value, options)).await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.run("SETNX", |s| s.setnx(key, value)).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.run("GET", |s| s.get(key)).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.run("GETSET", |s| s.getset(key, value)).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.run("GETDEL", |s| s.getdel(key)).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.run("DEL", |s| {
            one_slot(s.cluster.as_ref(), keys)?;
            s.del(keys)
        })
        .await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.run("EXISTS", |s| {
            one_slot(s.cluster.as_ref(), keys)?;
            s.exists(keys)
        })
        .await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.run("PEXPIRE", |s| s.pexpire(key, ms, condition)).await
    }
    async fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        self.run("PEXPIREAT", |s| s.pexpireat(key, unix_ms, condition))
            .await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        self.run("PTTL", |s| s.pttl(key)).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.run("TTL", |s| s.ttl(key)).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.run("PERSIST", |s| s.persist(key)).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.run("INCR", |s| s.incr(key)).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        let Some(native) = script.native() else {
            let runner = self.shared.scripts.read().clone();
            let runner = runner.ok_or_else(|| no_native_body(script))?;
            let cluster = self.cluster_rules();
            let version = self.redis_version();
            let ran = Self::atomically_across(std::slice::from_ref(self), 0, |databases| {
                runner.run(databases, script, keys, args, cluster.as_ref(), version)
            });
            return ran.await?;
        };
        let interruption = self.shared.faults.take_interruption();
        self.run("EVALSHA", |store| {
            // Cloned: the body borrows the store mutably.
            let layout = store.cluster.clone();
            let version = store.version;
            let rules = layout.as_ref().map(|layout| (layout, version));
            run_native(store, rules, interruption, keys, |context| {
                native(context, keys, args)
            })
        })
        .await
    }
    /// A lone double has no replicas: as a lone Redis, `WAIT` (and, from 7.2, `WAITAOF 0
    /// replicas`) answers 0 once its timeout has passed.
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        if replication.fsync && !self.redis_version().has_waitaof() {
            return Err(no_waitaof());
        }
        let reply = self.eval(script, keys, args).await?;
        lone_wait(&self.shared.clock, replication.timeout).await;
        Ok(Replicated {
            reply,
            acknowledged: 0,
        })
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.run("PUBLISH", |s| s.publish(channel, message)).await
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        let (marks, values) = self
            .run("WATCH", |store| {
                one_slot(store.cluster.as_ref(), keys)?;
                let marks: Vec<_> = keys.iter().map(|k| (k.to_vec(), store.watch(k))).collect();
                let values: Result<Vec<_>> = keys.iter().map(|k| store.get(k)).collect();
                if values.is_err() {
                    for key in keys {
                        store.unwatch(key);
                    }
                }
                Ok((marks, values?))
            })
            .await?;
        let session = Watching {
            backend: self.clone(),
            marks,
        };
        Ok(Transaction::new(values, Box::new(session)))
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.run("SUBSCRIBE", |s| s.subscribe(channel)).await
    }
    fn clock(&self) -> Clock {
        self.shared.clock.clone()
    }
}
