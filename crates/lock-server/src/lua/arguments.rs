//! KEYS and ARGV, set for each run in one protected call of the C API. Through mlua's
//! safe API every string and every table slot is its own checked (often protected)
//! call: a seventh of an EVAL's cost, where Redis's `luaCreateArray` makes a few C
//! calls. The `unsafe` is that of [`Lua::exec_raw`], and it is sound because:
//!
//! - every call below is on the state `exec_raw` hands over, within the stack space it
//!   checked (three slots) and [`ffi::lua_checkstack`]'d for the rest;
//! - a Lua error (out of memory) unwinds through `exec_raw`'s protected call, and the
//!   closure holds nothing that needs dropping (two slices of borrowed byte strings).
#![allow(unsafe_code)]

use mlua::{Lua, Table, ffi};

/// Sets `KEYS` and `ARGV` in `globals` to fresh tables of `keys` and `args`.
pub(crate) fn set(lua: &Lua, globals: &Table, keys: &[&[u8]], args: &[&[u8]]) -> mlua::Result<()> {
    // SAFETY: see the module documentation.
    unsafe {
        lua.exec_raw::<()>(globals, |state| {
            for (name, items) in [(c"KEYS", keys), (c"ARGV", args)] {
                ffi::lua_checkstack(state, 3);
                ffi::lua_pushstring(state, name.as_ptr());
                ffi::lua_createtable(state, items.len() as i32, 0);
                for (i, item) in items.iter().enumerate() {
                    ffi::lua_pushlstring(state, item.as_ptr().cast(), item.len());
                    ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
                }
                // globals[name] = the table; the globals table is argument 1.
                ffi::lua_rawset(state, 1);
            }
        })
    }
}
