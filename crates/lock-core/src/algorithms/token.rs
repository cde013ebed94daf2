//! Seed 000's lock: `SET key token NX PX ttl`, released by compare-and-delete.

use std::sync::Arc;
use std::time::Duration;

use super::{Binding, holder_ttl, int_reply, ms_arg};
use crate::lock::release_in_background;
use crate::scripts::{COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockOptions, SetOptions,
    SetReply,
};

/// The token lock (seed 000): a fresh random UUID v4 per acquisition is the value, so only
/// the holder can release or extend it.
///
/// - acquire: `SET key token NX PX ttl` (one round trip); when that fails, `PTTL key`
///   reports how long the holder has left;
/// - release: [`COMPARE_AND_DELETE`]; extend: [`COMPARE_AND_PEXPIRE`].
///
/// Remaining hazard: a holder paused longer than its TTL loses the lock without knowing
/// until its next release or extend reports `false`; fencing tokens (a later issue) cover it.
#[derive(Clone, Debug)]
pub struct TokenLock<B> {
    binding: Binding<B>,
}

impl<B: KvBackend + Clone + 'static> TokenLock<B> {
    /// A token lock on `key` with default options.
    pub fn new(backend: B, key: impl Into<Vec<u8>>) -> Self {
        Self::with_options(backend, key, LockOptions::default())
    }

    /// A token lock on `key` with `options`.
    pub fn with_options(backend: B, key: impl Into<Vec<u8>>, options: LockOptions) -> Self {
        Self {
            binding: Binding::new(backend, key, options),
        }
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for TokenLock<B> {
    type Guard = TokenGuard<B>;

    fn name(&self) -> &'static str {
        "token"
    }
    binding_accessors!();

    async fn try_acquire(&self) -> Result<Attempt<TokenGuard<B>>, LockError> {
        let Binding {
            backend,
            key,
            options,
            ..
        } = &self.binding;
        let ttl_ms = options.ttl_ms()?;
        let token = TokenGuard::<B>::new_token();
        match backend
            .set(key, token.as_bytes(), SetOptions::new().nx().px(ttl_ms))
            .await?
        {
            SetReply::Applied => Ok(Attempt::Acquired(TokenGuard::held(
                backend.clone(),
                key.clone(),
                token,
            ))),
            _ => match backend.pttl(key).await? {
                // Released between our SET and PTTL: worth an immediate retry.
                -2 => Ok(Attempt::Contended),
                pttl => Ok(Attempt::Held {
                    holder_ttl: holder_ttl(pttl),
                }),
            },
        }
    }
}

/// A held [`TokenLock`].
#[derive(Debug)]
pub struct TokenGuard<B: KvBackend + Clone + 'static> {
    backend: B,
    key: Arc<[u8]>,
    token: String,
    armed: bool,
}

impl<B: KvBackend + Clone + 'static> TokenGuard<B> {
    /// A fresh random UUID v4 token, encoded into a stack buffer (no formatting machinery).
    pub(super) fn new_token() -> String {
        let mut buffer = uuid::Uuid::encode_buffer();
        String::from(uuid::Uuid::new_v4().hyphenated().encode_lower(&mut buffer))
    }

    /// The guard of a lock just acquired with `token`.
    pub(super) fn held(backend: B, key: Arc<[u8]>, token: String) -> Self {
        Self {
            backend,
            key,
            token,
            armed: true,
        }
    }

    /// The random token this acquisition wrote.
    pub fn token(&self) -> &str {
        &self.token
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for TokenGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(mut self) -> Result<bool, LockError> {
        let reply = self
            .backend
            .eval(&COMPARE_AND_DELETE, &[&*self.key], &[self.token.as_bytes()])
            .await;
        // Only now: if this future is dropped mid-flight, Drop still releases.
        self.armed = false;
        Ok(int_reply(&COMPARE_AND_DELETE, reply?)? == 1)
    }

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = LockOptions::new().ttl(ttl).ttl_ms()?;
        let reply = self
            .backend
            .eval(
                &COMPARE_AND_PEXPIRE,
                &[&*self.key],
                &[self.token.as_bytes(), &ms_arg(ttl_ms)],
            )
            .await?;
        Ok(int_reply(&COMPARE_AND_PEXPIRE, reply)? == 1)
    }
}

impl<B: KvBackend + Clone + 'static> Drop for TokenGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let token = std::mem::take(&mut self.token);
        release_in_background(async move {
            let _ = backend
                .eval(&COMPARE_AND_DELETE, &[&key], &[token.as_bytes()])
                .await;
        });
    }
}
