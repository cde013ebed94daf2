//! EVAL, EVALSHA, their read-only forms, and SCRIPT LOAD/EXISTS/FLUSH; and what a
//! script's `redis.call` runs: the engine hands each call here ([`script_command`]), where
//! it is checked against the command table as Redis checks it and run on the keyspace.

use lock_core::{Error, SlotLayout, Value, common_slot, hash_slot};
use lock_memory::{Databases, MemoryBackend};

use super::undo::UndoLog;
use super::{blocked, keyspace};
use crate::commands::connection;
use crate::protocol::args::{NOT_AN_INTEGER, integer, wrong_arity};
use crate::protocol::reply::{Hangup, Protocol, from_store};
use crate::state::client::Client;
use crate::state::context::Context;
use crate::state::scripts::{CallCommand, Ran, RunLimits, ScriptCall};
use crate::state::shared::Shared;
use crate::table::{self, Command, Flags, Scripting, command_keys, introspection};

/// Runs `which` (its arity already checked).
pub(crate) async fn run(
    shared: &Shared,
    client: &mut Client,
    which: Scripting,
    args: &[Vec<u8>],
) -> Result<Value, Hangup> {
    let (by_sha, read_only) = match which {
        Scripting::Script => return Ok(script(shared, args)),
        Scripting::Function => return Ok(super::functions::function(shared, args)),
        Scripting::FCall => return super::functions::fcall(shared, client, args, false).await,
        Scripting::FCallRo => return super::functions::fcall(shared, client, args, true).await,
        Scripting::Eval => (false, false),
        Scripting::EvalSha => (true, false),
        Scripting::EvalRo => (false, true),
        Scripting::EvalShaRo => (true, true),
    };
    // A digest that is not 40 characters long cannot match: Redis says so before it
    // reads the number of keys.
    if by_sha && args[1].len() != 40 {
        return Ok(Value::Error(
            "NOSCRIPT No matching script. Please use EVAL.".into(),
        ));
    }
    let Some(numkeys) = integer(&args[2]) else {
        return Ok(Value::Error(NOT_AN_INTEGER.into()));
    };
    if numkeys < 0 {
        return Ok(Value::Error("ERR Number of keys can't be negative".into()));
    }
    let numkeys = numkeys as usize;
    if numkeys > args.len() - 3 {
        return Ok(Value::Error(
            "ERR Number of keys can't be greater than number of args".into(),
        ));
    }
    let sha = if by_sha {
        let sha = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
        if !shared.scripts.exists(&sha) {
            return Ok(Value::Error(
                "NOSCRIPT No matching script. Please use EVAL.".into(),
            ));
        }
        sha
    } else {
        match shared.scripts.load(&args[1]) {
            Ok(sha) => sha,
            Err(text) => return Ok(Value::Error(text)),
        }
    };
    if read_only && shared.scripts.refuses_read_only(&sha) {
        return Ok(Value::Error(
            "ERR Can not execute a script with write flag using *_ro command.".into(),
        ));
    }
    let keys: Vec<&[u8]> = args[3..3 + numkeys].iter().map(Vec::as_slice).collect();
    let argv: Vec<&[u8]> = args[3 + numkeys..].iter().map(Vec::as_slice).collect();
    execute(shared, client, &keys, read_only, |limits, call| {
        shared.scripts.run(&sha, &keys, &argv, limits, call)
    })
    .await
}

