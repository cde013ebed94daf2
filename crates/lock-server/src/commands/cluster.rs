//! Redis Cluster, as a server started with [`ServerOptions::cluster`] shows it: one node
//! that serves all 16384 slots. `CLUSTER INFO|MYID|SLOTS|SHARDS|NODES|KEYSLOT` answer
//! as that node does, so cluster clients of any language connect; and the rules a cluster
//! holds every command to, [`cross_slot`], apply.
//!
//! [`ServerOptions::cluster`]: crate::ServerOptions::cluster

use std::net::IpAddr;

use lock_core::{SLOTS, Value, common_slot, hash_slot};

use super::{Command, lookup, wrong_arity};
use crate::shared::Shared;

/// `CROSSSLOT`, Redis Cluster's refusal of one command's keys in two slots.
pub(crate) const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
/// A script's command whose keys are not all in one slot this node serves.
pub(crate) const NON_LOCAL: &str =
    "ERR Script attempted to access a non local key in a cluster node";

/// `redis_mode` in INFO, `mode` in HELLO.
pub(crate) fn mode(shared: &Shared) -> &'static str {
    if shared.options.cluster {
        "cluster"
    } else {
        "standalone"
    }
}

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
pub(crate) fn transaction_spans_slots(commands: &[Vec<Vec<u8>>]) -> bool {
    let mut slot = None;
    for args in commands {
        let Some(command) = lookup(&args[0]) else {
            continue;
        };
        for key in keys_of(command, args) {
            let this = hash_slot(key);
            if *slot.get_or_insert(this) != this {
                return true;
            }
        }
    }
    false
}

/// Runs `CLUSTER <subcommand> …`.
pub(crate) fn cluster(shared: &Shared, args: &[Vec<u8>]) -> Value {
    if !shared.options.cluster {
        return Value::Error("ERR This instance has cluster support disabled".into());
    }
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let arity = match sub.as_str() {
        "info" | "myid" | "slots" | "shards" | "nodes" => 2,
        "keyslot" => 3,
        _ => {
            return Value::Error(format!(
                "ERR unknown subcommand '{}'. Try CLUSTER HELP.",
                String::from_utf8_lossy(&args[1])
            ));
        }
    };
    if args.len() != arity {
        return wrong_arity(&format!("cluster|{sub}"));
    }
    let data = |text: String| Value::Data(text.into_bytes());
    match sub.as_str() {
        "info" => data(info()),
        "myid" => data(shared.node_id.clone()),
        "keyslot" => Value::Int(i64::from(hash_slot(&args[2]))),
        "nodes" => data(format!(
            "{} {ip}:{port}@{bus} myself,master - 0 0 0 connected 0-{last}\n",
            shared.node_id,
            ip = ip(shared),
            port = shared.port,
            bus = u32::from(shared.port) + 10_000,
            last = SLOTS - 1,
        )),
        "slots" => Value::Array(vec![Value::Array(vec![
            Value::Int(0),
            Value::Int(i64::from(SLOTS - 1)),
            Value::Array(vec![
                data(ip(shared)),
                Value::Int(i64::from(shared.port)),
                data(shared.node_id.clone()),
                Value::Map(Vec::new()),
            ]),
        ])]),
        _ => shards(shared),
    }
}

/// `CLUSTER SHARDS`: one shard of one node.
fn shards(shared: &Shared) -> Value {
    let field = |name: &str| Value::Data(name.as_bytes().to_vec());
    let node = Value::Map(vec![
        (field("id"), field(&shared.node_id)),
        (field("port"), Value::Int(i64::from(shared.port))),
        (field("ip"), field(&ip(shared))),
        (field("endpoint"), field(&ip(shared))),
        (field("role"), field("master")),
        (field("replication-offset"), Value::Int(0)),
        (field("health"), field("online")),
    ]);
    Value::Array(vec![Value::Map(vec![
        (
            field("slots"),
            Value::Array(vec![Value::Int(0), Value::Int(i64::from(SLOTS - 1))]),
        ),
        (field("nodes"), Value::Array(vec![node])),
    ])])
}

fn info() -> String {
    [
        "cluster_state:ok",
        "cluster_slots_assigned:16384",
        "cluster_slots_ok:16384",
        "cluster_slots_pfail:0",
        "cluster_slots_fail:0",
        "cluster_known_nodes:1",
        "cluster_size:1",
        "cluster_current_epoch:0",
        "cluster_my_epoch:0",
        "cluster_stats_messages_sent:0",
        "cluster_stats_messages_received:0",
        "total_cluster_links_buffer_limit_exceeded:0",
    ]
    .map(|line| format!("{line}\r\n"))
    .concat()
}

/// The address clients reach this node at: the bound one, loopback for a wildcard.
fn ip(shared: &Shared) -> String {
    match shared.options.bind {
        IpAddr::V4(ip) if ip.is_unspecified() => "127.0.0.1".into(),
        IpAddr::V6(ip) if ip.is_unspecified() => "::1".into(),
        ip => ip.to_string(),
    }
}
