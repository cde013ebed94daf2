//! What INFO's Stats and Errorstats sections count.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lock_core::Value;

/// Counters since the server started (or `CONFIG RESETSTAT`).
#[derive(Debug, Default)]
pub(crate) struct Stats {
    commands: AtomicU64,
    rejected_connections: AtomicU64,
    error_replies: AtomicU64,
    /// Error replies by their code (`ERR`, `WRONGTYPE`…).
    errors: Mutex<BTreeMap<String, u64>>,
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
    }
}
