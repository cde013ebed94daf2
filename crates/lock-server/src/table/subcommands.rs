//! The subcommands of the container commands this server knows (CLIENT, CLUSTER,
//! COMMAND, CONFIG, FUNCTION, MEMORY, OBJECT, PUBSUB, SCRIPT), with their arity in each
//! Redis version, from Redis's own command tables (`src/commands/*.json`). Redis checks a
//! subcommand's existence and arity before a command runs, and before MULTI queues it,
//! so that a transaction with one such error is discarded at EXEC (`EXECABORT`): this
//! table lets the server do the same, with Redis's texts.

use lock_core::{RedisVersion, Value};

use crate::protocol::args::wrong_arity_text;

/// One subcommand: its container, its name, and its arity (Redis's convention: `n`
/// arguments exactly, or at least `-n`), counting the container and the subcommand.
struct Subcommand {
    container: &'static str,
    name: &'static str,
    arity: i32,
    /// Its arity from Redis 7.2 on, where that changed.
    arity_from_7_2: Option<i32>,
    since: RedisVersion,
}

const fn sub(container: &'static str, name: &'static str, arity: i32) -> Subcommand {
    Subcommand {
        container,
        name,
        arity,
        arity_from_7_2: None,
        since: RedisVersion::V7_0,
    }
}

impl Subcommand {
    const fn since(self, version: RedisVersion) -> Subcommand {
        Subcommand {
            since: version,
            ..self
        }
    }

    const fn until_7_2(self, arity: i32) -> Subcommand {
        Subcommand {
            arity_from_7_2: Some(arity),
            ..self
        }
    }

    fn arity_in(&self, version: RedisVersion) -> i32 {
        match self.arity_from_7_2 {
            Some(arity) if version >= RedisVersion::V7_2 => arity,
            _ => self.arity,
        }
    }
}

const SUBCOMMANDS: &[Subcommand] = &[
    sub("client", "caching", 3),
    sub("client", "getname", 2),
    sub("client", "getredir", 2),
    sub("client", "help", 2),
    sub("client", "id", 2),
    sub("client", "info", 2),
    sub("client", "kill", -3),
    sub("client", "list", -2),
    sub("client", "no-evict", 3),
    sub("client", "no-touch", 3).since(RedisVersion::V7_2),
    sub("client", "pause", -3),
    sub("client", "reply", 3),
    sub("client", "setinfo", 4).since(RedisVersion::V7_2),
    sub("client", "setname", 3),
    sub("client", "tracking", -3),
    sub("client", "trackinginfo", 2),
    sub("client", "unblock", -3),
    sub("client", "unpause", 2),
    sub("cluster", "addslots", -3),
    sub("cluster", "addslotsrange", -4),
    sub("cluster", "bumpepoch", 2),
    sub("cluster", "count-failure-reports", 3),
    sub("cluster", "countkeysinslot", 3),
    sub("cluster", "delslots", -3),
    sub("cluster", "delslotsrange", -4),
    sub("cluster", "failover", -2),
    sub("cluster", "flushslots", 2),
    sub("cluster", "forget", 3),
    sub("cluster", "getkeysinslot", 4),
    sub("cluster", "help", 2),
    sub("cluster", "info", 2),
    sub("cluster", "keyslot", 3),
    sub("cluster", "links", 2),
    sub("cluster", "meet", -4),
    sub("cluster", "myid", 2),
    sub("cluster", "myshardid", 2).since(RedisVersion::V7_2),
    sub("cluster", "nodes", 2),
    sub("cluster", "replicas", 3),
    sub("cluster", "replicate", 3),
    sub("cluster", "reset", -2),
    sub("cluster", "saveconfig", 2),
    sub("cluster", "set-config-epoch", 3),
    sub("cluster", "setslot", -4),
    sub("cluster", "shards", 2),
    sub("cluster", "slaves", 3),
    sub("cluster", "slots", 2),
    sub("command", "count", 2),
    sub("command", "docs", -2),
    sub("command", "getkeys", -4).until_7_2(-3),
    sub("command", "getkeysandflags", -4).until_7_2(-3),
    sub("command", "help", 2),
    sub("command", "info", -2),
    sub("command", "list", -2),
    sub("config", "get", -3),
    sub("config", "help", 2),
    sub("config", "resetstat", 2),
    sub("config", "rewrite", 2),
    sub("config", "set", -4),
    sub("function", "delete", 3),
    sub("function", "dump", 2),
    sub("function", "flush", -2),
    sub("function", "help", 2),
    sub("function", "kill", 2),
    sub("function", "list", -2),
    sub("function", "load", -3),
    sub("function", "restore", -3),
    sub("function", "stats", 2),
    sub("memory", "doctor", 2),
    sub("memory", "help", 2),
    sub("memory", "malloc-stats", 2),
    sub("memory", "purge", 2),
    sub("memory", "stats", 2),
    sub("memory", "usage", -3),
    sub("object", "encoding", 3),
    sub("object", "freq", 3),
    sub("object", "help", 2),
    sub("object", "idletime", 3),
    sub("object", "refcount", 3),
    sub("pubsub", "channels", -2),
    sub("pubsub", "help", 2),
    sub("pubsub", "numpat", 2),
    sub("pubsub", "numsub", -2),
    sub("pubsub", "shardchannels", -2),
    sub("pubsub", "shardnumsub", -2),
    sub("script", "debug", 3),
    sub("script", "exists", -3),
    sub("script", "flush", -2),
    sub("script", "help", 2),
    sub("script", "kill", 2),
    sub("script", "load", 3),
];

