//! Where a command's keys are, and the rule Redis Cluster holds every command to: all of
//! one command's keys (and all of one transaction's) in one slot.

use lock_core::{common_slot, hash_slot};

use super::Command;
use crate::protocol::request::Request;

/// `CROSSSLOT`, Redis Cluster's refusal of one command's keys in two slots.
pub(crate) const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";

/// The keys a command names, where Redis's key positions say they are (EVAL and
/// EVALSHA: their `numkeys` keys).
pub(crate) fn keys_of<'a, A: AsRef<[u8]>>(command: &Command, args: &'a [A]) -> Vec<&'a [u8]> {
    if matches!(
        command.name,
        "eval" | "evalsha" | "eval_ro" | "evalsha_ro" | "fcall" | "fcall_ro"
    ) {
        let count = args
            .get(2)
            .and_then(|n| std::str::from_utf8(n.as_ref()).ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        return args.iter().skip(3).take(count).map(AsRef::as_ref).collect();
    }
    // Sorted-set algebra: a number of keys, then the keys (after the destination).
    let numkeys_at = match command.name {
        "zunionstore" | "zinterstore" | "zdiffstore" => Some(2),
        "zunion" | "zinter" | "zdiff" | "zintercard" => Some(1),
        _ => None,
    };
    if let Some(at) = numkeys_at {
        let count = args
            .get(at)
            .and_then(|n| std::str::from_utf8(n.as_ref()).ok()?.parse::<usize>().ok())
            .unwrap_or(0);
        let destination = args.iter().skip(1).take(at - 1);
        let sources = args.iter().skip(at + 1).take(count);
        return destination.chain(sources).map(AsRef::as_ref).collect();
    }
    let (first, last, step) = super::introspection::key_positions(command);
    if first <= 0 || step <= 0 {
        return Vec::new();
    }
    let last = if last < 0 {
        args.len() as i64 + last
    } else {
        last
    };
    (first..=last.min(args.len() as i64 - 1))
        .step_by(step as usize)
        .map(|index| args[index as usize].as_ref())
        .collect()
}

/// Whether one command's keys span slots.
pub(crate) fn cross_slot<A: AsRef<[u8]>>(command: &Command, args: &[A]) -> bool {
    common_slot(&keys_of(command, args)).is_err()
}

/// Whether a transaction's commands, together, name keys of two slots (EXEC then answers
/// `CROSSSLOT` and runs none of them).
pub(crate) fn transaction_spans_slots(requests: &[Request]) -> bool {
    let mut slot = None;
    for request in requests {
        for key in keys_of(super::command(request.command), &request.args) {
            let this = hash_slot(key);
            if *slot.get_or_insert(this) != this {
                return true;
            }
        }
    }
    false
}
