//! The parameters `CONFIG GET` reports and `CONFIG SET` changes: Redis's names and
//! defaults for what a lock library or a test suite looks at. Only parameters the server
//! honours can be changed; setting another to a new value is refused with a reason, so
//! no setting is accepted and then silently ignored.

use std::sync::RwLock;
use std::time::Duration;

use std::sync::Arc;

use lock_memory::{KeyspaceEvents, SharedOutputLimit};

use crate::state::options::ServerOptions;
use crate::state::output_limits::OutputLimits;

/// How `CONFIG SET` treats a parameter.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// An integer in `min..=max`, honoured by the server.
    Integer { min: i64, max: i64 },
    /// Redis cannot change it at run time either.
    Immutable,
    /// Redis can change it, this server cannot: only its current value is accepted.
    Fixed,
    /// `yes` or `no`, honoured by the server.
    YesNo,
    /// `client-output-buffer-limit`'s classes and bounds ([`OutputLimits`]).
    BufferLimits,
    /// `notify-keyspace-events`'s class letters ([`KeyspaceEvents`]).
    KeyspaceEvents,
}

#[derive(Debug)]
struct Param {
    name: &'static str,
    /// The pre-7.0 name Redis still answers to.
    alias: Option<&'static str>,
    change: Change,
}

const SIZE: Change = Change::Integer {
    min: 0,
    max: i64::MAX,
};

const fn param(name: &'static str, alias: Option<&'static str>, change: Change) -> Param {
    Param {
        name,
        alias,
        change,
    }
}

/// Every parameter, in the order `CONFIG GET *` lists them.
static PARAMS: &[Param] = &[
    param(
        "hash-max-listpack-entries",
        Some("hash-max-ziplist-entries"),
        SIZE,
    ),
    param(
        "hash-max-listpack-value",
        Some("hash-max-ziplist-value"),
        SIZE,
    ),
    param(
        "zset-max-listpack-entries",
        Some("zset-max-ziplist-entries"),
        SIZE,
    ),
    param(
        "zset-max-listpack-value",
        Some("zset-max-ziplist-value"),
        SIZE,
    ),
    param("set-max-intset-entries", None, SIZE),
    // Lists are always quicklists in Redis 7.0: the node size changes no reply.
    param(
        "list-max-listpack-size",
        Some("list-max-ziplist-size"),
        Change::Integer {
            min: i32::MIN as i64,
            max: i32::MAX as i64,
        },
    ),
    // How many quicklist nodes at each end stay uncompressed: no reply shows it.
    param(
        "list-compress-depth",
        None,
        Change::Integer {
            min: 0,
            max: i32::MAX as i64,
        },
    ),
    param("busy-reply-threshold", Some("lua-time-limit"), SIZE),
    // How many keys client-side caching remembers readers of (0: no limit).
    param("tracking-table-max-keys", None, SIZE),
    param(
        "maxclients",
        None,
        Change::Integer {
            min: 1,
            max: u32::MAX as i64,
        },
    ),
    param("databases", None, Change::Immutable),
    param("port", None, Change::Fixed),
    param("bind", None, Change::Fixed),
    param("requirepass", None, Change::Fixed),
    param("cluster-enabled", None, Change::Immutable),
    param("enable-debug-command", None, Change::Immutable),
    param("daemonize", None, Change::Immutable),
    param("appendonly", None, Change::Fixed),
    param("save", None, Change::Fixed),
    param("maxmemory", None, Change::Fixed),
    param("maxmemory-policy", None, Change::Fixed),
    param("notify-keyspace-events", None, Change::KeyspaceEvents),
    param("timeout", None, Change::Fixed),
    param("tcp-keepalive", None, Change::Fixed),
    param("tcp-backlog", None, Change::Immutable),
    param("client-output-buffer-limit", None, Change::BufferLimits),
    param("protected-mode", None, Change::YesNo),
    param("replica-read-only", Some("slave-read-only"), Change::Fixed),
];

