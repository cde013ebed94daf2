//! Keyspace notifications, as Redis publishes them when `notify-keyspace-events` asks:
//! each change to a key is an event of a class (generic, string, list…), published on
//! `__keyspace@<db>__:<key>` with the event's name, on `__keyevent@<db>__:<event>` with
//! the key, or on both.
//!
//! The settings are the server's, shared by every database (and by a server's
//! databases' [`MemoryBackend`](crate::MemoryBackend)s, as pub/sub is): one atomic word,
//! read on every event, so a store whose notifications are off pays one load per write.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A set of keyspace-event classes: the flags `notify-keyspace-events` sets, with
/// Redis's letters ([`KeyspaceEvents::parse`]) and its canonical spelling
/// ([`Display`](fmt::Display), what `CONFIG GET` answers).
///
/// Each event belongs to one class; it is published when its class is on and at least
/// one of [`KEYSPACE`](Self::KEYSPACE) and [`KEYEVENT`](Self::KEYEVENT) is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KeyspaceEvents(u32);

impl KeyspaceEvents {
    /// No events (Redis's default, the empty string).
    pub const NONE: Self = Self(0);
    /// `K`: publish on `__keyspace@<db>__:<key>`, with the event's name as the message.
    pub const KEYSPACE: Self = Self(1 << 0);
    /// `E`: publish on `__keyevent@<db>__:<event>`, with the key as the message.
    pub const KEYEVENT: Self = Self(1 << 1);
    /// `g`: commands that act on any type (DEL, EXPIRE, RENAME…).
    pub const GENERIC: Self = Self(1 << 2);
    /// `$`: string commands.
    pub const STRING: Self = Self(1 << 3);
    /// `l`: list commands.
    pub const LIST: Self = Self(1 << 4);
    /// `s`: set commands.
    pub const SET: Self = Self(1 << 5);
    /// `h`: hash commands.
    pub const HASH: Self = Self(1 << 6);
    /// `z`: sorted-set commands.
    pub const ZSET: Self = Self(1 << 7);
    /// `x`: a key removed because its TTL passed (when it is found so, lazily or by
    /// active expiry).
    pub const EXPIRED: Self = Self(1 << 8);
    /// `e`: a key evicted for `maxmemory` (accepted; the double never evicts).
    pub const EVICTED: Self = Self(1 << 9);
    /// `t`: stream commands (accepted; the double has no streams).
    pub const STREAM: Self = Self(1 << 10);
    /// `m`: a read of a missing key (accepted; not raised, see SERVE.md).
    pub const KEY_MISS: Self = Self(1 << 11);
    /// `d`: module events (accepted; there are no modules).
    pub const MODULE: Self = Self(1 << 13);
    /// `n`: a key created (Redis 7.0's `new` event).
    pub const NEW: Self = Self(1 << 14);
    /// `A`: every class but [`KEY_MISS`](Self::KEY_MISS) and [`NEW`](Self::NEW), as in
    /// Redis.
    pub const ALL: Self = Self(
        Self::GENERIC.0
            | Self::STRING.0
            | Self::LIST.0
            | Self::SET.0
            | Self::HASH.0
            | Self::ZSET.0
            | Self::EXPIRED.0
            | Self::EVICTED.0
            | Self::STREAM.0
            | Self::MODULE.0,
    );

    /// The classes Redis's letters name (`"KEA"`, `"Ex"`, `""`…), or the error Redis
    /// gives `CONFIG SET notify-keyspace-events` for any other character.
    pub fn parse(letters: &[u8]) -> Result<Self, InvalidEventClass> {
        letters.iter().try_fold(Self::NONE, |flags, letter| {
            let class = match letter {
                b'A' => Self::ALL,
                b'g' => Self::GENERIC,
                b'$' => Self::STRING,
                b'l' => Self::LIST,
                b's' => Self::SET,
                b'h' => Self::HASH,
                b'z' => Self::ZSET,
                b'x' => Self::EXPIRED,
                b'e' => Self::EVICTED,
                b'K' => Self::KEYSPACE,
                b'E' => Self::KEYEVENT,
                b't' => Self::STREAM,
                b'm' => Self::KEY_MISS,
                b'd' => Self::MODULE,
                b'n' => Self::NEW,
                _ => return Err(InvalidEventClass),
            };
            Ok(flags | class)
        })
    }

    /// Whether every class of `other` is in `self`.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether an event of `class` is published under these settings.
    pub fn publishes(self, class: Self) -> bool {
        self.0 & class.0 != 0 && self.0 & (Self::KEYSPACE.0 | Self::KEYEVENT.0) != 0
    }
}

impl std::ops::BitOr for KeyspaceEvents {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }
}

