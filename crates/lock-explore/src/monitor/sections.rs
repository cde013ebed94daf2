//! The exclusion checker: who is inside which resource's critical section, until when
//! its lock promised it is alone, and what it means when a second client comes in.
//!
//! The validity boundary is exclusive: a holder whose validity ends at `t` is inside
//! within it at every instant before `t`, and outside it from `t` on. A holder handed a
//! lock with 0 ms left is outside from the moment it enters.

use super::{Client, Finding};
use crate::violation::ViolationKind;

/// A critical section a client is inside.
#[derive(Debug)]
pub(crate) struct Inside {
    pub(crate) resource: String,
    pub(crate) fence: Option<i64>,
    /// µs into the run until which the lock promised the client is alone.
    pub(crate) deadline_us: Option<i64>,
}

/// How a client came to claim a resource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Claim {
    /// It entered.
    Enter,
    /// It said its lock was extended.
    Extend,
}

/// Whether a validity ending at `deadline_us` is over at `at_us`.
pub(crate) fn expired(deadline_us: Option<i64>, at_us: i64) -> bool {
    deadline_us.is_some_and(|d| at_us >= d)
}

/// `client` claims `resource`'s unfenced section at `at_us`, alone until `deadline_us`:
/// what another client inside it then means. Another client inside within its validity,
/// while this one is within its own, is the lock's mutual-exclusion violation; either
/// one past its validity is what every TTL lock does (`expired-holder`).
pub(crate) fn overlap(
    clients: &[Client],
    client: usize,
    resource: &str,
    deadline_us: Option<i64>,
    at_us: i64,
    claim: Claim,
) -> Option<Finding> {
    let (other, other_deadline) = clients.iter().enumerate().find_map(|(i, c)| {
        let inside = c
            .inside
            .iter()
            .find(|s| s.resource == resource && s.fence.is_none())?;
        (i != client).then_some((i, inside.deadline_us))
    })?;
    let ms = |us: i64| us as f64 / 1000.0;
    let came = match claim {
        Claim::Enter => format!("client {client} entered {resource:?}"),
        Claim::Extend => format!("client {client} extended its lock on {resource:?}"),
    };
    if expired(other_deadline, at_us) {
        let past = at_us - other_deadline.unwrap_or(at_us);
        return Some(Finding {
            kind: ViolationKind::ExpiredHolder,
            detail: format!(
                "{came} while client {other} was still inside, {:.3} ms past the validity its lock promised",
                ms(past)
            ),
            clients: vec![other, client],
            margin_us: None,
        });
    }
    if expired(deadline_us, at_us) {
        let past = at_us - deadline_us.unwrap_or(at_us);
        // A lock handed over with no validity left: the acquire returned a lock that had
        // already run out, and the client went in anyway.
        let detail = if claim == Claim::Enter {
            let when = if past == 0 {
                "0 ms left".to_owned()
            } else {
                format!("run out {:.3} ms before", ms(past))
            };
            format!(
                "{came} with no validity left (its lock had {when}), while client {other} was inside"
            )
        } else {
            format!(
                "{came} {:.3} ms past the validity its lock promised, while client {other} was inside",
                ms(past)
            )
        };
        return Some(Finding {
            kind: ViolationKind::ExpiredHolder,
            detail,
            clients: vec![other, client],
            margin_us: None,
        });
    }
    let valid = match other_deadline {
        Some(d) => format!(" within its validity ({:.3} ms left)", ms(d - at_us)),
        None => String::new(),
    };
    // Both were within their validities: the nearer end is how close the verdict was.
    let margin_us = [other_deadline, deadline_us]
        .into_iter()
        .flatten()
        .map(|d| d - at_us)
        .min();
    Some(Finding {
        kind: ViolationKind::MutualExclusion,
        detail: format!("{came} while client {other} was inside{valid}"),
        clients: vec![other, client],
        margin_us,
    })
}
