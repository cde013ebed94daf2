//! How a case says what it found: [`CaseResult`], and the `check!` macros.

use lock_core::{Error, LockError, ReleaseError};

/// A case that ran to the end: it passed, or it demonstrated the failure it exists to show
/// (a seed's broken algorithm doing the broken thing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Everything held.
    Passed,
    /// The known-broken behaviour happened, as expected; the text says what was seen.
    ExpectedFailure(String),
}

/// Why a case failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure(pub String);

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure(format!("backend error ({:?}): {e}", e.kind()))
    }
}

impl From<LockError> for Failure {
    fn from(e: LockError) -> Self {
        Failure(format!("lock error: {e}"))
    }
}

impl<G> From<ReleaseError<G>> for Failure {
    fn from(e: ReleaseError<G>) -> Self {
        Failure(format!("release failed: {}", e.error()))
    }
}

impl From<String> for Failure {
    fn from(s: String) -> Self {
        Failure(s)
    }
}

/// What every case returns.
pub type CaseResult = Result<Verdict, Failure>;

/// Fails the case with a formatted message unless the condition holds.
#[macro_export]
macro_rules! check {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err($crate::Failure(format!($($msg)+)));
        }
    };
}

/// Fails the case unless `left == right`, showing both and what was being checked.
#[macro_export]
macro_rules! check_eq {
    ($left:expr, $right:expr, $($what:tt)+) => {{
        let (left, right) = (&$left, &$right);
        if left != right {
            return Err($crate::Failure(format!(
                "{}: expected {:?}, got {:?}",
                format!($($what)+),
                right,
                left
            )));
        }
    }};
}

/// A command's reply as RESP writes it, for failure messages: `:1`, `$-1`, `$2 v1`,
/// `+OK`, `-ERR …`. A backend answers in typed values; this is what a server sent for
/// them.
pub trait AsResp {
    /// The reply, on one line.
    fn as_resp(&self) -> String;
}

impl AsResp for bool {
    fn as_resp(&self) -> String {
        format!(":{}", i64::from(*self))
    }
}

impl AsResp for i64 {
    fn as_resp(&self) -> String {
        format!(":{self}")
    }
}

impl AsResp for Option<Vec<u8>> {
    fn as_resp(&self) -> String {
        match self {
            None => "$-1".into(),
            Some(bytes) => format!("${} {}", bytes.len(), String::from_utf8_lossy(bytes)),
        }
    }
}

impl AsResp for lock_core::SetReply {
    fn as_resp(&self) -> String {
        match self {
            lock_core::SetReply::Applied => "+OK".into(),
            lock_core::SetReply::NotApplied => "$-1".into(),
            lock_core::SetReply::OldValue(previous) => previous.as_resp(),
        }
    }
}

impl<T: AsResp> AsResp for Result<T, Error> {
    fn as_resp(&self) -> String {
        match self {
            Ok(reply) => reply.as_resp(),
            // Only a server's error reply is written as one; what the client library
            // or the checker said (a lost connection, a reply of the wrong shape) is not.
            Err(error) if !error.kind().is_server_reply() => {
                format!("no reply ({:?}: {})", error.kind(), error.message())
            }
            Err(error) => format!("-{}", error.message()),
        }
    }
}

/// Fails the case unless the command's reply (a `Result` from the backend) is what Redis
/// answers, written as RESP (`":1"`, `"$-1"`, `"-ERR …"`): the message names the
/// command with its arguments, the reply it got and Redis's, e.g. ``PEXPIRE k
/// 9223372036854775807` answered `:1`; Redis answers `-ERR invalid expire time in
/// 'pexpire' command``.
#[macro_export]
macro_rules! check_reply {
    ($reply:expr, $redis:expr, $($command:tt)+) => {{
        let got = $crate::AsResp::as_resp(&$reply);
        let redis: &str = $redis;
        if got != redis {
            return Err($crate::Failure(format!(
                "`{}` answered `{}`; Redis answers `{}`",
                format!($($command)+),
                got,
                redis
            )));
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_check_names_the_command_its_reply_and_redis_s() {
        fn case() -> CaseResult {
            crate::check_reply!(
                Ok::<bool, Error>(true),
                "-ERR invalid expire time in 'pexpire' command",
                "PEXPIRE {} {}",
                "k",
                i64::MAX - 1000
            );
            Ok(Verdict::Passed)
        }
        assert_eq!(
            case().unwrap_err().0,
            "`PEXPIRE k 9223372036854774807` answered `:1`; Redis answers \
             `-ERR invalid expire time in 'pexpire' command`"
        );
        assert_eq!(Some(b"v1".to_vec()).as_resp(), "$2 v1");
        assert_eq!(None::<Vec<u8>>.as_resp(), "$-1");
        assert_eq!(
            Err::<i64, Error>(Error::from_reply("ERR no such key")).as_resp(),
            "-ERR no such key"
        );
    }
}
