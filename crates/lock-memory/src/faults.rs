//! Fault injection: make commands fail, or slow them down, without a server.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use lock_core::{Error, ErrorKind};
use parking_lot::Mutex;

/// The command names faults can match: what the backend would send to Redis.
/// Scripts count as `EVALSHA`.
pub const COMMANDS: [&str; 17] = [
    "SET",
    "SETNX",
    "GET",
    "GETSET",
    "GETDEL",
    "DEL",
    "EXISTS",
    "PEXPIRE",
    "PEXPIREAT",
    "PTTL",
    "TTL",
    "PERSIST",
    "INCR",
    "EVALSHA",
    "PUBLISH",
    "SUBSCRIBE",
    "PSUBSCRIBE",
];

#[derive(Debug)]
struct Rule {
    /// Upper-case command name, or `None` for any command.
    command: Option<String>,
    remaining: u64,
    error: Error,
}

/// The faults armed on one [`MemoryBackend`](crate::MemoryBackend) (shared by its clones).
///
/// Rules fire in the order they were added; each fails the next `n` commands it matches
/// with its error, then disarms. A failed command has no effect on the store.
///
/// ```
/// # use lock_memory::MemoryBackend;
/// use lock_core::ErrorKind;
/// let backend = MemoryBackend::new();
/// backend.faults().fail_next(2, ErrorKind::Connection);
/// backend.faults().fail_command("EVALSHA", 1, ErrorKind::Timeout);
/// ```
#[derive(Debug, Default)]
pub struct Faults {
    armed: AtomicBool,
    rules: Mutex<VecDeque<Rule>>,
    latency_us: AtomicU64,
    injected: AtomicU64,
}

/// The message of an injected error of `kind`, clearly marked as injected.
pub fn injected_error(kind: ErrorKind) -> Error {
    let text = match kind {
        ErrorKind::Connection => "injected fault: connection reset by peer".to_string(),
        ErrorKind::Timeout => "injected fault: command timed out".to_string(),
        other => format!("injected fault: {other:?}"),
    };
    Error::new(kind, text)
}

impl Faults {
    /// Fails the next `n` commands, whatever they are, with an error of `kind`.
    pub fn fail_next(&self, n: u64, kind: ErrorKind) {
        self.push(None, n, injected_error(kind));
    }

    /// Fails the next `n` commands named `command` (case-insensitive, see [`COMMANDS`]).
    pub fn fail_command(&self, command: &str, n: u64, kind: ErrorKind) {
        self.push(Some(command), n, injected_error(kind));
    }

    /// Fails the next `n` commands (named `command`, or any if `None`) with exactly `error`.
    pub fn fail_with(&self, command: Option<&str>, n: u64, error: Error) {
        self.push(command, n, error);
    }

    /// Delays every command by `latency` on the backend's clock (virtual in tests).
    pub fn set_latency(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.latency_us.store(us, Ordering::Release);
    }

    /// Disarms every rule and removes the latency.
    pub fn clear(&self) {
        self.rules.lock().clear();
        self.armed.store(false, Ordering::Release);
        self.latency_us.store(0, Ordering::Release);
    }

    /// Whether nothing is armed: no rule and no latency. A caller that runs several
    /// commands in one step (see [`MemoryBackend::atomically`](crate::MemoryBackend::atomically))
    /// checks this first, so that armed faults still hit commands one by one.
    pub fn idle(&self) -> bool {
        !self.armed.load(Ordering::Acquire) && self.latency_us.load(Ordering::Acquire) == 0
    }

    /// How many commands have failed by injection so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Acquire)
    }

    fn push(&self, command: Option<&str>, n: u64, error: Error) {
        if n == 0 {
            return;
        }
        self.rules.lock().push_back(Rule {
            command: command.map(str::to_ascii_uppercase),
            remaining: n,
            error,
        });
        self.armed.store(true, Ordering::Release);
    }

    pub(crate) fn latency(&self) -> Option<Duration> {
        match self.latency_us.load(Ordering::Acquire) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// The error `command` must fail with, if a rule matches (and counts it).
    pub(crate) fn take(&self, command: &str) -> Option<Error> {
        if !self.armed.load(Ordering::Acquire) {
            return None;
        }
        let mut rules = self.rules.lock();
        let index = rules
            .iter()
            .position(|r| r.command.as_deref().is_none_or(|c| c == command))?;
        let rule = &mut rules[index];
        rule.remaining -= 1;
        let error = rule.error.clone();
        if rule.remaining == 0 {
            rules.remove(index);
        }
        if rules.is_empty() {
            self.armed.store(false, Ordering::Release);
        }
        self.injected.fetch_add(1, Ordering::AcqRel);
        Some(error)
    }
}
