//! `INFO [section …]`: Redis 7.0's sections and the fields clients and test suites read.
//! Every field is computed or true of the double (it keeps nothing on disk, has no
//! replicas and evicts nothing); fields it has no honest value for are left out.

use lock_memory::{Data, Dump};

use crate::state::shared::Shared;

/// The sections in Redis's order, and whether plain `INFO` includes each.
const SECTIONS: &[(&str, bool)] = &[
    ("server", true),
    ("clients", true),
    ("memory", true),
    ("persistence", true),
    ("stats", true),
    ("replication", true),
    ("cpu", true),
    ("modules", true),
    ("commandstats", false),
    ("errorstats", true),
    ("cluster", true),
    ("keyspace", true),
];

/// The text INFO answers for the section arguments `args` (none: the default sections).
pub(crate) fn info(shared: &Shared, args: &[Vec<u8>]) -> String {
    let asked: Vec<String> = args
        .iter()
        .map(|arg| String::from_utf8_lossy(arg).to_ascii_lowercase())
        .collect();
    let everything = asked
        .iter()
        .any(|a| matches!(a.as_str(), "all" | "everything"));
    let default = asked.is_empty() || asked.iter().any(|a| a == "default");
    let wanted = |name: &str, in_default: bool| {
        everything || (default && in_default) || asked.iter().any(|a| a == name)
    };
    let mut text = String::new();
    for (name, _) in SECTIONS
        .iter()
        .filter(|(name, in_default)| wanted(name, *in_default))
    {
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        let fields = section(shared, name);
        text.push_str(&format!("# {}\r\n", title(name)));
        for (field, value) in fields {
            text.push_str(&format!("{field}:{value}\r\n"));
        }
    }
    text
}

fn title(name: &str) -> &'static str {
    match name {
        "server" => "Server",
        "clients" => "Clients",
        "memory" => "Memory",
        "persistence" => "Persistence",
        "stats" => "Stats",
        "replication" => "Replication",
        "cpu" => "CPU",
        "modules" => "Modules",
        "commandstats" => "Commandstats",
        "errorstats" => "Errorstats",
        "cluster" => "Cluster",
        _ => "Keyspace",
    }
}

type Fields = Vec<(String, String)>;

fn fields(pairs: &[(&str, String)]) -> Fields {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_string(), value.clone()))
        .collect()
}

fn section(shared: &Shared, name: &str) -> Fields {
    match name {
        "server" => server(shared),
        "clients" => fields(&[
            ("connected_clients", shared.clients().to_string()),
            ("cluster_connections", "0".into()),
            ("maxclients", shared.config.max_clients().to_string()),
            ("blocked_clients", shared.blocked_clients().to_string()),
            (
                "tracking_clients",
                shared.tracking.totals().clients.to_string(),
            ),
        ]),
        "memory" => memory(shared),
        "persistence" => fields(&[
            ("loading", "0".into()),
            ("async_loading", "0".into()),
            ("rdb_bgsave_in_progress", "0".into()),
            ("rdb_saves", "0".into()),
            ("aof_enabled", "0".into()),
            ("aof_rewrite_in_progress", "0".into()),
            ("aof_rewrites", "0".into()),
        ]),
        "stats" => {
            let tracking = shared.tracking.totals();
            fields(&[
            (
                "total_connections_received",
                shared.connections_received().to_string(),
            ),
            (
                "total_commands_processed",
                shared.stats.commands().to_string(),
            ),
            (
                "rejected_connections",
                shared.stats.rejected_connections().to_string(),
            ),
            ("sync_full", "0".into()),
            ("evicted_keys", "0".into()),
            ("total_forks", "0".into()),
            (
                "total_error_replies",
                shared.stats.error_replies().to_string(),
            ),
            (
                "tracking_total_keys",
                tracking.keys.to_string(),
            ),
            (
                "tracking_total_items",
                tracking.items.to_string(),
            ),
            (
                "tracking_total_prefixes",
                tracking.prefixes.to_string(),
            ),
        ])
        }
        "replication" => fields(&[
            ("role", "master".into()),
            ("connected_slaves", "0".into()),
            ("master_failover_state", "no-failover".into()),
            ("master_replid", shared.run_id.clone()),
            ("master_replid2", "0".repeat(40)),
            ("master_repl_offset", "0".into()),
            ("second_repl_offset", "-1".into()),
            ("repl_backlog_active", "0".into()),
        ]),
        "cpu" => cpu(),
        "commandstats" => shared
            .stats
            .command_stats()
            .into_iter()
            .map(|(name, stat)| {
                let per_call = if stat.calls == 0 {
                    0.0
                } else {
                    stat.usec as f64 / stat.calls as f64
                };
                (
                    format!("cmdstat_{name}"),
                    format!(
                        "calls={},usec={},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                        stat.calls, stat.usec, stat.rejected, stat.failed
                    ),
                )
            })
            .collect(),
        "errorstats" => shared
            .stats
            .errors()
            .into_iter()
            .map(|(code, count)| (format!("errorstat_{code}"), format!("count={count}")))
            .collect(),
        "cluster" => fields(&[(
            "cluster_enabled",
            u8::from(shared.options.cluster).to_string(),
        )]),
        "keyspace" => keyspace(shared),
        _ => Vec::new(),
    }
}

