//! A held [`Redlock`](super::Redlock): its validity, the nodes that granted it, release
//! and extend on every node.

use std::fmt;
use std::time::Duration;

use super::{Nodes, RedlockOptions, valid_until_ms};
use crate::algorithms::{int_reply, ms_arg};
use crate::lock::{ReleaseError, ttl_ms};
use crate::scripts::COMPARE_AND_PEXPIRE;
use crate::turns::Turn;
use crate::{Clock, KvBackend, LockError, LockGuard};

/// A held [`Redlock`](super::Redlock).
pub struct RedlockGuard<B: KvBackend + Clone + 'static> {
    nodes: Nodes<B>,
    token: String,
    valid_until_ms: i64,
    held: Vec<usize>,
    /// For an extend's drift.
    redlock: RedlockOptions,
    armed: bool,
    /// This process's turn at the lock, passed on when the hold ends.
    turn: Option<Turn>,
}

impl<B: KvBackend + Clone + 'static> RedlockGuard<B> {
    pub(super) fn held(
        nodes: Nodes<B>,
        token: String,
        valid_until_ms: i64,
        held: Vec<usize>,
        redlock: RedlockOptions,
    ) -> Self {
        Self {
            nodes,
            token,
            valid_until_ms,
            held,
            redlock,
            armed: true,
            turn: None,
        }
    }

    pub(super) fn with_turn(mut self, turn: Option<Turn>) -> Self {
        if let Some(turn) = &turn {
            turn.holds_until(self.valid_until_ms);
        }
        self.turn = turn;
        self
    }

    /// The nodes (indexes into the lock's node list) that confirmed this hold when it was
    /// acquired or last extended. Nodes not waited for (fail-fast) are not among them.
    pub fn held_nodes(&self) -> &[usize] {
        &self.held
    }

    /// How long the hold is still valid from now (zero once it is not).
    pub fn validity(&self) -> Duration {
        let left = self.valid_until_ms - self.nodes.clock.now_ms();
        Duration::from_millis(u64::try_from(left).unwrap_or(0))
    }

    /// The random token this acquisition wrote on every node.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for RedlockGuard<B> {
    fn key(&self) -> &[u8] {
        &self.nodes.key
    }

    fn clock(&self) -> &Clock {
        &self.nodes.clock
    }

    fn valid_until_ms(&self) -> i64 {
        self.valid_until_ms
    }

    /// `Ok(true)` when a quorum still had our token and deleted it, `Ok(false)` when
    /// too few had it for us to have still held the lock, an error when failures leave
    /// it open (the nodes that answered have deleted ours either way).
    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        let tally = self.nodes.release(&self.token).await;
        let released = if tally.yes() >= self.nodes.quorum {
            Ok(true)
        } else if tally.refused() {
            Ok(false)
        } else {
            Err(tally.no_quorum(&self.nodes.key))
        };
        ReleaseError::settle(released, self, |guard| guard.armed = false)
    }

    /// Compare-and-PEXPIRE on every node: `Ok(true)` when a quorum extended and the
    /// validity counted from this extend's start is positive. `Ok(false)` when too many
    /// nodes no longer have our token; [`LockError::NoQuorum`] when failures leave it
    /// open. The hold is unchanged unless the extend succeeded.
    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let nodes = &self.nodes;
        let drift_ms = self.redlock.checked_drift_ms(ttl_ms)?;
        let started_us = nodes.clock.now_us();
        let (token, ttl) = (self.token.as_bytes(), ms_arg(ttl_ms));
        let tally = nodes
            .each(nodes.fail_fast, |node| {
                let ttl = &ttl;
                async move {
                    let reply = node
                        .eval(&COMPARE_AND_PEXPIRE, &[&nodes.key], &[token, ttl])
                        .await?;
                    Ok(int_reply(&COMPARE_AND_PEXPIRE, reply)? == 1)
                }
            })
            .await;
        let valid_until = valid_until_ms(&nodes.clock, started_us, ttl_ms, drift_ms);
        if let Some(valid_until) = valid_until.filter(|_| tally.yes() >= nodes.quorum) {
            self.valid_until_ms = valid_until;
            self.held = tally.yes_nodes();
            if let Some(turn) = &self.turn {
                turn.holds_until(valid_until);
            }
            return Ok(true);
        }
        if tally.yes() >= nodes.quorum || tally.refused() {
            return Ok(false);
        }
        Err(tally.no_quorum(&nodes.key))
    }

    fn abandon(mut self) {
        self.armed = false;
    }
}

impl<B: KvBackend + Clone + 'static> fmt::Debug for RedlockGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedlockGuard")
            .field("key", &String::from_utf8_lossy(&self.nodes.key))
            .field("token", &self.token)
            .field("valid_until_ms", &self.valid_until_ms)
            .field("held_nodes", &self.held)
            .field("armed", &self.armed)
            .finish()
    }
}

impl<B: KvBackend + Clone + 'static> Drop for RedlockGuard<B> {
    fn drop(&mut self) {
        if self.armed {
            self.nodes
                .release_in_background(std::mem::take(&mut self.token), self.turn.take());
        }
    }
}
