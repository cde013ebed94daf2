//! The piece every guard is built on: one hold of a lock, released in the background when
//! its guard is dropped unreleased, let go on `abandon`, and shown alike in `Debug`.
//!
//! What differs between algorithms is only how a hold is let go of (a compare-and-delete,
//! a stamp check, a count decremented, a hand-off, N nodes), so that is the one thing each
//! algorithm writes: a [`Releaser`].

use std::fmt;
use std::future::Future;

use super::Hold;
use crate::lock::{ReleaseError, run_in_background};
use crate::{Clock, LockError};

/// How an algorithm lets go of one hold.
pub(super) trait Releaser: Send + Sized + 'static {
    /// The lock's key.
    fn key(&self) -> &[u8];

    /// Lets go of the lock held as `hold`: `Ok(true)` if this hold still held it. An
    /// error means the outcome is unknown; the hold stays armed.
    fn release(&mut self, hold: &Hold) -> impl Future<Output = Result<bool, LockError>> + Send;

    /// What a background release needs, taken from a guard being dropped armed.
    fn detach(&mut self) -> Self;

    /// The hold's validity: the hold's own unless something raises it meanwhile.
    fn valid_until_ms(&self, hold: &Hold) -> i64 {
        hold.valid_until_ms
    }

    /// The hold ends here, released or not: stops whatever runs on its behalf.
    fn ended(&mut self) {}

    /// The fields `Debug` shows besides the key, the validity and whether it is armed.
    fn describe(&self, _out: &mut fmt::DebugStruct<'_, '_>) {}
}

/// One hold: what releases it, its validity, and whether dropping it still releases.
pub(super) struct Held<R: Releaser> {
    pub(super) releaser: R,
    pub(super) hold: Hold,
    armed: bool,
}

impl<R: Releaser> Held<R> {
    /// A hold just acquired: armed.
    pub(super) fn new(releaser: R, hold: Hold) -> Self {
        Self {
            releaser,
            hold,
            armed: true,
        }
    }

    pub(super) fn key(&self) -> &[u8] {
        self.releaser.key()
    }

    pub(super) fn clock(&self) -> &Clock {
        &self.hold.clock
    }

    pub(super) fn valid_until_ms(&self) -> i64 {
        self.releaser.valid_until_ms(&self.hold)
    }

    /// Releases the guard whose hold `held` finds in it: `Ok` once the release ran (the
    /// hold is then disarmed), or the error with the guard, still armed, to retry. The
    /// hold is disarmed only once the release answered: if this future is dropped
    /// mid-flight, the guard's drop still releases.
    pub(super) async fn release_guard<G: Send>(
        mut guard: G,
        held: fn(&mut G) -> &mut Self,
    ) -> Result<bool, ReleaseError<G>> {
        let this = held(&mut guard);
        match this.releaser.release(&this.hold).await {
            Ok(still_held) => {
                this.armed = false;
                this.releaser.ended();
                Ok(still_held)
            }
            Err(error) => Err(ReleaseError::new(error, guard)),
        }
    }

    /// Lets the lock go without releasing it, as a crashed holder would.
    pub(super) fn abandon(&mut self) {
        self.armed = false;
        self.releaser.ended();
    }

    /// Stops the drop from releasing; true if it would have.
    pub(super) fn disarm(&mut self) -> bool {
        std::mem::replace(&mut self.armed, false)
    }

    /// `Debug` for the guard named `guard`: the key, the releaser's fields, `extra` (the
    /// guard's own), the validity and whether it is armed.
    pub(super) fn fmt_guard(
        &self,
        f: &mut fmt::Formatter<'_>,
        guard: &str,
        extra: &[(&str, &dyn fmt::Debug)],
    ) -> fmt::Result {
        let mut out = f.debug_struct(guard);
        out.field("key", &String::from_utf8_lossy(self.key()));
        self.releaser.describe(&mut out);
        for (name, value) in extra {
            out.field(name, value);
        }
        out.field("valid_until_ms", &self.valid_until_ms())
            .field("armed", &self.armed)
            .finish()
    }
}

impl<R: Releaser> Drop for Held<R> {
    fn drop(&mut self) {
        self.releaser.ended();
        if !self.disarm() {
            return;
        }
        let (mut releaser, hold) = (self.releaser.detach(), self.hold.clone());
        run_in_background(async move {
            let _ = releaser.release(&hold).await;
        });
    }
}

/// The [`LockGuard`](crate::LockGuard) methods every guard answers from its `held` field:
/// the accessors, the release and `abandon`. A guard writes only its `extend`.
macro_rules! held_guard {
    () => {
        fn key(&self) -> &[u8] {
            self.held.key()
        }
        fn clock(&self) -> &Clock {
            self.held.clock()
        }
        fn valid_until_ms(&self) -> i64 {
            self.held.valid_until_ms()
        }
        async fn release(self) -> Result<bool, ReleaseError<Self>> {
            Held::release_guard(self, |guard| &mut guard.held).await
        }
        fn abandon(mut self) {
            self.held.abandon();
        }
    };
}

/// `Debug` for the guard `$guard`, whose hold is its `held` field, showing also the
/// guard's own `$field`s.
macro_rules! held_debug {
    ($guard:ident $(, $field:ident)*) => {
        impl<B: KvBackend + Clone + 'static> std::fmt::Debug for $guard<B> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let fields: &[(&str, &dyn std::fmt::Debug)] =
                    &[$((stringify!($field), &self.$field)),*];
                self.held.fmt_guard(f, stringify!($guard), fields)
            }
        }
    };
}
