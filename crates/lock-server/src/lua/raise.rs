//! Functions that raise Redis's error *table* (`{err = "ERR …"}`), as `redis.call` does,
//! so that a script's `pcall(redis.call, …)` receives the table Redis would give it.
//!
//! mlua can only raise its own error userdata from Rust, and a Lua wrapper would be
//! tail-called by `return redis.call(…)`, losing the script's frame and so the line
//! Redis reports. A C function keeps the frame (Lua 5.1 runs a tail-called C function
//! as an ordinary call) and can raise any value, so each raising function is a tiny C
//! function: it calls its Rust implementation with the arguments in a table, the
//! implementation answers `(reply, failed)`, and the C function raises the reply when it
//! failed.
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

/// Calls the implementation registered under `KEYS[K]` with the caller's arguments
/// packed in a table (and their count), so that thousands of them (`unpack(t)`) never
/// need a Rust reference each: returns its reply, or raises it when it reports failure
/// and `RAISE` is set.
///
/// # Safety
/// Called by Lua as a C function, with a valid state. It uses at most four stack slots
/// beyond its arguments (Lua guarantees `LUA_MINSTACK`, 20, to a C function), and holds
/// nothing that needs dropping, so Lua's error jump may pass through it.
unsafe extern "C-unwind" fn forward<const K: usize, const RAISE: bool>(
    state: *mut ffi::lua_State,
) -> c_int {
    // SAFETY: as documented above; every call below is on `state`, within its stack.
    unsafe {
        let args = ffi::lua_gettop(state);
        ffi::lua_createtable(state, args, 0);
        for i in 1..=args {
            ffi::lua_pushvalue(state, i);
            ffi::lua_rawseti(state, -2, ffi::lua_Integer::from(i));
        }
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, KEYS[K].as_ptr());
        ffi::lua_insert(state, -2);
        ffi::lua_pushinteger(state, ffi::lua_Integer::from(args));
        ffi::lua_call(state, 2, 2);
        let failed = ffi::lua_toboolean(state, -1) != 0;
        ffi::lua_settop(state, -2);
        if failed && RAISE {
            ffi::lua_error(state);
        }
        1
    }
}

/// The C function for `which`: raising its failures (`redis.call`) or returning them
/// (`redis.pcall`, with `raise` false).
pub(crate) fn function(lua: &Lua, which: Raising, raise: bool) -> mlua::Result<Function> {
    let c_function: ffi::lua_CFunction = match (which, raise) {
        (Raising::Call, true) => forward::<0, true>,
        (Raising::Call, false) => forward::<0, false>,
        (Raising::Sha1hex, _) => forward::<1, true>,
        (Raising::Setresp, _) => forward::<2, true>,
        (Raising::SetRepl, _) => forward::<3, true>,
        (Raising::Log, _) => forward::<4, true>,
        (Raising::AclCheckCmd, _) => forward::<5, true>,
    };
    // SAFETY: `forward` is a sound C function for Lua (see its documentation).
    unsafe { lua.create_c_function(c_function) }
}

/// The arguments a forwarded call received, read from their table one at a time.
pub(crate) fn arguments(args: &mlua::Table, count: usize) -> mlua::Result<Vec<mlua::Value>> {
    (1..=count).map(|i| args.raw_get(i)).collect()
}
