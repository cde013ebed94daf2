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
