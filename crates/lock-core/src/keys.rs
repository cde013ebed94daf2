//! Lock names and the keys derived from them (seed 001's hash tags).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::LockError;

/// A lock's name: every lock is built from one, and every key and channel it uses is
/// derived from it as `{name}:suffix`.
///
/// # Key layout
///
/// | key or channel | used by |
/// |---|---|
/// | `{name}:lock` | every algorithm: the lock itself (token, stamp or `owner:count`) |
/// | `{name}:fence` | [`FencedLock`](crate::FencedLock), [`ReentrantLock::fenced`](crate::ReentrantLock::fenced): the fence counter |
/// | `{name}:wake` (channel) | [`TokenLock`](crate::TokenLock) with [`Wait::Notify`](crate::Wait::Notify), [`FairLock`](crate::FairLock) |
/// | `{name}:issued`, `{name}:served`, `{name}:ticket:<n>` | [`FairLock`](crate::FairLock)'s line |
///
/// Redis Cluster hashes only the part between the first `{` and the next `}` (the hash
/// tag), so every key of one lock lands in the same slot and one script may touch them
/// all:
///
/// ```
/// use lock_core::{LockName, hash_slot};
///
/// let name = LockName::new("orders:42")?;
/// assert_eq!(name.lock_key(), b"{orders:42}:lock");
/// assert_eq!(hash_slot(&name.lock_key()), hash_slot(&name.key("fence")));
/// # Ok::<(), lock_core::LockError>(())
/// ```
///
/// A name must be non-empty and contain no `{` or `}` (the tag would not be the name);
/// anything else is [`LockError::InvalidConfig`].
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LockName {
    name: Arc<str>,
}

impl LockName {
    /// A lock name, validated (see the type's docs).
    pub fn new(name: impl Into<String>) -> Result<Self, LockError> {
        let name = name.into();
        if name.is_empty() || name.contains(['{', '}']) {
            return Err(LockError::InvalidConfig(format!(
                "lock name {name:?} must be non-empty and contain no braces"
            )));
        }
        Ok(Self { name: name.into() })
    }

    /// The name itself (the hash tag).
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// The key `{name}:suffix`.
    pub fn key(&self, suffix: &str) -> Vec<u8> {
        format!("{{{}}}:{suffix}", self.name).into_bytes()
    }

    /// The lock's own key, `{name}:lock`.
    pub fn lock_key(&self) -> Vec<u8> {
        self.key("lock")
    }
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.name, f)
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl FromStr for LockName {
    type Err = LockError;

    fn from_str(name: &str) -> Result<Self, LockError> {
        Self::new(name)
    }
}

impl TryFrom<&str> for LockName {
    type Error = LockError;

    fn try_from(name: &str) -> Result<Self, LockError> {
        Self::new(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{common_slot, hash_slot};

    #[test]
    fn every_key_of_a_lock_is_in_one_slot() {
        let name = LockName::new("orders:42").unwrap();
        let keys = ["lock", "fence", "issued", "served", "ticket:7", "wake"].map(|s| name.key(s));
        let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        assert_eq!(common_slot(&keys), Ok(Some(hash_slot(b"orders:42"))));
    }

    #[test]
    fn bad_names_are_typed_errors() {
        for bad in ["", "a{b", "a}b", "{x}"] {
            assert!(
                matches!(LockName::new(bad), Err(LockError::InvalidConfig(_))),
                "{bad:?} was accepted"
            );
            assert!(bad.parse::<LockName>().is_err());
        }
        let name = LockName::new("goods:300").unwrap();
        assert_eq!(name.lock_key(), b"{goods:300}:lock");
        assert_eq!(name.key("fence"), b"{goods:300}:fence");
        assert_eq!(name.to_string(), "goods:300");
    }
}
