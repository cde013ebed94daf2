//! What a script wrote, so that a script serve stops at its time limit leaves nothing
//! behind. Redis never leaves half a script applied: it runs a script to its end, and
//! once a script has written, refuses to kill it. A test double must not hang a test
//! run, so serve does stop a runaway script, and takes back every write it made: a
//! script is all or nothing here too. (Messages it published stay published, as they
//! do in Redis for a script killed before it wrote.)
//!
//! Keeping a copy costs time in proportion to the value, on every script that writes,
//! stopped or not; so a value of more than [`LARGEST_KEPT`] elements (or bytes, for a
//! string) is not copied. A stopped script that wrote to one says so in its error.

use lock_memory::{Data, Databases};

/// The largest value copied before a script's first write to it: elements of a
/// collection, bytes of a string.
pub(crate) const LARGEST_KEPT: usize = 4096;

/// A key as it was: its value and expiry, or `None` when it did not exist.
type Image = Option<(Data, Option<i64>)>;

/// One database's every key, value and expiry.
type WholeDatabase = Vec<(Vec<u8>, Data, Option<i64>)>;

/// The keys a script's writes touched, as they were before its first write to each.
/// A script touches few keys: they are found by a scan, which costs less than hashing
/// on every write of every script.
#[derive(Default)]
pub(crate) struct UndoLog {
    before: Vec<(usize, Vec<u8>, Image)>,
    /// Every database whole, taken before the script's first FLUSHDB: what comes after
    /// it is undone by putting these back.
    whole: Option<Vec<WholeDatabase>>,
    /// Keys written whose values were too large to copy: their writes stay.
    unkept: Vec<(usize, Vec<u8>)>,
}

/// How big `data` is, as [`LARGEST_KEPT`] measures it.
fn size(data: &Data) -> usize {
    match data {
        Data::String(bytes) => bytes.len() / 16,
        Data::List(list) => list.len(),
        Data::Hash(hash) => hash.len(),
        Data::Set(set) => set.len(),
        Data::SortedSet(sorted) => sorted.len(),
    }
}

impl UndoLog {
    /// Keeps `keys` of database `db` as they are now, unless already kept.
    pub(crate) fn save(&mut self, databases: &mut Databases<'_>, db: usize, keys: &[&[u8]]) {
        if self.whole.is_some() {
            return;
        }
        let Some(store) = databases.get(db) else {
            return;
        };
        for key in keys {
            let seen = |(at, kept, _): &(usize, Vec<u8>, Image)| *at == db && kept == key;
            if self.before.iter().any(seen)
                || self.unkept.iter().any(|(at, k)| *at == db && k == key)
            {
                continue;
            }
            if store
                .value(key)
                .is_some_and(|data| size(data) > LARGEST_KEPT)
            {
                self.unkept.push((db, key.to_vec()));
                continue;
            }
            let data = store.value(key).map(|data| data.clone());
            let image = data.map(|data| (data, store.expires_at(key).flatten()));
            self.before.push((db, key.to_vec(), image));
        }
    }

    /// Keeps `keys` in every database (`COPY … DB n` writes to another one).
    pub(crate) fn save_everywhere(&mut self, databases: &mut Databases<'_>, keys: &[&[u8]]) {
        for db in 0..databases.len() {
            self.save(databases, db, keys);
        }
    }

    /// Keeps every database whole (FLUSHDB), once.
    pub(crate) fn save_all(&mut self, databases: &mut Databases<'_>) {
        if self.whole.is_some() {
            return;
        }
        let mut whole = Vec::with_capacity(databases.len());
        for db in 0..databases.len() {
            let Some(store) = databases.get(db) else {
                continue;
            };
            let keys = store.keys(b"*").unwrap_or_default();
            let entries = keys
                .into_iter()
                .filter_map(|key| {
                    let data = store.value(&key)?.clone();
                    let expires_at = store.expires_at(&key).flatten();
                    Some((key, data, expires_at))
                })
                .collect();
            whole.push(entries);
        }
        self.whole = Some(whole);
    }

    /// Puts every kept key back as it was, and removes those that did not exist. The
    /// stores count these as writes, so a client watching them sees its EXEC aborted.
    /// The keys whose writes stay (too large to have been copied).
    pub(crate) fn restore(self, databases: &mut Databases<'_>) -> Vec<Vec<u8>> {
        if let Some(whole) = self.whole {
            for (db, entries) in whole.into_iter().enumerate() {
                let Some(store) = databases.get(db) else {
                    continue;
                };
                store.flush();
                for (key, data, expires_at) in entries {
                    store.put(&key, data, expires_at);
                }
            }
        }
        for (db, key, image) in self.before.into_iter().rev() {
            let Some(store) = databases.get(db) else {
                continue;
            };
            let _ = store.take(&key);
            if let Some((data, expires_at)) = image {
                store.put(&key, data, expires_at);
            }
            store.changed(&key);
        }
        self.unkept.into_iter().map(|(_, key)| key).collect()
    }
}
