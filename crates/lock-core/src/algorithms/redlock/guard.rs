//! A held [`Redlock`](super::Redlock): its validity, the nodes that granted it, release
//! and extend on every node.

use std::fmt;
use std::time::Duration;

use super::{Nodes, RedlockOptions, valid_until_ms};
use crate::algorithms::Hold;
use crate::algorithms::held::{Held, Releaser};
use crate::algorithms::{int_reply, ms_arg};
use crate::lock::{ReleaseError, ttl_ms};
use crate::scripts::COMPARE_AND_PEXPIRE;
use crate::turns::Turn;
use crate::{Clock, KvBackend, LockError, LockGuard};

/// A held [`Redlock`](super::Redlock).
///
/// [`release`](LockGuard::release) answers `Ok(true)` when a quorum still had our token
/// and deleted it, `Ok(false)` when too few had it for us to have still held the lock,
/// and an error when failures leave it open (the nodes that answered have deleted ours
/// either way).
pub struct RedlockGuard<B: KvBackend + Clone + 'static> {
    held: Held<QuorumRelease<B>>,
    /// The nodes that confirmed the hold.
    held_nodes: Vec<usize>,
    /// For an extend's drift.
    redlock: RedlockOptions,
}

/// Compare-and-delete of the token on every node, counted against the quorum.
struct QuorumRelease<B> {
    nodes: Nodes<B>,
    token: String,
    /// This process's turn at the lock, passed on when the hold ends.
    turn: Option<Turn>,
}

impl<B: KvBackend + Clone + 'static> Releaser for QuorumRelease<B> {
    fn key(&self) -> &[u8] {
        &self.nodes.key
    }

    async fn release(&mut self, _hold: &Hold) -> Result<bool, LockError> {
        let tally = self.nodes.release(&self.token).await;
        if tally.yes() >= self.nodes.quorum {
            Ok(true)
        } else if tally.refused() {
            Ok(false)
        } else {
            Err(tally.no_quorum(&self.nodes.key))
        }
    }

    fn detach(&mut self) -> Self {
        Self {
            nodes: self.nodes.clone(),
            token: self.token.clone(),
            turn: self.turn.take(),
        }
    }

    fn describe(&self, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("token", &self.token);
    }
}

impl<B: KvBackend + Clone + 'static> RedlockGuard<B> {
    pub(super) fn held(
        nodes: Nodes<B>,
        token: String,
        valid_until_ms: i64,
        held_nodes: Vec<usize>,
        redlock: RedlockOptions,
    ) -> Self {
        let hold = Hold {
            clock: nodes.clock.clone(),
            valid_until_ms,
        };
        let releaser = QuorumRelease {
            nodes,
            token,
            turn: None,
        };
        Self {
            held: Held::new(releaser, hold),
            held_nodes,
            redlock,
        }
    }

    pub(super) fn with_turn(mut self, turn: Option<Turn>) -> Self {
        if let Some(turn) = &turn {
            turn.holds_until(self.held.valid_until_ms());
        }
        self.held.releaser.turn = turn;
        self
    }

    /// The nodes (indexes into the lock's node list) that confirmed this hold when it was
    /// acquired or last extended. Nodes not waited for (fail-fast) are not among them.
    pub fn held_nodes(&self) -> &[usize] {
        &self.held_nodes
    }

    /// How long the hold is still valid from now (zero once it is not).
    pub fn validity(&self) -> Duration {
        let left = self.held.valid_until_ms() - self.held.clock().now_ms();
        Duration::from_millis(u64::try_from(left).unwrap_or(0))
    }

    /// The random token this acquisition wrote on every node.
    pub fn token(&self) -> &str {
        &self.held.releaser.token
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for RedlockGuard<B> {
    held_guard!();

    /// Compare-and-PEXPIRE on every node: `Ok(true)` when a quorum extended and the
    /// validity counted from this extend's start is positive. `Ok(false)` when too many
    /// nodes no longer have our token; [`LockError::NoQuorum`] when failures leave it
    /// open. The hold is unchanged unless the extend succeeded.
    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let Held { releaser, hold, .. } = &mut self.held;
        let nodes = &releaser.nodes;
        let drift_ms = self.redlock.checked_drift_ms(ttl_ms)?;
        let started_us = nodes.clock.now_us();
        let (token, ttl) = (releaser.token.as_bytes(), ms_arg(ttl_ms));
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
            hold.valid_until_ms = valid_until;
            self.held_nodes = tally.yes_nodes();
            if let Some(turn) = &releaser.turn {
                turn.holds_until(valid_until);
            }
            return Ok(true);
        }
        if tally.yes() >= nodes.quorum || tally.refused() {
            return Ok(false);
        }
        Err(tally.no_quorum(&nodes.key))
    }
}

held_debug!(RedlockGuard, held_nodes);
