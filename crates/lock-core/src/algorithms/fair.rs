//! A first-come first-served lock: waiters take tickets and the release hands the lock
//! straight to the next live one.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};
use std::time::Duration;

use super::held::{Held, Releaser};
use super::token::TokenRelease;
use super::{Hold, bind, int_reply, ms_arg, unexpected};
use crate::lock::{Budget, ReleaseError, Supports, run_in_background};
use crate::publish_command;
use crate::scripts::{COMPARE_AND_DELETE, FAIR_ACQUIRE, FAIR_EXTEND, FAIR_RELEASE};
use crate::turns::{Grant, Turn, Turns};
use crate::wake::{SubscriptionSlot, Waiter, Woken};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockGuard, LockName,
    LockOptions, NamedLock, SetOptions, SetReply, Value,
};

/// Releases in a row that must find nobody waiting before acquires try `SET NX` again.
const CALM: u8 = 2;

/// Default [`FairLock::with_patience`].
pub const DEFAULT_PATIENCE: Duration = Duration::from_secs(5);

/// A fair lock named `name`: blocked clients are served in arrival order.
///
/// Keys (one hash tag): `{name}:lock` (the holder's token, followed by
/// [`LINE_MARK`](crate::scripts::LINE_MARK) once a line formed behind the hold),
/// `{name}:issued` and `{name}:served` (ticket counters, deleted whenever a release
/// finds the line empty, and expiring a patience after the last ticket was written or
/// served), and one `{name}:ticket:<n>` per waiter. Wake-ups go to the channel
/// `{name}:wake`.
///
/// - Uncontended, a cycle is a [`TokenLock`](crate::TokenLock)'s: the acquire is one
///   `SET NX PX`, and the release one [`COMPARE_AND_DELETE`] of the bare token. A waiter
///   that queues behind the hold marks the lock's value, so that compare-and-delete
///   finds nothing to delete, and the release is sent again as [`FAIR_RELEASE`], which
///   hands off. The line is only paid for once this lock object has seen it:
///   after an acquire found the lock taken, until two of its releases in a row find
///   nobody waiting, acquires go straight to [`FAIR_ACQUIRE`], so a contended cycle
///   still costs two commands (one release that finds the line empty for a moment is
///   not yet the end of contention).
/// - A blocked [`acquire`](LockAlgorithm::acquire) takes a ticket ([`FAIR_ACQUIRE`]),
///   subscribes to the channel and sleeps.
/// - [`release`](LockGuard::release) ([`FAIR_RELEASE`]) writes the next live waiter's
///   token into the lock and publishes it: the waiter owns the lock the moment the release
///   runs and only has to hear about it. No waiter races another for it, and a cycle under
///   contention costs two commands: a ticket and a release.
/// - A waiter refreshes its ticket every third of the *patience* (default 5 s) while it
///   waits. A waiter that died stops refreshing: its ticket lapses within the patience and
///   is skipped, and if the lock was already handed to it, that hand-off (whose TTL is the
///   patience) lapses too. A dead waiter holds the line up by at most twice the patience.
/// - A handed-over hold starts with the patience as its TTL (never more than the lock's
///   TTL: the patience is capped by it). If the hold is still running a third of the
///   patience later, a background claim ([`FAIR_EXTEND`]) raises it to the lock's
///   TTL; short holds never pay for it. The claim is a no-op if the lock has moved on.
/// - An acquire that ends without the lock (its policy gave up, or the backend failed)
///   leaves the line before it returns: a caller told [`LockError::Timeout`] is never
///   handed the lock afterwards. (If the lock was handed over in the last moment, leaving
///   passes it on.) With [`Retry::Once`](crate::Retry::Once) an acquire only looks, and
///   takes no ticket.
/// - Cancelling a waiting acquire (dropping its future) cannot wait for anything: it
///   leaves the line in the background, one round trip later. A release in that window
///   may hand the lock to the cancelled waiter's token; the background leave then passes
///   it on, and if the process died first, the hand-off lapses within the patience.
///
/// - Tasks that share one `FairLock` (its clones, or an `Arc`) take turns in process,
///   first come first served, and only the task whose turn it is talks to the backend:
///   the next one starts the moment the previous hold ends, so the backend sees one
///   client of this process at a time. A hold with a task waiting behind it is *passed*:
///   its release is one [`FAIR_RELEASE`] naming the next task's fresh token, which the
///   script writes into the lock when nobody waits in the backend's line (a waiter
///   there is served first, and the next task then enters the line). The next task
///   holds the lock the moment its turn comes, valid from before the pass was sent, and
///   a hold costs one command. The wait for a turn counts against the acquire's policy like
///   refused attempts; a [`try_acquire`](LockAlgorithm::try_acquire) behind a busy turn
///   is [`Attempt::Held`] at once. A hold past its validity holds nobody up: the tasks
///   behind it then go to the backend without a turn. Across processes the line in the
///   backend decides; a task enters it when its turn in process comes.
///
/// Every client of one lock must use the same patience.
///
/// # Invariants
///
/// - At most one client holds the lock, as for [`TokenLock`](crate::TokenLock).
/// - Waiters that keep their tickets fresh are served in ticket order; nobody takes the
///   lock ahead of a live waiter while the lock is held or handed over. The one gap: a
///   hold that lapsed (its holder died or overran its TTL) leaves the lock free until the
///   first waiter looks again, and in that moment a newcomer's `SET NX` may take it once
///   ahead of the line, which is served next.
/// - A hold by hand-off is valid for the patience from the waiter's last look at the line
///   (then for the TTL, once claimed): [`LockGuard::valid_until_ms`] says which.
#[derive(Clone, Debug)]
pub struct FairLock<B: KvBackend + Clone + 'static> {
    backend: B,
    binding: LockBinding,
    line: Arc<Line>,
    subscription: SubscriptionSlot,
    /// Shared by clones; a turn may come with a hold passed on by the previous task.
    turns: Turns<FairGuard<B>>,
}

