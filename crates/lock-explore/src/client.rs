//! [`ClientView`]: one client's connection to the run's servers. It is a [`KvBackend`]
//! like any other, so the code under test runs unchanged; underneath, it applies the
//! faults aimed at this client, reads this client's own clock, and records every command
//! with its reply.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    Clock, DynBackend, Error, ErrorKind, ExpireCondition, KvBackend, Replicated, Replication,
    Result, Script, SetCondition, SetExpiry, SetOptions, SetReply, Subscription, Transaction,
    Value,
};

use crate::monitor::Monitor;
use crate::trace::What;

/// A client's view of one server (one Redlock node, or the whole deployment).
///
/// Faults aimed at the client hit its next command here: a pause or latency before it
/// is sent, a refusal instead of it, a lost reply or a dead connection after it ran, a
/// late reply, or the cancellation of the client's cycle. Its [`KvBackend::clock`] is the
/// client's own, which [`Fault::ClientClock`](crate::Fault::ClientClock) moves.
#[derive(Clone, Debug)]
pub struct ClientView {
    inner: DynBackend,
    monitor: Arc<Monitor>,
    client: usize,
    /// The Redlock node, when the client has one view per node.
    node: Option<usize>,
}

impl ClientView {
    pub(crate) fn new(
        inner: DynBackend,
        monitor: Arc<Monitor>,
        client: usize,
        node: Option<usize>,
    ) -> Self {
        Self {
            inner,
            monitor,
            client,
            node,
        }
    }

    /// The client this view belongs to.
    pub fn client(&self) -> usize {
        self.client
    }

    /// Runs one command named `kind` through the client's faults, and records it with
    /// its send and reply times; a command whose future is dropped while it waits (a
    /// user's timeout, a cancelled cycle) is recorded as cancelled.
    async fn command<T>(
        &self,
        kind: &str,
        wrote: impl FnOnce(&Result<T>) -> bool,
        describe: impl FnOnce() -> String,
        brief: impl FnOnce(&T) -> String,
        run: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let mut pending = Pending {
            view: self,
            kind,
            sent_us: None,
            describe: Some(describe),
        };
        let started = self.monitor.start_op(self.client, true).await;
        pending.sent_us = Some(started.sent_us);
        if started.latency_ms > 0 {
            self.monitor
                .clock
                .sleep(Duration::from_millis(started.latency_ms))
                .await;
        }
        let result = if started.refuse {
            Err(Error::injected(ErrorKind::Connection, "connection refused"))
        } else {
            let result = run.await;
            let after = self.monitor.after(self.client);
            if after.late_ms > 0 {
                self.monitor
                    .clock
                    .sleep(Duration::from_millis(after.late_ms))
                    .await;
            }
            if after.lost {
                Err(Error::injected(ErrorKind::Timeout, "reply lost"))
            } else if after.killed {
                Err(Error::injected(
                    ErrorKind::Connection,
                    "connection reset by peer",
                ))
            } else {
                result
            }
        };
        let describe = pending.describe.take();
        let wrote = wrote(&result);
        let what = match describe {
            Some(describe) if self.monitor.recording => Some(What::Command {
                sent_us: started.sent_us,
                node: self.node,
                command: describe(),
                reply: match &result {
                    Ok(value) => brief(value),
                    Err(error) => format!("(error) {}", error.message()),
                },
            }),
            _ => None,
        };
        self.monitor.finish_op(self.client, kind, wrote, what);
        result
    }
}

/// A command under way: dropped before its reply, it is recorded as cancelled.
struct Pending<'a, D: FnOnce() -> String> {
    view: &'a ClientView,
    kind: &'a str,
    /// Set once the command left the client.
    sent_us: Option<i64>,
    /// Taken when the command completes.
    describe: Option<D>,
}

impl<D: FnOnce() -> String> Drop for Pending<'_, D> {
    fn drop(&mut self) {
        let (Some(sent_us), Some(describe)) = (self.sent_us, self.describe.take()) else {
            return;
        };
        let monitor = &self.view.monitor;
        let what = monitor.recording.then(|| What::Command {
            sent_us,
            node: self.view.node,
            command: describe(),
            reply: "(cancelled)".to_owned(),
        });
        // It may have run: count it as a write.
        monitor.finish_op(self.view.client, self.kind, true, what);
    }
}

/// At most 24 characters of `bytes`, lossy, for a readable trace.
fn text(out: &mut String, bytes: &[u8]) {
    let shown = &bytes[..bytes.len().min(24)];
    out.push(' ');
    out.push_str(&String::from_utf8_lossy(shown));
    if bytes.len() > shown.len() {
        out.push('…');
    }
}

pub(crate) fn line(command: &str, parts: &[&[u8]]) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(command);
    for part in parts {
        text(&mut out, part);
    }
    out
}

fn set_line(key: &[u8], value: &[u8], options: SetOptions) -> String {
    let mut out = line("SET", &[key, value]);
    match options.condition {
        SetCondition::Always => {}
        SetCondition::IfNotExists => out.push_str(" NX"),
        SetCondition::IfExists => out.push_str(" XX"),
    }
    if options.get {
        out.push_str(" GET");
    }
    let _ = match options.expiry {
        SetExpiry::Clear => Ok(()),
        SetExpiry::KeepTtl => write!(out, " KEEPTTL"),
        SetExpiry::Ex(s) => write!(out, " EX {s}"),
        SetExpiry::Px(ms) => write!(out, " PX {ms}"),
        SetExpiry::ExAt(s) => write!(out, " EXAT {s}"),
        SetExpiry::PxAt(ms) => write!(out, " PXAT {ms}"),
    };
    out
}