/// Redis's spelling: `A` for every class of [`KeyspaceEvents::ALL`], or their letters
/// in Redis's order, then `K`, `E` and `m`.
impl fmt::Display for KeyspaceEvents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letter = |flag: Self, letter: char| self.contains(flag).then_some(letter);
        let classes = if self.contains(Self::ALL) {
            vec![Some('A')]
        } else {
            vec![
                letter(Self::GENERIC, 'g'),
                letter(Self::STRING, '$'),
                letter(Self::LIST, 'l'),
                letter(Self::SET, 's'),
                letter(Self::HASH, 'h'),
                letter(Self::ZSET, 'z'),
                letter(Self::EXPIRED, 'x'),
                letter(Self::EVICTED, 'e'),
                letter(Self::STREAM, 't'),
                letter(Self::MODULE, 'd'),
                letter(Self::NEW, 'n'),
            ]
        };
        let channels = [
            letter(Self::KEYSPACE, 'K'),
            letter(Self::KEYEVENT, 'E'),
            letter(Self::KEY_MISS, 'm'),
        ];
        classes
            .into_iter()
            .chain(channels)
            .flatten()
            .try_for_each(|c| write!(f, "{c}"))
    }
}

/// A `notify-keyspace-events` value with a character that names no class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")]
pub struct InvalidEventClass;

/// The settings every database of one server reads.
#[derive(Debug, Default)]
pub(crate) struct SharedEvents(AtomicU32);

impl SharedEvents {
    pub(crate) fn get(&self) -> KeyspaceEvents {
        KeyspaceEvents(self.0.load(Ordering::Relaxed))
    }

    pub(crate) fn set(&self, events: KeyspaceEvents) {
        self.0.store(events.0, Ordering::Relaxed);
    }
}

/// One database's notifier: the shared settings and the database's number.
#[derive(Clone, Debug, Default)]
pub(crate) struct Notifier {
    pub(crate) events: Arc<SharedEvents>,
    pub(crate) database: u32,
}

impl Notifier {
    /// The publications of one event of `class` named `event` on `key`, as
    /// `(channel, message)` pairs in Redis's order (keyspace channel first); none when
    /// the settings leave it out.
    pub(crate) fn publications(
        &self,
        class: KeyspaceEvents,
        event: &str,
        key: &[u8],
    ) -> Vec<(Vec<u8>, Vec<u8>)> {
        let events = self.events.get();
        if !events.publishes(class) {
            return Vec::new();
        }
        let mut out = Vec::with_capacity(2);
        let channel = |kind: &str, name: &[u8]| {
            let mut channel = format!("__{kind}@{}__:", self.database).into_bytes();
            channel.extend_from_slice(name);
            channel
        };
        if events.contains(KeyspaceEvents::KEYSPACE) {
            out.push((channel("keyspace", key), event.as_bytes().to_vec()));
        }
        if events.contains(KeyspaceEvents::KEYEVENT) {
            out.push((channel("keyevent", event.as_bytes()), key.to_vec()));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_read_and_print_as_redis_spells_them() {
        for (given, shown) in [
            ("", ""),
            ("KEA", "AKE"),
            ("Ex", "xE"),
            ("AKEmn", "AKEm"),
            ("g$lshzxetdKE", "AKE"),
            ("zgK", "gzK"),
            ("nK", "nK"),
        ] {
            let parsed = KeyspaceEvents::parse(given.as_bytes()).unwrap();
            assert_eq!(parsed.to_string(), shown, "{given:?}");
        }
        assert_eq!(KeyspaceEvents::parse(b"KEq"), Err(InvalidEventClass));
        assert_eq!(
            InvalidEventClass.to_string(),
            "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
        );
    }

    #[test]
    fn an_event_is_published_only_with_its_class_and_a_channel_kind() {
        let notifier = Notifier {
            events: Arc::default(),
            database: 3,
        };
        assert!(
            notifier
                .publications(KeyspaceEvents::GENERIC, "del", b"k")
                .is_empty()
        );
        notifier
            .events
            .set(KeyspaceEvents::parse(b"g").expect("valid"));
        assert!(
            notifier
                .publications(KeyspaceEvents::GENERIC, "del", b"k")
                .is_empty(),
            "a class without K or E publishes nothing"
        );
        notifier
            .events
            .set(KeyspaceEvents::parse(b"KEg").expect("valid"));
        assert_eq!(
            notifier.publications(KeyspaceEvents::GENERIC, "del", b"k"),
            vec![
                (b"__keyspace@3__:k".to_vec(), b"del".to_vec()),
                (b"__keyevent@3__:del".to_vec(), b"k".to_vec()),
            ]
        );
        assert!(
            notifier
                .publications(KeyspaceEvents::STRING, "set", b"k")
                .is_empty()
        );
    }
}
