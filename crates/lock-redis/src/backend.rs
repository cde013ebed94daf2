//! [`RedisBackend`]: [`KvBackend`] over a real Redis-protocol server, through redis-rs.

use std::sync::Arc;
use std::time::Duration;

use lock_core::{
    ErrorKind, KvBackend, Replicated, Replication, Result, Script, Subscription, Transaction, Value,
};
use redis::aio::MultiplexedConnection;
use redis::{Cmd, FromRedisValue};

use crate::commands::one_command_each;
use crate::pubsub::Notifier;
use crate::route::{Route, Sentinels};
use crate::{errors, transaction, value};

/// How [`RedisBackend`] connects and waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RedisOptions {
    /// The longest one command may take, reconnection included; then the command fails
    /// with [`ErrorKind::Timeout`]. Default 2 s.
    pub command_timeout: Duration,
    /// The longest a (re)connection attempt may take. Default 1 s.
    pub connect_timeout: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        Self {
            command_timeout: Duration::from_secs(2),
            connect_timeout: Duration::from_secs(1),
        }
    }
}

/// A [`KvBackend`] on a Redis-protocol server (Redis, Valkey, KeyDB, …).
///
/// - Built from a URL: `redis://[:password@]host:port[/db]` (also `redis+unix://`).
/// - One multiplexed connection shared by all clones (redis-rs's `ConnectionManager`); when
///   the server goes away it reconnects in the background, without the caller rebuilding
///   anything.
/// - Every command is bounded by [`RedisOptions::command_timeout`].
/// - Scripts run with `EVALSHA`; on `NOSCRIPT` (after `SCRIPT FLUSH` or a server restart)
///   the same call is retried once with `EVAL`, which also caches the script again. No
///   other hidden commands: acquire and release are one round trip each.
/// - Pub/sub (lock wake-ups) uses a second connection, opened on first
///   [`subscribe`](KvBackend::subscribe) and reopened after it drops; subscriptions alive
///   when it drops end with [`Missed::Closed`](lock_core::Missed::Closed).
/// - Server error replies keep their exact text and get an [`ErrorKind`] from it; lost
///   connections are [`ErrorKind::Connection`], deadlines [`ErrorKind::Timeout`].
/// - [`eval_replicated`](KvBackend::eval_replicated) runs the script and `WAIT` on a
///   connection of their own (taken from a small pool), so `WAIT` counts exactly the
///   script's write and never holds up the shared connection.
/// - [`watch`](KvBackend::watch) runs `WATCH`, the reads, and later `MULTI` … `EXEC` on a
///   connection of the transaction's own from the same pool.
/// - [`RedisBackend::connect_sentinel`] follows the master Redis Sentinel names, across
///   failovers.
#[derive(Clone)]
pub struct RedisBackend {
    route: Arc<Route>,
    options: RedisOptions,
    notifier: Arc<Notifier>,
    /// Connections for script + WAIT, each used by one call at a time.
    dedicated: Arc<std::sync::Mutex<Vec<(String, MultiplexedConnection)>>>,
    /// The shared connection's last reply, when it was an error: the command and the
    /// error's text. A server that hangs up after an error reply is then named in the
    /// error of the command that found the connection closed.
    last_error: Arc<LastError>,
}

/// See [`RedisBackend`]'s `last_error`.
#[derive(Debug, Default)]
struct LastError {
    /// Set while `reply` holds something: the common case, a success after a success,
    /// then costs one load.
    set: std::sync::atomic::AtomicBool,
    reply: std::sync::Mutex<Option<(String, String)>>,
}

impl LastError {
    fn replied(&self, command: &Cmd, reply: &Result<(), &lock_core::Error>) {
        use std::sync::atomic::Ordering;
        let from_server = |error: &lock_core::Error| {
            !matches!(
                error.kind(),
                ErrorKind::Connection
                    | ErrorKind::Timeout
                    | ErrorKind::UnexpectedReply
                    | ErrorKind::InvalidConfig
            )
        };
        match reply {
            Ok(()) if !self.set.load(Ordering::Acquire) => {}
            Err(error) if from_server(error) => {
                *self.lock() = Some((name_of(command), error.message().to_owned()));
                self.set.store(true, Ordering::Release);
            }
            Err(_) => {}
            Ok(()) => {
                self.set.store(false, Ordering::Release);
                *self.lock() = None;
            }
        }
    }

