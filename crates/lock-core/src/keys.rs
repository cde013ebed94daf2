//! Lock names and the keys derived from them (seed 001's hash tags).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::LockError;

/// A lock's name: every lock is built from one, and every key and channel it uses is
/// derived from it.
///
/// # Key layout
///
/// By default ([`LockName::new`], [`lock_name!`](crate::lock_name)) a name is a hash tag,
/// and every key is `{name}:suffix`:
///
/// | key or channel | used by |
/// |---|---|
/// | `{name}:lock` | every algorithm: the lock itself (token, stamp or `owner:count`) |
/// | `{name}:fence` | [`FencedLock`](crate::FencedLock), [`ReentrantLock::fenced`](crate::ReentrantLock::fenced): the fence counter |
/// | `{name}:wake` (channel) | [`TokenLock`](crate::TokenLock) with [`Wait::Notify`](crate::Wait::Notify), [`FairLock`](crate::FairLock) |
/// | `{name}:next` | [`TokenLock`](crate::TokenLock) with [`Wait::Notify`](crate::Wait::Notify): the next turn's claim |
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
///
/// # The plain layout: sharing a lock with other languages
///
/// [`LockName::plain`] makes the lock's own key exactly the bytes given, as redis-py's
/// `Lock`, node-redlock and most other libraries name theirs, so a [`TokenLock`] (or a
/// [`Redlock`]) and a lock of another language on the same key exclude each other. The
/// key may be any bytes. The other keys become `<key>:suffix`, without a hash tag: on a
/// Redis Cluster they land in other slots than the lock, so only locks that use the lock
/// key alone (token and Redlock without [`Wait::Notify`]) work there, unless the key
/// carries a hash tag of its own (`{jobs}`).
///
/// ```
/// use lock_core::LockName;
///
/// let shared = LockName::plain("jobs:nightly")?; // what redis-py's Lock("jobs:nightly") uses
/// assert_eq!(shared.lock_key(), b"jobs:nightly");
/// assert_eq!(shared.key("fence"), b"jobs:nightly:fence");
/// # Ok::<(), lock_core::LockError>(())
/// ```
///
/// [`TokenLock`]: crate::TokenLock
/// [`Redlock`]: crate::Redlock
/// [`Wait::Notify`]: crate::Wait::Notify
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct LockName {
    layout: Layout,
}

#[derive(Clone, PartialEq, Eq, Hash)]
enum Layout {
    /// `{name}:suffix`; a literal's name is not allocated.
    Tagged(Name),
    /// The key itself, and `<key>:suffix`.
    Plain(Arc<[u8]>),
}

#[derive(Clone)]
enum Name {
    Static(&'static str),
    Shared(Arc<str>),
}

/// A literal and a name built at run time are equal when they spell the same.
impl PartialEq for Name {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Name {}

impl std::hash::Hash for Name {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_str().hash(state);
    }
}

impl Name {
    fn as_str(&self) -> &str {
        match self {
            Name::Static(name) => name,
            Name::Shared(name) => name,
        }
    }
}

/// Why a name cannot be a hash tag.
const BAD_NAME: &str = "must be non-empty and contain no braces";

impl LockName {
    /// A lock name, validated (see the type's docs).
    pub fn new(name: impl Into<String>) -> Result<Self, LockError> {
        let name = name.into();
        if !valid(name.as_bytes()) {
            return Err(LockError::InvalidConfig(format!(
                "lock name {name:?} {BAD_NAME}"
            )));
        }
        Ok(Self {
            layout: Layout::Tagged(Name::Shared(name.into())),
        })
    }

    /// A literal name, checked when compiled: use it through
    /// [`lock_name!`](crate::lock_name), which evaluates it in a constant, so that a bad
    /// literal is a compile error.
    #[doc(hidden)]
    pub const fn from_static(name: &'static str) -> Self {
        assert!(
            valid(name.as_bytes()),
            "a lock name must be non-empty and contain no braces"
        );
        Self {
            layout: Layout::Tagged(Name::Static(name)),
        }
    }