/// The encoding thresholds `OBJECT ENCODING` (and a small integer set's order) follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) hash_max_listpack_entries: usize,
    pub(crate) hash_max_listpack_value: usize,
    pub(crate) zset_max_listpack_entries: usize,
    pub(crate) zset_max_listpack_value: usize,
    pub(crate) set_max_intset_entries: usize,
}

impl Default for Limits {
    /// Redis 7.0's defaults.
    fn default() -> Self {
        Limits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            set_max_intset_entries: 512,
        }
    }
}

/// The server's parameters.
#[derive(Debug)]
pub(crate) struct Config {
    /// One value per entry of [`PARAMS`].
    values: RwLock<Vec<String>>,
    /// The pub/sub class of `client-output-buffer-limit`, which every subscribed
    /// client's queue reads at each delivery.
    pubsub_limit: Arc<SharedOutputLimit>,
    /// `notify-keyspace-events` as set: its spelling can lose a class (`AKEn` reads back
    /// as `AKE`, as in Redis), so the value is no guide.
    keyspace_events: RwLock<KeyspaceEvents>,
}

impl Config {
    /// Redis's defaults, with what `options` sets.
    pub(crate) fn new(options: &ServerOptions, port: u16) -> Config {
        let limits = Limits::default();
        let values = PARAMS
            .iter()
            .map(|param| match param.name {
                "hash-max-listpack-entries" => limits.hash_max_listpack_entries.to_string(),
                "hash-max-listpack-value" => limits.hash_max_listpack_value.to_string(),
                "zset-max-listpack-entries" => limits.zset_max_listpack_entries.to_string(),
                "zset-max-listpack-value" => limits.zset_max_listpack_value.to_string(),
                "set-max-intset-entries" => limits.set_max_intset_entries.to_string(),
                "list-max-listpack-size" => "-2".into(),
                "list-compress-depth" => "0".into(),
                "busy-reply-threshold" => options.script_time_limit.as_millis().to_string(),
                "maxclients" => options.max_clients.to_string(),
                "tracking-table-max-keys" => "1000000".into(),
                "databases" => crate::state::options::DATABASES.to_string(),
                "port" => port.to_string(),
                "bind" => options.bind.to_string(),
                "requirepass" => options.requirepass.clone().unwrap_or_default(),
                "cluster-enabled" | "enable-debug-command" | "appendonly" | "daemonize" => {
                    "no".into()
                }
                "protected-mode" => if options.protected_mode { "yes" } else { "no" }.into(),
                "maxmemory-policy" => "noeviction".into(),
                "timeout" | "maxmemory" => "0".into(),
                "tcp-keepalive" => "300".into(),
                "tcp-backlog" => super::options::TCP_BACKLOG.to_string(),
                "client-output-buffer-limit" => OutputLimits::default().to_string(),
                "replica-read-only" => "yes".into(),
                _ => String::new(),
            })
            .collect();
        Config {
            values: RwLock::new(values),
            pubsub_limit: Arc::new(SharedOutputLimit::new(OutputLimits::default().pubsub())),
            keyspace_events: RwLock::default(),
        }
    }

    fn values(&self) -> std::sync::RwLockReadGuard<'_, Vec<String>> {
        self.values
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn number(&self, name: &str) -> i64 {
        let index = PARAMS
            .iter()
            .position(|p| p.name == name)
            .expect("a known parameter");
        self.values()[index].parse().unwrap_or(0)
    }

    /// The pub/sub output-buffer limit, shared by every subscriber: a CONFIG SET applies
    /// to them at once.
    pub(crate) fn pubsub_limit(&self) -> Arc<SharedOutputLimit> {
        self.pubsub_limit.clone()
    }

    /// `protected-mode`: whether clients off the loopback interface are refused when no
    /// password is set.
    pub(crate) fn protected_mode(&self) -> bool {
        let index = PARAMS
            .iter()
            .position(|p| p.name == "protected-mode")
            .expect("a known parameter");
        self.values()[index] == "yes"
    }

