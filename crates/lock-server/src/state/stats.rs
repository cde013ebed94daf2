//! What INFO's Stats, Commandstats and Errorstats sections count.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use lock_core::Value;

use crate::protocol::request::CommandId;

/// Counters since the server started (or `CONFIG RESETSTAT`).
#[derive(Debug)]
pub(crate) struct Stats {
    commands: AtomicU64,
    rejected_connections: AtomicU64,
    error_replies: AtomicU64,
    /// Error replies by their code (`ERR`, `WRONGTYPE`…).
    errors: Mutex<BTreeMap<String, u64>>,
    /// Each command's counts, by its place in the command table: a few relaxed atomic
    /// additions per command, no lock.
    by_command: Box<[Counters]>,
    /// Subcommands' counts (`config|set`), by name: rare enough for a lock.
    by_subcommand: Mutex<HashMap<String, CommandStat>>,
}

/// More than the command table holds.
const MAX_COMMANDS: usize = 1024;

impl Default for Stats {
    fn default() -> Self {
        Stats {
            commands: AtomicU64::default(),
            rejected_connections: AtomicU64::default(),
            error_replies: AtomicU64::default(),
            errors: Mutex::default(),
            by_command: (0..MAX_COMMANDS).map(|_| Counters::default()).collect(),
            by_subcommand: Mutex::default(),
        }
    }
}

/// What Commandstats counts a request under.
pub(crate) enum StatName {
    /// A command, by its place in the table, and its name.
    Command(CommandId, &'static str),
    /// A subcommand: `container|sub`.
    Subcommand(String),
}

/// One command's counts as they are kept.
#[derive(Debug, Default)]
struct Counters {
    name: OnceLock<&'static str>,
    calls: AtomicU64,
    usec: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
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
    pub(crate) fn called(&self, name: StatName, took: Duration, failed: bool) {
        let usec = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        match name {
            StatName::Command(id, name) => {
                let Some(counters) = self.counters(id, name) else {
                    return;
                };
                counters.calls.fetch_add(1, Ordering::Relaxed);
                counters.usec.fetch_add(usec, Ordering::Relaxed);
                counters
                    .failed
                    .fetch_add(u64::from(failed), Ordering::Relaxed);
            }
            StatName::Subcommand(name) => self.update(name, |stat| {
                stat.calls += 1;
                stat.usec += usec;
                stat.failed += u64::from(failed);
            }),
        }
    }

    /// Counts a refusal of the command `name` before it ran.
    pub(crate) fn rejected_call(&self, name: StatName) {
        match name {
            StatName::Command(id, name) => {
                if let Some(counters) = self.counters(id, name) {
                    counters.rejected.fetch_add(1, Ordering::Relaxed);
                }
            }
            StatName::Subcommand(name) => self.update(name, |stat| stat.rejected += 1),
        }
    }

    fn counters(&self, id: CommandId, name: &'static str) -> Option<&Counters> {
        let counters = self.by_command.get(usize::from(id.0))?;
        counters.name.get_or_init(|| name);
        Some(counters)
    }

    fn update(&self, name: String, change: impl FnOnce(&mut CommandStat)) {
        let mut all = self
            .by_subcommand
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        change(all.entry(name).or_default());
    }

    /// `(name, counts)` for every command that ran or was refused, by name.
    pub(crate) fn command_stats(&self) -> Vec<(String, CommandStat)> {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let mut all: Vec<(String, CommandStat)> = self
            .by_command
            .iter()
            .filter_map(|counters| {
                let stat = CommandStat {
                    calls: load(&counters.calls),
                    usec: load(&counters.usec),
                    rejected: load(&counters.rejected),
                    failed: load(&counters.failed),
                };
                let name = counters.name.get()?;
                (stat.calls + stat.rejected > 0).then(|| ((*name).to_string(), stat))
            })
            .collect();
        all.extend(
            self.by_subcommand
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(name, stat)| (name.clone(), *stat)),
        );
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
        for counters in self.by_command.iter() {
            for counter in [
                &counters.calls,
                &counters.usec,
                &counters.rejected,
                &counters.failed,
            ] {
                counter.store(0, Ordering::Relaxed);
            }
        }
        self.by_subcommand
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
}
