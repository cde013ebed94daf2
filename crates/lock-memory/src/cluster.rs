//! Redis Cluster's key rules, enforced by a [`MemoryBackend`](crate::MemoryBackend) in
//! cluster mode so a unit test catches what only a cluster would refuse.
//!
//! The double stands for a whole cluster whose primaries split the slots as a
//! [`SlotLayout`] says, with a cluster client in front that routes each command to its
//! slot's node. What that client cannot fix, the double refuses as Redis 7.0 does:
//!
//! - one command (`DEL`, `EXISTS`, a script's `KEYS`) naming keys of two slots:
//!   `CROSSSLOT Keys in request don't hash to the same slot`;
//! - a script touching a key its node does not serve: `ERR Script attempted to access a
//!   non local key in a cluster node`; one command inside it spanning slots: the same
//!   text before 7.4, ``ERR Command '<name>' in script attempted to access keys that don't
//!   hash to the same slot`` from 7.4 ([`RedisVersion::cross_slot_in_script`]). A script
//!   runs on the node of its `KEYS`; one without keys goes to a random node, so the double
//!   refuses every key it touches.

use lock_core::{
    Error, ErrorKind, ExpireCondition, RedisVersion, Result, ScriptContext, SetOptions, SetReply,
    SlotLayout, common_slot,
};

/// The store as a script on one cluster node sees it.
pub(crate) struct ClusterScope<'a> {
    store: &'a mut dyn ScriptContext,
    layout: &'a SlotLayout,
    /// The node the script runs on: its declared keys' node, `None` without keys.
    node: Option<usize>,
    /// Whose error text a command spanning slots gets.
    version: RedisVersion,
}

impl<'a> ClusterScope<'a> {
    /// A script declaring `keys`; `CROSSSLOT` when they span slots.
    pub(crate) fn new(
        store: &'a mut dyn ScriptContext,
        layout: &'a SlotLayout,
        version: RedisVersion,
        keys: &[&[u8]],
    ) -> Result<Self> {
        let node = common_slot(keys)?.map(|slot| layout.node_of(slot));
        Ok(Self {
            store,
            layout,
            node,
            version,
        })
    }

    /// `keys`, named by one `command` of the script, must be served by its node.
    fn local(&self, command: &str, keys: &[&[u8]]) -> Result<()> {
        let slot = common_slot(keys).map_err(|_| self.version.cross_slot_in_script(command))?;
        match (slot, self.node) {
            (None, _) => Ok(()),
            (Some(slot), Some(node)) if self.layout.node_of(slot) == node => Ok(()),
            _ => Err(Error::non_local_key()),
        }
    }
}

/// Each command's keys must be local; then it runs on the store.
macro_rules! local {
    ($(fn $name:ident(&mut self, $keys:ident: $keys_ty:ty $(, $arg:ident: $ty:ty)*) -> $ret:ty => $check:expr;)*) => {
        $(
            fn $name(&mut self, $keys: $keys_ty $(, $arg: $ty)*) -> $ret {
                self.local(command_name(stringify!($name)), $check)?;
                self.store.$name($keys $(, $arg)*)
            }
        )*
    };
}

impl ScriptContext for ClusterScope<'_> {
    local! {
        fn set(&mut self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> => &[key];
        fn setnx(&mut self, key: &[u8], value: &[u8]) -> Result<bool> => &[key];
        fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> => &[key];
        fn value_is(&mut self, key: &[u8], expected: &[u8]) -> Result<bool> => &[key];
        fn getset(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> => &[key];
        fn del(&mut self, keys: &[&[u8]]) -> Result<i64> => keys;
        fn pexpire(&mut self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> => &[key];
        fn pttl(&mut self, key: &[u8]) -> Result<i64> => &[key];
        fn incr(&mut self, key: &[u8]) -> Result<i64> => &[key];
    }

    /// Classic `PUBLISH` reaches every node's subscribers over the cluster bus: no slot.
    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.store.publish(channel, message)
    }

    fn now_ms(&self) -> i64 {
        self.store.now_ms()
    }
}

/// The command a [`ScriptContext`] method stands for, as Redis names it in errors.
fn command_name(method: &str) -> &str {
    match method {
        "value_is" => "get",
        other => other,
    }
}

/// `CROSSSLOT` for a command outside scripts naming keys of two slots.
pub(crate) fn one_slot(layout: Option<&SlotLayout>, keys: &[&[u8]]) -> Result<()> {
    match layout {
        Some(_) => common_slot(keys).map(drop),
        None => Ok(()),
    }
}

/// A transaction's rule: its `written` keys share one slot (`CROSSSLOT` otherwise, as EXEC
/// answers), on the node that serves its `watched` keys, which its connection is to
/// (otherwise a write was refused with `MOVED` while queued, and EXEC answers
/// `EXECABORT`).
pub(crate) fn one_node(layout: &SlotLayout, watched: &[&[u8]], written: &[&[u8]]) -> Result<()> {
    let (Some(written), Some(watched)) = (common_slot(written)?, common_slot(watched)?) else {
        return Ok(());
    };
    if layout.node_of(written) == layout.node_of(watched) {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Response,
            "EXECABORT Transaction discarded because of previous errors.",
        ))
    }
}