/// The queue's keys and the arguments every fair script shares.
#[derive(Clone, Debug)]
struct Line {
    issued: Vec<u8>,
    served: Vec<u8>,
    ticket_prefix: Vec<u8>,
    channel: Vec<u8>,
    /// `PUBLISH` or `SPUBLISH`, as the backend wakes waiters.
    publish: &'static [u8],
    /// Releases in a row by this lock object (and its clones) that found nobody waiting,
    /// up to [`CALM`]; below it, acquires skip the `SET NX` fast path.
    calm: Arc<AtomicU8>,
    patience_ms: Vec<u8>,
    patience: Duration,
    /// The lock's TTL, for a hold passed to another task.
    ttl_ms: i64,
}

impl Line {
    /// Whether acquires may try the fast path.
    fn calm(&self) -> bool {
        self.calm.load(Ordering::Relaxed) >= CALM
    }

    /// Someone waits, or waited: acquires go straight to the line until it is calm again.
    fn met_a_line(&self) {
        self.calm.store(0, Ordering::Relaxed);
    }

    fn nobody_waited(&self) {
        let _ = self
            .calm
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_add(1).min(CALM))
            });
    }

    /// A holder's release: while calm, the token lock's compare-and-delete, which finds
    /// nothing to delete if a line marked the hold (or the hold was lost); then the
    /// release in full.
    async fn release_held<B: KvBackend>(
        &self,
        backend: &B,
        lock: &[u8],
        token: &str,
    ) -> crate::Result<Value> {
        if self.calm() {
            let deleted = backend
                .eval(&COMPARE_AND_DELETE, &[lock], &[token.as_bytes()])
                .await?;
            if deleted == Value::Int(1) {
                return Ok(deleted);
            }
        }
        self.release(backend, lock, token, 0).await
    }

    async fn release<B: KvBackend>(
        &self,
        backend: &B,
        lock: &[u8],
        token: &str,
        ticket: i64,
    ) -> crate::Result<Value> {
        self.release_or_pass(backend, lock, token, ticket, None)
            .await
    }

    /// [`FAIR_RELEASE`], as a pass to `successor`'s token if given.
    async fn release_or_pass<B: KvBackend>(
        &self,
        backend: &B,
        lock: &[u8],
        token: &str,
        ticket: i64,
        successor: Option<&str>,
    ) -> crate::Result<Value> {
        let ticket = ms_arg(ticket);
        let ttl_ms = successor.map(|_| ms_arg(self.ttl_ms)).unwrap_or_default();
        let args: [&[u8]; 8] = [
            token.as_bytes(),
            &ticket,
            &self.patience_ms,
            &self.ticket_prefix,
            &self.channel,
            self.publish,
            successor.unwrap_or_default().as_bytes(),
            &ttl_ms,
        ];
        // Without a successor, the last two are not sent.
        let args = if successor.is_some() {
            &args[..]
        } else {
            &args[..6]
        };
        let keys: [&[u8]; 3] = [lock, &self.issued, &self.served];
        backend.eval(&FAIR_RELEASE, &keys, args).await
    }

    /// Ends the hold of `token` whose turn is `turn`. With another task of this process
    /// waiting for the turn, the hold is passed to it in one [`FAIR_RELEASE`] (unless a
    /// waiter in the backend's line comes first): the backend records the successor's
    /// own token, and the successor holds the lock the moment its turn arrives. Otherwise
    /// a plain release. Returns the reply, and the turn unless it went to the successor
    /// (the caller passes it on once the release is settled).
    async fn end_hold<B: KvBackend + Clone + 'static>(
        self: &Arc<Self>,
        backend: &B,
        key: &Arc<[u8]>,
        clock: &Clock,
        token: &str,
        turn: Option<Turn<FairGuard<B>>>,
    ) -> (crate::Result<Value>, Option<Turn<FairGuard<B>>>) {
        let successor = turn.as_ref().and_then(Turn::successor);
        let (turn, successor) = match (turn, successor) {
            (Some(turn), Some(successor)) => (turn, successor),
            (turn, _) => return (self.release_held(backend, key, token).await, turn),
        };
        let started = clock.now_ms();
        let next_token = crate::fresh_token();
        // Armed from here: if this future is dropped mid-pass, the successor's hold is
        // released in the background like any dropped hold.
        let mut next = FairGuard::held(
            backend.clone(),
            key.clone(),
            self.clone(),
            next_token,
            Hold::new(clock.clone(), started, self.ttl_ms),
        );
        let reply = self
            .release_or_pass(backend, key, token, 0, Some(next.token()))
            .await;
        match reply {
            Ok(Value::Int(3)) => successor.grant(turn, Some(next)),
            Ok(_) => {
                next.held.disarm();
                successor.grant(turn, None);
            }
            // The pass may or may not have run: `next` is dropped (released) and the
            // successor stays first in line for the turn we keep.
            Err(_) => return (reply, Some(turn)),
        }
        (reply, None)
    }
}

