//! [`RedisVersion`]: the Redis versions whose replies nxlock knows, and what differs
//! between them for lock code.

use std::fmt;
use std::str::FromStr;

use crate::{Error, ErrorKind};

/// A Redis version nxlock answers as (the double, `nxlock serve`) or judges a server
/// against (`nxlock check`). Only what lock code and lock libraries touch differs:
///
/// | | 7.0 | 7.2 | 7.4 |
/// |---|---|---|---|
/// | `WAITAOF` | unknown command | ✓ | ✓ |
/// | one command in a script naming two slots, on a cluster | `ERR Script attempted to access a non local key in a cluster node` | the same | ``ERR Command '<name>' in script attempted to access keys that don't hash to the same slot`` |
/// | `WAIT` from a script | not allowed | ✓ | ✓ |
/// | `WAITAOF` from a script | (unknown) | not allowed | ✓ |
/// | a `WAIT` or `BLPOP` timeout too large to add to now | waits for ever | `ERR timeout is out of range` | the same |
/// | `CLIENT SETINFO`, and `lib-name`/`lib-ver` in `CLIENT LIST` | unknown subcommand | ✓ | ✓ |
/// | `watch=` in `CLIENT LIST` | — | — | ✓ |
/// | `INFO`'s `redis_version`, `HELLO`'s `version`, a script's `redis.REDIS_VERSION` | 7.0.15 | 7.2.4 | 7.4.1 |
///
/// Valkey 8 reports `redis_version:7.2.4` and answers as 7.4 does on both counts, so it
/// is judged as 7.4 ([`RedisVersion::from_info`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RedisVersion {
    /// Redis 7.0 (Debian 12's redis-server 7.0.15).
    V7_0,
    /// Redis 7.2.
    V7_2,
    /// Redis 7.4, and Valkey 8. The newest, and the default.
    #[default]
    V7_4,
}

impl RedisVersion {
    /// Every version, oldest first.
    pub const ALL: [RedisVersion; 3] = [RedisVersion::V7_0, RedisVersion::V7_2, RedisVersion::V7_4];

    /// `7.0`, `7.2` or `7.4`.
    pub fn name(self) -> &'static str {
        match self {
            RedisVersion::V7_0 => "7.0",
            RedisVersion::V7_2 => "7.2",
            RedisVersion::V7_4 => "7.4",
        }
    }

    /// The full version this profile reports (`INFO`'s `redis_version`, `HELLO`'s
    /// `version`, a script's `redis.REDIS_VERSION`): the release whose replies it
    /// matches. 7.2.4 is also the `redis_version` Valkey 8 reports.
    pub fn release(self) -> &'static str {
        match self {
            RedisVersion::V7_0 => "7.0.15",
            RedisVersion::V7_2 => "7.2.4",
            RedisVersion::V7_4 => "7.4.1",
        }
    }

    /// [`RedisVersion::release`] as a script's `redis.REDIS_VERSION_NUM` gives it:
    /// `0x00MMmmpp`.
    pub fn release_number(self) -> i64 {
        match self {
            RedisVersion::V7_0 => 0x00_07_00_0f,
            RedisVersion::V7_2 => 0x00_07_02_04,
            RedisVersion::V7_4 => 0x00_07_04_01,
        }
    }

    /// The version an `INFO server` reply describes: `valkey_version` first (Valkey 8
    /// and later as 7.4, Valkey 7.2 as 7.2), then `redis_version` (8.x as 7.4, the
    /// newest this knows). `None` without either field, or for a server older than 7.0.
    pub fn from_info(info: &str) -> Option<RedisVersion> {
        let field = |name: &str| {
            info.lines()
                .find_map(|line| line.trim_end().strip_prefix(name)?.strip_prefix(':'))
        };
        if let Some(valkey) = field("valkey_version") {
            let (major, minor) = major_minor(valkey)?;
            return Some(if major >= 8 {
                RedisVersion::V7_4
            } else {
                Self::of(major, minor)?
            });
        }
        let (major, minor) = major_minor(field("redis_version")?)?;
        Self::of(major, minor)
    }

    /// The profile a Redis `major.minor` answers as.
    fn of(major: u32, minor: u32) -> Option<RedisVersion> {
        match (major, minor) {
            (7, 0..=1) => Some(RedisVersion::V7_0),
            (7, 2..=3) => Some(RedisVersion::V7_2),
            (7, _) | (8.., _) => Some(RedisVersion::V7_4),
            _ => None,
        }
    }

    /// Whether `WAITAOF` exists (7.2 and later).
    pub fn has_waitaof(self) -> bool {
        self >= RedisVersion::V7_2
    }

    /// Whether `CLIENT SETINFO` exists, and `CLIENT LIST` shows `lib-name` and `lib-ver`
    /// (7.2 and later).
    pub fn has_setinfo(self) -> bool {
        self >= RedisVersion::V7_2
    }

    /// Whether a push to the client whose command caused it (a `PUBLISH` to its own RESP3
    /// subscription) follows that command's reply, and a transaction's whole reply (7.2
    /// and later), rather than preceding it.
    pub fn pushes_after_reply(self) -> bool {
        self >= RedisVersion::V7_2
    }

    /// What a cluster node answers when one command inside a script (`command`, in
    /// lower case, as Redis names it) names keys of two slots.
    pub fn cross_slot_in_script(self, command: &str) -> Error {
        let text = match self {
            RedisVersion::V7_4 => format!(
                "ERR Command '{command}' in script attempted to access keys that don't hash to the same slot"
            ),
            _ => "ERR Script attempted to access a non local key in a cluster node".to_owned(),
        };
        Error::new(ErrorKind::Script, text)
    }
}