fn bulk(value: &Option<Vec<u8>>) -> String {
    match value {
        Some(bytes) => {
            let mut out = String::new();
            text(&mut out, bytes);
            format!("\"{}\"", &out[1..])
        }
        None => "(nil)".to_owned(),
    }
}

fn value(value: &Value) -> String {
    match value {
        Value::Nil => "(nil)".to_owned(),
        Value::Int(i) => format!("(integer) {i}"),
        Value::Data(bytes) => bulk(&Some(bytes.clone())),
        Value::Status(status) => status.clone(),
        other => format!("{other:?}"),
    }
}

fn eval_line(script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> String {
    let mut out = format!("EVALSHA {} {}", script.name(), keys.len());
    for part in keys.iter().chain(args) {
        text(&mut out, part);
    }
    out
}

impl KvBackend for ClientView {
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "SET",
            |r: &Result<SetReply>| !matches!(r, Ok(SetReply::NotApplied)),
            || set_line(key, value, options),
            |reply| match reply {
                SetReply::Applied => "OK".to_owned(),
                SetReply::NotApplied => "(nil)".to_owned(),
                SetReply::OldValue(old) => bulk(old),
            },
            self.inner.set(key, value, options),
        )
        .await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "SETNX",
            |r: &Result<bool>| !matches!(r, Ok(false)),
            || line("SETNX", &[key, value]),
            |set| format!("(integer) {}", i32::from(*set)),
            self.inner.setnx(key, value),
        )
        .await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "GET",
            |_: &Result<_>| false,
            || line("GET", &[key]),
            bulk,
            self.inner.get(key),
        )
        .await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "GETSET",
            |_: &Result<_>| true,
            || line("GETSET", &[key, value]),
            bulk,
            self.inner.getset(key, value),
        )
        .await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "GETDEL",
            |r: &Result<Option<Vec<u8>>>| !matches!(r, Ok(None)),
            || line("GETDEL", &[key]),
            bulk,
            self.inner.getdel(key),
        )
        .await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.monitor.touched(self.client, keys.first().copied());
        self.command(
            "DEL",
            |r: &Result<i64>| !matches!(r, Ok(0)),
            || line("DEL", keys),
            |n| format!("(integer) {n}"),
            self.inner.del(keys),
        )
        .await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.monitor.touched(self.client, keys.first().copied());
        self.command(
            "EXISTS",
            |_: &Result<_>| false,
            || line("EXISTS", keys),
            |n| format!("(integer) {n}"),
            self.inner.exists(keys),
        )
        .await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "PEXPIRE",
            |r: &Result<bool>| !matches!(r, Ok(false)),
            || format!("{} {ms} {condition:?}", line("PEXPIRE", &[key])),
            |set| format!("(integer) {}", i32::from(*set)),
            self.inner.pexpire(key, ms, condition),
        )
        .await
    }
    async fn pexpireat(
        &self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "PEXPIREAT",
            |r: &Result<bool>| !matches!(r, Ok(false)),
            || format!("{} {unix_ms} {condition:?}", line("PEXPIREAT", &[key])),
            |set| format!("(integer) {}", i32::from(*set)),
            self.inner.pexpireat(key, unix_ms, condition),
        )
        .await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "PTTL",
            |_: &Result<_>| false,
            || line("PTTL", &[key]),
            |n| format!("(integer) {n}"),
            self.inner.pttl(key),
        )
        .await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "TTL",
            |_: &Result<_>| false,
            || line("TTL", &[key]),
            |n| format!("(integer) {n}"),
            self.inner.ttl(key),
        )
        .await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "PERSIST",
            |r: &Result<bool>| !matches!(r, Ok(false)),
            || line("PERSIST", &[key]),
            |set| format!("(integer) {}", i32::from(*set)),
            self.inner.persist(key),
        )
        .await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.monitor.touched(self.client, Some(key));
        self.command(
            "INCR",
            |_: &Result<_>| true,
            || line("INCR", &[key]),
            |n| format!("(integer) {n}"),
            self.inner.incr(key),
        )
        .await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        self.monitor.touched(self.client, keys.first().copied());
        self.command(
            script.name(),
            |_: &Result<_>| true,
            || eval_line(script, keys, args),
            value,
            self.inner.eval(script, keys, args),
        )
        .await
    }
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        self.monitor.touched(self.client, keys.first().copied());
        self.command(
            script.name(),
            |_: &Result<_>| true,
            || {
                format!(
                    "{} + WAIT {} {}",
                    eval_line(script, keys, args),
                    replication.replicas,
                    replication.timeout_ms()
                )
            },
            |r| format!("{} (acknowledged by {})", value(&r.reply), r.acknowledged),
            self.inner.eval_replicated(script, keys, args, replication),
        )
        .await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.command(
            "PUBLISH",
            |_: &Result<_>| false,
            || line("PUBLISH", &[channel, message]),
            |n| format!("(integer) {n}"),
            self.inner.publish(channel, message),
        )
        .await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.command(
            "SUBSCRIBE",
            |_: &Result<_>| false,
            || line("SUBSCRIBE", &[channel]),
            |_| "subscribed".to_owned(),
            self.inner.subscribe(channel),
        )
        .await
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        self.monitor.touched(self.client, keys.first().copied());
        self.command(
            "WATCH",
            |_: &Result<_>| false,
            || line("WATCH+GET", keys),
            |_| "watching".to_owned(),
            self.inner.watch(keys),
        )
        .await
    }
    fn sharded_pubsub(&self) -> bool {
        self.inner.sharded_pubsub()
    }
    fn clock(&self) -> Clock {
        self.monitor.client_clock(self.client)
    }
}
