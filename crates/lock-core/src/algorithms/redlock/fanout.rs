//! One command sent to every node at once, bounded by the per-node timeout (one
//! deadline, as they all start together), and the replies counted as they arrive.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

use crate::lock::run_in_background;
use crate::{Clock, Error, ErrorKind, LockError};

/// What one node answered.
#[derive(Debug)]
pub(super) enum NodeReply {
    /// The node did what was asked (took, extended or deleted our key).
    Yes,
    /// The node refused: someone else's key is there, or ours is gone.
    No,
    /// The node failed or did not answer in time; the command may or may not have run.
    Failed(Error),
}

/// The replies of one fan-out, by node (`None`: not waited for, once the outcome was
/// certain).
#[derive(Debug)]
pub(super) struct Tally {
    pub(super) replies: Vec<Option<NodeReply>>,
    pub(super) quorum: usize,
}

impl Tally {
    pub(super) fn yes(&self) -> usize {
        self.count(|r| matches!(r, NodeReply::Yes))
    }

    pub(super) fn no(&self) -> usize {
        self.count(|r| matches!(r, NodeReply::No))
    }

    fn count(&self, f: impl Fn(&NodeReply) -> bool) -> usize {
        self.replies.iter().flatten().filter(|r| f(r)).count()
    }

    /// The nodes that answered yes.
    pub(super) fn yes_nodes(&self) -> Vec<usize> {
        self.nodes_where(|r| matches!(r, NodeReply::Yes))
    }

    /// The nodes that answered no.
    pub(super) fn no_nodes(&self) -> Vec<usize> {
        self.nodes_where(|r| matches!(r, NodeReply::No))
    }

    fn nodes_where(&self, f: impl Fn(&NodeReply) -> bool) -> Vec<usize> {
        let matching = |r: &Option<NodeReply>| r.as_ref().is_some_and(&f);
        (0..self.replies.len())
            .filter(|&i| matching(&self.replies[i]))
            .collect()
    }

    /// Whether the quorum is reached, or out of reach whatever the others answer.
    pub(super) fn settled(&self) -> bool {
        let nodes = self.replies.len();
        let failed = self.count(|r| matches!(r, NodeReply::Failed(_)));
        self.yes() >= self.quorum || self.no() + failed > nodes - self.quorum
    }

    /// Whether the refusals alone put the quorum out of reach (rather than failures).
    pub(super) fn refused(&self) -> bool {
        self.no() > self.replies.len() - self.quorum
    }

    /// Whether an acquire that failed was refused (someone else holds the lock) rather
    /// than cut short by failures: some node refused, and no fewer than failed. Fail-fast
    /// stops counting early, so this does not wait for refusals alone to decide.
    pub(super) fn mostly_refused(&self) -> bool {
        let failed = self.count(|r| matches!(r, NodeReply::Failed(_)));
        self.no() > 0 && self.no() >= failed
    }

    /// [`LockError::NoQuorum`] for `key`, carrying the last failure.
    pub(super) fn no_quorum(&self, key: &[u8]) -> LockError {
        let last_error = self
            .replies
            .iter()
            .flatten()
            .filter_map(|r| match r {
                NodeReply::Failed(e) => Some(e.clone()),
                _ => None,
            })
            .next_back()
            .unwrap_or_else(|| Error::new(ErrorKind::Timeout, "nodes did not answer"));
        LockError::NoQuorum {
            key: crate::outcome::lossy(key),
            granted: self.yes(),
            required: self.quorum,
            nodes: self.replies.len(),
            last_error,
        }
    }
}

/// One node's reply, classified.
async fn classified(
    node: usize,
    reply: impl Future<Output = Result<bool, LockError>>,
) -> (usize, NodeReply) {
    let reply = match reply.await {
        Ok(true) => NodeReply::Yes,
        Ok(false) => NodeReply::No,
        Err(LockError::Backend(e)) => NodeReply::Failed(e),
        Err(other) => NodeReply::Failed(Error::new(ErrorKind::Script, other.to_string())),
    };
    (node, reply)
}

/// How a fan-out reaches the nodes: how many, the quorum, the per-node timeout, and the
/// clock it is measured on.
pub(super) struct Fan<'a> {
    pub(super) nodes: usize,
    pub(super) quorum: usize,
    pub(super) timeout: Duration,
    pub(super) clock: &'a Clock,
}

