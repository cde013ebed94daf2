//! Waiting for a lock by wake-up instead of by polling.
//!
//! The order that loses no wake-up: subscribe, then try again, then wait. A release
//! published between a failed attempt and the subscription is caught by the retry; one
//! published after it is delivered. Every wait is also bounded by the holder's TTL (and
//! the caller's cap), so a lost message or a backend without pub/sub delays a waiter but
//! never hangs it.

use std::time::Duration;

use crate::{Clock, KvBackend, Missed, Subscription};

/// How a blocked [`acquire`](crate::LockAlgorithm::acquire) waits for the lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wait {
    /// Sleep by the [`AcquirePolicy`](crate::AcquirePolicy)'s backoff and try again
    /// (seeds 000 and 001). Works on every backend; costs commands while waiting and is
    /// not fair: the releaser often wins again.
    #[default]
    Poll,
    /// Releases publish on the lock's channel (`{name}:wake`), and a waiter's backoff sleep
    /// ends early on a release. Every waiter wakes and tries, so the order is not fair,
    /// but barging is bounded: a waiter refused for longer than the
    /// [`barging_window`](crate::LockOptions::barging_window) claims the next turn
    /// (`{name}:next`), and nobody else takes the lock until it has. The claim binds the
    /// clients that wait by notify; a client that polls the same lock ignores it.
    Notify,
}

/// A subscription kept by a lock object between acquisitions, so a waiter subscribes once
/// per lock object, not once per wait. Clones of the lock start without one.
#[derive(Debug, Default)]
pub(crate) struct SubscriptionSlot(std::sync::Mutex<Option<Subscription>>);

impl Clone for SubscriptionSlot {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl SubscriptionSlot {
    fn take(&self) -> Option<Subscription> {
        self.0.lock().ok()?.take()
    }

    fn put_back(&self, subscription: Subscription) {
        if let Ok(mut slot) = self.0.lock() {
            slot.get_or_insert(subscription);
        }
    }
}

/// What ended one [`Waiter::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Woken {
    /// A message the caller was waiting for arrived.
    Message,
    /// The time limit passed, or messages may have been missed: check the lock.
    Recheck,
}

/// One acquire call's view of the lock's wake-up channel.
pub(crate) struct Waiter<'a, B: KvBackend> {
    backend: &'a B,
    channel: &'a [u8],
    slot: &'a SubscriptionSlot,
    subscription: Option<Subscription>,
    /// Subscribing failed once in this call (no pub/sub, or a connection problem): wait by
    /// time alone rather than paying for a failing SUBSCRIBE before every wait.
    polling: bool,
}

impl<'a, B: KvBackend> Waiter<'a, B> {
    pub(crate) fn new(backend: &'a B, channel: &'a [u8], slot: &'a SubscriptionSlot) -> Self {
        let subscription = slot.take().map(|mut s| {
            // Messages from before this call cannot be about it.
            s.skip_backlog();
            s
        });
        Self {
            backend,
            channel,
            slot,
            subscription,
            polling: false,
        }
    }

    /// Subscribes unless already subscribed. True when a new subscription started: the
    /// caller must then try once more before waiting.
    pub(crate) async fn subscribe(&mut self) -> bool {
        if self.subscription.is_some() || self.polling {
            return false;
        }
        match self.backend.subscribe(self.channel).await {
            Ok(subscription) => {
                self.subscription = Some(subscription);
                true
            }
            Err(_) => {
                self.polling = true;
                false
            }
        }
    }

    /// Forgets the wake-ups received so far, when a look showed them stale. One
    /// published after the look ran is dropped too; the next look finds what it
    /// announced.
    pub(crate) fn skip_backlog(&mut self) {
        if let Some(subscription) = self.subscription.as_mut() {
            subscription.skip_backlog();
        }
    }

    /// Whether waits are by time alone (no subscription could be made).
    pub(crate) fn polling(&self) -> bool {
        self.polling
    }

    /// Waits for a message for which `wanted` holds, at most `limit` on `clock`.
    pub(crate) async fn wait(
        &mut self,
        clock: &Clock,
        limit: Duration,
        wanted: impl Fn(&[u8]) -> bool,
    ) -> Woken {
        let Some(subscription) = self.subscription.as_mut() else {
            clock.sleep(limit).await;
            return Woken::Recheck;
        };
        let message = async {
            loop {
                match subscription.recv().await {
                    Ok(message) if wanted(&message) => return Ok(()),
                    Ok(_) => {}
                    Err(missed) => return Err(missed),
                }
            }
        };
        tokio::select! {
            biased;
            received = message => match received {
                Ok(()) => Woken::Message,
                Err(Missed::Lagged(_)) => Woken::Recheck,
                Err(Missed::Closed) => {
                    // Subscribe again before the next wait.
                    self.subscription = None;
                    Woken::Recheck
                }
            },
            () = clock.sleep(limit) => Woken::Recheck,
        }
    }
}

impl<B: KvBackend> Drop for Waiter<'_, B> {
    fn drop(&mut self) {
        if let Some(subscription) = self.subscription.take() {
            self.slot.put_back(subscription);
        }
    }
}
