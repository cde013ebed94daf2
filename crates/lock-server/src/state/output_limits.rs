//! `client-output-buffer-limit`, as Redis 7.0 reads and prints it: a hard and a soft
//! bound in bytes and the seconds the soft one may be passed, for each class of client
//! (normal, replica, pub/sub). Serve applies the pub/sub class to a subscribed client's
//! queue of messages: a subscriber that never reads is disconnected at 32 MB (or after
//! 60 s over 8 MB) instead of growing the server's memory without bound.

use std::time::Duration;

use lock_memory::OutputLimit;

/// Redis's classes, in the order `CONFIG GET` prints them.
const CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

/// Every class's limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutputLimits([OutputLimit; 3]);

impl Default for OutputLimits {
    /// Redis's defaults: `normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432
    /// 8388608 60`.
    fn default() -> Self {
        let limit = |hard, soft, seconds| OutputLimit {
            hard,
            soft,
            soft_for: Duration::from_secs(seconds),
        };
        OutputLimits([
            limit(0, 0, 0),
            limit(256 << 20, 64 << 20, 60),
            limit(32 << 20, 8 << 20, 60),
        ])
    }
}

impl OutputLimits {
    /// The pub/sub class's limit.
    pub(crate) fn pubsub(&self) -> OutputLimit {
        self.0[2]
    }

    /// These limits with what `value` sets (only the classes it names change), or
    /// Redis's reason for refusing it.
    pub(crate) fn updated(&self, value: &str) -> Result<OutputLimits, &'static str> {
        let words: Vec<&str> = value.split_ascii_whitespace().collect();
        if !words.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.");
        }
        let mut next = *self;
        for group in words.chunks(4) {
            let class = match group[0].to_ascii_lowercase().as_str() {
                "normal" => 0,
                "slave" | "replica" => 1,
                "pubsub" => 2,
                _ => return Err("Invalid client class specified in buffer limit configuration."),
            };
            let refused =
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.";
            let hard = memory_size(group[1]).ok_or(refused)?;
            let soft = memory_size(group[2]).ok_or(refused)?;
            let seconds = seconds(group[3]).ok_or(refused)?;
            next.0[class] = OutputLimit {
                hard,
                soft,
                soft_for: Duration::from_secs(seconds),
            };
        }
        Ok(next)
    }
}

impl std::fmt::Display for OutputLimits {
    /// As `CONFIG GET client-output-buffer-limit` prints it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (name, limit)) in CLASSES.iter().zip(&self.0).enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(
                f,
                "{name} {} {} {}",
                limit.hard,
                limit.soft,
                limit.soft_for.as_secs()
            )?;
        }
        Ok(())
    }
}

/// Redis's `memtoull`: digits, then an optional unit (`b`, `k`, `kb`, `m`, `mb`, `g`,
/// `gb`, any case); the product wraps as C's unsigned arithmetic does.
fn memory_size(text: &str) -> Option<u64> {
    let digits_end = text
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let multiplier: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let value = if digits.is_empty() {
        0
    } else {
        digits.parse::<u64>().ok()?
    };
    Some(value.wrapping_mul(multiplier))
}

/// `strtoll` used whole: optional white space and sign, then digits; not negative.
fn seconds(text: &str) -> Option<u64> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Some(0);
    }
    let value: i64 = trimmed.strip_prefix('+').unwrap_or(trimmed).parse().ok()?;
    u64::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_read_and_print_as_redis_does() {
        let defaults = OutputLimits::default();
        assert_eq!(
            defaults.to_string(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"
        );
        let changed = defaults.updated("pubsub 1mb 512kb 10").unwrap();
        assert_eq!(
            changed.to_string(),
            "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 10"
        );
        assert_eq!(
            defaults
                .updated("normal 1 1 1 replica 2 2 2 slave 3 3 3")
                .unwrap()
                .to_string(),
            "normal 1 1 1 slave 3 3 3 pubsub 33554432 8388608 60"
        );
        assert_eq!(
            defaults.updated("pubsub 1mb 512kb"),
            Err("Wrong number of arguments in buffer limit configuration.")
        );
        assert_eq!(
            defaults.updated("master 1 1 1"),
            Err("Invalid client class specified in buffer limit configuration.")
        );
        for bad in [
            "pubsub 1x 1 1",
            "pubsub 1 1 -1",
            "pubsub -1 1 1",
            "pubsub 1 1 1s",
        ] {
            assert_eq!(
                defaults.updated(bad),
                Err("Error in hard, soft or soft_seconds setting in buffer limit configuration."),
                "{bad}"
            );
        }
        assert_eq!(memory_size("2G"), Some(2_000_000_000));
        assert_eq!(memory_size("1Kb"), Some(1024));
    }
}