impl Fan<'_> {
    /// Counts replies as they arrive, until all are in, or (with `fail_fast`) the tally
    /// is settled, or the per-node timeout passes: every command starts at once, so one
    /// deadline bounds them all, and the nodes that have not answered by then failed.
    async fn count<S>(&self, pending: &mut S, fail_fast: bool) -> Tally
    where
        S: futures_util::Stream<Item = (usize, NodeReply)> + Unpin,
    {
        let mut tally = Tally {
            replies: (0..self.nodes).map(|_| None).collect(),
            quorum: self.quorum,
        };
        let deadline = self.clock.sleep(self.timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                biased;
                next = pending.next() => {
                    let Some((node, reply)) = next else { break };
                    tally.replies[node] = Some(reply);
                    if fail_fast && tally.settled() {
                        break;
                    }
                }
                () = &mut deadline => {
                    for (node, reply) in tally.replies.iter_mut().enumerate() {
                        if reply.is_none() {
                            *reply = Some(NodeReply::Failed(Error::new(
                                ErrorKind::Timeout,
                                format!("node {node} did not answer within {:?}", self.timeout),
                            )));
                        }
                    }
                    break;
                }
            }
        }
        tally
    }

    /// Runs `command(node_index)` on every node in parallel, bounded by the per-node
    /// timeout. With `fail_fast`, stops waiting once the tally is
    /// [settled](Tally::settled); the commands not waited for are dropped (a server may
    /// still run what it received).
    pub(super) async fn run<F, Fut>(&self, fail_fast: bool, command: F) -> Tally
    where
        F: Fn(usize) -> Fut,
        Fut: Future<Output = Result<bool, LockError>>,
    {
        let mut pending: FuturesUnordered<_> = (0..self.nodes)
            .map(|node| classified(node, command(node)))
            .collect();
        self.count(&mut pending, fail_fast).await
    }

    /// Like [`Fan::run`] with fail-fast, but the commands not waited for run on in the
    /// background, for up to the per-node timeout: a release returns once a quorum has
    /// answered and still reaches every node.
    pub(super) async fn run_detached<F, Fut>(&self, command: F) -> Tally
    where
        F: Fn(usize) -> Fut,
        Fut: Future<Output = Result<bool, LockError>> + Send + 'static,
    {
        let mut pending: FuturesUnordered<_> = (0..self.nodes)
            .map(|node| classified(node, command(node)))
            .collect();
        let tally = self.count(&mut pending, true).await;
        if !pending.is_empty() && tally.replies.iter().any(Option::is_none) {
            let (clock, timeout) = (self.clock.clone(), self.timeout);
            run_in_background(async move {
                let drain = async { while pending.next().await.is_some() {} };
                tokio::select! {
                    biased;
                    () = drain => {}
                    () = clock.sleep(timeout) => {}
                }
            });
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(replies: &[Option<bool>], quorum: usize) -> Tally {
        let reply = |r: &Option<bool>| match r {
            Some(true) => Some(NodeReply::Yes),
            Some(false) => Some(NodeReply::No),
            None => Some(NodeReply::Failed(Error::new(ErrorKind::Connection, "down"))),
        };
        Tally {
            replies: replies.iter().map(reply).collect(),
            quorum,
        }
    }

    #[test]
    fn settled_when_the_quorum_is_reached_or_out_of_reach() {
        let (yes, no, down) = (Some(true), Some(false), None);
        let t = tally(&[yes, yes, no], 2);
        assert!(t.settled() && !t.refused());
        // Two of five down: the other three can still make the quorum.
        let mut t = tally(&[yes, down, down, yes, yes], 3);
        assert!(t.settled() && t.yes() == 3);
        t.replies[4] = None;
        assert!(!t.settled());
        // Three of five down: out of reach, by failures and not by refusals.
        let t = tally(&[yes, down, down, down, yes], 3);
        assert!(t.settled() && !t.refused());
        assert!(matches!(
            t.no_quorum(b"k"),
            LockError::NoQuorum {
                granted: 2,
                required: 3,
                nodes: 5,
                ..
            }
        ));
        let t = tally(&[no, no, no, yes, yes], 3);
        assert!(t.settled() && t.refused());
        assert_eq!(t.yes_nodes(), vec![3, 4]);
        // Cut short by fail-fast: two refusals and one failure settle it; refused.
        let mut t = tally(&[no, down, no, yes, yes], 3);
        t.replies[3] = None;
        t.replies[4] = None;
        assert!(t.settled() && !t.refused() && t.mostly_refused());
    }
}
