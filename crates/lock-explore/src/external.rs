//! [`ExternalRun`]: one run whose clients are not futures in this process but programs
//! of their own (in any language), reached through a server that reports each of their
//! commands and markers here. The deployment, the steps and the checkers are the
//! in-process explorer's; only the driving is the caller's.

use std::sync::Arc;
use std::time::Duration;

use lock_core::Clock;
use lock_memory::{MemoryBackend, MemoryReplicaSet};
use parking_lot::Mutex;

use crate::monitor::{Monitor, StaleWrite, Validity};
use crate::options::Options;
use crate::schedule::Schedule;
use crate::step::{Step, When};
use crate::topology::{Deployment, Recovery, cluster_sets};
use crate::trace::{Trace, What};
use crate::violation::{Violation, ViolationKind};

/// What happens to a client's command before it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandFate {
    /// How long it waits first: a pause between two of the client's commands, and the
    /// latency of this one.
    pub hold: Duration,
    /// The connection closes instead: the command never runs.
    pub refuse: bool,
}

/// What happens to a command's reply once it ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReplyFate {
    /// How much later it is sent.
    pub late: Duration,
    /// The connection closes without it (a lost reply, a connection killed mid-command).
    pub lose: bool,
}

/// A run of clients outside this process: the caller serves each of
/// [`ExternalRun::nodes`] to them (each client told apart by its own port), asks each
/// command's fate before and after it runs, passes on what they say they do (enter,
/// exit, hold a key, write with a fence, count), ends timed node faults when
/// [`ExternalRun::recover_due`] says, and collects the verdict with
/// [`ExternalRun::finish`].
///
/// Steps are placed after a client's operation ([`When::After`], counted over its
/// commands and markers alike, or [`When::AfterNext`], by name); steps placed at a time
/// are not driven here.
#[derive(Debug)]
pub struct ExternalRun {
    monitor: Arc<Monitor>,
    /// Each client's increment in flight (`NXLOCK.INCR` until `DONE` or `FAILED`).
    increments: Mutex<Vec<Option<String>>>,
    /// The replicated sets whose nodes stand behind one address per client: the
    /// replicated set, or each cluster shard, in order. Fixed for the run.
    groups: Vec<PrimaryGroup>,
}

/// One replicated set among [`ExternalRun::nodes`].
#[derive(Debug)]
struct PrimaryGroup {
    set: MemoryReplicaSet,
    /// The index of its node 0 among the run's nodes; the others follow.
    first: usize,
}

impl PrimaryGroup {
    fn nodes(&self) -> std::ops::Range<usize> {
        self.first..self.first + self.set.len()
    }
}

impl ExternalRun {
    /// A fresh deployment of `options.topology` on `clock` for `options.clients`
    /// clients, with `steps` to apply as their anchors come. Real processes sleep in
    /// real time, so `clock` is usually [`Clock::system`]. Every topology is served: one
    /// server; Redlock's nodes, each on its own; a replicated set, each node served and
    /// the clients reaching the primary through one address each; a cluster, each
    /// shard's nodes likewise, behind one address per client and shard.
    pub fn new(options: &Options, schedule: &Schedule, clock: Clock) -> Self {
        let steps: Vec<Step> = schedule
            .steps
            .iter()
            .filter(|s| !matches!(s.when, When::At { .. }))
            .cloned()
            .collect();
        let deployment = Deployment::new(options.topology, &clock);
        let sets: Vec<MemoryReplicaSet> = match &deployment {
            Deployment::Replicated(set) => vec![set.clone()],
            Deployment::Cluster(cluster) => cluster_sets(cluster).cloned().collect(),
            _ => Vec::new(),
        };
        let mut first = 0;
        let groups = sets
            .into_iter()
            .map(|set| {
                let group = PrimaryGroup { first, set };
                first += group.set.len();
                group
            })
            .collect();
        let monitor = Monitor::new(
            clock,
            deployment,
            schedule.clients,
            &steps,
            options,
            true,
            schedule.token_seed,
        );
        Self {
            monitor: Arc::new(monitor),
            increments: Mutex::new(vec![None; schedule.clients]),
            groups,
        }
    }