fn server(shared: &Shared) -> Fields {
    let uptime = shared.started.elapsed().as_secs();
    fields(&[
        (
            "redis_version",
            shared.options.redis_version.release().into(),
        ),
        ("redis_mode", super::cluster::mode(shared).into()),
        (
            "os",
            format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
        ),
        ("arch_bits", (usize::BITS).to_string()),
        ("multiplexing_api", "tokio".into()),
        ("process_id", std::process::id().to_string()),
        ("process_supervised", "no".into()),
        ("run_id", shared.run_id.clone()),
        ("tcp_port", shared.port.to_string()),
        ("server_time_usec", shared.clock.now_us().to_string()),
        ("uptime_in_seconds", uptime.to_string()),
        ("uptime_in_days", (uptime / 86_400).to_string()),
        (
            "executable",
            std::env::current_exe()
                .map(|path| path.display().to_string())
                .unwrap_or_default(),
        ),
        ("config_file", String::new()),
        ("io_threads_active", "0".into()),
        ("nxlock_version", env!("CARGO_PKG_VERSION").into()),
    ])
}

/// Redis's `bytesToHuman`.
fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes}B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", b / (1024.0 * 1024.0))
    } else {
        format!("{:.2}G", b / (1024.0 * 1024.0 * 1024.0))
    }
}

/// The keyspace's size as the bytes of its keys and values: an estimate (the double's
/// own overhead is not counted).
fn dataset_bytes(dump: &Dump) -> u64 {
    dump.keys
        .iter()
        .map(|key| {
            let value: usize = match &key.data {
                Data::String(bytes) => bytes.len(),
                Data::List(items) => items.iter().map(Vec::len).sum(),
                Data::Hash(pairs) => pairs.iter().map(|(f, v)| f.len() + v.len()).sum(),
                Data::Set(members) => members.iter().map(Vec::len).sum(),
                Data::SortedSet(sorted) => sorted.iter().map(|(m, _)| m.len() + 8).sum(),
            };
            (key.key.len() + value) as u64
        })
        .sum()
}

fn memory(shared: &Shared) -> Fields {
    let dataset: u64 = shared
        .dbs()
        .iter()
        .map(|db| dataset_bytes(&db.dump()))
        .sum();
    let lua = shared.scripts.used_memory() as u64;
    let scripts = shared.scripts.cached_bytes() as u64;
    let used = dataset + lua;
    fields(&[
        ("used_memory", used.to_string()),
        ("used_memory_human", human(used)),
        ("used_memory_dataset", dataset.to_string()),
        ("used_memory_lua", lua.to_string()),
        ("used_memory_vm_eval", lua.to_string()),
        ("used_memory_lua_human", human(lua)),
        ("used_memory_scripts_eval", scripts.to_string()),
        (
            "number_of_cached_scripts",
            shared.scripts.cached().to_string(),
        ),
        ("number_of_functions", "0".into()),
        ("number_of_libraries", "0".into()),
        ("used_memory_vm_total", lua.to_string()),
        ("used_memory_vm_total_human", human(lua)),
        ("used_memory_scripts", scripts.to_string()),
        ("used_memory_scripts_human", human(scripts)),
        ("maxmemory", "0".into()),
        ("maxmemory_human", "0B".into()),
        ("maxmemory_policy", "noeviction".into()),
        ("mem_allocator", "libc".into()),
    ])
}

/// The process's CPU time from `/proc/self/stat` (Linux), in seconds.
fn cpu() -> Fields {
    let times = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| {
            // Fields after the command name (which may hold spaces) start at ") ".
            let rest = stat.rsplit_once(") ")?.1;
            let fields: Vec<&str> = rest.split(' ').collect();
            // utime and stime are fields 14 and 15 of the line, 12 and 13 after ") ".
            let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
            Some((ticks(12)?, ticks(11)?))
        });
    // The kernel's USER_HZ is 100 on every Linux this runs on.
    let seconds = |ticks: u64| format!("{:.6}", ticks as f64 / 100.0);
    match times {
        Some((system, user)) => fields(&[
            ("used_cpu_sys", seconds(system)),
            ("used_cpu_user", seconds(user)),
            ("used_cpu_sys_children", "0.000000".into()),
            ("used_cpu_user_children", "0.000000".into()),
        ]),
        None => Vec::new(),
    }
}

fn keyspace(shared: &Shared) -> Fields {
    shared
        .dbs()
        .iter()
        .enumerate()
        .filter_map(|(index, db)| {
            let dump = db.dump();
            if dump.keys.is_empty() {
                return None;
            }
            let ttls: Vec<i64> = dump
                .keys
                .iter()
                .map(|k| k.pttl)
                .filter(|t| *t >= 0)
                .collect();
            let average = if ttls.is_empty() {
                0
            } else {
                ttls.iter().sum::<i64>() / ttls.len() as i64
            };
            Some((
                format!("db{index}"),
                format!(
                    "keys={},expires={},avg_ttl={average}",
                    dump.keys.len(),
                    ttls.len()
                ),
            ))
        })
        .collect()
}