/// One FAIR_ACQUIRE reply.
enum AcquireReply {
    Acquired,
    Waiting {
        holder_ttl: Option<Duration>,
        ticket: i64,
    },
}

impl<B: KvBackend + Clone + 'static> NamedLock<B> for FairLock<B> {
    /// A fair lock named `name` with `options` and the default patience;
    /// [`LockError::InvalidConfig`] if they are out of range or ask for
    /// [`Wait::Notify`](crate::Wait::Notify) (a fair lock always waits for its turn by
    /// wake-up).
    fn with_options(backend: B, name: &LockName, options: LockOptions) -> Result<Self, LockError> {
        let binding = bind(&backend, name, options, "fair", Supports::default())?;
        let line = Line {
            issued: name.key("issued"),
            served: name.key("served"),
            ticket_prefix: name.key("ticket:"),
            channel: name.key("wake"),
            publish: publish_command(&backend),
            calm: Arc::new(AtomicU8::new(CALM)),
            patience_ms: Vec::new(),
            patience: Duration::ZERO,
            ttl_ms: binding.ttl_ms,
        };
        Ok(Self {
            backend,
            binding,
            line: Arc::new(line),
            subscription: SubscriptionSlot::default(),
            turns: Turns::default(),
        }
        .with_patience(DEFAULT_PATIENCE))
    }
}

