//! The script engine as the state sees it: the server holds one, shared by every
//! database as in Redis, but the engine itself (Lua, a layer above) is handed in when the
//! server starts. It reaches the server's commands only through the callback each run is
//! given, so it knows nothing of the command table or the keyspace.

use std::time::Duration;

use lock_core::Value;

/// What a script may do while it runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RunLimits {
    /// EVAL_RO / EVALSHA_RO.
    pub(crate) read_only: bool,
    /// Redis would answer BUSY past this; a test double stops the script instead.
    pub(crate) time_limit: Duration,
}

/// One `redis.call` or `redis.pcall` of a running script.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScriptCall<'a> {
    /// The command's arguments, its name first.
    pub(crate) args: &'a [Vec<u8>],
    /// The RESP version the script chose with `redis.setresp` (2 or 3).
    pub(crate) resp: u8,
    /// Whether the script may not write: run by EVAL_RO, or declared `no-writes`.
    pub(crate) read_only: bool,
    /// Whether the script declared `allow-cross-slot-keys`.
    pub(crate) allow_cross_slot: bool,
}

/// What runs a script's commands: the reply to each.
pub(crate) type CallCommand<'a> = dyn FnMut(ScriptCall<'_>) -> Value + 'a;

/// A script interpreter with its cache of compiled scripts.
pub(crate) trait ScriptEngine: std::fmt::Debug + Send + Sync {
    /// Compiles and caches `body` (SCRIPT LOAD, EVAL): its SHA1, or Redis's error text.
    fn load(&self, body: &[u8]) -> Result<String, String>;

    /// Whether the script `sha` is cached.
    fn exists(&self, sha: &str) -> bool;

    /// How many scripts are cached (INFO's `number_of_cached_scripts`).
    fn cached(&self) -> usize;

    /// The bytes of the cached scripts' bodies (INFO's `used_memory_scripts_eval`).
    fn cached_bytes(&self) -> usize;

    /// How much memory the interpreter uses (INFO's `used_memory_lua`).
    fn used_memory(&self) -> usize;

    /// Empties the cache (SCRIPT FLUSH).
    fn flush(&self);

    /// Whether the cached script `sha` may not run under EVAL_RO: Redis refuses a script
    /// that declares flags without `no-writes` before running it.
    fn refuses_read_only(&self, sha: &str) -> bool;

    /// FUNCTION LOAD: compiles `code` and runs it once to register its functions (as
    /// library `name`, replacing one of that name only if `replace`): the library's
    /// name, or Redis's error text.
    fn load_library(&self, code: &[u8], replace: bool) -> Result<String, String>;

    /// Whether function `name` (any case) is loaded, and then whether it may not run
    /// under FCALL_RO (it lacks the `no-writes` flag).
    fn function_refuses_read_only(&self, name: &[u8]) -> Option<bool>;

    /// FCALL: runs function `name` with `keys` and `args` as its two parameters, its
    /// commands through `call` (`Function not found` when it is not loaded).
    fn run_function(
        &self,
        name: &[u8],
        keys: &[&[u8]],
        args: &[&[u8]],
        limits: RunLimits,
        call: &mut CallCommand<'_>,
    ) -> Ran;

    /// FUNCTION DELETE: false when there is no such library.
    fn delete_library(&self, name: &[u8]) -> bool;

    /// FUNCTION FLUSH.
    fn flush_libraries(&self);

    /// FUNCTION LIST: every library, by name.
    fn libraries(&self) -> Vec<LibraryInfo>;

    /// FUNCTION STATS: how many libraries and functions are loaded.
    fn function_counts(&self) -> (usize, usize);

    /// Runs the cached script `sha` with `keys` and `args`, each of its commands through
    /// `call`: the script's reply (NOSCRIPT when it is not cached), and whether it was
    /// stopped at its time limit.
    fn run(
        &self,
        sha: &str,
        keys: &[&[u8]],
        args: &[&[u8]],
        limits: RunLimits,
        call: &mut CallCommand<'_>,
    ) -> Ran;
}

/// A function a library registered, as FUNCTION LIST shows it.
#[derive(Clone, Debug)]
pub(crate) struct FunctionInfo {
    pub(crate) name: String,
    pub(crate) description: Option<String>,
    /// Its flags, in Redis's order (`no-writes` first).
    pub(crate) flags: Vec<String>,
}

/// A loaded library, as FUNCTION LIST shows it.
#[derive(Clone, Debug)]
pub(crate) struct LibraryInfo {
    pub(crate) name: String,
    /// The code as loaded, metadata line included.
    pub(crate) code: Vec<u8>,
    pub(crate) functions: Vec<FunctionInfo>,
}

/// What a run of a script came to.
#[derive(Debug)]
pub(crate) struct Ran {
    /// Its reply, or its error reply.
    pub(crate) reply: Value,
    /// Whether the engine stopped it at its time limit (whatever the script did with the
    /// error, `pcall` included): its writes must then be taken back.
    pub(crate) stopped: bool,
}
