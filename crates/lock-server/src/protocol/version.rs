//! The Redis version whose behaviour the server matches.

/// The version `INFO`, `HELLO` and a script's `redis.REDIS_VERSION` report.
pub const REDIS_VERSION: &str = "7.0.15";

/// `redis.REDIS_VERSION_NUM` in scripts: 0x00MMmmpp.
pub(crate) const REDIS_VERSION_NUM: i64 = 0x00_07_00_0f;
