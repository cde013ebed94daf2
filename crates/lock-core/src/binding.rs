//! What a lock is bound to: its key, its checked options and the clock it measures on.

use std::sync::Arc;

use crate::lock::{Supports, ttl_ms};
use crate::{Clock, LockError, LockName, LockOptions};

/// What a lock is bound to: its algorithm's name, the lock's name and key, its options
/// (checked once, when the lock is built) and the clock its timestamps, sleeps and
/// validity are measured on.
///
/// [`LockAlgorithm`](crate::LockAlgorithm)'s [`name`](crate::LockAlgorithm::name),
/// [`key`](crate::LockAlgorithm::key), [`options`](crate::LockAlgorithm::options) and
/// [`clock`](crate::LockAlgorithm::clock) answer from it, so a lock of your own only
/// builds one:
///
/// ```
/// use lock_core::{Clock, LockBinding, LockError, LockName, LockOptions};
/// let name = LockName::new("jobs")?;
/// let binding = LockBinding::new("mine", &name, LockOptions::default(), Clock::system())?;
/// assert_eq!(binding.key(), b"{jobs}:lock");
/// assert_eq!(binding.ttl_ms(), 30_000);
/// # Ok::<(), LockError>(())
/// ```
#[derive(Clone, Debug)]
pub struct LockBinding {
    pub(crate) algorithm: &'static str,
    pub(crate) name: LockName,
    /// `{name}:lock`, shared with every guard: acquiring clones a pointer, not the key.
    pub(crate) key: Arc<[u8]>,
    pub(crate) options: LockOptions,
    /// `options.ttl` in milliseconds, checked.
    pub(crate) ttl_ms: i64,
    pub(crate) clock: Clock,
}

impl LockBinding {
    /// Binds a lock of `algorithm` (its short name) to `name` (key `{name}:lock`) with
    /// `options`, measured on `options.clock` or, when that is `None`, on `clock`
    /// (usually the backend's). [`LockError::InvalidConfig`] if the TTL is out of range.
    pub fn new(
        algorithm: &'static str,
        name: &LockName,
        options: LockOptions,
        clock: Clock,
    ) -> Result<Self, LockError> {
        let ttl_ms = ttl_ms(options.ttl)?;
        Ok(Self::checked(algorithm, name, options, clock, ttl_ms))
    }

    /// [`LockBinding::new`] for `algorithm`, which honours what `supports` says: the
    /// options are checked for it too.
    pub(crate) fn for_algorithm(
        algorithm: &'static str,
        supports: Supports,
        name: &LockName,
        options: LockOptions,
        clock: Clock,
    ) -> Result<Self, LockError> {
        let ttl_ms = options.validate(algorithm, supports)?;
        Ok(Self::checked(algorithm, name, options, clock, ttl_ms))
    }

    fn checked(
        algorithm: &'static str,
        name: &LockName,
        options: LockOptions,
        clock: Clock,
        ttl_ms: i64,
    ) -> Self {
        let clock = options.clock.clone().unwrap_or(clock);
        Self {
            algorithm,
            name: name.clone(),
            key: Arc::from(name.lock_key()),
            options,
            ttl_ms,
            clock,
        }
    }

    /// The algorithm's short name (`token`, `fenced`…).
    pub fn algorithm(&self) -> &'static str {
        self.algorithm
    }

    /// The lock's name.
    pub fn name(&self) -> &LockName {
        &self.name
    }

    /// The lock's key, `{name}:lock`.
    pub fn key(&self) -> &[u8] {
        &self.key
    }

    /// The lock's options.
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// The TTL in whole milliseconds.
    pub fn ttl_ms(&self) -> i64 {
        self.ttl_ms
    }

    /// The clock the lock measures on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }
}
