//! Where `redis.call` finds the run it belongs to. Its implementation is one Lua
//! function, made once with the interpreter; each run lends it the run's command
//! callback for the length of the run ([`CallSlot::lend`]).
//!
//! The callback borrows the run's databases, so it cannot be `'static`, as a function
//! kept by Lua must be. mlua's `Lua::scope` would make a fresh function for every run
//! (a userdata, a C closure and a destructor each time, a tenth of an EVAL's cost);
//! instead the slot holds a pointer to the callback, with its lifetime erased, and
//! [`Lent`] clears it before the borrow ends. That is the `unsafe` here, and why:
//!
//! - the pointer is set only by [`CallSlot::lend`], whose guard borrows the callback
//!   mutably for as long as the pointer is in the slot, and clears it on drop (unwinding
//!   included), so it never outlives the callback and nothing else can use the callback
//!   meanwhile;
//! - `redis.call` takes the pointer out of the slot while it calls, so a nested call
//!   (which no command makes) would find the slot empty instead of a second `&mut`;
//! - the interpreter is used only under the engine's mutex, on the thread that lent the
//!   callback, so sending the slot between threads (mlua's `send` feature asks that
//!   functions be `Send`) never lets two threads see the pointer at once.
#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Function, Lua, Table, Value as LuaValue};

/// A run's `redis.call`: the arguments table and their count, to the reply and whether
/// it is an error.
pub(crate) type CallFn<'a> = dyn FnMut(&Lua, Table, usize) -> mlua::Result<(LuaValue, bool)> + 'a;

/// A lent callback, its lifetime erased (see the module's safety argument).
struct Erased(NonNull<CallFn<'static>>);

// SAFETY: the pointer is used only while the engine's mutex is held by the run that
// lent it, on that run's thread (see the module documentation).
unsafe impl Send for Erased {}

/// The callback of the run in progress, if any.
#[derive(Clone, Default)]
pub(crate) struct CallSlot(Arc<Mutex<Option<Erased>>>);

impl CallSlot {
    /// The one `redis.call` implementation, which calls whatever callback is lent.
    pub(crate) fn function(&self, lua: &Lua) -> mlua::Result<Function> {
        let slot = self.clone();
        lua.create_function(move |lua, (arguments, count): (Table, usize)| {
            let Some(lent) = slot.take() else {
                return Err(mlua::Error::runtime(
                    "redis.call was called outside a script run",
                ));
            };
            // SAFETY: `lent` points to the callback a live `Lent` guard borrows mutably
            // (the slot is cleared before that borrow ends), and it was taken out of the
            // slot, so this is the only use of it now.
            let reply = unsafe { (*lent.0.as_ptr())(lua, arguments, count) };
            slot.put_back(lent);
            reply
        })
    }

    /// Lends `callback` to `redis.call` until the guard is dropped.
    pub(crate) fn lend<'a>(&'a self, callback: &'a mut CallFn<'a>) -> Lent<'a> {
        let pointer: NonNull<CallFn<'a>> = NonNull::from(callback);
        // SAFETY: only the lifetime changes; the guard clears the slot before `'a` ends.
        let erased: NonNull<CallFn<'static>> = unsafe { std::mem::transmute(pointer) };
        *self.lock() = Some(Erased(erased));
        Lent {
            slot: self,
            _callback: PhantomData,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Erased>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn take(&self) -> Option<Erased> {
        self.lock().take()
    }

    fn put_back(&self, lent: Erased) {
        *self.lock() = Some(lent);
    }
}

/// A callback lent to `redis.call`; dropping it takes the callback back.
pub(crate) struct Lent<'a> {
    slot: &'a CallSlot,
    _callback: PhantomData<&'a mut CallFn<'a>>,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        *self.slot.lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callback_is_reached_only_while_it_is_lent() {
        let lua = Lua::new();
        let slot = CallSlot::default();
        let call = slot.function(&lua).unwrap();
        let mut calls = 0;
        {
            let mut callback = |_: &Lua, _: Table, count: usize| {
                calls += count;
                Ok((LuaValue::Boolean(true), false))
            };
            let _lent = slot.lend(&mut callback);
            let (reply, failed): (bool, bool) =
                call.call((lua.create_table().unwrap(), 2)).unwrap();
            assert!(reply && !failed);
        }
        assert_eq!(calls, 2, "the lent callback ran once, with its arguments");
        let after = call.call::<(bool, bool)>((lua.create_table().unwrap(), 1));
        assert!(
            after
                .unwrap_err()
                .to_string()
                .contains("outside a script run"),
            "nothing is lent once the guard is gone"
        );
    }
}
