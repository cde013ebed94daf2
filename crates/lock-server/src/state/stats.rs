//! What INFO's Stats, Commandstats and Errorstats sections count.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use lock_core::Value;

/// Counters since the server started (or `CONFIG RESETSTAT`).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    commands: AtomicU64,
    rejected_connections: AtomicU64,
    error_replies: AtomicU64,
    /// Error replies by their code (`ERR`, `WRONGTYPE`…).
    errors: Mutex<BTreeMap<String, u64>>,
    /// Each command's counts, by its name (`set`, `config|set`).
    per_command: Mutex<HashMap<Cow<'static, str>, CommandStat>>,
}

/// One command's counts, as INFO's Commandstats reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CommandStat {
    /// Times it ran (a blocking command once, when it answered).
    pub(crate) calls: u64,
    /// Microseconds it ran for, in all.
    pub(crate) usec: u64,
    /// Times it was refused before it ran (arity, authentication, cluster slots…).
    pub(crate) rejected: u64,
    /// Times it ran and answered an error.
    pub(crate) failed: u64,
}

impl Stats {
    /// Counts a command and, if it failed, its error.
    pub(crate) fn command(&self, reply: &Value) {
        self.commands.fetch_add(1, Ordering::Relaxed);
        if let Value::Error(text) = reply {
            self.error(text);
        }
    }

    /// Counts an error reply.
    pub(crate) fn error(&self, text: &str) {
        self.error_replies.fetch_add(1, Ordering::Relaxed);
        let code = text.split(' ').next().unwrap_or_default().to_string();
        *self
            .errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(code)
            .or_default() += 1;
    }

    /// Counts a run of the command `name` that took `took` and failed or not.
    pub(crate) fn called(&self, name: Cow<'static, str>, took: Duration, failed: bool) {
        self.update(name, |stat| {
            stat.calls += 1;
            stat.usec += u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
            stat.failed += u64::from(failed);
        });
    }

    /// Counts a refusal of the command `name` before it ran.
    pub(crate) fn rejected_call(&self, name: Cow<'static, str>) {
        self.update(name, |stat| stat.rejected += 1);
    }

    fn update(&self, name: Cow<'static, str>, change: impl FnOnce(&mut CommandStat)) {
        let mut all = self
            .per_command
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Found by the borrowed name: a known command's counts cost no allocation.
        match all.get_mut(name.as_ref()) {
            Some(stat) => change(stat),
            None => change(all.entry(name).or_default()),
        }
    }

    /// `(name, counts)` for every command that ran or was refused, by name.
    pub(crate) fn command_stats(&self) -> Vec<(String, CommandStat)> {
        let mut all: Vec<(String, CommandStat)> = self
            .per_command
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(name, stat)| (name.to_string(), *stat))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    pub(crate) fn rejected_connection(&self) {
        self.rejected_connections.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn commands(&self) -> u64 {
        self.commands.load(Ordering::Relaxed)
    }

    pub(crate) fn rejected_connections(&self) -> u64 {
        self.rejected_connections.load(Ordering::Relaxed)
    }

    pub(crate) fn error_replies(&self) -> u64 {
        self.error_replies.load(Ordering::Relaxed)
    }

    /// `(code, count)` for every error code seen.
    pub(crate) fn errors(&self) -> Vec<(String, u64)> {
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(code, count)| (code.clone(), *count))
            .collect()
    }

    /// `CONFIG RESETSTAT`.
    pub(crate) fn reset(&self) {
        self.commands.store(0, Ordering::Relaxed);
        self.rejected_connections.store(0, Ordering::Relaxed);
        self.error_replies.store(0, Ordering::Relaxed);
        self.errors
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.per_command
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}
