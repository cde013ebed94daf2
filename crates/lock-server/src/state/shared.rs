//! What every connection shares: the options, the databases and their clock, the Lua
//! engine, the clients blocked in BLPOP, and the client counts.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use lock_core::Clock;
use lock_memory::MemoryBackend;

use super::blocked::Blocked;
use super::client_faults::ClientFaults;
use super::clients::Registry;
use super::config::Config;
use super::options::{DATABASES, ServerOptions};
use super::scripts::ScriptEngine;
use super::stats::Stats;
use super::tracking::Tracking;

/// The state of one server, shared by its connections.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) options: ServerOptions,
    /// The port the listener bound (the option may say 0).
    pub(crate) port: u16,
    /// Every database's clock: `NXLOCK.FASTFORWARD` moves it.
    pub(crate) clock: Clock,
    dbs: Vec<MemoryBackend>,
    /// The script interpreter and cache, shared by all databases as in Redis.
    pub(crate) scripts: Box<dyn ScriptEngine>,
    /// `CONFIG GET/SET`.
    pub(crate) config: Config,
    /// Clients waiting in BLPOP.
    pub(crate) blocked: Blocked,
    clients: AtomicUsize,
    /// Clients blocked in WAIT or WAITAOF on a replica set's node (they wait on the set,
    /// not in [`Blocked`]'s line).
    pub(crate) waiting_for_replicas: AtomicUsize,
    next_client_id: AtomicU64,
    /// The open connections, for CLIENT LIST and KILL.
    pub(crate) registry: Registry,
    /// Client-side caching: who tracks, and who read what.
    pub(crate) tracking: Tracking,
    /// INFO's counters.
    pub(crate) stats: Stats,
    /// Faults on named clients (`NXLOCK.FAULT`).
    pub(crate) client_faults: ClientFaults,
    /// When the server started (INFO's uptime).
    pub(crate) started: Instant,
    /// INFO's `run_id`: random, different for every server.
    pub(crate) run_id: String,
    /// `CLUSTER MYID` (cluster mode): random, 40 hex digits like the run id.
    pub(crate) node_id: String,
    /// What Redis would log at start-up about the settings ([`crate::Server::warnings`]).
    pub(crate) warnings: Vec<String>,
}

impl Shared {
    pub(crate) fn new(options: ServerOptions, port: u16, scripts: Box<dyn ScriptEngine>) -> Self {
        let first = options
            .db
            .clone()
            .unwrap_or_else(|| MemoryBackend::with_clock(Clock::system()));
        let clock = lock_core::KvBackend::clock(&first);
        // Pub/sub is not per database in Redis: every database shares the first's.
        let mut dbs: Vec<_> = (1..DATABASES)
            .map(|index| {
                MemoryBackend::with_shared_pubsub(clock.clone(), &first)
                    .with_database_index(index as u32)
            })
            .collect();
        dbs.insert(0, first);
        // RANDOMKEY and DBSIZE in O(1), as in Redis.
        for db in &dbs {
            db.index_keys();
        }
        Self {
            config: Config::new(&options, port),
            options,
            port,
            clock,
            dbs,
            scripts,
            blocked: Blocked::default(),
            clients: AtomicUsize::new(0),
            waiting_for_replicas: AtomicUsize::new(0),
            next_client_id: AtomicU64::new(1),
            registry: Registry::default(),
            tracking: Tracking::default(),
            stats: Stats::default(),
            client_faults: ClientFaults::default(),
            started: Instant::now(),
            run_id: random_hex_id(),
            node_id: random_hex_id(),
            warnings: Vec::new(),
        }
    }

    /// Clients blocked now (INFO's `blocked_clients`): in BLPOP's kin, and in a WAIT for
    /// a replica set's replicas.
    pub(crate) fn blocked_clients(&self) -> usize {
        self.blocked.len() + self.waiting_for_replicas.load(Ordering::Relaxed)
    }

    /// Database `index` (less than [`DATABASES`]).
    pub(crate) fn db(&self, index: usize) -> &MemoryBackend {
        &self.dbs[index]
    }

    /// Every database, in order.
    pub(crate) fn dbs(&self) -> &[MemoryBackend] {
        &self.dbs
    }

    pub(crate) fn requires_auth(&self) -> bool {
        self.options.requirepass.is_some()
    }

    /// Connections open now.
    pub(crate) fn clients(&self) -> usize {
        self.clients.load(Ordering::Relaxed)
    }

    /// Counts a new connection: its client id, and whether it is over the limit.
    pub(crate) fn connected(&self) -> (u64, bool) {
        let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let open = self.clients.fetch_add(1, Ordering::AcqRel);
        let over_limit = open >= self.config.max_clients();
        if over_limit {
            self.stats.rejected_connection();
        }
        (id, over_limit)
    }

    /// Connections accepted since the server started.
    pub(crate) fn connections_received(&self) -> u64 {
        self.next_client_id.load(Ordering::Relaxed) - 1
    }

    /// Counts a connection gone.
    pub(crate) fn disconnected(&self) {
        self.clients.fetch_sub(1, Ordering::AcqRel);
    }
}

/// 40 random hex digits, as Redis's run and node ids.
fn random_hex_id() -> String {
    (0..40)
        .map(|_| char::from_digit(fastrand::u32(..16), 16).expect("a hex digit"))
        .collect()
}
