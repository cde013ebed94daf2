//! [`WireObserver`]: serve's [`Observer`] for one node of one run. It hands each tagged
//! command's fate to the run's steps, and each command and marker to its checkers.

use std::sync::Arc;
use std::time::Duration;

use lock_explore::ExternalRun;
use lock_server::{After, Before, Marker, Observer, Validity};
use parking_lot::Mutex;

use crate::primary_endpoint::Primaries;
use crate::starts::Starts;

/// One node's observer: client `n` is the process behind `Server::listen_as(n)`.
#[derive(Debug)]
pub(crate) struct WireObserver {
    run: Arc<ExternalRun>,
    /// The node served (`None`: the run's only server).
    node: Option<usize>,
    /// Taken off every validity a client states as `PX`: the time its marker may have
    /// spent between the client and the server, which makes the server's count start
    /// late. A `MONOTONIC` deadline needs none.
    slack: Duration,
    /// When each client sent its first command.
    starts: Arc<Starts>,
    /// When each client's command in flight left the hold, µs into the run.
    sent_us: Mutex<Vec<i64>>,
    /// Where the primaries are published after every operation (a step it anchors may
    /// fail a set over), for the clients' endpoints to follow.
    primaries: Option<Arc<Primaries>>,
}

impl WireObserver {
    pub(crate) fn new(
        run: Arc<ExternalRun>,
        node: Option<usize>,
        clients: usize,
        slack: Duration,
        starts: Arc<Starts>,
    ) -> Self {
        Self {
            run,
            node,
            slack,
            starts,
            sent_us: Mutex::new(vec![0; clients]),
            primaries: None,
        }
    }

    /// µs the lock is valid for from now, as `validity` states it.
    fn valid_for_us(&self, validity: Validity) -> i64 {
        match validity {
            Validity::Px(ms) => {
                self.starts.relative_validity();
                let slack = i64::try_from(self.slack.as_micros()).unwrap_or(i64::MAX);
                ms.saturating_mul(1000).saturating_sub(slack)
            }
            Validity::MonotonicUs(deadline) => deadline.saturating_sub(monotonic_us()),
        }
    }

    /// Publishes the primaries to `primaries` after each operation.
    pub(crate) fn publishing(mut self, primaries: Arc<Primaries>) -> Self {
        self.primaries = Some(primaries);
        self
    }

    /// After an operation: a failover it set off moves the clients' endpoints.
    fn publish(&self) {
        if let Some(primaries) = &self.primaries {
            primaries.publish(&self.run);
        }
    }

    /// What the node does to a command that reaches it now, if it does not run it. A
    /// black-holed node swallows it before the client's faults apply (nothing of it
    /// reaches the node); a primary that failed over closes the connection, which died
    /// with it, and the client's next connection reaches the new primary.
    fn node_lost(&self) -> Option<Before> {
        let node = self.node?;
        if let Some(wait) = self.run.black_holed(node) {
            return Some(Before::Unanswered(wait));
        }
        (!self.run.serves(node)).then_some(Before::Refuse)
    }
}

fn is_marker(args: &[Vec<u8>]) -> bool {
    args[0].len() > 7 && args[0][..7].eq_ignore_ascii_case(b"nxlock.")
}

impl Observer for WireObserver {
    fn before(&self, client: usize, args: &[Vec<u8>]) -> Before {
        {
            let mut sent = self.sent_us.lock();
            let Some(slot) = sent.get_mut(client) else {
                return Before::Run;
            };
            *slot = self.run.now_us();
        }
        self.starts.sent(client);
        if is_marker(args) {
            let fate = self.run.before_marker(client);
            return if fate.hold > Duration::ZERO {
                Before::Hold(fate.hold)
            } else {
                Before::Run
            };
        }
        if let Some(lost) = self.node_lost() {
            return lost;
        }
        let fate = self.run.before_command(client);
        if fate.refuse {
            Before::Refuse
        } else if fate.hold > Duration::ZERO {
            Before::Hold(fate.hold)
        } else {
            Before::Run
        }
    }

    fn held(&self, _client: usize, args: &[Vec<u8>]) -> Before {
        // A command held past a failover or into a black hole meets the node as it is
        // when it arrives.
        if is_marker(args) {
            return Before::Run;
        }
        self.node_lost().unwrap_or(Before::Run)
    }

