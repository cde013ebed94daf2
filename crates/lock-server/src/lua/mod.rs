//! The third layer: the Lua engine. EVAL and friends run real Lua 5.1 (vendored, as
//! Redis embeds it) in the sandbox Redis 7.0 builds ([`sandbox`]), with the libraries
//! Redis ships ([`libs`]). The engine knows no command: each run is handed a callback,
//! and `redis.call` goes through it ([`call`]), so the runner that started the script
//! keeps the keyspace inside the same atomic section.
//!
//! Conversions follow Redis 7.0 ([`convert`]); errors carry Redis's
//! ` script: <sha>, on @user_script:<line>.` suffix, the position found the way Redis's
//! `__redis__err__handler` finds it.

mod arguments;
mod call;
mod call_slot;
mod convert;
mod errors;
mod functions;
mod libs;
mod raise;
mod redis_table;
mod sandbox;
mod shebang;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lock_core::{RedisVersion, Value};
use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value as LuaValue, VmState};

use crate::state::scripts::{CallCommand, FunctionInfo, LibraryInfo, Ran, RunLimits, ScriptEngine};
use call::Call;
use errors::ScriptError;
use shebang::ScriptFlags;

/// The server's one Lua interpreter and its script cache (shared by all databases, as in
/// Redis).
pub(crate) struct Engine {
    state: Mutex<State>,
}

struct State {
    lua: Lua,
    sandbox: sandbox::Sandbox,
    /// The RESP version `redis.setresp` chose for the running script.
    resp: Arc<AtomicU8>,
    scripts: HashMap<String, Script>,
    /// Each cached body's SHA1, by body: an EVAL of a body already cached finds its
    /// digest by a hash of the bytes instead of computing SHA1 again.
    digests: HashMap<Vec<u8>, String>,
    /// The time limit's hook, installed once (see [`TimeLimit`]).
    limit: TimeLimit,
    /// What `redis.call` runs: lent by each run (see [`call_slot`]).
    calls: call_slot::CallSlot,
    /// Redis 7 function libraries.
    libraries: functions::Libraries,
}