    /// Each node's database, in order: serve each on addresses of its own. A Redlock
    /// node that dies fails every command with a refused connection until it restarts.
    /// A replicated set's nodes, and each cluster shard's in turn, are served behind one
    /// address per client (and shard), which reaches the node that is primary
    /// ([`ExternalRun::primaries`]).
    pub fn nodes(&self) -> Vec<MemoryBackend> {
        match &self.monitor.deployment {
            Deployment::Redlock(nodes) => nodes.nodes(),
            Deployment::Replicated(_) | Deployment::Cluster(_) => self
                .groups
                .iter()
                .flat_map(|g| (0..g.set.len()).map(|i| g.set.node_as_is(i)))
                .collect(),
            deployment => deployment.single().into_iter().collect(),
        }
    }

    /// The nodes behind each primary's address, by index into [`ExternalRun::nodes`]: the
    /// replicated set's, or each cluster shard's; none on other topologies.
    pub fn primary_groups(&self) -> Vec<Vec<usize>> {
        self.groups.iter().map(|g| g.nodes().collect()).collect()
    }

    /// The node that is primary now in each of [`ExternalRun::primary_groups`] (`None`
    /// while a group has none): a client's address for the group reaches it, and a
    /// failover moves it.
    pub fn primaries(&self) -> Vec<Option<usize>> {
        self.groups
            .iter()
            .map(|g| g.set.primary().map(|i| g.first + i))
            .collect()
    }

    /// The replicated set `node` belongs to, if any (its server counts the set's
    /// replicas for `WAIT`).
    pub fn replica_set_of(&self, node: usize) -> Option<MemoryReplicaSet> {
        self.group_of(node).map(|g| g.set.clone())
    }

    /// On a cluster, the shard (the index into [`ExternalRun::primary_groups`]) that serves
    /// `slot` now: slots migrate between shards during a run.
    pub fn slot_owner(&self, slot: u16) -> Option<usize> {
        match &self.monitor.deployment {
            Deployment::Cluster(cluster) => Some(cluster.shard_of(slot)),
            _ => None,
        }
    }

    /// Whether a command that reaches `node` runs there: not on a replicated set's node
    /// (or a shard's) that is no longer primary (it crashed, or rejoined as a replica),
    /// whose clients' connections died with the failover.
    pub fn serves(&self, node: usize) -> bool {
        self.group_of(node)
            .is_none_or(|g| g.set.primary().map(|i| g.first + i) == Some(node))
    }

    /// The group `node` stands in, if any.
    fn group_of(&self, node: usize) -> Option<&PrimaryGroup> {
        self.groups.iter().find(|g| g.nodes().contains(&node))
    }

    /// How much longer `node` is black-holed: a command sent to it now is never
    /// answered (the client's timeout ends it, and it never runs). `None` when it answers.
    pub fn black_holed(&self, node: usize) -> Option<Duration> {
        let now = self.monitor.now_us();
        self.monitor
            .pending_recoveries()
            .into_iter()
            .filter(|(_, recovery)| *recovery == Recovery::Heal { node })
            .map(|(due, _)| Duration::from_micros(u64::try_from(due - now).unwrap_or(0)))
            .max()
    }

    /// Ends the timed node faults that are due (a dead node restarts, a black hole
    /// heals): how long until the next one is, if any is left.
    pub fn recover_due(&self) -> Option<Duration> {
        self.monitor.recover_due();
        let next = self.monitor.next_recovery()?;
        let wait = next - self.monitor.now_us();
        Some(Duration::from_micros(u64::try_from(wait).unwrap_or(0)))
    }

    /// µs since the run began, on its clock.
    pub fn now_us(&self) -> i64 {
        self.monitor.now_us()
    }

    /// `client`'s next command arrived: what happens to it first.
    pub fn before_command(&self, client: usize) -> CommandFate {
        let before = self.monitor.before(client, true);
        CommandFate {
            hold: Duration::from_millis(before.pause_ms + before.latency_ms),
            refuse: before.refuse,
        }
    }

