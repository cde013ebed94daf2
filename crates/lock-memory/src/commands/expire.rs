//! PEXPIRE, PEXPIREAT (and the shared rule of Redis 7.0's `expireGenericCommand`).

use lock_core::{Error, ExpireCondition, Result};

use crate::notifications::KeyspaceEvents;
use crate::store::Store;

/// Sets `key`'s expiry to `when` (absolute Unix ms) if `condition` holds, as Redis 7.0
/// does: a missing key answers false; NX/XX/GT/LT are checked against the current TTL
/// (none counts as infinite); a time not after now deletes the key.
fn expire_at(store: &mut Store, key: &[u8], when: i64, condition: ExpireCondition) -> bool {
    let now = store.now();
    let Some(entry) = store.live(key) else {
        return false;
    };
    let current = entry.expires_at;
    let holds = match condition {
        ExpireCondition::Always => true,
        ExpireCondition::IfNoExpiry => current.is_none(),
        ExpireCondition::IfHasExpiry => current.is_some(),
        ExpireCondition::IfGreater => current.is_some_and(|c| when > c),
        ExpireCondition::IfLess => current.is_none_or(|c| when < c),
    };
    if !holds {
        return false;
    }
    if when <= now {
        store.remove(key);
        store.notify(KeyspaceEvents::GENERIC, "del", key);
    } else {
        entry.expires_at = Some(when);
        store.touch(key);
        store.notify(KeyspaceEvents::GENERIC, "expire", key);
    }
    true
}

impl Store {
    pub(crate) fn pexpire(
        &mut self,
        key: &[u8],
        milliseconds: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        // The overflow check comes before the key is looked up, as in Redis.
        let when = milliseconds
            .checked_add(self.now())
            .ok_or_else(|| Error::invalid_expire("pexpire"))?;
        Ok(expire_at(self, key, when, condition))
    }

    pub(crate) fn pexpireat(
        &mut self,
        key: &[u8],
        unix_ms: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        Ok(expire_at(self, key, unix_ms, condition))
    }
}