struct Script {
    function: Function,
    flags: ScriptFlags,
    /// The body's length, for INFO's `used_memory_scripts_eval`.
    bytes: usize,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

/// Gives back the heap the dropped scripts and their garbage held. Redis's SCRIPT
/// FLUSH and FUNCTION FLUSH close the interpreter and open a new one, so its memory
/// goes with it; here the interpreter stays (its sealed environment is built once), and
/// a full collection frees the same memory: the flushed functions, and whatever garbage
/// scripts left that the incremental collector had not reached yet. Two cycles, because
/// what a finaliser of the first frees is collected by the second.
fn collect_everything(lua: &Lua) {
    for _ in 0..2 {
        // A collection fails only on an error in a __gc metamethod, which the sealed
        // environment gives scripts no way to set on anything that outlives them.
        let _ = lua.gc_collect();
    }
}

fn sha1_hex(bytes: &[u8]) -> String {
    sha1_smol::Sha1::from(bytes).digest().to_string()
}

impl Engine {
    /// A fresh interpreter with the sealed environment, answering as Redis `version`;
    /// `knows` says whether a server of a version has a command of a given name
    /// (`redis.acl_check_cmd`).
    pub(crate) fn new(
        version: RedisVersion,
        knows: fn(RedisVersion, &[u8]) -> bool,
    ) -> mlua::Result<Engine> {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        let resp = Arc::new(AtomicU8::new(2));
        libs::install(&lua)?;
        redis_table::install(&lua, resp.clone(), version, knows)?;
        let sandbox = sandbox::Sandbox::build(&lua)?;
        let limit = TimeLimit::default();
        limit.install(&lua)?;
        let calls = call_slot::CallSlot::default();
        sandbox.set_call(&lua, calls.function(&lua)?)?;
        Ok(Engine {
            state: Mutex::new(State {
                lua,
                sandbox,
                resp,
                scripts: HashMap::new(),
                digests: HashMap::new(),
                limit,
                calls,
                libraries: functions::Libraries::default(),
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic inside Lua code cannot leave the cache half-updated.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl ScriptEngine for Engine {
    /// Compiles and caches `body` (SCRIPT LOAD, EVAL); the SHA1, or Redis's error text.
    fn load(&self, body: &[u8]) -> Result<String, String> {
        let mut state = self.state();
        if let Some(sha) = state.digests.get(body) {
            return Ok(sha.clone());
        }
        let sha = sha1_hex(body);
        if state.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let (flags, source) = shebang::parse(body)?;
        let function = state.sandbox.compile(&state.lua, &source)?;
        state.digests.insert(body.to_vec(), sha.clone());
        state.scripts.insert(
            sha.clone(),
            Script {
                function,
                flags,
                bytes: body.len(),
            },
        );
        Ok(sha)
    }

    fn exists(&self, sha: &str) -> bool {
        self.state().scripts.contains_key(&sha.to_ascii_lowercase())
    }

    /// How many scripts are cached (INFO's `number_of_cached_scripts`).
    fn cached(&self) -> usize {
        self.state().scripts.len()
    }

    /// The bytes of the cached scripts' bodies (INFO's `used_memory_scripts_eval`).
    fn cached_bytes(&self) -> usize {
        self.state()
            .scripts
            .values()
            .map(|script| script.bytes)
            .sum()
    }

    /// How much memory the interpreter uses (INFO's `used_memory_lua`).
    fn used_memory(&self) -> usize {
        self.state().lua.used_memory()
    }

    fn flush(&self) {
        let mut state = self.state();
        state.scripts.clear();
        state.digests.clear();
        collect_everything(&state.lua);
    }

    /// Whether the cached script `sha` may run under EVAL_RO: Redis refuses a script that
    /// declares flags without `no-writes` before running it.
    fn refuses_read_only(&self, sha: &str) -> bool {
        self.state()
            .scripts
            .get(sha)
            .is_some_and(|script| script.flags.declared && !script.flags.no_writes)
    }

    /// Runs the cached script `sha` against the `databases`, starting in the one its
    /// context names (a `SELECT` inside moves the script, not its client): the reply, and
    /// whether the script ran a read-only command (for client-side caching).
    fn run(
        &self,
        sha: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        limits: RunLimits,
        command: &mut CallCommand<'_>,
    ) -> Ran {
        let state = self.state();
        let Some(script) = state.scripts.get(sha) else {
            return refused("NOSCRIPT No matching script. Please use EVAL.");
        };
        let arguments = arguments::Arguments { keys, args };
        let start = |lua: &Lua, function: &Function| state.sandbox.run(lua, function, &arguments);
        let compiled = Compiled {
            function: &script.function,
            flags: script.flags,
            label: sha,
        };
        run_compiled(&state, compiled, start, limits, command)
    }

    fn load_library(&self, code: &[u8], replace: bool) -> Result<String, String> {
        let mut state = self.state();
        let metadata = functions::metadata(code)?;
        if !replace && state.libraries.has_library(&metadata.name) {
            return Err(format!("ERR Library '{}' already exists", metadata.name));
        }
        let chunk = state.sandbox.compile_library(&state.lua, metadata.source)?;
        // Registering is quick; Redis gives it 500 ms.
        let loaded = (|| {
            state.limit.start(&state.lua, Duration::from_millis(500))?;
            let loaded = state.sandbox.load_library(&chunk);
            state.limit.finish();
            loaded
        })();
        let registered = match loaded {
            Ok(Ok(registered)) => registered,
            // Redis's message for a load past its time.
            _ if state.limit.stopped() => {
                return Err("ERR Error registering functions: ERR FUNCTION LOAD timeout".into());
            }
            Ok(Err(error)) => {
                let message: String = error
                    .raw_get::<Option<String>>("err")
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| "ERR unknown error".into());
                return Err(format!("ERR Error registering functions: {message}"));
            }
            Err(error) => {
                return Err(format!(
                    "ERR Error registering functions: {}",
                    errors::text_of(&error)
                ));
            }
        };
        let functions = registered
            .into_iter()
            .map(|r| {
                let info = FunctionInfo {
                    name: r.name,
                    description: r.description,
                    flags: r.flags,
                };
                (info, r.callback)
            })
            .collect();
        let name = metadata.name;
        state.libraries.link(&name, code, functions)?;
        Ok(name)
    }

    fn function_refuses_read_only(&self, name: &[u8]) -> Option<bool> {
        self.state()
            .libraries
            .function(name)
            .map(|function| !function.flags.no_writes)
    }

    fn run_function(
        &self,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        limits: RunLimits,
        command: &mut CallCommand<'_>,
    ) -> Ran {
        let state = self.state();
        let Some(function) = state.libraries.function(name) else {
            return refused("ERR Function not found");
        };
        let arguments = arguments::Arguments { keys, args };
        let start =
            |lua: &Lua, callback: &Function| state.sandbox.run_function(lua, callback, &arguments);
        let compiled = Compiled {
            function: &function.callback,
            flags: function.flags,
            label: &function.name,
        };
        run_compiled(&state, compiled, start, limits, command)
    }

    fn delete_library(&self, name: &[u8]) -> bool {
        self.state()
            .libraries
            .unlink(&String::from_utf8_lossy(name))
    }

    fn flush_libraries(&self) {
        let mut state = self.state();
        state.libraries.clear();
        collect_everything(&state.lua);
    }

    fn libraries(&self) -> Vec<LibraryInfo> {
        self.state().libraries.list()
    }

    fn function_counts(&self) -> (usize, usize) {
        self.state().libraries.counts()
    }
}

/// A run that never started, with the error it answers.
fn refused(text: &str) -> Ran {
    Ran {
        reply: Value::Error(text.into()),
        stopped: false,
    }
}

/// A compiled script or function, ready to run.
struct Compiled<'a> {
    function: &'a Function,
    flags: ScriptFlags,
    /// What names it in error replies: a script's SHA1, a function's name.
    label: &'a str,
}

/// Runs `compiled` (`start` calls it in the sandbox) with its commands through
/// `command`.
fn run_compiled(
    state: &State,
    compiled: Compiled<'_>,
    start: impl FnOnce(&Lua, &Function) -> mlua::Result<Result<LuaValue, Table>>,
    limits: RunLimits,
    command: &mut CallCommand<'_>,
) -> Ran {
    let Compiled {
        function,
        flags,
        label,
    } = compiled;
    let read_only = limits.read_only || flags.no_writes;
    state.resp.store(2, Ordering::Relaxed);
    let lua = &state.lua;
    let call = std::cell::RefCell::new(Call {
        command,
        read_only,
        // A script without a shebang runs in EVAL's compatibility mode, where Redis
        // lets it touch keys of any slot of its node.
        allow_cross_slot: !flags.declared || flags.allow_cross_slot,
        resp: state.resp.clone(),
    });
    let mut callback =
        |lua: &Lua, arguments: Table, count: usize| call.borrow_mut().run(lua, arguments, count);
    let outcome = (|| {
        let lent = state.calls.lend(&mut callback);
        state.limit.start(lua, limits.time_limit)?;
        let result = start(lua, function);
        state.limit.finish();
        drop(lent);
        result
    })();
    let resp = state.resp.load(Ordering::Relaxed);
    let outcome = outcome.and_then(|result| match result {
        Ok(value) => convert::from_lua(&value, resp, &state.sandbox.flatten).map(Ok),
        Err(error) => Ok(Err(error)),
    });
    let reply = match outcome {
        Ok(Ok(value)) => value,
        Ok(Err(error)) => Value::Error(errors::reply(&error, label)),
        Err(error) => Value::Error(format!(
            "{} script: {label}, on @user_script:0.",
            errors::text_of(&error)
        )),
    };
    Ran {
        reply,
        stopped: state.limit.stopped(),
    }
}

/// Redis lets a runaway script run on (answering BUSY to everyone else until SCRIPT
/// KILL); a test double stops it instead, so one bad script cannot hold a database and
/// a worker thread forever.
///
/// The hook is installed once and reads the running script's deadline, so that a run
/// costs two stores rather than a new hook. Every 10,000 instructions it compares the
/// time; past the deadline it raises the error, and from then on fires on every line
/// too, so that a script catching the error with pcall in a loop is stopped as well (as
/// Redis does). The next run puts the cheap hook back.
#[derive(Clone, Default)]
struct TimeLimit {
    run: Arc<Mutex<RunClock>>,
}

#[derive(Clone, Copy)]
struct RunClock {
    /// Whether a script runs: the engine's own Lua (flattening a reply) has no limit.
    running: bool,
    deadline: Instant,
    limit: Duration,
    stopped: bool,
}

impl Default for RunClock {
    fn default() -> Self {
        RunClock {
            running: false,
            deadline: Instant::now(),
            limit: Duration::ZERO,
            stopped: false,
        }
    }
}

impl TimeLimit {
    fn clock(&self) -> std::sync::MutexGuard<'_, RunClock> {
        self.run
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The hook every run starts with.
    fn install(&self, lua: &Lua) -> mlua::Result<()> {
        let limit = self.clone();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(10_000),
            move |lua, _| {
                let mut clock = limit.clock();
                if !clock.running || Instant::now() <= clock.deadline {
                    return Ok(VmState::Continue);
                }
                clock.stopped = true;
                let allowed = clock.limit;
                drop(clock);
                lua.set_hook(
                    HookTriggers::new()
                        .every_line()
                        .every_nth_instruction(1_000),
                    move |_, _| Err(time_limit_error(allowed)),
                )?;
                Err(time_limit_error(allowed))
            },
        )
    }

    /// Starts a run that may take `limit`.
    fn start(&self, lua: &Lua, limit: Duration) -> mlua::Result<()> {
        let mut clock = self.clock();
        if clock.stopped {
            // The last run was stopped: its every-line hook is still in place.
            self.install(lua)?;
        }
        *clock = RunClock {
            running: true,
            deadline: Instant::now() + limit,
            limit,
            stopped: false,
        };
        Ok(())
    }

    /// Ends the run [`TimeLimit::start`] started.
    fn finish(&self) {
        self.clock().running = false;
    }

    /// Whether the run was stopped at its limit.
    fn stopped(&self) -> bool {
        self.clock().stopped
    }
}

fn time_limit_error(limit: Duration) -> mlua::Error {
    mlua::Error::external(ScriptError(format!(
        "ERR nxlock serve stopped the script after its {} ms time limit",
        limit.as_millis()
    )))
}

/// `tostring` of a Lua value, for error messages.
fn display(value: &LuaValue) -> String {
    match value {
        LuaValue::String(s) => s.to_string_lossy(),
        LuaValue::Nil => "nil".into(),
        LuaValue::Boolean(b) => b.to_string(),
        LuaValue::Integer(n) => n.to_string(),
        LuaValue::Number(n) => crate::protocol::numbers::format_lua_number(*n),
        other => format!("{}: {:p}", other.type_name(), other.to_pointer()),
    }
}
