//! [`LuaScripts`]: serve's Lua engine and command table for the in-process double, so
//! that a user's own scripts run on `MemoryBackend` exactly as `nxlock serve` runs them
//! (the same sealed Lua 5.1, the same `redis.call` checks and error texts).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use lock_core::{Error, RedisVersion, Result, Script, SlotLayout, Value, common_slot};
use lock_memory::{Databases, ScriptRunner};

use crate::lua::Engine;
use crate::protocol::reply::Protocol;
use crate::run::scripting::{Locality, ScriptState, script_command, script_slot};
use crate::run::undo::UndoLog;
use crate::state::config::Limits;
use crate::state::context::Context;
use crate::state::scripts::{RunLimits, ScriptEngine};
use crate::table;

/// How long a script may run before it is stopped, as Redis's `busy-reply-threshold`.
const TIME_LIMIT: Duration = Duration::from_secs(5);

/// A [`ScriptRunner`] for `MemoryBackend::with_script_runner`: runs any script's Lua on
/// the double. Each runner has its own interpreter and script cache; share one (it is
/// `Send + Sync`) among backends.
///
/// ```
/// use lock_core::{KvBackend, Script, Value};
/// use lock_memory::MemoryBackend;
/// use lock_server::LuaScripts;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let redis = MemoryBackend::new().with_script_runner(LuaScripts::shared());
/// // A script with no native body: the double runs its Lua.
/// let incr_by = Script::new("incr-by", "return redis.call('INCRBY', KEYS[1], ARGV[1])");
/// assert_eq!(redis.eval(&incr_by, &[b"hits"], &[b"5"]).await.unwrap(), Value::Int(5));
/// let bad = Script::new("bad", "return redis.call('NOSUCH')");
/// let error = redis.eval(&bad, &[], &[]).await.unwrap_err();
/// assert!(error.message().starts_with("ERR Unknown Redis command called from script"));
/// # }
/// ```
#[derive(Debug)]
pub struct LuaScripts {
    /// One interpreter per Redis version a backend answered as (its `redis.REDIS_VERSION`
    /// and the commands it knows are fixed when it starts), started on first use.
    engines: [OnceLock<Engine>; RedisVersion::ALL.len()],
}

impl LuaScripts {
    /// A runner with a fresh interpreter (for the newest version; the others start when a
    /// backend of theirs first runs a script).
    pub fn new() -> std::io::Result<Self> {
        let runner = Self {
            engines: Default::default(),
        };
        runner.engine(RedisVersion::default())?;
        Ok(runner)
    }

    /// The interpreter for backends answering as `version`.
    fn engine(&self, version: RedisVersion) -> std::io::Result<&Engine> {
        let index = RedisVersion::ALL
            .iter()
            .position(|v| *v == version)
            .unwrap_or_default();
        let cell = &self.engines[index];
        if let Some(engine) = cell.get() {
            return Ok(engine);
        }
        let engine = Engine::new(version, table::knows).map_err(std::io::Error::other)?;
        Ok(cell.get_or_init(|| engine))
    }

    /// A fresh runner, ready to install.
    ///
    /// # Panics
    ///
    /// If the vendored Lua interpreter cannot start, which only running out of memory
    /// causes.
    pub fn shared() -> Arc<dyn ScriptRunner> {
        Arc::new(Self::new().expect("the vendored Lua interpreter starts"))
    }
}

impl ScriptRunner for LuaScripts {
    fn run(
        &self,
        databases: &mut Databases<'_>,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        cluster: Option<&SlotLayout>,
        version: RedisVersion,
    ) -> Result<Value> {
        // The script runs on the node of its KEYS, which must share a slot.
        let locality = match cluster {
            Some(layout) => Some(Locality {
                layout,
                node: common_slot(keys)?.map(|slot| layout.node_of(slot)),
            }),
            None => None,
        };
        let engine = self
            .engine(version)
            .map_err(|error| Error::from_reply(format!("ERR {error}")))?;
        let sha = engine
            .load(script.lua().as_bytes())
            .map_err(Error::from_reply)?;
        let mut state = ScriptState {
            databases,
            context: Context {
                protocol: Protocol::Resp2,
                limits: Limits::default(),
                db: 0,
                cluster: cluster.is_some(),
                version,
            },
            read: false,
            locality,
            slot: script_slot(keys),
            undo: UndoLog::default(),
            stats: None,
        };
        let limits = RunLimits {
            read_only: false,
            time_limit: TIME_LIMIT,
        };
        let ran = engine.run(&sha, keys, args, limits, &mut |call| {
            script_command(&mut state, call)
        });
        match state.finish(ran.stopped, ran.reply) {
            Value::Error(text) => Err(Error::from_reply(text)),
            reply => Ok(reply),
        }
    }
}
