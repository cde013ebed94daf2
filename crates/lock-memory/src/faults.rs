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
    /// When the fault strikes.
    phase: Phase,
}

/// When a fault strikes a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Before it runs: the command has no effect.
    Before,
    /// After it ran: its effect stays, its reply is lost.
    After,
    /// Inside a script, after this many of its commands ran: those stay done.
    Inside(u32),
}

/// The faults armed on one [`MemoryBackend`](crate::MemoryBackend) (shared by its clones).
///
/// Rules fire in the order they were added; each fails the next `n` commands it matches
/// with its error, then disarms. Rules armed faster than commands consume them wait in
/// line; arming the same rule again right after itself adds to its count instead of
/// queueing another, so a test that arms in a loop holds one rule, not one per call
/// ([`Faults::pending`] counts them). A command failed by [`Faults::fail_next`],
/// [`fail_command`](Faults::fail_command) or [`fail_with`](Faults::fail_with) has no
/// effect on the store; one hit by [`Faults::lose_replies`] runs, and only its reply is
/// lost, as when a connection drops after the server acted.
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

/// The error an injected fault of `kind` fails with: [`Error::injected`], whose text
/// (`ERR injected fault (<Kind>): …`) keeps its kind through a server's reply.
pub fn injected_error(kind: ErrorKind) -> Error {
    let what = match kind {
        ErrorKind::Connection => "connection reset by peer",
        ErrorKind::Timeout => "command timed out",
        _ => "injected on purpose",
    };
    Error::injected(kind, what)
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

    /// Cuts the next script short: its first `after` commands run, the one after fails
    /// with an error of `kind`, as a command failing inside a Redis script does; the
    /// script's body sees the error and (as every built-in script does) stops there.
    /// Redis keeps what a script wrote before an error, and so does the double: this is
    /// how a test shows what a two-step script leaves behind.
    pub fn interrupt_next_script(&self, after: u32, kind: ErrorKind) {
        self.push_rule(
            Some("EVALSHA"),
            1,
            injected_error(kind),
            Phase::Inside(after),
        );
    }

    /// Lets the next `n` commands (named `command`, or any if `None`) run, then loses
    /// their replies: the caller gets an [`ErrorKind::Timeout`] although the store
    /// changed. What a retried operation must be idempotent against.
    pub fn lose_replies(&self, command: Option<&str>, n: u64) {
        let error = injected_error(ErrorKind::Timeout);
        self.push_rule(command, n, error, Phase::After);
    }

    /// Delays every command by `latency` on the backend's clock (virtual in tests). Under
    /// paused tokio time a sleep wakes on the timer's millisecond tick, so a latency
    /// below 1 ms takes a whole millisecond of virtual time.
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
        self.push_rule(command, n, error, Phase::Before);
    }

    fn push_rule(&self, command: Option<&str>, n: u64, error: Error, phase: Phase) {
        if n == 0 {
            return;
        }
        let command = command.map(str::to_ascii_uppercase);
        let mut rules = self.rules.lock();
        match rules.back_mut() {
            Some(last) if last.command == command && last.error == error && last.phase == phase => {
                last.remaining = last.remaining.saturating_add(n);
            }
            _ => rules.push_back(Rule {
                command,
                remaining: n,
                error,
                phase,
            }),
        }
        self.armed.store(true, Ordering::Release);
    }

    /// How many rules wait to fire (each for one or more commands).
    pub fn pending(&self) -> usize {
        self.rules.lock().len()
    }

    pub(crate) fn latency(&self) -> Option<Duration> {
        match self.latency_us.load(Ordering::Acquire) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    /// The error `command` must fail with in `phase`, if a rule matches (and counts it).
    pub(crate) fn take(&self, command: &str, phase: Phase) -> Option<Error> {
        self.take_where(command, |p| p == phase)
            .map(|(_, error)| error)
    }

    /// The interruption of the script about to run, if one is armed: how many of its
    /// commands may run, and the error the next one fails with.
    pub(crate) fn take_interruption(&self) -> Option<(u32, Error)> {
        match self.take_where("EVALSHA", |p| matches!(p, Phase::Inside(_)))? {
            (Phase::Inside(after), error) => Some((after, error)),
            _ => None,
        }
    }

    /// The first armed rule for `command` whose phase is `wanted`, counted.
    fn take_where(&self, command: &str, wanted: impl Fn(Phase) -> bool) -> Option<(Phase, Error)> {
        if !self.armed.load(Ordering::Acquire) {
            return None;
        }
        let mut rules = self.rules.lock();
        let index = rules
            .iter()
            .position(|r| wanted(r.phase) && r.command.as_deref().is_none_or(|c| c == command))?;
        let rule = &mut rules[index];
        rule.remaining -= 1;
        let taken = (rule.phase, rule.error.clone());
        if rule.remaining == 0 {
            rules.remove(index);
        }
        if rules.is_empty() {
            self.armed.store(false, Ordering::Release);
        }
        self.injected.fetch_add(1, Ordering::AcqRel);
        Some(taken)
    }
}