/// Whether `name` is a container command this table knows. Asked before every command
/// runs, so it is a match on the name rather than a scan of the table (a test keeps the
/// two the same).
fn is_container(name: &str) -> bool {
    matches!(
        name,
        "client"
            | "cluster"
            | "command"
            | "config"
            | "function"
            | "memory"
            | "object"
            | "pubsub"
            | "script"
    )
}

/// What Redis answers before running `container` (a known command's lower-case name)
/// with `args` (the container first) when its subcommand is unknown in `version`, or
/// given the wrong number of arguments; `None` when it may run.
pub(crate) fn refusal(container: &str, args: &[Vec<u8>], version: RedisVersion) -> Option<Value> {
    if args.len() < 2 || !is_container(container) {
        return None;
    }
    let given = &args[1];
    let found = SUBCOMMANDS.iter().find(|s| {
        s.container == container
            && s.since <= version
            && s.name.as_bytes().eq_ignore_ascii_case(given)
    });
    let Some(found) = found else {
        // `%.128s`: a C string, cut at a NUL and at 128 bytes; no line breaks in a reply.
        let end = memchr::memchr(0, given).unwrap_or(given.len()).min(128);
        let shown: String = String::from_utf8_lossy(&given[..end])
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        return Some(Value::Error(format!(
            "ERR unknown subcommand '{shown}'. Try {} HELP.",
            container.to_ascii_uppercase()
        )));
    };
    let arity = found.arity_in(version);
    let argc = i32::try_from(args.len()).unwrap_or(i32::MAX);
    let fits = if arity >= 0 {
        argc == arity
    } else {
        argc >= -arity
    };
    (!fits).then(|| {
        Value::Error(wrong_arity_text(&format!(
            "{}|{}",
            found.container, found.name
        )))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn error(value: Option<Value>) -> String {
        match value {
            Some(Value::Error(text)) => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_containers_are_those_of_the_table() {
        let mut containers: Vec<&str> = SUBCOMMANDS.iter().map(|s| s.container).collect();
        containers.dedup();
        assert_eq!(containers.len(), 9, "{containers:?}");
        assert!(containers.iter().all(|name| is_container(name)));
        assert!(!is_container("get") && !is_container("set"));
    }

    #[test]
    fn unknown_subcommands_and_wrong_arities_are_refused_as_redis_refuses_them() {
        let v = RedisVersion::V7_4;
        assert_eq!(
            error(refusal("client", &words(&["CLIENT", "NOSUCH"]), v)),
            "ERR unknown subcommand 'NOSUCH'. Try CLIENT HELP."
        );
        assert_eq!(
            error(refusal("script", &words(&["SCRIPT", "LOAD", "v", "x"]), v)),
            "ERR wrong number of arguments for 'script|load' command"
        );
        assert_eq!(
            error(refusal("function", &words(&["FUNCTION", "bogus", "-1"]), v)),
            "ERR unknown subcommand 'bogus'. Try FUNCTION HELP."
        );
        assert_eq!(
            error(refusal("config", &words(&["CONFIG", "GET"]), v)),
            "ERR wrong number of arguments for 'config|get' command"
        );
        assert_eq!(refusal("config", &words(&["config", "get", "x"]), v), None);
        assert_eq!(refusal("get", &words(&["GET", "k"]), v), None);
        // CLIENT SETINFO is 7.2's; COMMAND GETKEYS took one argument more in 7.0.
        assert!(
            refusal(
                "client",
                &words(&["CLIENT", "SETINFO", "LIB-NAME", "x"]),
                RedisVersion::V7_0
            )
            .is_some()
        );
        assert_eq!(
            refusal("client", &words(&["CLIENT", "SETINFO", "LIB-NAME", "x"]), v),
            None
        );
        assert!(
            refusal(
                "command",
                &words(&["COMMAND", "GETKEYS", "GET"]),
                RedisVersion::V7_0
            )
            .is_some()
        );
        assert_eq!(
            refusal("command", &words(&["COMMAND", "GETKEYS", "GET"]), v),
            None
        );
        let long = format!("x{}\r\n", "y".repeat(200));
        let text = error(refusal("client", &words(&["CLIENT", &long]), v));
        assert!(text.len() < 180 && !text.contains('\r'), "{text}");
    }
}
