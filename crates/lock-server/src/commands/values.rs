//! Typed access to the keyspace for commands: the live value of the kind a command works
//! on, or Redis's WRONGTYPE error.

use lock_core::Value;
use lock_memory::{Data, Hash, Keyspace, KeyspaceEvents, List, Set, SortedSet};

/// `WRONGTYPE …`, what every command answers for a key of another type.
pub(crate) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";

/// For each collection type: `$get` (the live value, `None` when absent) and `$get_or_new`
/// (created empty when absent; call `changed` afterwards, which deletes it if it stayed
/// empty).
macro_rules! typed {
    ($($get:ident, $get_or_new:ident, $variant:ident, $ty:ty;)*) => {
        $(
            pub(crate) fn $get<'a>(
                store: &'a mut dyn Keyspace,
                key: &[u8],
            ) -> Result<Option<&'a mut $ty>, String> {
                match store.value(key) {
                    None => Ok(None),
                    Some(Data::$variant(value)) => Ok(Some(value)),
                    Some(_) => Err(WRONGTYPE.into()),
                }
            }

            pub(crate) fn $get_or_new<'a>(
                store: &'a mut dyn Keyspace,
                key: &[u8],
            ) -> Result<&'a mut $ty, String> {
                if $get(store, key)?.is_none() {
                    store.put(key, Data::$variant(<$ty>::default()), None);
                }
                match store.value(key) {
                    Some(Data::$variant(value)) => Ok(value),
                    _ => unreachable!("just stored"),
                }
            }
        )*
    };
}

typed! {
    list, list_or_new, List, List;
    hash, hash_or_new, Hash, Hash;
    set, set_or_new, Set, Set;
    sorted_set, sorted_set_or_new, SortedSet, SortedSet;
}

/// Ends a command that may have changed the collection at `key`: WATCH sees it only if
/// it did, and a collection the command created but left empty is removed.
pub(crate) fn settle(store: &mut dyn Keyspace, key: &[u8], changed: bool) {
    if changed {
        store.changed(key);
    } else if store
        .value(key)
        .is_some_and(|data| data.is_empty_collection())
    {
        store.take(key);
    }
}

/// Ends a STORE command (SINTERSTORE, ZUNIONSTORE, ZRANGESTORE…): a `result` of `size`
/// elements replaces `key` and raises `event` of `class`; an empty one deletes `key`,
/// raising `del` if it was there. The reply is the size, as Redis's.
pub(crate) fn store_result(
    store: &mut dyn Keyspace,
    key: &[u8],
    result: Data,
    size: usize,
    (class, event): (KeyspaceEvents, &str),
) -> Value {
    if size > 0 {
        store.put(key, result, None);
        store.notify(class, event, key);
    } else if store.take(key).is_some() {
        store.notify(KeyspaceEvents::GENERIC, "del", key);
    }
    Value::Int(size as i64)
}

/// Whether `key` holds no value of another type than `kind` would: for commands that
/// must check every key before changing any.
pub(crate) fn check_type(
    store: &mut dyn Keyspace,
    key: &[u8],
    kind: &'static str,
) -> Result<(), String> {
    match store.value(key) {
        Some(data) if data.type_name() != kind => Err(WRONGTYPE.into()),
        _ => Ok(()),
    }
}
