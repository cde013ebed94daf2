//! A readable snapshot of the keyspace, for failing tests.

use std::fmt;

use crate::data::Data;
use crate::entry::Entry;

/// One live key.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyDump {
    /// The key.
    pub key: Vec<u8>,
    /// Its value, when it holds a string (empty for other types).
    pub value: Vec<u8>,
    /// What it holds, whatever the type.
    pub data: Data,
    /// PTTL: milliseconds left, or -1 without expiry.
    pub pttl: i64,
}

impl KeyDump {
    /// What `entry`, stored at `key`, shows at `now_ms` (Unix ms).
    pub(crate) fn of(key: &[u8], entry: &Entry, now_ms: i64) -> Self {
        KeyDump {
            key: key.to_vec(),
            value: match &entry.value {
                Data::String(bytes) => bytes.clone(),
                _ => Vec::new(),
            },
            data: entry.value.clone(),
            pttl: entry.expires_at.map_or(-1, |at| (at - now_ms).max(0)),
        }
    }
}

/// Every live key, sorted, at one instant of the backend's clock.
///
/// Its `Display` prints one line per key, e.g. `"lock" = "5f0c…" (pttl 2999 ms)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Dump {
    /// The backend's clock when the dump was taken (Unix ms).
    pub now_ms: i64,
    /// The live keys.
    pub keys: Vec<KeyDump>,
}

impl Dump {
    /// The entry for `key`, if live.
    pub fn get(&self, key: &[u8]) -> Option<&KeyDump> {
        self.keys.iter().find(|k| k.key == key)
    }
}

impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} live keys at {} ms:", self.keys.len(), self.now_ms)?;
        for k in &self.keys {
            let key = String::from_utf8_lossy(&k.key);
            let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
            let value = match &k.data {
                Data::String(bytes) => format!("{:?}", text(bytes)),
                Data::List(items) => {
                    format!(
                        "list {:?}",
                        items.iter().map(|i| text(i)).collect::<Vec<_>>()
                    )
                }
                Data::Hash(hash) => format!(
                    "hash {:?}",
                    hash.iter()
                        .map(|(f, v)| (text(f), text(v)))
                        .collect::<Vec<_>>()
                ),
                Data::Set(set) => {
                    format!("set {:?}", set.iter().map(|m| text(m)).collect::<Vec<_>>())
                }
                Data::SortedSet(zset) => format!(
                    "zset {:?}",
                    zset.iter().map(|(m, s)| (text(m), s)).collect::<Vec<_>>()
                ),
            };
            match k.pttl {
                -1 => writeln!(f, "  {key:?} = {value} (no ttl)")?,
                ms => writeln!(f, "  {key:?} = {value} (pttl {ms} ms)")?,
            }
        }
        Ok(())
    }
}
