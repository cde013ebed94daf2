//! A client's consecutive pipelined keyspace commands, run as one atomic step, as Redis
//! runs a client's whole query buffer in one event-loop turn: one store lock and one
//! clock reading for the lot instead of one each. (Redis reads its clock per command;
//! here the commands of one step share a reading, microseconds apart.) A step holds at
//! most [`MAX_STEP`] commands, so a huge pipeline cannot hold the store for long.
//!
//! Only plain commands are gathered: a command that changes the connection's state (SELECT, MULTI,
//! SUBSCRIBE, AUTH…), may block (BLPOP), or arrives while a transaction or a RESP2
//! subscription restricts what runs, is run on its own after the gathered ones. While
//! faults are armed on the database, commands also run one by one, so that each still
//! meets its own injected fault or latency.

use lock_core::Value;

use super::keyspace;
use crate::protocol::reply::{Hangup, Protocol, encode_in, encode_with_events};
use crate::protocol::request::{CommandId, Request};
use crate::state::shared::Shared;
use crate::state::subscriptions::Subscriptions;
use crate::table::{self, Flags, command_keys};

/// The most commands one step runs.
const MAX_STEP: usize = 1024;

/// The commands gathered so far, all for database `db`.
#[derive(Debug, Default)]
pub(crate) struct Pipeline {
    db: usize,
    requests: Vec<Request>,
}

impl Pipeline {
    /// Takes `args` into the pipeline if it can run there; otherwise (also when the step
    /// is full) hands it back, to run on its own after the gathered ones.
    pub(crate) fn gather(
        &mut self,
        shared: &Shared,
        db: usize,
        found: Option<CommandId>,
        args: Vec<Vec<u8>>,
    ) -> Option<Vec<Vec<u8>>> {
        let Some(id) = found else {
            return Some(args);
        };
        let command = table::command(id);
        let full = self.requests.len() >= MAX_STEP;
        // A cluster's cross-slot refusal is the dispatch's, like every refusal.
        let alone = !command.on_keyspace()
            || command.flags.has(Flags::BLOCKING)
            || (shared.options.cluster && command_keys::cross_slot(command, &args))
            // A shard of a larger cluster redirects keys it does not serve, one by one.
            || shared.options.cluster_layout.is_some();
        if full || alone || !shared.db(db).faults().idle() {
            return Some(args);
        }
        if self.requests.is_empty() {
            self.db = db;
        }
        self.requests.push(Request { command: id, args });
        None
    }

    /// Runs the gathered commands and appends their replies to `out`; [`Hangup`] when an
    /// injected connection fault means the connection must close instead.
    pub(crate) async fn flush(
        &mut self,
        shared: &Shared,
        protocol: Protocol,
        subscriptions: &mut Subscriptions,
        out: &mut Vec<u8>,
    ) -> Result<(), Hangup> {
        if self.requests.is_empty() {
            return Ok(());
        }
        let requests = std::mem::take(&mut self.requests);
        // Events a command causes (PUBLISH to our own subscriptions) go before its reply,
        // as Redis 7.0 writes them, or after it from 7.2.
        let after = usize::from(shared.options.redis_version.pushes_after_reply());
        let mut events = Vec::new();
        let mut observe = |index: usize| subscriptions.drain_into(index + after, &mut events);
        let mut requests = requests;
        let ran =
            keyspace::batch(shared, self.db, &[], &mut requests, protocol, &mut observe).await?;
        match ran {
            Value::Array(replies) => {
                for reply in &replies {
                    shared.stats.command(reply);
                }
                encode_with_events(protocol, &replies, &events, out);
            }
            // Faults were idle when the commands were gathered; one armed since fails
            // the whole step, and each command gets its error.
            error => {
                for _ in &requests {
                    encode_in(protocol, &error, out);
                }
            }
        }
        Ok(())
    }
}
