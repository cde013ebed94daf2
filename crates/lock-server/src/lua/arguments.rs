//! KEYS and ARGV, set for each run by a C function the sandbox's runner calls just before
//! the script, from a pointer to the run's arguments. Through mlua every string and
//! every table slot would be its own checked call, and a protected call of the C API
//! ([`Lua::exec_raw`]) makes a fresh C closure each time; this C function is made once,
//! and Redis's `luaCreateArray` is no cheaper. The `unsafe` is sound because:
//!
//! - the runner passes the pointer as a light userdata to an [`Arguments`] that the Rust
//!   caller keeps alive for the whole call (see `Sandbox::run`);
//! - the function uses at most three stack slots beyond its two arguments (Lua grants a
//!   C function `LUA_MINSTACK`, 20);
//! - it holds nothing that needs dropping (borrowed byte strings), so Lua's error jump
//!   (out of memory) may pass through it, to the runner's protected call.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::os::raw::c_int;

use mlua::{Function, LightUserData, Lua, ffi};

/// A run's KEYS and ARGV, as the setter reads them.
pub(crate) struct Arguments<'a> {
    pub(crate) keys: &'a [&'a [u8]],
    pub(crate) args: &'a [&'a [u8]],
}

impl Arguments<'_> {
    /// The pointer the runner hands to the setter; valid while `self` lives.
    pub(crate) fn pointer(&self) -> LightUserData {
        LightUserData(std::ptr::from_ref(self).cast::<c_void>().cast_mut())
    }
}

/// Pushes a fresh table of `items`, in order.
///
/// # Safety
/// `state` is a valid state with two free stack slots.
unsafe fn push_array(state: *mut ffi::lua_State, items: &[&[u8]]) {
    // SAFETY: as documented above.
    unsafe {
        // Only a size hint: a count too large for it leaves the table to grow.
        ffi::lua_createtable(state, c_int::try_from(items.len()).unwrap_or(0), 0);
        for (i, item) in items.iter().enumerate() {
            ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
            ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
        }
    }
}

/// `set(env, arguments)`: sets `env.KEYS` and `env.ARGV` to fresh tables.
///
/// # Safety
/// Called by Lua as a C function, with a table and a light userdata pointing to a live
/// [`Arguments`] (see the module documentation).
unsafe extern "C-unwind" fn set(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as documented above; every call below is on `state`, within its stack.
    unsafe {
        let arguments = &*ffi::lua_touserdata(state, 2).cast::<Arguments<'_>>();
        for (name, items) in [(c"KEYS", arguments.keys), (c"ARGV", arguments.args)] {
            ffi::lua_pushstring(state, name.as_ptr());
            push_array(state, items);
            // env[name] = the table; env is argument 1.
            ffi::lua_rawset(state, 1);
        }
        0
    }
}

/// `pack(arguments)`: the keys and the arguments as two fresh tables (a function's
/// parameters).
///
/// # Safety
/// As [`set`]: a light userdata pointing to a live [`Arguments`], three stack slots used.
unsafe extern "C-unwind" fn pack(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as documented above; every call below is on `state`, within its stack.
    unsafe {
        let arguments = &*ffi::lua_touserdata(state, 1).cast::<Arguments<'_>>();
        push_array(state, arguments.keys);
        push_array(state, arguments.args);
        2
    }
}

/// The packer, made once with the interpreter.
pub(crate) fn packer(lua: &Lua) -> mlua::Result<Function> {
    // SAFETY: `pack` is a sound C function for Lua (see its documentation).
    unsafe { lua.create_c_function(pack) }
}

/// The setter, made once with the interpreter.
pub(crate) fn setter(lua: &Lua) -> mlua::Result<Function> {
    // SAFETY: `set` is a sound C function for Lua (see its documentation).
    unsafe { lua.create_c_function(set) }
}
