//! MULTI, EXEC and DISCARD. Queued keyspace commands run in one atomic section, together
//! with the check of this database's WATCHed keys; a block that also holds connection or
//! scripting commands runs them in order, each atomic on its own.

use lock_core::Value;

use super::{arity_ok, connection, keyspace, scripting, unknown_command, wrong_arity};
use crate::session::{Session, Transaction};

/// Commands a transaction does not queue.
pub(crate) fn controls_transaction(name: &[u8]) -> bool {
    matches!(
        name,
        b"multi" | b"exec" | b"discard" | b"watch" | b"quit" | b"reset"
    )
}

pub(crate) fn multi(session: &mut Session, args: &[Vec<u8>]) -> Value {
    if args.len() != 1 {
        return wrong_arity("multi");
    }
    if session.transaction.is_some() {
        return Value::Error("ERR MULTI calls can not be nested".into());
    }
    session.transaction = Some(Transaction::default());
    Value::Status("OK".into())
}

pub(crate) fn discard(session: &mut Session) -> Value {
    match session.transaction.take() {
        Some(_) => Value::Status("OK".into()),
        None => Value::Error("ERR DISCARD without MULTI".into()),
    }
}

/// Queues `args` in the open transaction: `QUEUED`, or the error that will abort EXEC.
pub(crate) fn queue(transaction: &mut Transaction, name: &[u8], args: Vec<Vec<u8>>) -> Value {
    let arity = connection::lookup(name)
        .or_else(|| scripting::lookup(name))
        .map(|(_, arity)| arity)
        .or_else(|| keyspace::lookup(name).map(keyspace::arity))
        .or(match name {
            b"subscribe" | b"psubscribe" => Some(-2),
            b"unsubscribe" | b"punsubscribe" => Some(-1),
            _ => None,
        });
    let refusal = match arity {
        None => unknown_command(&args),
        Some(arity) if !arity_ok(arity, args.len()) => wrong_arity(&String::from_utf8_lossy(name)),
        Some(_) => {
            transaction.queued.push(args);
            return Value::Status("QUEUED".into());
        }
    };
    transaction.refused = true;
    refusal
}

/// Whether every queued command is a keyspace command (then EXEC is one atomic step).
pub(crate) fn all_keyspace(queued: &[Vec<Vec<u8>>]) -> bool {
    queued.iter().all(|c| keyspace::lookup(&c[0]).is_some())
}