impl<B: KvBackend + Clone + 'static> FairLock<B> {
    /// How long a waiter may go silent before it loses its place: at least 3 ms, and at
    /// most the lock's TTL (a hand-off must not outlive the TTL the waiter asked for).
    pub fn with_patience(mut self, patience: Duration) -> Self {
        let patience = patience
            .min(self.binding.options.ttl)
            .max(Duration::from_millis(3));
        let line = Arc::make_mut(&mut self.line);
        line.patience = patience;
        line.patience_ms = ms_arg(i64::try_from(patience.as_millis()).unwrap_or(i64::MAX));
        self
    }

    /// The uncontended fast path: `SET NX PX`, no script. `None` when the lock is taken,
    /// and from then on this lock object queues at once.
    async fn take_if_free(&self, token: &str) -> Result<Option<FairGuard<B>>, LockError> {
        let LockBinding {
            key, ttl_ms, clock, ..
        } = &self.binding;
        let backend = &self.backend;
        let looked = clock.now_ms();
        let set = backend.set(key, token.as_bytes(), SetOptions::new().nx().px(*ttl_ms));
        if set.await? == SetReply::Applied {
            return Ok(Some(self.guard(token.to_owned(), looked, *ttl_ms)));
        }
        self.line.met_a_line();
        Ok(None)
    }

    async fn ask_line(&self, token: &str, ticket: i64) -> Result<AcquireReply, LockError> {
        let LockBinding { key, ttl_ms, .. } = &self.binding;
        let backend = &self.backend;
        let line = &*self.line;
        let reply = backend
            .eval(
                &FAIR_ACQUIRE,
                &[&**key, &line.issued, &line.served],
                &[
                    token.as_bytes(),
                    &ms_arg(ticket),
                    &line.patience_ms,
                    &line.ticket_prefix,
                    &line.channel,
                    line.publish,
                    &ms_arg(*ttl_ms),
                ],
            )
            .await?;
        match &reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(1), ..] => Ok(AcquireReply::Acquired),
                [Value::Int(0), Value::Int(pttl), Value::Int(ticket)] => {
                    Ok(AcquireReply::Waiting {
                        holder_ttl: super::holder_ttl(*pttl),
                        ticket: *ticket,
                    })
                }
                _ => Err(unexpected(&FAIR_ACQUIRE, &reply)),
            },
            _ => Err(unexpected(&FAIR_ACQUIRE, &reply)),
        }
    }

    /// The guard of a hold valid for `ttl_ms` from `started_ms`.
    fn guard(&self, token: String, started_ms: i64, ttl_ms: i64) -> FairGuard<B> {
        let binding = &self.binding;
        let hold = Hold::new(binding.clock.clone(), started_ms, ttl_ms);
        let (backend, key) = (self.backend.clone(), binding.key.clone());
        FairGuard::held(backend, key, self.line.clone(), token, hold)
    }

    /// The guard of a lock handed to us by a release made after our last look at the line
    /// (which began at `looked_ms`). The hand-off's TTL is the patience; a hold still
    /// running a third of the patience later claims the lock's full TTL ([`FAIR_EXTEND`]).
    fn handed_over(&self, token: String, looked_ms: i64) -> FairGuard<B> {
        let patience_ms = i64::try_from(self.line.patience.as_millis()).unwrap_or(i64::MAX);
        let mut guard = self.guard(token, looked_ms, patience_ms);
        if self.binding.options.ttl > self.line.patience {
            let ttl_ms = self.binding.ttl_ms;
            let (backend, key) = (self.backend.clone(), self.binding.key.clone());
            let (clock, after) = (self.binding.clock.clone(), self.line.patience / 3);
            let token = guard.token().to_owned();
            let valid_until = guard.held.releaser.valid_until.clone();
            guard.held.releaser.claim = tokio::runtime::Handle::try_current().ok().map(|runtime| {
                runtime.spawn(async move {
                    clock.sleep(after).await;
                    let started = clock.now_ms();
                    let reply = backend
                        .eval(&FAIR_EXTEND, &[&key], &[token.as_bytes(), &ms_arg(ttl_ms)])
                        .await;
                    if matches!(reply, Ok(Value::Int(1))) {
                        valid_until.store(started.saturating_add(ttl_ms), Ordering::Release);
                    }
                })
            });
        }
        guard
    }

    /// Waits in line with `token` until served, or until the policy (whose `budget` may
    /// already count a look) gives up or the backend fails. `leave` tracks our ticket for
    /// whoever must leave the line after.
    async fn wait_in_line(
        &self,
        mut budget: Budget<'_>,
        leave: &mut LeaveOnDrop<'_, B>,
    ) -> Result<FairGuard<B>, LockError> {
        let LockBinding {
            key,
            options,
            ttl_ms,
            clock,
            ..
        } = &self.binding;
        let backend = &self.backend;
        let policy = &options.policy;
        let mut waiter = Waiter::new(backend, &self.line.channel, &self.subscription);
        let refresh_every = self.line.patience / 3;
        loop {
            budget.count_attempt();
            let looked = clock.now_ms();
            let holder_ttl = match self.ask_line(&leave.token, leave.ticket).await {
                Ok(AcquireReply::Acquired) => {
                    leave.armed = false;
                    return Ok(self.guard(leave.token.clone(), looked, *ttl_ms));
                }
                Ok(AcquireReply::Waiting { holder_ttl, ticket }) => {
                    // A new ticket for the same token: the old one was served while we
                    // did not look, and the hand-off to it lapsed (or went on). Its
                    // wake-up may still be waiting for us; it gives us nothing now.
                    // (Under the same ticket, no hand-off to us came before this look:
                    // a wake-up received is one that came after it.)
                    if leave.ticket != 0 && ticket != leave.ticket {
                        waiter.skip_backlog();
                    }
                    leave.ticket = ticket;
                    holder_ttl
                }
                Err(error) => {
                    budget.absorb(error)?;
                    // The failed look may have queued us under a number we never learnt:
                    // leave (by token) before queueing again, or the line would hold us
                    // twice. Leaving passes on a lock handed to us meanwhile, whose
                    // wake-up may still be on its way: queue again as a new waiter, whom
                    // no earlier wake-up names. Should the leave fail, the old ticket
                    // (and a hand-off to it) lapses within the patience.
                    let _ = self.leave(&leave.token, 0).await;
                    leave.ticket = 0;
                    leave.token = crate::fresh_token();
                    None
                }
            };
            budget.allow_another(key)?;
            if waiter.subscribe().await {
                continue;
            }
            let limit = if waiter.polling() {
                // No wake-ups on this backend: check our turn at the policy's pace.
                policy.delay(budget.attempts, holder_ttl, budget.waited())
            } else {
                policy.wake_limit(holder_ttl, budget.waited())
            }
            .min(refresh_every);
            let token = leave.token.clone();
            let wanted = |message: &[u8]| message == token.as_bytes();
            if waiter.wait(clock, limit, wanted).await == Woken::Message {
                leave.armed = false;
                return Ok(self.handed_over(token, looked));
            }
        }
    }

    /// One look with ticket -1: takes the lock if it is ours to take, but never queues.
    async fn look(&self, token: String) -> Result<Attempt<FairGuard<B>>, LockError> {
        let looked = self.binding.clock.now_ms();
        match self.ask_line(&token, -1).await? {
            AcquireReply::Acquired => Ok(Attempt::Acquired(self.guard(
                token,
                looked,
                self.binding.ttl_ms,
            ))),
            AcquireReply::Waiting { holder_ttl, .. } => Ok(Attempt::Held { holder_ttl }),
        }
    }

    /// Leaves the line with `token` (ticket 0: whichever ticket holds it), passing the
    /// lock on if it had been handed to us.
    async fn leave(&self, token: &str, ticket: i64) -> crate::Result<Value> {
        let (backend, key) = (&self.backend, &self.binding.key);
        self.line.release(backend, key, token, ticket).await
    }
}

