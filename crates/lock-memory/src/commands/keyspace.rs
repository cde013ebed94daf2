//! DEL, EXISTS, TYPE, KEYS.

use lock_core::Result;

use crate::store::Store;

impl Store {
    pub(crate) fn del(&mut self, keys: &[&[u8]]) -> Result<i64> {
        // A key named twice is deleted once and counted once.
        Ok(keys.iter().filter(|k| self.remove(k).is_some()).count() as i64)
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
