//! Redis Cluster, as a server started with [`ServerOptions::cluster`] shows it: one node
//! that serves all 16384 slots. `CLUSTER INFO|MYID|SLOTS|SHARDS|NODES|KEYSLOT` answer
//! as that node does, so cluster clients of any language connect. The rules a cluster
//! holds every command to are the table's ([`crate::table::keys`]).
//!
//! [`ServerOptions::cluster`]: crate::ServerOptions::cluster

use std::net::IpAddr;

use lock_core::{SLOTS, Value, hash_slot};

use crate::protocol::args::wrong_arity;
use crate::state::shared::Shared;

/// `redis_mode` in INFO, `mode` in HELLO.
pub(crate) fn mode(shared: &Shared) -> &'static str {
    if shared.options.cluster {
        "cluster"
    } else {
        "standalone"
    }
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