/// Leaves the line (or passes on a lock handed over meanwhile) if an acquire ends without
/// the lock: cancelled, timed out or failed.
struct LeaveOnDrop<'a, B: KvBackend + Clone + 'static> {
    lock: &'a FairLock<B>,
    /// The token we wait in line with (a new one after each time we left and came back).
    token: String,
    ticket: i64,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> Drop for LeaveOnDrop<'_, B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let (backend, key, line) = (
            self.lock.backend.clone(),
            self.lock.binding.key.clone(),
            self.lock.line.clone(),
        );
        let (token, ticket) = (self.token.to_owned(), self.ticket);
        run_in_background(async move {
            let _ = line.release(&backend, &key, &token, ticket).await;
        });
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for FairLock<B> {
    type Guard = FairGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<FairGuard<B>>, LockError> {
        let turn = match self.turns.try_take() {
            Some(turn) => Some(turn),
            None if self.turns.holder_lapsed(&self.binding.clock) => None,
            None => return Ok(Attempt::Held { holder_ttl: None }),
        };
        let token = crate::fresh_token();
        if self.line.calm()
            && let Some(guard) = self.take_if_free(&token).await?
        {
            return Ok(Attempt::Acquired(guard.with_turn(turn)));
        }
        Ok(match self.look(token).await? {
            Attempt::Acquired(guard) => Attempt::Acquired(guard.with_turn(turn)),
            other => other,
        })
    }

    async fn acquire(&self) -> Result<FairGuard<B>, LockError> {
        let LockBinding {
            options,
            clock,
            key,
            ..
        } = &self.binding;
        let mut budget = Budget::new(&options.policy, clock);
        let granted = self
            .turns
            .take(&mut budget, &options.policy, clock, key)
            .await?;
        let (turn, baton) = match granted {
            Some(Grant { turn, baton }) => (Some(turn), baton),
            None => (None, None),
        };
        if let Some(passed) = baton {
            return Ok(passed.with_turn(turn));
        }
        Ok(self.acquire_in_turn(budget).await?.with_turn(turn))
    }
}

