//! Every open connection as `CLIENT LIST` shows it, and how `CLIENT KILL` reaches one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

use lock_memory::{Delivery, InboxAddress};

use lock_core::RedisVersion;

use crate::protocol::reply::Protocol;
use crate::state::client::{Buffers, Client, Library, Unblock, UnblockMode};
use crate::state::tracking::{Mode, Tracking};

/// What `CLIENT LIST` reports of one connection.
#[derive(Debug)]
struct Entry {
    addr: SocketAddr,
    laddr: SocketAddr,
    fd: i32,
    created: Instant,
    last_command: Instant,
    name: Option<Vec<u8>>,
    library: Library,
    db: usize,
    channels: usize,
    patterns: usize,
    /// Commands queued since MULTI, or -1.
    multi: i64,
    /// Keys under WATCH.
    watched: usize,
    blocked: bool,
    no_evict: bool,
    /// The last command (`client|list` for a subcommand), `NULL` before the first.
    command: String,
    resp: u8,
    /// The buffers of the command running now (0 when idle).
    buffers: Buffers,
    /// The largest reply buffer seen (`rbp`).
    reply_peak: usize,
    reach: Reach,
}

/// How the server reaches one connection from outside it.
#[derive(Debug)]
pub(crate) struct Reach {
    /// Notified when a `CLIENT KILL` picks it.
    pub(crate) kill: Arc<Notify>,
    /// Asked when a `CLIENT UNBLOCK` picks it.
    pub(crate) unblock: Arc<Unblock>,
    /// Where its pub/sub messages and tracking invalidations arrive.
    pub(crate) inbox: InboxAddress,
}

/// Which connections a `CLIENT KILL` or `CLIENT LIST` selects.
#[derive(Debug, Default)]
pub(crate) struct Filter {
    pub(crate) ids: Option<Vec<u64>>,
    pub(crate) addr: Option<String>,
    pub(crate) laddr: Option<String>,
    /// `Some(true)`: subscribers only (TYPE pubsub); `Some(false)`: the others (normal).
    pub(crate) pubsub: Option<bool>,
    /// TYPE master or replica: there are none.
    pub(crate) nobody: bool,
    /// This connection, left out unless SKIPME no.
    pub(crate) skip: Option<u64>,
}

/// The open connections.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    entries: Mutex<BTreeMap<u64, Entry>>,
}

impl Registry {
    fn entries(&self) -> MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Lists a new connection, and how to reach it.
    pub(crate) fn open(&self, id: u64, addr: SocketAddr, laddr: SocketAddr, fd: i32, reach: Reach) {
        let now = Instant::now();
        self.entries().insert(
            id,
            Entry {
                addr,
                laddr,
                fd,
                created: now,
                last_command: now,
                name: None,
                library: Library::default(),
                watched: 0,
                db: 0,
                channels: 0,
                patterns: 0,
                multi: -1,
                blocked: false,
                no_evict: false,
                command: "NULL".into(),
                resp: 2,
                buffers: Buffers::default(),
                reply_peak: 0,
                reach,
            },
        );
    }

    pub(crate) fn close(&self, id: u64) {
        self.entries().remove(&id);
    }

    /// Records what `client` looks like after running `args`.
    pub(crate) fn record(&self, client: &Client, args: &[Vec<u8>]) {
        let mut entries = self.entries();
        let Some(entry) = entries.get_mut(&client.id) else {
            return;
        };
        entry.last_command = Instant::now();
        // A client usually sends the same few commands: the name is built again only
        // when it changed.
        let same = (args.len() == 1 || !is_container(&args[0]))
            && entry.command.as_bytes().eq_ignore_ascii_case(&args[0]);
        if !same {
            entry.command = command_name(args);
        }
        entry.name.clone_from(&client.name);
        entry.library.clone_from(&client.library);
        entry.watched = client.watched.len();
        entry.db = client.db;
        (entry.channels, entry.patterns) = client.subscriptions.counts();
        entry.multi = client
            .transaction
            .as_ref()
            .map_or(-1, |queued| queued.commands.len() as i64);
        entry.no_evict = client.no_evict;
        entry.buffers = client.buffers;
        entry.reply_peak = entry.reply_peak.max(client.buffers.reply);
        entry.resp = if client.protocol == Protocol::Resp3 {
            3
        } else {
            2
        };
    }

    /// Marks `id` as blocked in a blocking command, or no longer.
    pub(crate) fn set_blocked(&self, id: u64, blocked: bool) {
        if let Some(entry) = self.entries().get_mut(&id) {
            entry.blocked = blocked;
        }
    }

    /// Delivers `delivery` to connection `id`'s inbox: false when it has gone.
    pub(crate) fn deliver(&self, id: u64, delivery: Delivery) -> bool {
        self.entries()
            .get(&id)
            .is_some_and(|entry| entry.reach.inbox.deliver(delivery))
    }

    /// Whether connection `id` is open.
    pub(crate) fn exists(&self, id: u64) -> bool {
        self.entries().contains_key(&id)
    }

    /// `CLIENT UNBLOCK`: asks connection `id` to end the blocking command it waits in;
    /// false when it waits in none.
    pub(crate) fn unblock(&self, id: u64, mode: UnblockMode) -> bool {
        match self.entries().get(&id) {
            Some(entry) if entry.blocked => {
                entry.reach.unblock.request(mode);
                true
            }
            _ => false,
        }
    }

