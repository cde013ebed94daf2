//! A client's consecutive pipelined keyspace commands, run as one atomic step, as Redis
//! runs a client's whole query buffer in one event-loop turn: one store lock and one
//! clock reading for the lot instead of one each. (Redis reads its clock per command;
//! here the commands of one step share a reading, microseconds apart.) A step holds at
//! most [`MAX_STEP`] commands, so a huge pipeline cannot hold the store for long.
//!
//! Only plain commands are gathered: a command that changes the session (SELECT, MULTI,
//! SUBSCRIBE, AUTH…), may block (BLPOP), or arrives while a transaction or a RESP2
//! subscription restricts what runs, is run on its own after the gathered ones. While
//! faults are armed on the database, commands also run one by one, so that each still
//! meets its own injected fault or latency.

use lock_core::Value;

use crate::commands::keyspace;
use crate::commands::pubsub::Subscriptions;
use crate::reply::{Protocol, encode_event, encode_in};
use crate::server::{DROP_CONNECTION, Shared, error_reply};

/// The most commands one step runs.
const MAX_STEP: usize = 1024;

/// The commands gathered so far, all for database `db`.
#[derive(Debug, Default)]
pub(crate) struct Pipeline {
    db: usize,
    commands: Vec<Vec<Vec<u8>>>,
    writes: bool,
}

impl Pipeline {
    /// Takes `args` into the pipeline if it can run there; otherwise (also when the step
    /// is full) hands it back, to run on its own after the gathered ones.
    pub(crate) fn gather(
        &mut self,
        shared: &Shared,
        db: usize,
        args: Vec<Vec<u8>>,
    ) -> Option<Vec<Vec<u8>>> {
        let Some(name) = keyspace::lookup(&args[0]) else {
            return Some(args);
        };
        let full = self.commands.len() >= MAX_STEP;
        if full || keyspace::blocks(name) || !shared.db(db).faults().idle() {
            return Some(args);
        }
        if self.commands.is_empty() {
            self.db = db;
        }
        self.writes |= keyspace::writes(name);
        self.commands.push(args);
        None
    }

    /// Runs the gathered commands and appends their replies to `out`. False when an
    /// injected connection fault means the connection must close instead.
    pub(crate) async fn flush(
        &mut self,
        shared: &Shared,
        protocol: Protocol,
        subscriptions: &mut Subscriptions,
        out: &mut Vec<u8>,
    ) -> bool {
        if self.commands.is_empty() {
            return true;
        }
        let commands = std::mem::take(&mut self.commands);
        let ran = shared
            .db(self.db)
            .atomically(|store| {
                let mut args: Vec<&[u8]> = Vec::new();
                let mut replies = Vec::with_capacity(commands.len());
                for command in &commands {
                    args.clear();
                    args.extend(command.iter().map(Vec::as_slice));
                    let reply = keyspace::run(store, &args);
                    // Events the command caused (PUBLISH to our own subscriptions) go
                    // before its reply, as Redis writes them.
                    replies.push((subscriptions.drain(), reply));
                }
                replies
            })
            .await;
        if std::mem::take(&mut self.writes) {
            shared.serve_blocked(self.db).await;
        }
        match ran {
            Ok(replies) => {
                for (events, reply) in &replies {
                    for event in events {
                        encode_event(protocol, event, out);
                    }
                    encode_in(protocol, reply, out);
                }
            }
            // Faults were idle when the commands were gathered; one armed since fails
            // the whole step, and each command gets its error.
            Err(error) => {
                let reply = error_reply(error);
                if reply == Value::Error(DROP_CONNECTION.into()) {
                    return false;
                }
                for _ in &commands {
                    encode_in(protocol, &reply, out);
                }
            }
        }
        true
    }
}
