//! Functions that raise Redis's error *table* (`{err = "ERR …"}`), as `redis.call` does,
//! so that a script's `pcall(redis.call, …)` receives the table Redis would give it.
//!
//! mlua can only raise its own error userdata from Rust, and a Lua wrapper would be
//! tail-called by `return redis.call(…)`, losing the script's frame and so the line
//! Redis reports. A C function keeps the frame (Lua 5.1 runs a tail-called C function
//! as an ordinary call) and can raise any value, so each raising function is a tiny C
//! function: it calls its Rust implementation, which answers `(reply, failed)`, and
//! raises the reply when it failed.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::os::raw::c_int;

use mlua::{Function, Lua, ffi};

/// The raising functions, by the registry key of the Rust implementation each calls.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Raising {
    Call,
    Sha1hex,
    Setresp,
    SetRepl,
    Log,
    AclCheckCmd,
}

const KEYS: [&CStr; 6] = [
    c"nxlock.redis.call",
    c"nxlock.redis.sha1hex",
    c"nxlock.redis.setresp",
    c"nxlock.redis.set_repl",
    c"nxlock.redis.log",
    c"nxlock.redis.acl_check_cmd",
];

impl Raising {
    /// Where its implementation is kept (`Lua::set_named_registry_value`).
    pub(crate) fn key(self) -> &'static str {
        KEYS[self as usize].to_str().expect("ASCII keys")
    }
}

/// Calls the implementation registered under `KEYS[K]` with the caller's arguments:
/// returns its reply, or raises it when it reports failure.
///
/// # Safety
/// Called by Lua as a C function, with a valid state. It uses at most two stack slots
/// beyond its arguments (Lua guarantees `LUA_MINSTACK`, 20, to a C function), pops
/// what it pushes, and holds nothing that needs dropping, so Lua's error jump may pass
/// through it.
unsafe extern "C-unwind" fn raising<const K: usize>(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as documented above; every call below is on `state`, within its stack.
    unsafe {
        let args = ffi::lua_gettop(state);
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, KEYS[K].as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, args, 2);
        let failed = ffi::lua_toboolean(state, -1) != 0;
        ffi::lua_settop(state, -2);
        if failed {
            ffi::lua_error(state);
        }
        1
    }
}

/// The C function for `which`.
pub(crate) fn function(lua: &Lua, which: Raising) -> mlua::Result<Function> {
    let c_function: ffi::lua_CFunction = match which {
        Raising::Call => raising::<0>,
        Raising::Sha1hex => raising::<1>,
        Raising::Setresp => raising::<2>,
        Raising::SetRepl => raising::<3>,
        Raising::Log => raising::<4>,
        Raising::AclCheckCmd => raising::<5>,
    };
    // SAFETY: `raising` is a sound C function for Lua (see its documentation).
    unsafe { lua.create_c_function(c_function) }
}
