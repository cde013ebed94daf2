//! Redis Cluster, as a server started with [`ServerOptions::cluster`] shows it: one node
//! that serves all 16384 slots, or, with [`ServerOptions::cluster_layout`], one node of
//! a cluster of several shards. `CLUSTER INFO|MYID|SLOTS|SHARDS|NODES|KEYSLOT` answer as
//! that node does, so cluster clients of any language connect; a key of another shard's
//! slot is answered `MOVED` ([`moved`]). The rules a cluster holds every command to
//! are the table's ([`crate::table::keys`]).
//!
//! [`ServerOptions::cluster`]: crate::ServerOptions::cluster
//! [`ServerOptions::cluster_layout`]: crate::ServerOptions::cluster_layout

use std::net::{IpAddr, SocketAddr};

use lock_core::{SLOTS, Value, hash_slot};

use crate::protocol::args::wrong_arity;
use crate::state::cluster_layout::shard_id;
use crate::state::shared::Shared;

/// `redis_mode` in INFO, `mode` in HELLO.
pub(crate) fn mode(shared: &Shared) -> &'static str {
    if shared.options.cluster {
        "cluster"
    } else {
        "standalone"
    }
}

/// One shard as the asking client sees it.
struct Shard {
    id: String,
    addr: SocketAddr,
    /// Its slot ranges, in order, ends included.
    slots: Vec<(u16, u16)>,
    myself: bool,
}

/// Every shard, for the client tagged `client`.
fn shards_for(shared: &Shared, client: Option<usize>) -> Vec<Shard> {
    let Some(layout) = &shared.options.cluster_layout else {
        return vec![Shard {
            id: shared.node_id.clone(),
            addr: SocketAddr::new(ip(shared), shared.port),
            slots: vec![(0, SLOTS - 1)],
            myself: true,
        }];
    };
    let mut shards: Vec<Shard> = (0..layout.shards())
        .map(|shard| Shard {
            id: shard_id(shard),
            addr: layout.address(client, shard),
            slots: Vec::new(),
            myself: shard == layout.own_shard(),
        })
        .collect();
    let mut start = 0;
    while start < SLOTS {
        let owner = layout.owner(start);
        let mut end = start;
        while end + 1 < SLOTS && layout.owner(end + 1) == owner {
            end += 1;
        }
        if let Some(shard) = shards.get_mut(owner) {
            shard.slots.push((start, end));
        }
        start = end + 1;
    }
    shards
}

/// `MOVED slot host:port` for a command whose first key is `key` (as Redis's
/// `getNodeByQuery` takes it; a command across slots is refused before this) when
/// another shard serves its slot, addressed to the client tagged `client`. `None` on a
/// server without a layout, or for a key this shard serves.
pub(crate) fn moved(shared: &Shared, client: Option<usize>, key: &[u8]) -> Option<Value> {
    let layout = shared.options.cluster_layout.as_ref()?;
    let slot = hash_slot(key);
    let owner = layout.owner(slot);
    if owner == layout.own_shard() {
        return None;
    }
    let addr = layout.address(client, owner);
    Some(Value::Error(format!("MOVED {slot} {addr}")))
}

/// Runs `CLUSTER <subcommand> …` for the client tagged `client`.
pub(crate) fn cluster(shared: &Shared, client: Option<usize>, args: &[Vec<u8>]) -> Value {
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
    if sub == "keyslot" {
        return Value::Int(i64::from(hash_slot(&args[2])));
    }
    let all = shards_for(shared, client);
    match sub.as_str() {
        "info" => data(info(all.len())),
        "myid" => data(
            all.iter()
                .find(|s| s.myself)
                .map_or_else(|| shared.node_id.clone(), |s| s.id.clone()),
        ),
        "nodes" => data(all.iter().map(node_line).collect()),
        "slots" => slots(&all),
        _ => shards(&all),
    }
}

/// A line of `CLUSTER NODES`.
fn node_line(shard: &Shard) -> String {
    let flags = if shard.myself {
        "myself,master"
    } else {
        "master"
    };
    let slots: String = shard
        .slots
        .iter()
        .map(|(start, end)| {
            if start == end {
                format!(" {start}")
            } else {
                format!(" {start}-{end}")
            }
        })
        .collect();
    format!(
        "{} {ip}:{port}@{bus} {flags} - 0 0 0 connected{slots}\n",
        shard.id,
        ip = shard.addr.ip(),
        port = shard.addr.port(),
        bus = u32::from(shard.addr.port()) + 10_000,
    )
}

/// `CLUSTER SLOTS`: each range with its shard's primary, by the range's first slot.
fn slots(all: &[Shard]) -> Value {
    let mut ranges: Vec<(u16, u16, &Shard)> = all
        .iter()
        .flat_map(|shard| shard.slots.iter().map(move |(s, e)| (*s, *e, shard)))
        .collect();
    ranges.sort_by_key(|(start, _, _)| *start);
    let data = |text: String| Value::Data(text.into_bytes());
    Value::Array(
        ranges
            .into_iter()
            .map(|(start, end, shard)| {
                Value::Array(vec![
                    Value::Int(i64::from(start)),
                    Value::Int(i64::from(end)),
                    Value::Array(vec![
                        data(shard.addr.ip().to_string()),
                        Value::Int(i64::from(shard.addr.port())),
                        data(shard.id.clone()),
                        Value::Map(Vec::new()),
                    ]),
                ])
            })
            .collect(),
    )
}

/// `CLUSTER SHARDS`: each shard with its slots and its one node, the primary.
fn shards(all: &[Shard]) -> Value {
    let field = |name: &str| Value::Data(name.as_bytes().to_vec());
    Value::Array(
        all.iter()
            .map(|shard| {
                let ip = shard.addr.ip().to_string();
                let node = Value::Map(vec![
                    (field("id"), field(&shard.id)),
                    (field("port"), Value::Int(i64::from(shard.addr.port()))),
                    (field("ip"), field(&ip)),
                    (field("endpoint"), field(&ip)),
                    (field("role"), field("master")),
                    (field("replication-offset"), Value::Int(0)),
                    (field("health"), field("online")),
                ]);
                let slots = shard
                    .slots
                    .iter()
                    .flat_map(|(s, e)| [Value::Int(i64::from(*s)), Value::Int(i64::from(*e))])
                    .collect();
                Value::Map(vec![
                    (field("slots"), Value::Array(slots)),
                    (field("nodes"), Value::Array(vec![node])),
                ])
            })
            .collect(),
    )
}

fn info(nodes: usize) -> String {
    let nodes = nodes.to_string();
    [
        "cluster_state:ok",
        "cluster_slots_assigned:16384",
        "cluster_slots_ok:16384",
        "cluster_slots_pfail:0",
        "cluster_slots_fail:0",
        &format!("cluster_known_nodes:{nodes}"),
        &format!("cluster_size:{nodes}"),
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
fn ip(shared: &Shared) -> IpAddr {
    match shared.options.bind {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
        ip => ip,
    }
}