    /// The error reply the connection last received, taken: what a lost connection is
    /// explained by.
    fn take(&self) -> Option<(String, String)> {
        use std::sync::atomic::Ordering;
        if !self.set.swap(false, Ordering::AcqRel) {
            return None;
        }
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(String, String)>> {
        self.reply
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("options", &self.options)
            .finish()
    }
}

impl RedisBackend {
    /// Connects to `url` with default [`RedisOptions`].
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, RedisOptions::default()).await
    }

    /// Connects to `url`.
    pub async fn connect_with(url: &str, options: RedisOptions) -> Result<Self> {
        Ok(Self::on(Route::fixed(url, options).await?, options))
    }

    /// Connects to the master that the sentinels at `sentinels` (`host:port` each) know
    /// as `master`, and follows it: after a failover, the first command that fails makes
    /// the backend ask the sentinels again and move to the new master (that command
    /// reports [`ErrorKind::Connection`], so a lock's retry policy tries again).
    pub async fn connect_sentinel(
        sentinels: &[&str],
        master: &str,
        options: RedisOptions,
    ) -> Result<Self> {
        let sentinels = Sentinels {
            addresses: sentinels.iter().map(|s| s.to_string()).collect(),
            master: master.to_string(),
        };
        Ok(Self::on(
            Route::sentinel(sentinels, options).await?,
            options,
        ))
    }

    fn on(route: Route, options: RedisOptions) -> Self {
        let route = Arc::new(route);
        Self {
            notifier: Arc::new(Notifier::new(route.clone(), options)),
            route,
            options,
            dedicated: Arc::default(),
            last_error: Arc::default(),
        }
    }

    /// `host:port` of the server commands go to now (the master, under Sentinel).
    pub fn address(&self) -> String {
        self.route.node().address.clone()
    }

    /// Sends one command and converts its reply.
    pub async fn query<T: FromRedisValue>(&self, command: &Cmd) -> Result<T> {
        let node = self.route.node();
        let mut connection = node.connection.clone();
        let limit = self.options.command_timeout;
        // Boxed, the two inner futures keep this one small: callers such as Redlock move
        // one per node into a `FuturesUnordered`, and redis-rs's is kilobytes.
        let reply =
            match tokio::time::timeout(limit, Box::pin(command.query_async::<T>(&mut connection)))
                .await
            {
                Ok(reply) => reply.map_err(errors::from_redis),
                Err(_) => Err(errors::timed_out(limit)),
            };
        self.last_error
            .replied(command, &reply.as_ref().map(|_| ()));
        let reply = reply
            .map_err(|error| match self.last_error_explains(&error) {
                Some(explained) => explained,
                None => error,
            })
            .map_err(|error| error.during(&name_of(command)));
        match reply {
            Err(error) if self.route.follows_sentinel() => {
                Err(Box::pin(self.route.after_error(&node.address, error)).await)
            }
            reply => reply,
        }
    }

    /// A connection of its own for script + WAIT: one from the pool, or a new one.
    /// A lost connection right after an error reply: the server hung up after it (a
    /// server that closes the connection on errors, where Redis keeps it open). The
    /// error then says so, naming the reply and its command. redis-rs reconnects for
    /// the next command.
    fn last_error_explains(&self, error: &lock_core::Error) -> Option<lock_core::Error> {
        if error.kind() != ErrorKind::Connection {
            return None;
        }
        let (command, text) = self.last_error.take()?;
        Some(lock_core::Error::new(
            ErrorKind::Connection,
            format!(
                "the server closed the connection after replying `-{text}` to {command} ({})",
                error.message()
            ),
        ))
    }

    async fn dedicated(&self) -> Result<(String, MultiplexedConnection)> {
        let node = self.route.node();
        let pooled = {
            let mut pool = self
                .dedicated
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            pool.retain(|(address, _)| *address == node.address);
            pool.pop()
        };
        if let Some(pooled) = pooled {
            return Ok(pooled);
        }
        // No response timeout here: WAIT blocks for its own timeout, bounded by the caller.
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.options.connect_timeout))
            .set_response_timeout(None);
        let limit = self.options.connect_timeout;
        let connection = tokio::time::timeout(
            limit,
            node.client
                .get_multiplexed_async_connection_with_config(&config),
        )
        .await
        .map_err(|_| errors::timed_out(limit))?
        .map_err(errors::from_redis)?;
        Ok((node.address.clone(), connection))
    }

    /// The script, then `WAIT` (or `WAITAOF`), pipelined on `connection`.
    async fn script_and_wait(
        connection: &mut MultiplexedConnection,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        let timeout = replication.timeout_ms();
        if replication.fsync {
            // Asked alone first: pipelined after the script, a server without WAITAOF
            // (before 7.2) would refuse it only once the lock was written. Asking for
            // nothing (`WAITAOF 0 0 0`) answers at once on a server that has it.
            let mut probe = redis::cmd("WAITAOF");
            probe.arg(0).arg(0).arg(0);
            match probe
                .query_async::<redis::Value>(connection)
                .await
                .map_err(errors::from_redis)
            {
                Err(error) if error.message().starts_with("ERR unknown command") => {
                    return Err(lock_core::Error::new(
                        ErrorKind::Unsupported,
                        error.message(),
                    ));
                }
                probed => probed?,
            };
        }
        for (command, body) in [("EVALSHA", script.sha1()), ("EVAL", script.lua())] {
            let mut pipe = redis::pipe();
            pipe.cmd(command).arg(body).arg(keys.len());
            for key in keys {
                pipe.arg(*key);
            }
            for arg in args {
                pipe.arg(*arg);
            }
            if replication.fsync {
                pipe.cmd("WAITAOF")
                    .arg(0)
                    .arg(replication.replicas)
                    .arg(timeout);
            } else {
                pipe.cmd("WAIT").arg(replication.replicas).arg(timeout);
            }
            let (reply, waited): (redis::Value, redis::Value) = match pipe
                .query_async(connection)
                .await
                .map_err(errors::from_redis)
            {
                Err(error) if error.kind() == ErrorKind::NoScript && command == "EVALSHA" => {
                    continue;
                }
                reply => reply?,
            };
            let acknowledged = match waited {
                redis::Value::Int(n) => n,
                // WAITAOF: [local fsyncs, replica fsyncs].
                redis::Value::Array(counts) => match counts.as_slice() {
                    [_, redis::Value::Int(n)] => *n,
                    _ => 0,
                },
                _ => 0,
            };
            return Ok(Replicated {
                reply: value::from_redis(reply),
                acknowledged,
            });
        }
        // Only a server that is not Redis answers NOSCRIPT to EVAL.
        Err(lock_core::Error::no_script())
    }

    /// A lone server takes any keys in one command.
    fn check_keys(&self, _keys: &[&[u8]]) -> Result<()> {
        Ok(())
    }
}