    /// `client` sent a marker: a pause in a section may land there (pauses between
    /// commands, and every reply fault, wait for a command).
    pub fn before_marker(&self, client: usize) -> CommandFate {
        let before = self.monitor.before(client, false);
        CommandFate {
            hold: Duration::from_millis(before.pause_ms),
            refuse: false,
        }
    }

    /// `client`'s command ran: what happens to its reply.
    pub fn reply_fate(&self, client: usize) -> ReplyFate {
        let after = self.monitor.after(client);
        ReplyFate {
            late: Duration::from_millis(after.late_ms),
            lose: after.lost || after.killed,
        }
    }

    /// `client`'s command `args` (not a marker) was sent at `sent_us` to `node` (`None`
    /// on a single server) and answered `reply` (as the trace shows it): record it,
    /// check who still owns what, count it, fire the steps it anchors.
    ///
    /// A command that took no effect is named apart where it anchors steps: `SET:nil`
    /// (a SET NX that found the lock taken), `DEL:0`, `EVAL:0`, `SET:error`. A client
    /// that retries makes a varying number of those, and exactly one that took effect,
    /// so a step anchored after its 2nd `SET` aims at its 2nd acquire in every run.
    pub fn command(
        &self,
        client: usize,
        node: Option<usize>,
        args: &[Vec<u8>],
        sent_us: i64,
        reply: String,
    ) {
        let key = first_key(args);
        self.monitor.touched(client, key);
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        let wrote = !is_read(&name);
        let kind = match no_effect(&reply) {
            Some(suffix) => format!("{name}:{suffix}"),
            None => name.clone(),
        };
        let what = What::Command {
            sent_us,
            node,
            command: describe(&name, args),
            reply,
        };
        self.monitor.finish_op(client, &kind, wrote, Some(what));
    }

    /// `client` enters `resource` (with `fence`, for a fenced section), its lock valid
    /// for `valid_for_us` more µs (unknown: `None`; 0 or less: it has run out). A client
    /// already inside `resource` re-states its section: one exit leaves it.
    pub fn enter(
        &self,
        client: usize,
        resource: &str,
        fence: Option<i64>,
        valid_for_us: Option<i64>,
    ) {
        let validity = valid_for_us.map(Validity::ForUs);
        self.monitor.enter(client, resource, fence, validity);
        self.monitor.finish_marker(client, "ENTER");
    }

    /// `client`'s lock on `resource` was extended: it is alone for `valid_for_us` more µs.
    pub fn extend(&self, client: usize, resource: &str, valid_for_us: i64) {
        self.monitor
            .extend(client, resource, Validity::ForUs(valid_for_us));
        self.monitor.finish_marker(client, "EXTEND");
    }

    /// Keys starting with `prefix` may outlive the run without a TTL (a fence counter,
    /// data the lock keeps by design).
    pub fn permanent(&self, client: usize, prefix: &str) {
        self.monitor.permanent(prefix);
        self.monitor.finish_marker(client, "PERMANENT");
    }

    /// The counter `counter` lives in the key `key`: the checker reads it there at the end.
    pub fn counter_key(&self, client: usize, counter: &str, key: &str) {
        self.monitor.counter_key(counter, key);
        self.monitor.finish_marker(client, "COUNTER");
    }

    /// `client` leaves `resource`.
    pub fn exit(&self, client: usize, resource: &str) {
        self.monitor.exit(client, resource);
        self.monitor.finish_marker(client, "EXIT");
    }

    /// `client` holds `key` with `token` until it leaves its sections.
    pub fn holds(&self, client: usize, key: &[u8], token: &[u8]) {
        self.monitor.holds(client, key, token);
        self.monitor.finish_marker(client, "HOLDS");
    }

    /// `client` writes to the fenced `resource` with `fence`: refused when stale.
    pub fn write(&self, client: usize, resource: &str, fence: i64) -> Result<(), StaleWrite> {
        let written = self.monitor.write(client, resource, fence);
        self.monitor.finish_marker(client, "WRITE");
        written
    }

