//! [`Starts`]: when each client of a run sent its first command. Liveness counts from
//! there, not from when its process was started: an interpreter's start-up is no part
//! of the lock, and a process that never sends a command is a harness error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::stalls::StallMeter;

/// Shared by a run's observers (which see the commands) and its processes (which wait
/// on them).
#[derive(Debug)]
pub(crate) struct Starts {
    firsts: Mutex<Vec<Option<Instant>>>,
    arrived: Notify,
    meter: StallMeter,
    /// Whether a client stated a validity relative to when its marker was sent (`PX`),
    /// which a stall between the client and the server lengthens.
    relative: AtomicBool,
}

impl Starts {
    pub(crate) fn new(clients: usize, meter: StallMeter) -> Self {
        Self {
            firsts: Mutex::new(vec![None; clients]),
            arrived: Notify::new(),
            meter,
            relative: AtomicBool::new(false),
        }
    }

    /// A client stated a validity as `PX`.
    pub(crate) fn relative_validity(&self) {
        self.relative.store(true, Ordering::Relaxed);
    }

    /// Whether any client stated a validity as `PX` in this run.
    pub(crate) fn used_relative_validity(&self) -> bool {
        self.relative.load(Ordering::Relaxed)
    }

    /// Client `client` sent a command (or a marker) now.
    pub(crate) fn sent(&self, client: usize) {
        let first = {
            let mut firsts = self.firsts.lock();
            match firsts.get_mut(client) {
                Some(slot @ None) => {
                    *slot = Some(Instant::now());
                    true
                }
                _ => false,
            }
        };
        if first {
            self.meter.started(client);
            self.arrived.notify_waiters();
        }
    }

    /// When client `client` sent its first command, waiting for it until `deadline`.
    pub(crate) async fn first(&self, client: usize, deadline: Instant) -> Option<Instant> {
        loop {
            let arrived = self.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            if let Some(first) = self.firsts.lock().get(client).copied().flatten() {
                return Some(first);
            }
            let timed_out = tokio::time::timeout_at(deadline.into(), arrived)
                .await
                .is_err();
            if timed_out {
                return self.firsts.lock().get(client).copied().flatten();
            }
        }
    }

    /// The run's stall meter.
    pub(crate) fn meter(&self) -> &StallMeter {
        &self.meter
    }
}