    /// `CLIENT LIST` lines of the connections `filter` selects, oldest first.
    pub(crate) fn list(
        &self,
        filter: &Filter,
        tracking: &Tracking,
        version: RedisVersion,
    ) -> String {
        let entries = self.entries();
        entries
            .iter()
            .filter(|(id, entry)| filter.selects(**id, entry))
            .map(|(id, entry)| line(*id, entry, tracking.mode(*id), version))
            .collect()
    }

    /// `CLIENT INFO`: the line of connection `id`.
    pub(crate) fn info(&self, id: u64, tracking: &Tracking, version: RedisVersion) -> String {
        self.entries()
            .get(&id)
            .map(|entry| line(id, entry, tracking.mode(id), version))
            .unwrap_or_default()
    }

    /// Closes the connections `filter` selects (but not `me`, which the caller closes
    /// after its reply): how many were selected, and whether `me` was one.
    pub(crate) fn kill(&self, filter: &Filter, me: u64) -> (usize, bool) {
        let entries = self.entries();
        let mut killed = 0;
        let mut myself = false;
        for (id, entry) in entries.iter() {
            if !filter.selects(*id, entry) {
                continue;
            }
            killed += 1;
            if *id == me {
                myself = true;
            } else {
                entry.reach.kill.notify_one();
            }
        }
        (killed, myself)
    }
}

impl Registry {
    /// Closes the connections that wait without a command in flight of their own:
    /// blocked in one (BLPOP, WAIT) or subscribed. How many.
    pub(crate) fn kill_waiting(&self) -> usize {
        let entries = self.entries();
        let mut killed = 0;
        for entry in entries.values() {
            if entry.blocked || entry.channels + entry.patterns > 0 {
                entry.reach.kill.notify_one();
                killed += 1;
            }
        }
        killed
    }
}

impl Filter {
    fn selects(&self, id: u64, entry: &Entry) -> bool {
        let subscriber = entry.channels + entry.patterns > 0;
        !self.nobody
            && self.skip != Some(id)
            && self.ids.as_ref().is_none_or(|ids| ids.contains(&id))
            && self
                .addr
                .as_ref()
                .is_none_or(|a| *a == entry.addr.to_string())
            && self
                .laddr
                .as_ref()
                .is_none_or(|a| *a == entry.laddr.to_string())
            && self.pubsub.is_none_or(|pubsub| pubsub == subscriber)
    }
}

/// How Redis names a command in CLIENT LIST: `get`, or `client|list` for a subcommand.
/// Whether CLIENT LIST names a command's subcommand with it (`config|set`).
fn is_container(name: &[u8]) -> bool {
    [
        "client", "config", "object", "script", "command", "debug", "pubsub", "memory",
    ]
    .iter()
    .any(|container| name.eq_ignore_ascii_case(container.as_bytes()))
}

fn command_name(args: &[Vec<u8>]) -> String {
    let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
    let container = is_container(name.as_bytes());
    match args.get(1) {
        Some(sub) if container => format!(
            "{name}|{}",
            String::from_utf8_lossy(sub).to_ascii_lowercase()
        ),
        _ => name,
    }
}

/// One `CLIENT LIST` line, fields in Redis `version`'s order: 7.2 added `lib-name` and
/// `lib-ver`, 7.4 `watch`. Buffer sizes are the connection's own; output-buffer fields
/// (`obl`, `oll`, `omem`) read 0, as replies are written at once.
fn line(id: u64, entry: &Entry, tracking: Option<Mode>, version: RedisVersion) -> String {
    let mut flags = String::new();
    if entry.channels + entry.patterns > 0 {
        flags.push('P');
    }
    if entry.multi >= 0 {
        flags.push('x');
    }
    if entry.blocked {
        flags.push('b');
    }
    if let Some(mode) = &tracking {
        flags.push('t');
        if mode.broken_redirect {
            flags.push('R');
        }
        if mode.bcast {
            flags.push('B');
        }
    }
    let redirect = tracking.map_or(-1, |mode| i64::try_from(mode.redirect).unwrap_or(-1));
    if entry.no_evict {
        flags.push('e');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    let name = entry
        .name
        .as_deref()
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let watch = match version {
        RedisVersion::V7_4 => format!(" watch={}", entry.watched),
        _ => String::new(),
    };
    let library = match version {
        RedisVersion::V7_0 => String::new(),
        _ => {
            let field = |value: &Option<Vec<u8>>| {
                value
                    .as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default()
                    .into_owned()
            };
            format!(
                " lib-name={} lib-ver={}",
                field(&entry.library.name),
                field(&entry.library.version)
            )
        }
    };
    format!(
        "id={id} addr={} laddr={} fd={} name={name} age={} idle={} flags={flags} db={} sub={} psub={} ssub=0 multi={}{watch} qbuf={} qbuf-free={} argv-mem={} multi-mem=0 rbs={} rbp={} obl=0 oll=0 omem=0 tot-mem={} events=r cmd={} user=default redir={redirect} resp={}{library}\n",
        entry.addr,
        entry.laddr,
        entry.fd,
        entry.created.elapsed().as_secs(),
        entry.last_command.elapsed().as_secs(),
        entry.db,
        entry.channels,
        entry.patterns,
        entry.multi,
        entry.buffers.query,
        entry.buffers.query_free,
        entry.buffers.arguments,
        entry.buffers.reply,
        entry.reply_peak,
        entry.buffers.total(),
        entry.command,
        entry.resp,
    )
}
