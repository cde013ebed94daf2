//! Key names that keep every key of one lock in one Redis Cluster slot (seed 001).

use crate::LockError;

/// A lock's name, from which all of its keys are derived as `{name}:suffix`.
///
/// Redis Cluster hashes only the part between the first `{` and the next `}` (the hash
/// tag), so every key of one lock lands in the same slot and scripts may touch them
/// together:
///
/// ```
/// use lock_core::{LockName, hash_slot};
///
/// let name = LockName::new("orders:42")?;
/// assert_eq!(name.key("lock"), b"{orders:42}:lock");
/// assert_eq!(hash_slot(&name.key("lock")), hash_slot(&name.key("fence")));
/// # Ok::<(), lock_core::LockError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockName {
    name: String,
}

impl LockName {
    /// A lock name. Empty names (`{}` is not a hash tag) and names containing `{` or `}`
    /// (the tag would not be the name) are rejected.
    pub fn new(name: impl Into<String>) -> Result<Self, LockError> {
        let name = name.into();
        if name.is_empty() || name.contains(['{', '}']) {
            return Err(LockError::InvalidConfig(format!(
                "lock name {name:?} must be non-empty and contain no braces"
            )));
        }
        Ok(Self { name })
    }

    /// The name itself (the hash tag).
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The key `{name}:suffix`.
    pub fn key(&self, suffix: &str) -> Vec<u8> {
        format!("{{{}}}:{suffix}", self.name).into_bytes()
    }
}

const CRC16_XMODEM: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// The Redis Cluster slot (0..16384) of `key`, honouring hash tags exactly as
/// `CLUSTER KEYSLOT` does.
pub fn hash_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    CRC16_XMODEM.checksum(hashed) % 16384
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_cluster_keyslot() {
        // Values from Redis's cluster specification and CLUSTER KEYSLOT.
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"bar"), 5061);
        assert_eq!(hash_slot(b"{foo}.x"), 12182);
        assert_eq!(
            hash_slot(b"{user1000}.following"),
            hash_slot(b"{user1000}.followers")
        );
        // An empty tag means the whole key is hashed.
        assert_ne!(hash_slot(b"{}foo"), hash_slot(b"{}bar"));
        assert_eq!(
            hash_slot(b"foo{}{bar}"),
            CRC16_XMODEM.checksum(b"foo{}{bar}") % 16384
        );
    }

    #[test]
    fn bad_names_are_typed_errors() {
        assert!(matches!(
            LockName::new(""),
            Err(LockError::InvalidConfig(_))
        ));
        assert!(matches!(
            LockName::new("a{b"),
            Err(LockError::InvalidConfig(_))
        ));
        assert_eq!(
            LockName::new("goods:300").unwrap().key("lock"),
            b"{goods:300}:lock"
        );
    }
}
