//! What the server remembers about one connection.

use std::sync::Arc;

use lock_memory::WatchMark;
use tokio::sync::Notify;

use crate::commands::pubsub::Subscriptions;
use crate::reply::Protocol;

/// One client connection's state.
#[derive(Debug)]
pub(crate) struct Client {
    /// `CLIENT ID`.
    pub(crate) id: u64,
    /// The selected database (`SELECT`).
    pub(crate) db: usize,
    /// False until AUTH when the server has a password.
    pub(crate) authenticated: bool,
    /// `CLIENT SETNAME`.
    pub(crate) name: Option<Vec<u8>>,
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
}

/// Whether the client gets replies (`CLIENT REPLY ON|OFF|SKIP`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Replies {
    #[default]
    On,
    Off,
    /// None for the next command, then on again.
    SkipNext,
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
    pub(crate) commands: Vec<Vec<Vec<u8>>>,
    pub(crate) refused: bool,
}

impl Client {
    pub(crate) fn new(id: u64, requires_auth: bool) -> Self {
        Self {
            id,
            db: 0,
            authenticated: !requires_auth,
            name: None,
            quit: false,
            protocol: Protocol::Resp2,
            transaction: None,
            watched: Vec::new(),
            subscriptions: Subscriptions::default(),
            replies: Replies::On,
            no_evict: false,
            kill: Arc::new(Notify::new()),
        }
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
    }
}
