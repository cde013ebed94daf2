//! [`ScriptRunner`]: how the double runs a script that has no native body. The double
//! itself knows no Lua; a runner handed in (nxlock serve's sealed Lua 5.1 engine, behind
//! the facade's `lua` feature) runs the script's source against the keyspace.

use std::fmt;

use lock_core::{RedisVersion, Result, Script, SlotLayout, Value};

use crate::Databases;

/// Runs the Lua source of scripts the double has no native body for.
///
/// [`MemoryBackend::with_script_runner`](crate::MemoryBackend::with_script_runner)
/// installs one; the backend calls it inside the same atomic step a native body gets
/// (one frozen time, the store locked, counted as one `EVALSHA`). Scripts with a native
/// body keep running it.
pub trait ScriptRunner: fmt::Debug + Send + Sync {
    /// Runs `script`'s Lua with `keys` and `args`. `databases` holds the backend's
    /// database alone, as database 0; `cluster`, when Redis Cluster's rules hold, is how
    /// the primaries split the slots: the script runs on the node of its `KEYS` (a
    /// random one without keys), and every key a command inside it touches must be that
    /// node's, as the native bodies are held to. `version` is which Redis the backend
    /// answers as
    /// ([`MemoryBackend::with_redis_version`](crate::MemoryBackend::with_redis_version)).
    /// The script's reply, or its error reply as an [`Error`](lock_core::Error).
    fn run(
        &self,
        databases: &mut Databases<'_>,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        cluster: Option<&SlotLayout>,
        version: RedisVersion,
    ) -> Result<Value>;
}