    /// The encoding thresholds now.
    pub(crate) fn limits(&self) -> Limits {
        let size = |name| usize::try_from(self.number(name)).unwrap_or(usize::MAX);
        Limits {
            hash_max_listpack_entries: size("hash-max-listpack-entries"),
            hash_max_listpack_value: size("hash-max-listpack-value"),
            zset_max_listpack_entries: size("zset-max-listpack-entries"),
            zset_max_listpack_value: size("zset-max-listpack-value"),
            set_max_intset_entries: size("set-max-intset-entries"),
        }
    }

    /// The keyspace events published now (`notify-keyspace-events`).
    pub(crate) fn keyspace_events(&self) -> KeyspaceEvents {
        *self
            .keyspace_events
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How long a script may run (`busy-reply-threshold`).
    pub(crate) fn script_time_limit(&self) -> Duration {
        Duration::from_millis(self.number("busy-reply-threshold").max(0) as u64)
    }

    /// `tracking-table-max-keys` (0: no limit).
    pub(crate) fn tracking_max_keys(&self) -> usize {
        usize::try_from(self.number("tracking-table-max-keys")).unwrap_or(usize::MAX)
    }

    /// `maxclients`.
    pub(crate) fn max_clients(&self) -> usize {
        usize::try_from(self.number("maxclients")).unwrap_or(usize::MAX)
    }

    /// `CONFIG GET pattern…`: `[name, value, …]` for every parameter a glob matches
    /// (case-insensitively, by either name), or the one named exactly.
    pub(crate) fn get(&self, patterns: &[Vec<u8>]) -> Vec<(String, String)> {
        let values = self.values();
        let mut found: Vec<(String, String)> = Vec::new();
        let mut add = |name: &str, value: &str| {
            if !found
                .iter()
                .any(|(seen, _)| seen.eq_ignore_ascii_case(name))
            {
                found.push((name.to_string(), value.to_string()));
            }
        };
        for pattern in patterns {
            let literal = !pattern.iter().any(|b| b"[*?".contains(b));
            for (param, value) in PARAMS.iter().zip(values.iter()) {
                for name in std::iter::once(param.name).chain(param.alias) {
                    if literal && pattern.eq_ignore_ascii_case(name.as_bytes()) {
                        add(&String::from_utf8_lossy(pattern), value);
                    } else if !literal
                        && lock_memory::glob_match(&pattern.to_ascii_lowercase(), name.as_bytes())
                    {
                        add(name, value);
                    }
                }
            }
        }
        found
    }

    /// `CONFIG SET name value …`, all or nothing; Redis's error text on refusal. As in
    /// Redis, every name is looked up first (the first unknown one, an immutable one or
    /// a duplicate is the answer), and only then are the values checked.
    pub(crate) fn set(&self, pairs: &[Vec<u8>]) -> Result<(), String> {
        if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
            return Err(crate::protocol::args::SYNTAX_ERROR.into());
        }
        let failed = |name: &str, why: &str| {
            format!("ERR CONFIG SET failed (possibly related to argument '{name}') - {why}")
        };
        let mut named: Vec<(usize, String)> = Vec::new();
        let mut keyspace_events = None;
        for pair in pairs.chunks(2) {
            let (name, value) = (&pair[0], String::from_utf8_lossy(&pair[1]).into_owned());
            let shown = String::from_utf8_lossy(name).into_owned();
            let Some(index) = PARAMS.iter().position(|p| {
                std::iter::once(p.name)
                    .chain(p.alias)
                    .any(|n| name.eq_ignore_ascii_case(n.as_bytes()))
            }) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{shown}'"
                ));
            };
            if matches!(PARAMS[index].change, Change::Immutable) {
                return Err(failed(&shown, "can't set immutable config"));
            }
            if named.iter().any(|(seen, _)| *seen == index) {
                return Err(failed(&shown, "duplicate parameter"));
            }
            named.push((index, value));
        }
        for (index, value) in &mut named {
            // Values are judged under the parameter's own name, as Redis reports them.
            let name = PARAMS[*index].name;
            match PARAMS[*index].change {
                Change::Fixed if self.values()[*index] != *value => {
                    return Err(failed(name, "nxlock serve cannot change this parameter"));
                }
                // Immutable parameters were refused above.
                Change::Fixed | Change::Immutable => {}
                Change::BufferLimits => {
                    let current = self.values()[*index].clone();
                    let now = OutputLimits::default()
                        .updated(&current)
                        .unwrap_or_default();
                    *value = now
                        .updated(value)
                        .map_err(|why| failed(name, why))?
                        .to_string();
                }
                Change::KeyspaceEvents => {
                    let events = KeyspaceEvents::parse(value.as_bytes())
                        .map_err(|why| failed(name, &why.to_string()))?;
                    *value = events.to_string();
                    keyspace_events = Some(events);
                }
                Change::YesNo => {
                    let lower = value.to_ascii_lowercase();
                    if lower != "yes" && lower != "no" {
                        return Err(failed(name, "argument must be 'yes' or 'no'"));
                    }
                    *value = lower;
                }
                Change::Integer { min, max } => {
                    let number =
                        crate::protocol::args::integer(value.as_bytes()).ok_or_else(|| {
                            failed(name, "argument couldn't be parsed into an integer")
                        })?;
                    if !(min..=max).contains(&number) {
                        return Err(failed(
                            name,
                            &format!("argument must be between {min} and {max} inclusive"),
                        ));
                    }
                    // More clients than the descriptors allow: Redis refuses the change
                    // and keeps the old value.
                    if name == "maxclients" && number > self.number("maxclients") {
                        let fitted = super::descriptors::fit(number as usize);
                        if fitted.max_clients < number as usize {
                            return Err(failed(
                                name,
                                &format!(
                                    "The operating system is not able to handle the specified number of clients, try with {}",
                                    fitted.max_clients
                                ),
                            ));
                        }
                    }
                }
            }
        }
        let mut values = self
            .values
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(events) = keyspace_events {
            *self
                .keyspace_events
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = events;
        }
        for (index, value) in named {
            if matches!(PARAMS[index].change, Change::BufferLimits)
                && let Ok(limits) = OutputLimits::default().updated(&value)
            {
                self.pubsub_limit.set(limits.pubsub());
            }
            values[index] = value;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::new(&ServerOptions::default(), 6379)
    }

    #[test]
    fn limits_follow_config_set_under_either_name() {
        let config = config();
        assert_eq!(config.limits(), Limits::default());
        config
            .set(&[b"hash-max-ziplist-entries".to_vec(), b"3".to_vec()])
            .unwrap();
        assert_eq!(config.limits().hash_max_listpack_entries, 3);
        assert_eq!(
            config.get(&[b"hash-max-*-entries".to_vec()]),
            [
                ("hash-max-listpack-entries".to_string(), "3".to_string()),
                ("hash-max-ziplist-entries".to_string(), "3".to_string()),
            ]
        );
    }

    #[test]
    fn refused_changes_change_nothing() {
        let config = config();
        let pairs = |items: &[&str]| {
            items
                .iter()
                .map(|s| s.as_bytes().to_vec())
                .collect::<Vec<_>>()
        };
        let refused = config
            .set(&pairs(&[
                "set-max-intset-entries",
                "7",
                "appendonly",
                "yes",
            ]))
            .unwrap_err();
        assert!(refused.contains("'appendonly'"), "{refused}");
        assert_eq!(config.limits().set_max_intset_entries, 512);
        assert!(config.set(&pairs(&["appendonly", "no"])).is_ok());
        assert!(
            config
                .set(&pairs(&["databases", "16"]))
                .unwrap_err()
                .contains("immutable")
        );
    }
}
