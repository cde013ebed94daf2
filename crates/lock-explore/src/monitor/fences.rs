//! The fence checker: one fence must never be handed to two holders, and a fenced
//! resource judges each write's fence by the run's [`Fencing`]. A refused write is
//! expected of a stale holder; refused from the holder whose token is in its lock key
//! now, it means fence order disagrees with lock order.

use std::collections::HashMap;

use super::Finding;
use crate::options::Fencing;
use crate::violation::ViolationKind;

/// A write refused because the resource has accepted a newer (or equal) fence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("stale fence {fence}: the resource has accepted fence {highest}")]
pub struct StaleWrite {
    /// The fence the write carried.
    pub fence: i64,
    /// The highest the resource accepted.
    pub highest: i64,
}

#[derive(Debug, Default)]
struct Resource {
    /// Every fence a client entered with, and the first client that did.
    entered: HashMap<i64, usize>,
    /// Highest fence the resource accepted a write with, and from whom.
    highest_accepted: Option<(i64, usize)>,
}

/// The run's fenced resources.
#[derive(Debug)]
pub(crate) struct Fences {
    fencing: Fencing,
    resources: HashMap<String, Resource>,
}

/// What a write's fence met.
pub(crate) struct Judged {
    pub(crate) accepted: bool,
    /// The highest fence accepted before, and from whom.
    pub(crate) previous: Option<(i64, usize)>,
    /// Accepted though not newer than another client's accepted fence.
    pub(crate) stale_accepted: Option<Finding>,
}

impl Fences {
    pub(crate) fn new(fencing: Fencing) -> Self {
        Fences {
            fencing,
            resources: HashMap::new(),
        }
    }

    /// `client` enters `resource` with `fence`. A paused holder may enter late with an
    /// old fence (the resource refuses its writes); what must never happen is one fence
    /// for two holders.
    pub(crate) fn entered(&mut self, client: usize, resource: &str, fence: i64) -> Option<Finding> {
        let entry = self.resources.entry(resource.to_owned()).or_default();
        match entry.entered.get(&fence) {
            Some(&first) if first != client => Some(Finding {
                kind: ViolationKind::FenceWentBack,
                detail: format!(
                    "client {client} entered {resource:?} with fence {fence}, which client {first} had entered with: the fence counter went back"
                ),
                clients: vec![first, client],
                margin_us: None,
            }),
            Some(_) => None,
            None => {
                entry.entered.insert(fence, client);
                None
            }
        }
    }

    /// `client` writes `resource` with `fence`.
    pub(crate) fn write(&mut self, client: usize, resource: &str, fence: i64) -> Judged {
        let entry = self.resources.entry(resource.to_owned()).or_default();
        let previous = entry.highest_accepted;
        let accepted = match (previous, self.fencing) {
            (None, _) => true,
            (Some((highest, _)), Fencing::Strict) => fence > highest,
            (Some((highest, _)), Fencing::Lenient) => fence >= highest,
            (Some(_), Fencing::None) => true,
        };
        if accepted && previous.is_none_or(|(highest, _)| fence > highest) {
            entry.highest_accepted = Some((fence, client));
        }
        let stale_accepted = previous.and_then(|(highest, by)| {
            (accepted && fence <= highest && by != client).then(|| Finding {
                kind: ViolationKind::StaleFence,
                detail: format!(
                    "{resource:?} accepted fence {fence} from client {client} after accepting fence {highest} from client {by}"
                ),
                clients: vec![by, client],
                margin_us: None,
            })
        });
        Judged {
            accepted,
            previous,
            stale_accepted,
        }
    }
}