/// Runs a script or a function (`engine` starts it in the script engine) for `client`,
/// with every database in one atomic step (it may SELECT another); blocked clients are
/// served after it.
pub(crate) async fn execute(
    shared: &Shared,
    client: &mut Client,
    keys: &[&[u8]],
    read_only: bool,
    engine: impl FnOnce(RunLimits, &mut CallCommand<'_>) -> Ran,
) -> Result<Value, Hangup> {
    let db = client.db;
    let limits = RunLimits {
        read_only,
        time_limit: shared.config.script_time_limit(),
    };
    let context = keyspace::context(shared, db, client.protocol);
    let ran = MemoryBackend::atomically_across(shared.dbs(), db, |databases| {
        let mut script = ScriptState {
            databases,
            context,
            read: false,
            locality: None,
            slot: script_slot(keys),
            undo: UndoLog::default(),
            stats: Some(&shared.stats),
        };
        let ran = engine(limits, &mut |call| script_command(&mut script, call));
        client.script_read = script.read;
        script.finish(ran.stopped, ran.reply)
    })
    .await;
    blocked::serve_all(shared).await;
    from_store(ran)
}

/// The slot of a script's declared keys, in a cluster (they share one, or the script was
/// refused with CROSSSLOT before it ran).
pub(crate) fn script_slot(keys: &[&[u8]]) -> Option<u16> {
    keys.first().map(|key| hash_slot(key))
}

/// What a running script's commands share.
pub(crate) struct ScriptState<'a, 'd> {
    /// Every database: a script may SELECT another.
    pub(crate) databases: &'a mut Databases<'d>,
    /// Its `db` is the database the script works in now (`SELECT` changes it).
    pub(crate) context: Context,
    /// Whether a read-only command ran: a tracking caller then tracks the script's KEYS.
    pub(crate) read: bool,
    /// In the double standing for a cluster of several primaries: the slots' owners and
    /// the node the script runs on. serve itself is a one-node cluster, where every key
    /// is local.
    pub(crate) locality: Option<Locality<'a>>,
    /// In a cluster, the slot the script works in: its declared keys', or else the first
    /// key a command of it touched. Without `allow-cross-slot-keys`, every key must be
    /// of it.
    pub(crate) slot: Option<u16>,
    /// What its writes changed, taken back if it is stopped at its time limit.
    pub(crate) undo: UndoLog,
    /// Where its commands are counted (a server's INFO; the double counts nothing).
    pub(crate) stats: Option<&'a crate::state::stats::Stats>,
}

impl ScriptState<'_, '_> {
    /// The script has ended with `reply`: if it was `stopped` at its time limit, every
    /// write it made is taken back, so that a script is all or nothing, and the reply says
    /// which writes could not be (to values too large to have been copied).
    pub(crate) fn finish(&mut self, stopped: bool, reply: Value) -> Value {
        let undo = std::mem::take(&mut self.undo);
        if !stopped {
            return reply;
        }
        let unkept = undo.restore(self.databases);
        match reply {
            Value::Error(text) if !unkept.is_empty() => {
                let keys: Vec<String> = unkept
                    .iter()
                    .map(|key| format!("'{}'", String::from_utf8_lossy(key)))
                    .collect();
                Value::Error(format!(
                    "{text} Its writes to {} stay: values of more than {} elements are not copied before a script writes them.",
                    keys.join(", "),
                    super::undo::LARGEST_KEPT
                ))
            }
            reply => reply,
        }
    }

    /// Keeps what the write `command` is about to change at its `keys`.
    fn before_write(&mut self, command: &Command, keys: &[&[u8]]) {
        match command.name {
            "flushdb" => self.undo.save_all(self.databases),
            // `COPY … DB n` writes the key in another database.
            "copy" => self.undo.save_everywhere(self.databases, keys),
            _ => self.undo.save(self.databases, self.context.db, keys),
        }
    }
}

/// Which node a script runs on, in a cluster of several primaries.
pub(crate) struct Locality<'a> {
    /// Which primary serves each slot.
    pub(crate) layout: &'a SlotLayout,
    /// The node of the script's declared keys; `None` without keys (a random node, so
    /// every key is refused).
    pub(crate) node: Option<usize>,
}

impl Locality<'_> {
    /// Whether every one of `keys` (of one slot already) is served by the script's node.
    fn serves(&self, keys: &[&[u8]]) -> bool {
        match keys.first() {
            None => true,
            Some(key) => self.node == Some(self.layout.node_of(hash_slot(key))),
        }
    }
}

