//! [`Observer`]: what a server tells, and asks, whoever explores the clients behind it.
//!
//! A server started with an observer tags each connection with the client its listener
//! stands for ([`Server::listen_as`](crate::Server::listen_as)): a connection pool or a
//! reconnect stays the same client. Before each command of a tagged connection the
//! observer decides whether it runs now, later, or not at all; after it, whether its
//! reply is sent, sent late, or lost with the connection. The marker commands
//! (`NXLOCK.ENTER` and the rest, [`Marker`]) reach it as they arrive. Untagged
//! connections, and every connection of a server without an observer, are served as
//! always; markers are then accepted and ignored.

use std::fmt;
use std::time::Duration;

/// What happens to a tagged connection's command before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Before {
    /// It runs now.
    Run,
    /// It waits this long, then runs: a pause between two of the client's commands.
    Hold(Duration),
    /// The connection closes and the command never runs.
    Refuse,
    /// It is never answered, as by a black-holed server: the connection waits this long
    /// (past the client's own timeout), then closes, and the command never runs.
    Unanswered(Duration),
}

/// What happens to a tagged connection's reply once its command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// It is sent.
    Send,
    /// It is sent this much later.
    Late(Duration),
    /// The connection closes without it: the command ran, and the client cannot know.
    Lose,
}

/// How long a client's lock keeps it alone, as a marker states it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validity {
    /// `PX ms`: for this many milliseconds from when the client sent the marker. The
    /// server reads it when the marker arrives, which on a busy machine is later.
    Px(i64),
    /// `MONOTONIC ms`: until this instant of the host's monotonic clock
    /// (`CLOCK_MONOTONIC`, what Python's `time.monotonic()` and Node's
    /// `process.hrtime` read), in milliseconds with up to three decimals, here in µs. A
    /// marker that arrives late is not stale.
    MonotonicUs(i64),
}

/// A marker command: what the client says it is doing, for the checkers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marker {
    /// `NXLOCK.ENTER resource [PX ms | MONOTONIC ms] [FENCE n]`: it enters the
    /// resource's critical section, believing its lock valid as stated (unknown without
    /// a validity), holding `fence` for a fenced resource. Sent again before its EXIT,
    /// it re-states the section (a new validity, a new fence); it never nests.
    Enter {
        /// The resource.
        resource: String,
        /// How long the lock promised it is alone.
        validity: Option<Validity>,
        /// The fence its lock handed it.
        fence: Option<i64>,
    },
    /// `NXLOCK.EXTEND resource (PX ms | MONOTONIC ms)`: its lock on the resource was
    /// extended; it is alone as stated now.
    Extend {
        /// The resource.
        resource: String,
        /// How long the extended lock promised it is alone.
        validity: Validity,
    },
    /// `NXLOCK.EXIT resource`: it leaves the section.
    Exit {
        /// The resource.
        resource: String,
    },
    /// `NXLOCK.HOLDS key token`: its lock key holds its token now.
    Holds {
        /// The lock's key.
        key: Vec<u8>,
        /// The token it wrote there.
        token: Vec<u8>,
    },
    /// `NXLOCK.WRITE resource fence`: a write to a fenced resource.
    Write {
        /// The resource.
        resource: String,
        /// The fence the client's lock handed it.
        fence: i64,
    },
    /// `NXLOCK.INCR counter`: an increment begins.
    Increment {
        /// The counter.
        counter: String,
    },
    /// `NXLOCK.DONE`: the client's increment was applied.
    Done,
    /// `NXLOCK.FAILED`: the client's increment was not applied.
    Failed,
    /// `NXLOCK.PERMANENT prefix`: keys starting with `prefix` are kept without a TTL by
    /// design (a fence counter), and may outlive the run.
    Permanent {
        /// The key prefix.
        prefix: String,
    },
    /// `NXLOCK.COUNTER counter key`: the counter lives in the key `key`, which the
    /// checker reads at the end.
    Counter {
        /// The counter.
        counter: String,
        /// The key holding its value.
        key: String,
    },
}

/// Watches and steers the tagged connections of a server. Called on the connection's
/// task, between its commands: an implementation answers at once.
pub trait Observer: Send + Sync + fmt::Debug {
    /// Client `client`'s command `args` arrived: whether it runs.
    fn before(&self, client: usize, args: &[Vec<u8>]) -> Before;

    /// Client `client`'s command `args`, held by [`before`](Self::before), has waited
    /// its time: whether it runs now, or what befell it meanwhile (the server it was
    /// sent to failed over or stopped answering). A hold again counts as running. By
    /// default it runs.
    fn held(&self, client: usize, args: &[Vec<u8>]) -> Before {
        let _ = (client, args);
        Before::Run
    }

    /// Client `client`'s command `args` ran and answered `reply` (its RESP bytes, which
    /// may hold several replies, or none for a silenced one): whether the reply goes.
    fn after(&self, client: usize, args: &[Vec<u8>], reply: &[u8]) -> After;

    /// Client `client` sent `marker`: `Ok` answers `+OK`, `Err(text)` answers the
    /// error `text` (a stale fenced write is refused so).
    fn marker(&self, client: usize, marker: Marker) -> Result<(), String>;
}
