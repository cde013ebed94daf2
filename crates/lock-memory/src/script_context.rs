//! Native scripts and a server's commands call the store directly, inside the backend's
//! lock.

use lock_core::{ExpireCondition, Result, ScriptContext, SetOptions, SetReply};

use crate::data::Data;
use crate::entry::Entry;
use crate::keyspace::{Keyspace, WatchMark};
use crate::notifications::KeyspaceEvents;
use crate::store::Store;

impl ScriptContext for Store {
    fn set(&mut self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        Store::set(self, key, value, options)
    }
    fn setnx(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        Store::setnx(self, key, value)
    }
    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Store::get(self, key)
    }
    fn value_is(&mut self, key: &[u8], expected: &[u8]) -> Result<bool> {
        match self.live(key) {
            None => Ok(false),
            Some(entry) => Ok(entry.as_string()? == expected),
        }
    }
    fn getset(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        Store::getset(self, key, value)
    }
    fn del(&mut self, keys: &[&[u8]]) -> Result<i64> {
        Store::del(self, keys)
    }
    fn pexpire(
        &mut self,
        key: &[u8],
        milliseconds: i64,
        condition: ExpireCondition,
    ) -> Result<bool> {
        Store::pexpire(self, key, milliseconds, condition)
    }
    fn pttl(&mut self, key: &[u8]) -> Result<i64> {
        Store::pttl(self, key)
    }
    fn incr(&mut self, key: &[u8]) -> Result<i64> {
        Store::incr(self, key)
    }
    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<i64> {
        Store::publish(self, channel, message)
    }
    fn now_ms(&self) -> i64 {
        self.now()
    }
}

impl Keyspace for Store {
    fn set_owned(&mut self, key: &[u8], value: Vec<u8>, options: SetOptions) -> Result<SetReply> {
        Store::set_owned(self, key, value, options)
    }

    fn random_key(&mut self, pick: &mut dyn FnMut(usize) -> usize) -> Option<Vec<u8>> {
        Store::random_key(self, pick)
    }

    fn size(&mut self) -> usize {
        // Redis's active expiry looks at 20 keys per database at a time, ten times a
        // second (as serve's does, with 200); a call here looks at 16 more.
        self.len_reaping(16)
    }

    fn getdel(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Store::getdel(self, key)
    }
    fn exists(&mut self, keys: &[&[u8]]) -> Result<i64> {
        Store::exists(self, keys)
    }
    fn pexpireat(&mut self, key: &[u8], unix_ms: i64, condition: ExpireCondition) -> Result<bool> {
        Store::pexpireat(self, key, unix_ms, condition)
    }
    fn ttl(&mut self, key: &[u8]) -> Result<i64> {
        Store::ttl(self, key)
    }
    fn persist(&mut self, key: &[u8]) -> Result<bool> {
        Store::persist(self, key)
    }
    fn key_type(&mut self, key: &[u8]) -> Result<&'static str> {
        Store::key_type(self, key)
    }
    fn keys(&mut self, pattern: &[u8]) -> Result<Vec<Vec<u8>>> {
        Store::keys(self, pattern)
    }
    fn value(&mut self, key: &[u8]) -> Option<&mut Data> {
        self.live(key).map(|entry| &mut entry.value)
    }
    fn put(&mut self, key: &[u8], data: Data, expires_at: Option<i64>) {
        self.insert(
            key,
            Entry {
                value: data,
                expires_at,
                accessed: 0,
            },
        );
    }
    fn take(&mut self, key: &[u8]) -> Option<(Data, Option<i64>)> {
        self.remove(key)
            .map(|entry| (entry.value, entry.expires_at))
    }
    fn expires_at(&mut self, key: &[u8]) -> Option<Option<i64>> {
        self.live(key).map(|entry| entry.expires_at)
    }
    fn access(&mut self, key: &[u8]) {
        let now = self.now();
        if let Some(entry) = self.live(key) {
            entry.accessed = now;
        }
    }
    fn idle_ms(&mut self, key: &[u8]) -> Option<i64> {
        let now = self.now();
        self.live(key).map(|entry| (now - entry.accessed).max(0))
    }
    fn changed(&mut self, key: &[u8]) {
        self.settle_collection(key);
    }
    fn watch(&mut self, key: &[u8]) -> WatchMark {
        Store::watch(self, key)
    }
    fn watch_broken(&mut self, key: &[u8], mark: WatchMark) -> bool {
        Store::watch_broken(self, key, mark)
    }
    fn unwatch(&mut self, key: &[u8]) {
        Store::unwatch(self, key);
    }
    fn now_us(&self) -> i64 {
        Store::now_us(self)
    }
    fn notify(&mut self, class: KeyspaceEvents, event: &str, key: &[u8]) {
        Store::notify(self, class, event, key);
    }
    fn flush(&mut self) {
        Store::flush(self);
    }
}
