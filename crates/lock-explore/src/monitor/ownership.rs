//! The ownership checker: a client that declared it holds a lock key with its token
//! (`holds`) must find the token there for as long as it is entitled to the lock: the
//! validity of its section, or, inside a section entered without one, the lease its
//! key's own TTL gave it (read when it declared the key, and again after each of its own
//! commands on the key, such as an extend).

use super::{Client, Finding};
use crate::topology::Deployment;
use crate::violation::ViolationKind;

/// A key a client declared it holds, with its token.
#[derive(Debug)]
pub(crate) struct Holding {
    pub(crate) key: Vec<u8>,
    pub(crate) token: Vec<u8>,
    /// Last seen holding the token: at which epoch, and until when (µs into the run)
    /// its TTL keeps it there at least. Nothing can change it before either moves.
    pub(crate) verified: Option<(u64, i64)>,
    /// µs into the run until which the key's own TTL keeps the token there, as last
    /// read: the entitlement of a holder inside a section without a validity.
    pub(crate) lease_until: Option<i64>,
}

/// What checking one client's holdings found.
pub(crate) struct Checked {
    /// Holdings seen holding their token, with their new mark.
    pub(crate) verified: Vec<(usize, (u64, i64))>,
    /// Holdings the holder's own command let go of (a release).
    pub(crate) let_go: Vec<usize>,
    /// Holdings whose lease the holder's own command moved (an extend).
    pub(crate) leases: Vec<(usize, i64)>,
    /// The first holding that lost its token, and how.
    pub(crate) lost: Option<Finding>,
}

/// µs into the run until which `key` keeps `token` on `deployment`, from `now_us`:
/// `None` when it does not hold it now (on Redlock's nodes: until fewer than a majority
/// hold it).
pub(crate) fn lease(deployment: &Deployment, key: &[u8], token: &[u8], now_us: i64) -> Option<i64> {
    deployment
        .holding_us(key, token)
        .map(|live| now_us.saturating_add(live))
}

/// The operation after which holdings are checked: whose, its name when it was a
/// command, and whether it wrote.
#[derive(Clone, Copy, Debug)]
pub(crate) struct After<'a> {
    pub(crate) actor: usize,
    pub(crate) command: Option<&'a str>,
    pub(crate) wrote: bool,
}

/// Checks `holder`'s holdings at `now_us`, after an operation of `actor` (`command`: its
/// name, when it was a command, and whether it wrote). A holder whose own command wrote
/// its key and took its token let go of it (a release), which is no violation; any other
/// change within its entitlement is.
pub(crate) fn check(
    deployment: &Deployment,
    clients: &[Client],
    holder: usize,
    after: After<'_>,
    epoch: u64,
    now_us: i64,
) -> Checked {
    let After {
        actor,
        command,
        wrote,
    } = after;
    let c = &clients[holder];
    let section_deadline = c.deadline();
    let mut checked = Checked {
        verified: Vec::new(),
        let_go: Vec::new(),
        leases: Vec::new(),
        lost: None,
    };
    let own_write = holder == actor && command.is_some() && wrote;
    for (i, h) in c.holding.iter().enumerate() {
        let Some(deadline) = section_deadline.or(h.lease_until) else {
            continue;
        };
        let on_its_key = own_write && c.last_key == h.key;
        if now_us >= deadline && !on_its_key {
            continue;
        }
        if !on_its_key
            && h.verified
                .is_some_and(|(at, until)| at == epoch && now_us < until)
        {
            continue;
        }
        match deployment.ownership(&h.key, &h.token) {
            Ok(live_us) => {
                // Redlock's nodes give no one expiry: checked again every time.
                let until = live_us.map_or(i64::MIN, |us| now_us.saturating_add(us));
                checked.verified.push((i, (epoch, until)));
                if on_its_key
                    && section_deadline.is_none()
                    && let Some(lease) = lease(deployment, &h.key, &h.token, now_us)
                {
                    checked.leases.push((i, lease));
                }
            }
            Err(_) if on_its_key => checked.let_go.push(i),
            Err(what) => {
                if checked.lost.is_some() || now_us >= deadline {
                    continue;
                }
                let by = match command {
                    Some(kind) if holder != actor => format!(" after client {actor}'s {kind}"),
                    _ => String::new(),
                };
                let entitled = if section_deadline.is_some() {
                    "is valid for"
                } else {
                    "its key's TTL gives it"
                };
                let detail = format!(
                    "client {holder} holds {:?} with token {:?} and {entitled} {:.3} ms more, but the key {what}{by}",
                    String::from_utf8_lossy(&h.key),
                    String::from_utf8_lossy(&h.token[..h.token.len().min(40)]),
                    (deadline - now_us) as f64 / 1000.0,
                );
                let clients = if holder == actor {
                    vec![holder]
                } else {
                    vec![holder, actor]
                };
                checked.lost = Some(Finding {
                    kind: ViolationKind::LostOwnership,
                    detail,
                    clients,
                    margin_us: Some(deadline - now_us),
                });
            }
        }
    }
    checked
}
