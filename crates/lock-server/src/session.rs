//! What the server remembers about one connection.

use lock_core::{Value, WatchMark};

use crate::reply::Protocol;

/// One client connection's state.
#[derive(Debug)]
pub(crate) struct Session {
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
    pub(crate) transaction: Option<Transaction>,
    /// Keys under WATCH, until EXEC, DISCARD, UNWATCH, RESET or the connection ends.
    pub(crate) watched: Vec<Watched>,
    /// Pub/sub events the last EXEC's commands caused, each with the index of the reply
    /// element it goes before: Redis writes them inside the EXEC reply.
    pub(crate) exec_events: Vec<(usize, Value)>,
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
pub(crate) struct Transaction {
    pub(crate) queued: Vec<Vec<Vec<u8>>>,
    pub(crate) refused: bool,
}

impl Session {
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
            exec_events: Vec::new(),
        }
    }
}