    /// `client` begins an increment of `counter`; one still open at the end counts as
    /// of unknown outcome.
    pub fn increment(&self, client: usize, counter: &str) {
        let previous = self.increments.lock()[client].replace(counter.to_owned());
        if let Some(previous) = previous {
            self.monitor.counted(client, &previous, None);
        }
        self.monitor.finish_marker(client, "INCR");
    }

    /// `client`'s increment in flight was applied (`true`) or not.
    pub fn counted(&self, client: usize, applied: bool) {
        if let Some(counter) = self.increments.lock()[client].take() {
            self.monitor.counted(client, &counter, Some(applied));
        }
        self.monitor
            .finish_marker(client, if applied { "DONE" } else { "FAILED" });
    }

    /// Each client's operations so far, by name (a command's first word in capitals, or
    /// a marker's: `ENTER`, `HOLDS`, ...), in order: where steps may be anchored.
    pub fn op_logs(&self) -> Vec<Vec<(String, i64)>> {
        self.monitor.op_logs()
    }

    /// Per client, which operations so far were commands rather than markers (indices).
    pub fn commands(&self) -> Vec<Vec<u32>> {
        self.monitor.commands()
    }

    /// Per client, the abstract lock state after each operation so far
    /// ([`Outcome::op_states`](crate::Outcome::op_states)).
    pub fn op_states(&self) -> Vec<Vec<u64>> {
        self.monitor.op_states()
    }

    /// How many operations (commands and markers) each client made so far.
    pub fn ops(&self) -> Vec<u32> {
        self.monitor.ops()
    }

    /// Whether the run has a violation of the lock's own yet.
    pub fn has_violation(&self) -> bool {
        self.monitor.has_violation()
    }

    /// `client` had not ended `bound` into the run: a liveness violation.
    pub fn unfinished(&self, client: usize, bound: Duration) {
        self.monitor.report(
            ViolationKind::Liveness,
            format!(
                "client {client} had not finished {} ms into the run",
                bound.as_millis()
            ),
            vec![client],
        );
    }

    /// Per client, whether it sent a checking marker (entered, wrote a fenced
    /// resource, counted an increment).
    pub fn checked(&self) -> Vec<bool> {
        self.monitor.checked()
    }

    /// The steps whose anchor never came.
    pub fn unplaced(&self) -> Vec<Step> {
        self.monitor.unplaced()
    }

    /// The abstract lock states the run reached so far, sorted ([`Outcome::states`](crate::Outcome::states)).
    pub fn states(&self) -> Vec<u64> {
        self.monitor.take_states()
    }

    /// Every client has ended: the end-of-run checks (counters, keys left without a
    /// TTL), then the verdict and the trace.
    pub fn finish(&self) -> (Option<Violation>, Trace) {
        for (client, open) in self.increments.lock().iter_mut().enumerate() {
            if let Some(counter) = open.take() {
                self.monitor.counted(client, &counter, None);
            }
        }
        if !self.monitor.has_violation() {
            self.monitor.check_end();
        }
        (self.monitor.violation(), self.monitor.take_trace())
    }
}

/// The key a command names first, where it names one.
fn first_key(args: &[Vec<u8>]) -> Option<&[u8]> {
    let name = args.first()?;
    let scripted = [
        &b"eval"[..],
        b"evalsha",
        b"eval_ro",
        b"evalsha_ro",
        b"fcall",
        b"fcall_ro",
    ]
    .iter()
    .any(|s| name.eq_ignore_ascii_case(s));
    if scripted {
        let keys: usize = std::str::from_utf8(args.get(2)?).ok()?.parse().ok()?;
        return (keys > 0).then(|| args.get(3).map(Vec::as_slice)).flatten();
    }
    args.get(1).map(Vec::as_slice)
}

/// What a reply (as the trace shows it) says of a command that took no effect.
fn no_effect(reply: &str) -> Option<&'static str> {
    if reply == "(nil)" {
        Some("nil")
    } else if reply == "(integer) 0" {
        Some("0")
    } else if reply.starts_with("(error)") {
        Some("error")
    } else {
        None
    }
}