impl<B: KvBackend + Clone + 'static> FairLock<B> {
    /// [`LockAlgorithm::acquire`] once this process's turn has come.
    async fn acquire_in_turn(&self, mut budget: Budget<'_>) -> Result<FairGuard<B>, LockError> {
        let policy = &self.binding.options.policy;
        let token = crate::fresh_token();
        let fast = self.line.calm();
        let retries = policy.retries();
        if fast || !retries {
            // Without retries this is the one attempt, and it never takes a ticket, so
            // there is nothing to leave. With retries, a refused `SET NX` is the first
            // half of the first attempt: the line's first look follows at once.
            let look = if fast {
                self.take_if_free(&token).await
            } else {
                self.look(token.clone()).await.map(Attempt::acquired)
            };
            if !retries {
                budget.count_attempt();
            }
            match look {
                Ok(Some(guard)) => return Ok(guard),
                Ok(None) if retries => {}
                Ok(None) => budget.allow_another(&self.binding.key)?,
                // The line's first look retries with the same token, so a SET whose reply
                // was lost is found to be ours.
                Err(error) => budget.absorb(error)?,
            }
        }
        let mut leave = LeaveOnDrop {
            lock: self,
            token,
            ticket: 0,
            armed: true,
        };
        let outcome = self.wait_in_line(budget, &mut leave).await;
        if outcome.is_err() && leave.armed && self.leave(&leave.token, leave.ticket).await.is_ok() {
            // Left before answering. Had that failed, LeaveOnDrop would retry in the
            // background.
            leave.armed = false;
        }
        outcome
    }
}

/// A held [`FairLock`]. Releasing hands the lock to the next live waiter.
pub struct FairGuard<B: KvBackend + Clone + 'static> {
    held: Held<FairRelease<B>>,
}

