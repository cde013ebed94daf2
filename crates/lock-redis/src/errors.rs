//! redis-rs errors as nxlock [`Error`]s: server replies keep their exact text, and
//! connection loss and timeouts are their own kinds.

use std::time::Duration;

use lock_core::{Error, ErrorKind};
use redis::RedisError;

pub(crate) fn from_redis(e: RedisError) -> Error {
    if e.is_timeout() {
        return Error::new(ErrorKind::Timeout, e.to_string());
    }
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
        return Error::new(ErrorKind::Connection, e.to_string());
    }
    if matches!(
        e.kind(),
        redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType
    ) {
        // The bytes were not a RESP reply redis-rs can read, or not of the shape asked.
        return Error::new(
            ErrorKind::UnexpectedReply,
            format!("the reply could not be read as Redis's: {e}"),
        );
    }
    match (e.code(), e.detail()) {
        // Redis sends "-CODE detail"; redis-rs splits it, we put it back together.
        (Some(code), Some(detail)) => Error::from_reply(format!("{code} {detail}")),
        (Some(code), None) => Error::from_reply(code),
        _ => Error::new(ErrorKind::Response, e.to_string()),
    }
}

pub(crate) fn timed_out(after: Duration) -> Error {
    Error::new(ErrorKind::Timeout, format!("no reply within {after:?}"))
}