/// Commands that never write: a holder's key needs no new look after them.
fn is_read(name: &str) -> bool {
    matches!(
        name,
        "GET"
            | "MGET"
            | "EXISTS"
            | "PTTL"
            | "TTL"
            | "TYPE"
            | "PING"
            | "ECHO"
            | "HELLO"
            | "CLIENT"
            | "SELECT"
            | "INFO"
            | "COMMAND"
            | "EVALSHA_RO"
            | "EVAL_RO"
    )
}

/// A command as the trace shows it, as an in-process client's: its words, long ones cut.
fn describe(name: &str, args: &[Vec<u8>]) -> String {
    let parts: Vec<&[u8]> = args[1..].iter().map(Vec::as_slice).collect();
    crate::client::line(name, &parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn run_on(topology: Topology, steps: &[Step]) -> ExternalRun {
        let options = Options {
            topology,
            clients: 1,
            ..Options::default()
        };
        let schedule = Schedule {
            clients: 1,
            cycles: 1,
            token_seed: 0,
            steps: steps.to_vec(),
        };
        ExternalRun::new(&options, &schedule, Clock::tokio())
    }

    #[tokio::test(start_paused = true)]
    async fn a_clusters_shards_are_groups_whose_primaries_move_on_a_failover() {
        let failover = Step {
            when: When::After { client: 0, op: 0 },
            fault: crate::Fault::Failover,
        };
        let run = run_on(Topology::Cluster { shards: 3 }, &[failover]);
        assert_eq!(run.nodes().len(), 6);
        assert_eq!(
            run.primary_groups(),
            vec![vec![0, 1], vec![2, 3], vec![4, 5]]
        );
        assert_eq!(run.primaries(), vec![Some(0), Some(2), Some(4)]);
        assert_eq!(Topology::Cluster { shards: 3 }.replicas(), 1);
        assert!(run.serves(2) && !run.serves(3));
        let key = b"lock:resource";
        let shard = run.slot_owner(lock_core::hash_slot(key)).unwrap();
        assert!(run.replica_set_of(2 * shard).is_some());
        // A command on the key's shard anchors the failover there.
        run.command(
            0,
            Some(2 * shard),
            &args(&["SET", "lock:resource", "t"]),
            0,
            "OK".into(),
        );
        let mut expected = vec![Some(0), Some(2), Some(4)];
        expected[shard] = Some(2 * shard + 1);
        assert_eq!(run.primaries(), expected);
        assert!(!run.serves(2 * shard) && run.serves(2 * shard + 1));

        let single = run_on(Topology::Single, &[]);
        assert!(single.primary_groups().is_empty() && single.primaries().is_empty());
        assert!(single.serves(0) && single.replica_set_of(0).is_none());
        let replicated = run_on(Topology::Replicated { replicas: 2 }, &[]);
        assert_eq!(replicated.primary_groups(), vec![vec![0, 1, 2]]);
        assert_eq!(Topology::Replicated { replicas: 2 }.replicas(), 2);
        assert_eq!(replicated.slot_owner(0), None);
    }

    #[test]
    fn a_command_that_took_no_effect_anchors_under_a_name_of_its_own() {
        let run = run_on(Topology::Single, &[]);
        for (reply, _) in [
            ("(nil)", ()),
            ("OK", ()),
            ("(integer) 0", ()),
            ("(error) ERR x", ()),
        ] {
            run.command(0, None, &args(&["SET", "k", "v", "NX"]), 0, reply.into());
        }
        let names: Vec<String> = run.op_logs()[0].iter().map(|(n, _)| n.clone()).collect();
        assert_eq!(names, ["SET:nil", "SET", "SET:0", "SET:error"]);
    }

    #[test]
    fn a_commands_first_key_is_found_in_scripts_too() {
        assert_eq!(first_key(&args(&["SET", "k", "v"])), Some(&b"k"[..]));
        assert_eq!(
            first_key(&args(&["EVALSHA", "abc", "1", "lock", "tok"])),
            Some(&b"lock"[..])
        );
        assert_eq!(first_key(&args(&["EVAL", "return 1", "0"])), None);
        assert_eq!(first_key(&args(&["PING"])), None);
    }
}