    /// A lock whose key is exactly `key` (any non-empty bytes), as other languages' locks
    /// name theirs; see [the plain layout](#the-plain-layout-sharing-a-lock-with-other-languages).
    pub fn plain(key: impl Into<Vec<u8>>) -> Result<Self, LockError> {
        let key = key.into();
        if key.is_empty() {
            return Err(LockError::InvalidConfig(
                "a lock key must be non-empty".into(),
            ));
        }
        Ok(Self {
            layout: Layout::Plain(key.into()),
        })
    }

    /// The name (the hash tag), or the plain key.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.layout {
            Layout::Tagged(name) => name.as_str().as_bytes(),
            Layout::Plain(key) => key,
        }
    }

    /// Whether this name uses [the plain layout](LockName::plain).
    pub fn is_plain(&self) -> bool {
        matches!(self.layout, Layout::Plain(_))
    }

    /// The key `{name}:suffix` (`<key>:suffix` in the plain layout).
    pub fn key(&self, suffix: &str) -> Vec<u8> {
        match &self.layout {
            // Concatenated rather than formatted: every lock built derives its keys,
            // and `format!` cost as much as a command on the double.
            Layout::Tagged(name) => [
                b"{".as_slice(),
                name.as_str().as_bytes(),
                b"}:".as_slice(),
                suffix.as_bytes(),
            ]
            .concat(),
            Layout::Plain(key) => [key, b":".as_slice(), suffix.as_bytes()].concat(),
        }
    }

    /// The lock's own key: `{name}:lock`, or the plain key itself.
    pub fn lock_key(&self) -> Vec<u8> {
        match &self.layout {
            Layout::Tagged(_) => self.key("lock"),
            Layout::Plain(key) => key.to_vec(),
        }
    }
}

/// Non-empty, and no brace: the whole name is the hash tag.
const fn valid(name: &[u8]) -> bool {
    if name.is_empty() {
        return false;
    }
    let mut at = 0;
    while at < name.len() {
        if name[at] == b'{' || name[at] == b'}' {
            return false;
        }
        at += 1;
    }
    true
}

/// A [`LockName`] from a string literal, checked at compile time: a literal that is empty
/// or holds a brace does not compile. Building a lock from a literal then takes no
/// fallible step.
///
/// ```
/// use lock_core::lock_name;
///
/// let name = lock_name!("jobs:nightly"); // TokenLock::new(backend, &name): no `?` at all
/// assert_eq!(name.lock_key(), b"{jobs:nightly}:lock");
/// ```
///
/// ```compile_fail
/// let bad = lock_core::lock_name!("has{brace}");
/// ```
#[macro_export]
macro_rules! lock_name {
    ($name:literal) => {{
        const NAME: $crate::LockName = $crate::LockName::from_static($name);
        NAME
    }};
}

impl fmt::Debug for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.layout {
            Layout::Tagged(name) => fmt::Debug::fmt(name.as_str(), f),
            Layout::Plain(key) => write!(f, "plain({:?})", String::from_utf8_lossy(key)),
        }
    }
}

impl fmt::Display for LockName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
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

    #[test]
    fn a_plain_name_is_its_key_and_may_be_binary() {
        let name = LockName::plain(b"\xff{x}lock".to_vec()).unwrap();
        assert_eq!(name.lock_key(), b"\xff{x}lock");
        assert_eq!(name.key("fence"), b"\xff{x}lock:fence");
        assert!(name.is_plain());
        assert!(matches!(
            LockName::plain(Vec::new()),
            Err(LockError::InvalidConfig(_))
        ));
        assert_ne!(name, LockName::new("x").unwrap());
    }

    #[test]
    fn a_literal_name_equals_the_same_name_built_at_run_time() {
        let literal = crate::lock_name!("goods:300");
        assert_eq!(
            literal.lock_key(),
            LockName::new("goods:300").unwrap().lock_key()
        );
        assert_eq!(literal.as_bytes(), b"goods:300");
        assert_eq!(literal, LockName::new("goods:300").unwrap());
    }
}