/// One `redis.call` of a script: checked in Redis's order (known, arity, allowed in
/// scripts, cluster slots, writes), then run on the keyspace.
pub(crate) fn script_command(script: &mut ScriptState<'_, '_>, call: ScriptCall<'_>) -> Value {
    let args = call.args;
    let version = script.context.version;
    let Some(command) = table::named_in(version, &args[0]) else {
        return error("ERR Unknown Redis command called from script");
    };
    if !command.arity_ok(args.len()) {
        return error("ERR Wrong number of args calling Redis command from script");
    }
    // Redis looks subcommands up as commands of their own.
    if let Some(arity) = subcommand_arity(command.name, args) {
        match arity {
            None => return error("ERR Unknown Redis command called from script"),
            Some(arity) if arity != args.len() => {
                return error("ERR Wrong number of args calling Redis command from script");
            }
            Some(_) => {}
        }
    }
    // CLUSTER RESET is the one CLUSTER subcommand Redis flags `noscript`.
    let cluster_reset = command.name == "cluster" && args[1].eq_ignore_ascii_case(b"reset");
    if command.refused_in_scripts(version) || cluster_reset {
        return error("ERR This Redis command is not allowed from script");
    }
    // As in Redis 7, SELECT moves the script to another database, not its client.
    if command.name == "select" {
        return match connection::select_index(&args[1], script.context.cluster) {
            Ok(db) => {
                script.context.db = db;
                Value::Status("OK".into())
            }
            Err(text) => error(text),
        };
    }
    if !command.on_keyspace() {
        return Value::Error(format!(
            "ERR nxlock serve cannot run '{}' from a script",
            command.name
        ));
    }
    let writes = command.flags.has(Flags::WRITE);
    // The command's keys, found once for the cluster's rules and the undo log.
    let keys = if script.context.cluster || writes {
        command_keys::keys_of(command, args)
    } else {
        Vec::new()
    };
    if script.context.cluster {
        if common_slot(&keys).is_err() {
            // Redis 7.4 names the command; earlier versions do not.
            let refusal = script.context.version.cross_slot_in_script(command.name);
            return error(refusal.message());
        }
        if let Err(refusal) = cluster_keys(script, &keys, call) {
            return refusal;
        }
    }
    if call.read_only && writes {
        return error("ERR Write commands are not allowed from read-only scripts.");
    }
    let context = Context {
        protocol: if call.resp == 3 {
            Protocol::Resp3
        } else {
            Protocol::Resp2
        },
        ..script.context
    };
    // One read is enough to know (and the lookup is not free).
    script.read = script.read || introspection::reads_keys(command);
    if writes {
        script.before_write(command, &keys);
    }
    let started = std::time::Instant::now();
    let reply = keyspace::run_across(script.databases, command, args, context);
    // A script's commands count in Commandstats as Redis counts them.
    if let Some(stats) = script.stats {
        stats.called(
            introspection::stat_name(command, args),
            started.elapsed(),
            matches!(reply, Value::Error(_)),
        );
    }
    reply
}

/// Redis's `scriptVerifyClusterState` for one command's `keys` (already of one slot):
/// served by the script's node, and, unless the script allows cross-slot keys, of the
/// script's one slot.
fn cluster_keys(
    script: &mut ScriptState<'_, '_>,
    keys: &[&[u8]],
    call: ScriptCall<'_>,
) -> Result<(), Value> {
    let Some(key) = keys.first() else {
        return Ok(());
    };
    if let Some(locality) = &script.locality
        && !locality.serves(keys)
    {
        return Err(error(Error::non_local_key().message()));
    }
    if call.allow_cross_slot {
        return Ok(());
    }
    let slot = hash_slot(key);
    match script.slot {
        None => script.slot = Some(slot),
        Some(script_slot) if script_slot != slot => {
            return Err(error(
                "ERR Script attempted to access keys that do not hash to the same slot",
            ));
        }
        Some(_) => {}
    }
    Ok(())
}

fn error(text: &str) -> Value {
    Value::Error(text.into())
}

fn script(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let sub = args[1].to_ascii_lowercase();
    let arity_error = || wrong_arity(&format!("script|{}", String::from_utf8_lossy(&sub)));
    match sub.as_slice() {
        b"load" if args.len() == 3 => match shared.scripts.load(&args[2]) {
            Ok(sha) => Value::Data(sha.into_bytes()),
            Err(text) => Value::Error(text),
        },
        b"exists" if args.len() >= 3 => Value::Array(
            args[2..]
                .iter()
                .map(|sha| Value::Int(shared.scripts.exists(&String::from_utf8_lossy(sha)).into()))
                .collect(),
        ),
        b"flush" if args.len() <= 3 => {
            let mode = args.get(2).map(|m| m.to_ascii_lowercase());
            match mode.as_deref() {
                None | Some(b"async") | Some(b"sync") => {
                    shared.scripts.flush();
                    Value::Status("OK".into())
                }
                Some(_) => Value::Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option".into()),
            }
        }
        // A script runs to its end (or its time limit) inside one atomic step, so none
        // is ever running when another command is read.
        b"kill" if args.len() == 2 => {
            Value::Error("NOTBUSY No scripts in execution right now.".into())
        }
        b"load" | b"exists" | b"flush" | b"kill" => arity_error(),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try SCRIPT HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}

/// `FUNCTION KILL`, for a client library that answers BUSY with it: serve has no
/// functions, so none is ever running.
/// For a command with subcommands that runs in scripts (OBJECT): the subcommand's
/// arity, `None` inside when there is no such subcommand.
fn subcommand_arity(name: &str, args: &[Vec<u8>]) -> Option<Option<usize>> {
    if name != "object" {
        return None;
    }
    let sub = args[1].to_ascii_lowercase();
    Some(match sub.as_slice() {
        b"help" => Some(2),
        b"encoding" | b"refcount" | b"idletime" | b"freq" => Some(3),
        _ => None,
    })
}