impl KvBackend for RedisBackend {
    one_command_each!();
    async fn eval_replicated(
        &self,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        replication: &Replication,
    ) -> Result<Replicated<Value>> {
        let (address, mut connection) = self.dedicated().await?;
        let limit = self.options.command_timeout + replication.timeout;
        let outcome = tokio::time::timeout(
            limit,
            Self::script_and_wait(&mut connection, script, keys, args, replication),
        )
        .await
        .unwrap_or_else(|_| Err(errors::timed_out(limit)));
        match outcome {
            Err(error) if error.is_transient() => {
                // The connection may be broken or still waiting: it is not reused.
                Err(self.route.after_error(&address, error).await)
            }
            outcome => {
                self.dedicated
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((address, connection));
                outcome
            }
        }
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        let reply = self
            .query(redis::cmd("PUBLISH").arg(channel).arg(message))
            .await?;
        crate::replies::integer("PUBLISH", reply)
    }
    async fn watch(&self, keys: &[&[u8]]) -> Result<Transaction> {
        let (address, mut connection) = self.dedicated().await?;
        let limit = self.options.command_timeout;
        let pipe = transaction::watch_and_get(keys);
        let read = pipe.query_async::<Vec<redis::Value>>(&mut connection);
        let values = match tokio::time::timeout(limit, read).await {
            Ok(values) => values.map_err(|e| errors::from_redis(e).during("WATCH"))?,
            Err(_) => return Err(errors::timed_out(limit).during("WATCH")),
        };
        let values = values
            .into_iter()
            .map(|value| crate::replies::bulk_or_nil("GET", value))
            .collect::<Result<Vec<_>>>()?;
        let pool = self.dedicated.clone();
        let session = transaction::Watching {
            connection,
            limit,
            give_back: Box::new(move |connection| {
                pool.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((address, connection));
            }),
        };
        Ok(Transaction::new(values, Box::new(session)))
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.notifier.subscribe(channel).await
    }
}

/// A command's name, as its first argument spells it (for error texts).
pub(crate) fn name_of(command: &Cmd) -> String {
    command
        .args_iter()
        .next()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).to_ascii_uppercase(),
            _ => String::new(),
        })
        .unwrap_or_default()
}