    fn after(&self, client: usize, args: &[Vec<u8>], reply: &[u8]) -> After {
        let Some(sent_us) = self.sent_us.lock().get(client).copied() else {
            return After::Send;
        };
        if is_marker(args) {
            return After::Send;
        }
        let fate = self.run.reply_fate(client);
        let shown = if fate.lose {
            "(reply lost)".to_owned()
        } else {
            brief(reply)
        };
        self.run.command(client, self.node, args, sent_us, shown);
        self.publish();
        if fate.lose {
            After::Lose
        } else if fate.late > Duration::ZERO {
            After::Late(fate.late)
        } else {
            After::Send
        }
    }

    fn marker(&self, client: usize, marker: Marker) -> Result<(), String> {
        if client >= self.sent_us.lock().len() {
            // Not a client of this run: checked and ignored, as on a plain server.
            return Ok(());
        }
        let mut answer = Ok(());
        match marker {
            Marker::Enter {
                resource,
                validity,
                fence,
            } => {
                let valid_for = validity.map(|v| self.valid_for_us(v));
                self.run.enter(client, &resource, fence, valid_for);
            }
            Marker::Extend { resource, validity } => {
                let valid_for = self.valid_for_us(validity);
                self.run.extend(client, &resource, valid_for);
            }
            Marker::Permanent { prefix } => self.run.permanent(client, &prefix),
            Marker::Counter { counter, key } => self.run.counter_key(client, &counter, &key),
            Marker::Exit { resource } => self.run.exit(client, &resource),
            Marker::Holds { key, token } => self.run.holds(client, &key, &token),
            Marker::Write { resource, fence } => {
                answer = self
                    .run
                    .write(client, &resource, fence)
                    .map_err(|stale| format!("STALE {stale}"));
            }
            Marker::Increment { counter } => self.run.increment(client, &counter),
            Marker::Done => self.run.counted(client, true),
            Marker::Failed => self.run.counted(client, false),
        }
        self.publish();
        answer
    }
}

/// The host's monotonic clock (`CLOCK_MONOTONIC`), µs: what a `MONOTONIC` deadline is
/// read against.
pub(crate) fn monotonic_us() -> i64 {
    #[cfg(unix)]
    {
        if let Ok(now) = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC) {
            return now.tv_sec() * 1_000_000 + now.tv_nsec() / 1000;
        }
    }
    // Without a monotonic clock to share, a deadline reads as none left: conservative.
    i64::MAX
}

/// A reply as the trace shows it: RESP's first line, without its type byte's noise.
fn brief(reply: &[u8]) -> String {
    let text = String::from_utf8_lossy(reply);
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    match first.as_bytes().first() {
        Some(b'+') => first[1..].to_owned(),
        Some(b'-') => format!("(error) {}", &first[1..]),
        Some(b':') => format!("(integer) {}", &first[1..]),
        Some(b'$') if first == "$-1" => "(nil)".to_owned(),
        Some(b'$') => format!("\"{}\"", lines.next().unwrap_or("")),
        Some(b'_') => "(nil)".to_owned(),
        _ => first.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_read_as_the_trace_shows_them() {
        assert_eq!(brief(b"+OK\r\n"), "OK");
        assert_eq!(brief(b"$-1\r\n"), "(nil)");
        assert_eq!(brief(b"$3\r\nabc\r\n"), "\"abc\"");
        assert_eq!(brief(b":1\r\n"), "(integer) 1");
        assert_eq!(brief(b"-ERR no\r\n"), "(error) ERR no");
    }

    #[test]
    fn the_monotonic_clock_moves_with_real_time() {
        let (before, started) = (monotonic_us(), std::time::Instant::now());
        std::thread::sleep(Duration::from_millis(20));
        let (after, elapsed) = (monotonic_us(), started.elapsed());
        let moved = Duration::from_micros(u64::try_from(after - before).unwrap());
        assert!(moved >= Duration::from_millis(20), "{moved:?}");
        assert!(
            moved <= elapsed + Duration::from_millis(1),
            "{moved:?} {elapsed:?}"
        );
    }

    #[test]
    fn markers_are_told_by_their_prefix() {
        assert!(is_marker(&[b"NXLOCK.ENTER".to_vec()]));
        assert!(is_marker(&[b"nxlock.done".to_vec()]));
        assert!(!is_marker(&[b"SET".to_vec()]));
        assert!(!is_marker(&[b"nxlock.".to_vec()]));
    }
}
