//! INCR.

use lock_core::{Error, Result};

use crate::entry::Entry;
use crate::notifications::KeyspaceEvents;
use crate::store::Store;

/// Redis's `string2ll`: an optional `-`, then `0` alone or digits without a leading zero,
/// no spaces, no `+`, within i64. (`-0`, `01`, ` 1` and `1.0` are all rejected.)
fn parse_strict_i64(bytes: &[u8]) -> Option<i64> {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    let canonical = match digits {
        [b'0'] => bytes.len() == 1,
        [b'1'..=b'9', rest @ ..] => rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    if !canonical {
        return None;
    }
    std::str::from_utf8(bytes).ok()?.parse().ok()
}

impl Store {
    pub(crate) fn incr(&mut self, key: &[u8]) -> Result<i64> {
        let (current, expires_at) = match self.live(key) {
            None => (0, None),
            Some(entry) => {
                let n = parse_strict_i64(entry.as_string()?).ok_or_else(Error::not_integer)?;
                (n, entry.expires_at)
            }
        };
        let next = current.checked_add(1).ok_or_else(Error::overflow)?;
        // INCR keeps the key's TTL.
        self.insert(key, Entry::string(next.to_string().as_bytes(), expires_at));
        self.notify(KeyspaceEvents::STRING, "incrby", key);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_strict_i64;

    #[test]
    fn parses_like_string2ll() {
        for ok in [
            "0",
            "-1",
            "9223372036854775807",
            "-9223372036854775808",
            "42",
        ] {
            assert!(parse_strict_i64(ok.as_bytes()).is_some(), "{ok}");
        }
        for bad in [
            "",
            "-",
            "-0",
            "01",
            " 1",
            "1 ",
            "+1",
            "1.0",
            "9223372036854775808",
            "0x1",
        ] {
            assert_eq!(parse_strict_i64(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
