//! PTTL, TTL, PERSIST.

use lock_core::Result;

use crate::notifications::KeyspaceEvents;
use crate::store::Store;

impl Store {
    pub(crate) fn pttl(&mut self, key: &[u8]) -> Result<i64> {
        let now = self.now();
        Ok(match self.live(key) {
            None => -2,
            Some(entry) => entry.expires_at.map_or(-1, |at| (at - now).max(0)),
        })
    }

    pub(crate) fn ttl(&mut self, key: &[u8]) -> Result<i64> {
        let pttl = self.pttl(key)?;
        // Redis rounds to the nearest second: (ttl + 500) / 1000.
        Ok(if pttl < 0 {
            pttl
        } else {
            pttl.saturating_add(500) / 1000
        })
    }

    pub(crate) fn persist(&mut self, key: &[u8]) -> Result<bool> {
        let removed = self
            .live(key)
            .is_some_and(|entry| entry.expires_at.take().is_some());
        if removed {
            self.touch(key);
            self.notify(KeyspaceEvents::GENERIC, "persist", key);
        }
        Ok(removed)
    }
}