fn major_minor(version: &str) -> Option<(u32, u32)> {
    let mut parts = version.trim().split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().unwrap_or("0").parse().ok()?;
    Some((major, minor))
}

impl fmt::Display for RedisVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A version nxlock has no profile for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown Redis version {0:?}; the versions are 7.0, 7.2 and 7.4")]
pub struct UnknownVersion(pub String);

impl FromStr for RedisVersion {
    type Err = UnknownVersion;
    /// `7.0`, `7.2`, `7.4`, or a full version (`7.0.15`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        major_minor(s)
            .and_then(|(major, minor)| match (major, minor) {
                (7, 0) => Some(RedisVersion::V7_0),
                (7, 2) => Some(RedisVersion::V7_2),
                (7, 4) => Some(RedisVersion::V7_4),
                _ => None,
            })
            .ok_or_else(|| UnknownVersion(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_info_as_servers_report_them() {
        let redis_7_0 = "# Server\r\nredis_version:7.0.15\r\nredis_git_sha1:00000000\r\n";
        assert_eq!(RedisVersion::from_info(redis_7_0), Some(RedisVersion::V7_0));
        let valkey_8 =
            "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n";
        assert_eq!(RedisVersion::from_info(valkey_8), Some(RedisVersion::V7_4));
        let redis_7_2 = "redis_version:7.2.6\r\n";
        assert_eq!(RedisVersion::from_info(redis_7_2), Some(RedisVersion::V7_2));
        assert_eq!(
            RedisVersion::from_info("redis_version:8.0.2\r\n"),
            Some(RedisVersion::V7_4)
        );
        assert_eq!(RedisVersion::from_info("redis_version:6.2.14\r\n"), None);
        assert_eq!(RedisVersion::from_info("# Server\r\n"), None);
    }

    #[test]
    fn names_parse_back_and_texts_differ_only_in_7_4() {
        for version in RedisVersion::ALL {
            assert_eq!(version.name().parse::<RedisVersion>(), Ok(version));
        }
        assert_eq!("7.0.15".parse::<RedisVersion>(), Ok(RedisVersion::V7_0));
        assert!("6.2".parse::<RedisVersion>().is_err());
        assert_eq!(
            RedisVersion::V7_2.cross_slot_in_script("del").message(),
            RedisVersion::V7_0.cross_slot_in_script("del").message()
        );
        assert_eq!(
            RedisVersion::V7_4.cross_slot_in_script("del").message(),
            "ERR Command 'del' in script attempted to access keys that don't hash to the same slot"
        );
        assert!(!RedisVersion::V7_0.has_waitaof() && RedisVersion::V7_2.has_waitaof());
        assert!(
            !RedisVersion::V7_0.pushes_after_reply() && RedisVersion::V7_4.pushes_after_reply()
        );
        assert_eq!(RedisVersion::default(), RedisVersion::V7_4);
        for version in RedisVersion::ALL {
            let release = version.release();
            assert_eq!(release.parse::<RedisVersion>(), Ok(version));
            let number = version.release_number();
            let parts: Vec<i64> = release.split('.').map(|p| p.parse().unwrap()).collect();
            assert_eq!(number, (parts[0] << 16) | (parts[1] << 8) | parts[2]);
        }
    }
}