/// [`FAIR_RELEASE`]: ends a hold by handing the lock to the next live waiter, or passing
/// it to this process's next task.
struct FairRelease<B: KvBackend + Clone + 'static> {
    /// Key, token and the extend; the release itself is the fair one.
    token: TokenRelease<B>,
    line: Arc<Line>,
    /// The hold's validity, which the claim of a handed-over lock raises.
    valid_until: Arc<AtomicI64>,
    /// The pending claim of a handed-over lock; pointless once the hold ends.
    claim: Option<tokio::task::JoinHandle<()>>,
    /// This process's turn at the lock, passed on when the hold ends.
    turn: Option<Turn<FairGuard<B>>>,
}

impl<B: KvBackend + Clone + 'static> Releaser for FairRelease<B> {
    fn key(&self) -> &[u8] {
        &self.token.key
    }

    fn valid_until_ms(&self, _hold: &Hold) -> i64 {
        self.valid_until.load(Ordering::Acquire)
    }

    async fn release(&mut self, hold: &Hold) -> Result<bool, LockError> {
        self.ended();
        let TokenRelease {
            backend,
            key,
            token,
            ..
        } = &self.token;
        let (reply, turn) = self
            .line
            .end_hold(backend, key, &hold.clock, token, self.turn.take())
            .await;
        self.turn = turn;
        let reply = reply
            .map_err(LockError::from)
            .and_then(|reply| int_reply(&FAIR_RELEASE, reply));
        match reply {
            Ok(1 | 3) => self.line.nobody_waited(),
            Ok(2) => self.line.met_a_line(),
            _ => {}
        }
        reply.map(|held| held >= 1)
    }

    fn detach(&mut self) -> Self {
        self.ended();
        Self {
            token: self.token.clone(),
            line: self.line.clone(),
            valid_until: self.valid_until.clone(),
            claim: None,
            turn: self.turn.take(),
        }
    }

    fn ended(&mut self) {
        if let Some(claim) = self.claim.take() {
            claim.abort();
        }
    }

    fn describe(&self, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("token", &self.token.token)
            .field("claim_pending", &self.claim.is_some());
    }
}

impl<B: KvBackend + Clone + 'static> FairGuard<B> {
    /// The random token this acquisition holds the lock with. The lock's key holds the
    /// token alone, or followed by [`LINE_MARK`](crate::scripts::LINE_MARK) once others
    /// wait behind the hold: to recognise a value read from the key, use
    /// [`FairGuard::is_holder`].
    pub fn token(&self) -> &str {
        &self.held.releaser.token.token
    }

    /// Whether `value`, read from the lock's key, names this hold: the bare token, or the
    /// token marked because a line formed behind it.
    pub fn is_holder(&self, value: &[u8]) -> bool {
        let token = self.token().as_bytes();
        value == token || value.strip_suffix(crate::scripts::LINE_MARK) == Some(token)
    }

    fn held(backend: B, key: Arc<[u8]>, line: Arc<Line>, token: String, hold: Hold) -> Self {
        let releaser = FairRelease {
            token: TokenRelease::new(backend, key, token),
            line,
            valid_until: Arc::new(AtomicI64::new(hold.valid_until_ms)),
            claim: None,
            turn: None,
        };
        FairGuard {
            held: Held::new(releaser, hold),
        }
    }

    fn with_turn(mut self, turn: Option<Turn<FairGuard<B>>>) -> Self {
        if let Some(turn) = &turn {
            turn.holds_until(self.valid_until_ms());
        }
        self.held.releaser.turn = turn;
        self
    }
}

held_debug!(FairGuard);

impl<B: KvBackend + Clone + 'static> LockGuard for FairGuard<B> {
    held_guard!();

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let Held { releaser, hold, .. } = &mut self.held;
        releaser.ended();
        let extended = releaser.token.extend(hold, &FAIR_EXTEND, ttl).await?;
        if extended {
            releaser
                .valid_until
                .store(hold.valid_until_ms, Ordering::Release);
            if let Some(turn) = &releaser.turn {
                turn.holds_until(hold.valid_until_ms);
            }
        }
        Ok(extended)
    }
}
