//! A script cut short part-way: what [`Faults::interrupt_next_script`] runs a script's
//! native body against.
//!
//! Redis does not roll a script back when a command inside it fails: the writes before
//! the failure stay. A lock script that writes in two steps can therefore leave half its
//! work behind, which is what this lets a test show.
//!
//! [`Faults::interrupt_next_script`]: crate::Faults::interrupt_next_script

use lock_core::{Error, ExpireCondition, Result, ScriptContext, SetOptions, SetReply};

/// The store as a script sees it, failing the command after the first `allowed` ones.
pub(crate) struct Interrupted<'a> {
    store: &'a mut dyn ScriptContext,
    allowed: u32,
    error: Error,
}

impl<'a> Interrupted<'a> {
    pub(crate) fn new(store: &'a mut dyn ScriptContext, allowed: u32, error: Error) -> Self {
        Self {
            store,
            allowed,
            error,
        }
    }

    /// Counts one command; the error once the allowed ones are spent.
    fn step(&mut self) -> Result<()> {
        match self.allowed.checked_sub(1) {
            Some(left) => {
                self.allowed = left;
                Ok(())
            }
            None => Err(self.error.clone()),
        }
    }
}

/// Each command counts one step, then runs on the store.
macro_rules! counted {
    ($(fn $name:ident(&mut self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&mut self $(, $arg: $ty)*) -> $ret {
                self.step()?;
                self.store.$name($($arg),*)
            }
        )*
    };
}

impl ScriptContext for Interrupted<'_> {
    counted! {
        fn set(&mut self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply>;
        fn setnx(&mut self, key: &[u8], value: &[u8]) -> Result<bool>;
        fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>>;
        fn value_is(&mut self, key: &[u8], expected: &[u8]) -> Result<bool>;
        fn getset(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>>;
        fn del(&mut self, keys: &[&[u8]]) -> Result<i64>;
        fn pexpire(&mut self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool>;
        fn pttl(&mut self, key: &[u8]) -> Result<i64>;
        fn incr(&mut self, key: &[u8]) -> Result<i64>;
        fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64>;
    }

    fn now_ms(&self) -> i64 {
        self.store.now_ms()
    }
}
