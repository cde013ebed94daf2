//! A readable snapshot of the keyspace, for failing tests.

use std::fmt;

/// One live key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyDump {
    /// The key.
    pub key: Vec<u8>,
    /// Its value, when it holds a string (empty for a list).
    pub value: Vec<u8>,
    /// Its elements, head first, when it holds a list.
    pub list: Option<Vec<Vec<u8>>>,
    /// PTTL: milliseconds left, or -1 without expiry.
    pub pttl: i64,
}

/// Every live key, sorted, at one instant of the backend's clock.
///
/// Its `Display` prints one line per key, e.g. `"lock" = "5f0c…" (pttl 2999 ms)`.
#[derive(Clone, Debug, PartialEq, Eq)]
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
            let value = match &k.list {
                None => format!("{:?}", String::from_utf8_lossy(&k.value)),
                Some(items) => {
                    let items: Vec<_> = items.iter().map(|i| String::from_utf8_lossy(i)).collect();
                    format!("list {items:?}")
                }
            };
            match k.pttl {
                -1 => writeln!(f, "  {key:?} = {value} (no ttl)")?,
                ms => writeln!(f, "  {key:?} = {value} (pttl {ms} ms)")?,
            }
        }
        Ok(())
    }
}
