//! DEL, EXISTS, TYPE, KEYS.

use lock_core::Result;

use crate::notifications::KeyspaceEvents;
use crate::store::Store;

impl Store {
    pub(crate) fn del(&mut self, keys: &[&[u8]]) -> Result<i64> {
        // A key named twice is deleted once and counted once.
        let mut deleted = 0;
        for key in keys {
            if self.remove(key).is_some() {
                self.notify(KeyspaceEvents::GENERIC, "del", key);
                deleted += 1;
            }
        }
        Ok(deleted)
    }

    pub(crate) fn exists(&mut self, keys: &[&[u8]]) -> Result<i64> {
        // A key named twice counts twice.
        Ok(keys.iter().filter(|k| self.live(k).is_some()).count() as i64)
    }

    pub(crate) fn key_type(&mut self, key: &[u8]) -> Result<&'static str> {
        Ok(self
            .live(key)
            .map_or("none", |entry| entry.value.type_name()))
    }

    pub(crate) fn keys(&mut self, pattern: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(self.matching_keys(pattern))
    }
}
