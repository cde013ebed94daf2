//! [`ClientFaults`]: faults set on named clients with `NXLOCK.FAULT`, for a test that
//! wants one client of several to stall, crash or lose a reply, without an explorer.
//!
//! A client is named as Redis names it (`CLIENT SETNAME`, or the client library's
//! `client_name`), so a fault outlives a reconnect: the new connection has the name again
//! once it sets it. The `NXLOCK.*` commands are never faulted, so a test can always clear.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::observer::{After, Before};

/// What befalls a faulted client's command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientFault {
    /// It waits this long on the server's clock (which `NXLOCK.FASTFORWARD` moves), then
    /// runs: a client paused, as by a GC pause or a slow network.
    Delay(Duration),
    /// The connection closes and the command never runs: the client crashed, or the
    /// network dropped it.
    Disconnect,
    /// The command runs, and the connection closes without its reply: it took effect,
    /// and the client cannot know.
    LoseReply,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    fault: ClientFault,
    /// Commands still to fault; `None` until cleared.
    remaining: Option<u64>,
}

/// The faults of every named client; empty (and free to ask) until one is set.
#[derive(Debug, Default)]
pub(crate) struct ClientFaults {
    /// Whether any is set: a connection asks this alone on its hot path.
    any: AtomicBool,
    table: Mutex<HashMap<Vec<u8>, Pending>>,
}

impl ClientFaults {
    /// Whether some client has a fault.
    pub(crate) fn active(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// Faults the next `count` commands of clients named `name` (all of them with
    /// `None`), in place of any fault they had.
    pub(crate) fn set(&self, name: &[u8], fault: ClientFault, count: Option<u64>) {
        let mut table = self.lock();
        table.insert(
            name.to_vec(),
            Pending {
                fault,
                remaining: count,
            },
        );
        self.any.store(true, Ordering::Release);
    }

    /// Clears the fault of `name`, or of every client.
    pub(crate) fn clear(&self, name: Option<&[u8]>) {
        let mut table = self.lock();
        match name {
            Some(name) => {
                table.remove(name);
            }
            None => table.clear(),
        }
        self.any.store(!table.is_empty(), Ordering::Release);
    }

    /// Whether the command of a client named `name` is faulted at all (before it runs).
    pub(crate) fn applies(&self, name: &[u8]) -> bool {
        self.active() && self.lock().contains_key(name)
    }

    /// A command of `name` arrived: whether it runs. A delay or a disconnect counts
    /// one command here; a lost reply counts in [`after`](Self::after).
    pub(crate) fn before(&self, name: &[u8]) -> Before {
        let mut table = self.lock();
        let Some(pending) = table.get(name).copied() else {
            return Before::Run;
        };
        let verdict = match pending.fault {
            ClientFault::Delay(pause) => Before::Hold(pause),
            ClientFault::Disconnect => Before::Refuse,
            ClientFault::LoseReply => return Before::Run,
        };
        self.count_one(&mut table, name);
        verdict
    }

    /// A command of `name` ran: whether its reply goes.
    pub(crate) fn after(&self, name: &[u8]) -> After {
        let mut table = self.lock();
        match table.get(name) {
            Some(Pending {
                fault: ClientFault::LoseReply,
                ..
            }) => {
                self.count_one(&mut table, name);
                After::Lose
            }
            _ => After::Send,
        }
    }

    fn count_one(&self, table: &mut HashMap<Vec<u8>, Pending>, name: &[u8]) {
        if let Some(pending) = table.get_mut(name)
            && let Some(remaining) = pending.remaining.as_mut()
        {
            *remaining -= 1;
            if *remaining == 0 {
                table.remove(name);
            }
        }
        self.any.store(!table.is_empty(), Ordering::Release);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Vec<u8>, Pending>> {
        // A panic elsewhere cannot leave the table half-changed: every change is one call.
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counted_fault_ends_after_its_commands() {
        let faults = ClientFaults::default();
        assert!(!faults.active());
        faults.set(b"a", ClientFault::Disconnect, Some(2));
        assert_eq!(faults.before(b"b"), Before::Run);
        assert_eq!(faults.before(b"a"), Before::Refuse);
        assert_eq!(faults.before(b"a"), Before::Refuse);
        assert_eq!(faults.before(b"a"), Before::Run);
        assert!(!faults.active());
    }

    #[test]
    fn a_lost_reply_counts_when_the_command_has_run() {
        let faults = ClientFaults::default();
        faults.set(b"a", ClientFault::LoseReply, Some(1));
        assert_eq!(faults.before(b"a"), Before::Run);
        assert_eq!(faults.after(b"a"), After::Lose);
        assert_eq!(faults.after(b"a"), After::Send);
    }

    #[test]
    fn an_uncounted_delay_lasts_until_cleared() {
        let faults = ClientFaults::default();
        let pause = Duration::from_millis(5);
        faults.set(b"a", ClientFault::Delay(pause), None);
        for _ in 0..3 {
            assert_eq!(faults.before(b"a"), Before::Hold(pause));
        }
        faults.clear(Some(b"a"));
        assert_eq!(faults.before(b"a"), Before::Run);
        assert!(!faults.active());
    }
}
