//! [`Steering`]: who decides whether a connection's command runs and its reply goes: the
//! explorer's [`Observer`] for a tagged connection, or the faults a test set on the
//! client's name (`NXLOCK.FAULT`). Both answer the same questions, so a connection asks
//! one of them the same way.

use crate::state::client_faults::ClientFaults;
use crate::state::observer::{After, Before, Observer};

/// The one that steers a connection's command.
pub(crate) enum Steering<'a> {
    /// A connection an explored client stands behind.
    Explored {
        /// The client.
        tag: usize,
        /// The explorer's observer.
        observer: &'a dyn Observer,
    },
    /// A named client with a fault set on it.
    Faulted {
        /// The client's name.
        name: Vec<u8>,
        /// The server's fault table.
        faults: &'a ClientFaults,
    },
}

impl Steering<'_> {
    /// The command `args` arrived: whether it runs.
    pub(crate) fn before(&self, args: &[Vec<u8>]) -> Before {
        match self {
            Steering::Explored { tag, observer } => observer.before(*tag, args),
            Steering::Faulted { name, faults } => faults.before(name),
        }
    }

    /// The command, held, has waited its time: whether it runs now.
    pub(crate) fn held(&self, args: &[Vec<u8>]) -> Before {
        match self {
            Steering::Explored { tag, observer } => observer.held(*tag, args),
            Steering::Faulted { .. } => Before::Run,
        }
    }

    /// The command ran and answered `reply`: whether the reply goes.
    pub(crate) fn after(&self, args: &[Vec<u8>], reply: &[u8]) -> After {
        match self {
            Steering::Explored { tag, observer } => observer.after(*tag, args, reply),
            Steering::Faulted { name, faults } => faults.after(name),
        }
    }
}
