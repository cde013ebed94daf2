//! What the server remembers about one connection.

use std::sync::{Arc, Mutex};

use lock_memory::{WatchMark, WriteOffset};
use tokio::sync::Notify;

use super::subscriptions::Subscriptions;
use crate::protocol::reply::Protocol;
use crate::protocol::request::Request;

/// One client connection's state.
#[derive(Debug)]
pub(crate) struct Client {
    /// `CLIENT ID`.
    pub(crate) id: u64,
    /// The explored client this connection stands for: its listener's
    /// ([`Server::listen_as`](crate::Server::listen_as)); `None` on the main port.
    pub(crate) tag: Option<usize>,
    /// The selected database (`SELECT`).
    pub(crate) db: usize,
    /// False until AUTH when the server has a password.
    pub(crate) authenticated: bool,
    /// `CLIENT SETNAME`.
    pub(crate) name: Option<Vec<u8>>,
    /// `CLIENT SETINFO LIB-NAME` and `LIB-VER` (Redis 7.2 and later).
    pub(crate) library: Library,
    /// Set by QUIT: reply, then close.
    pub(crate) quit: bool,
    /// RESP2 until `HELLO 3`.
    pub(crate) protocol: Protocol,
    /// Commands queued since MULTI, and whether one was refused (EXEC then aborts).
    pub(crate) transaction: Option<Queued>,
    /// Keys under WATCH, until EXEC, DISCARD, UNWATCH, RESET or the connection ends.
    pub(crate) watched: Vec<Watched>,
    /// Channels and patterns, and the inbox their messages arrive in.
    pub(crate) subscriptions: Subscriptions,
    /// `CLIENT REPLY`.
    pub(crate) replies: Replies,
    /// `CLIENT NO-EVICT` (there is no eviction; CLIENT LIST shows the flag).
    pub(crate) no_evict: bool,
    /// Notified when a `CLIENT KILL` picks this connection.
    pub(crate) kill: Arc<Notify>,
    /// Asked by a `CLIENT UNBLOCK` that picks this connection while it blocks.
    pub(crate) unblock: Arc<Unblock>,
    /// The connection's buffers while a command runs, as CLIENT LIST reports them.
    pub(crate) buffers: Buffers,
    /// `CLIENT TRACKING ON` (the mode itself is the server's, in `Tracking`).
    pub(crate) tracks: bool,
    /// `CLIENT CACHING yes|no`, for the next command (not CLIENT, not in MULTI).
    pub(crate) caching: bool,
    /// Whether the last script run read a key (a tracking client then tracks its KEYS).
    pub(crate) script_read: bool,
    /// The replication offset of its last write, on a replica set's node: what its
    /// `WAIT` waits for (Redis's `woff`).
    pub(crate) write_offset: Option<WriteOffset>,
}

/// A connection's buffers while one of its commands runs (all 0 between commands).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Buffers {
    /// The query buffer's bytes from the command's start on (`qbuf`).
    pub(crate) query: usize,
    /// Room left in the query buffer (`qbuf-free`).
    pub(crate) query_free: usize,
    /// The bytes of the command's arguments (`argv-mem`).
    pub(crate) arguments: usize,
    /// The reply buffer's size (`rbs`).
    pub(crate) reply: usize,
}

impl Buffers {
    /// `tot-mem`: the buffers together (the connection's own state is not counted).
    pub(crate) fn total(&self) -> usize {
        self.query + self.query_free + self.arguments + self.reply
    }
}

/// How `CLIENT UNBLOCK` ends a blocked command: as if it timed out, or with an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnblockMode {
    Timeout,
    Error,
}

/// A `CLIENT UNBLOCK` request for one connection.
#[derive(Debug, Default)]
pub(crate) struct Unblock {
    notify: Notify,
    mode: Mutex<Option<UnblockMode>>,
}

impl Unblock {
    /// Asks the blocked connection to stop waiting.
    pub(crate) fn request(&self, mode: UnblockMode) {
        *self
            .mode
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(mode);
        self.notify.notify_one();
    }

    /// Forgets a request that came too late for the command it was meant for.
    pub(crate) fn forget(&self) {
        self.mode
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
    }

    /// Waits for a request. Cancel-safe.
    pub(crate) async fn requested(&self) -> UnblockMode {
        loop {
            self.notify.notified().await;
            let mode = self
                .mode
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take();
            // A permit left by a request that was forgotten carries no mode.
            if let Some(mode) = mode {
                return mode;
            }
        }
    }
}

/// Whether the client gets replies (`CLIENT REPLY ON|OFF|SKIP`). Pub/sub pushes (messages
/// and subscription confirmations) are written whatever this says, as Redis writes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Replies {
    #[default]
    On,
    Off,
    /// Set by `CLIENT REPLY SKIP`: none for the next command.
    SkipNext,
    /// The command running now gets no reply (unless it is `CLIENT REPLY ON`, which
    /// turns replies on for itself too); then on again.
    Skipping,
}

impl Replies {
    /// As a command starts: a skip asked for by the command before applies to it.
    pub(crate) fn starting(self) -> Self {
        match self {
            Replies::SkipNext => Replies::Skipping,
            other => other,
        }
    }

    /// As a command ends: a skip applied to it is over.
    pub(crate) fn ended(self) -> Self {
        match self {
            Replies::Skipping => Replies::On,
            other => other,
        }
    }
}

/// One WATCHed key.
#[derive(Debug)]
pub(crate) struct Watched {
    pub(crate) db: usize,
    pub(crate) key: Vec<u8>,
    pub(crate) mark: WatchMark,
}

/// A MULTI block being queued.
#[derive(Debug, Default)]
pub(crate) struct Queued {
    pub(crate) commands: Vec<Request>,
    pub(crate) refused: bool,
}

impl Client {
    pub(crate) fn new(id: u64, requires_auth: bool) -> Self {
        Self {
            id,
            tag: None,
            db: 0,
            authenticated: !requires_auth,
            name: None,
            library: Library::default(),
            quit: false,
            protocol: Protocol::Resp2,
            transaction: None,
            watched: Vec::new(),
            subscriptions: Subscriptions::default(),
            replies: Replies::On,
            no_evict: false,
            kill: Arc::new(Notify::new()),
            unblock: Arc::new(Unblock::default()),
            buffers: Buffers::default(),
            tracks: false,
            caching: false,
            script_read: false,
            write_offset: None,
        }
    }

    /// Switches the protocol (`HELLO`, `RESET`): replies and pushes follow it.
    pub(crate) fn set_protocol(&mut self, protocol: Protocol) {
        self.protocol = protocol;
        self.subscriptions.protocol = protocol;
    }

    /// Whether a RESP2 subscription restricts what the connection may run.
    pub(crate) fn restricted(&self) -> bool {
        self.subscriptions.active() && self.protocol == Protocol::Resp2
    }

    /// Whether the client is in its ordinary state, where a keyspace command may join a
    /// pipeline step: authenticated, no MULTI open, not restricted by a subscription.
    pub(crate) fn plain(&self) -> bool {
        self.authenticated
            && self.transaction.is_none()
            && !self.restricted()
            && self.replies == Replies::On
            && !self.tracks
    }
}

/// The client library a connection named with `CLIENT SETINFO` (Redis 7.2 and later).
#[derive(Clone, Debug, Default)]
pub(crate) struct Library {
    /// `LIB-NAME`.
    pub(crate) name: Option<Vec<u8>>,
    /// `LIB-VER`.
    pub(crate) version: Option<Vec<u8>>,
}
