//! The suite can fail: backends with one planted bug each must fail the cases that check
//! that behaviour, by name.

use std::time::Duration;

use nxlock::backend::{ExpireCondition, Result, SetExpiry, SetOptions, SetReply, Value};
use nxlock::conformance::{Capabilities, Capability, Cluster, Harness, Outcome, Report, run_all};
use nxlock::harness::MemoryClusterHarness;
use nxlock::pubsub::Subscription;
use nxlock::script::Script;
use nxlock::{Clock, Error, ErrorKind, KvBackend, MemoryBackend, script};
use rstest::rstest;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Bug {
    /// SET NX writes even when the key exists.
    NxOverwrites,
    /// PTTL of a missing key answers -1 instead of -2.
    PttlMissingIsMinusOne,
    /// Compare-and-delete deletes whatever the token.
    ReleaseIgnoresToken,
    /// The invalid-expire error has a different text.
    ErrorTextDiffers,
    /// PX is ignored: keys never expire.
    KeysNeverExpire,
    /// No pub/sub: PUBLISH and SUBSCRIBE answer `Unsupported`, as `KvBackend`'s defaults do.
    NoPubSub,
    /// Every command answers `Unsupported`.
    NothingSupported,
}

fn unsupported(command: &str) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        format!("ERR this backend does not implement {command}"),
    )
}

#[derive(Clone, Debug)]
struct Mutant {
    inner: MemoryBackend,
    bug: Bug,
}

/// Answers `Unsupported` for `$command` when the mutant supports nothing.
macro_rules! refuse_if_unsupported {
    ($self:ident, $command:literal) => {
        if $self.bug == Bug::NothingSupported {
            return Err(unsupported($command));
        }
    };
}

impl KvBackend for Mutant {
    async fn set(&self, key: &[u8], value: &[u8], mut options: SetOptions) -> Result<SetReply> {
        refuse_if_unsupported!(self, "SET");
        if self.bug == Bug::NxOverwrites {
            options = SetOptions {
                condition: Default::default(),
                ..options
            };
        }
        if self.bug == Bug::KeysNeverExpire && matches!(options.expiry, SetExpiry::Px(ms) if ms > 0)
        {
            options.expiry = SetExpiry::Clear;
        }
        let reply = self.inner.set(key, value, options).await;
        match reply {
            Err(e) if self.bug == Bug::ErrorTextDiffers && e.kind() == ErrorKind::InvalidExpire => {
                Err(Error::new(
                    ErrorKind::InvalidExpire,
                    "ERR invalid expire time in SET",
                ))
            }
            other => other,
        }
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        refuse_if_unsupported!(self, "SETNX");
        self.inner.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        refuse_if_unsupported!(self, "GET");
        self.inner.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        refuse_if_unsupported!(self, "GETSET");
        self.inner.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        refuse_if_unsupported!(self, "GETDEL");
        self.inner.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        refuse_if_unsupported!(self, "DEL");
        self.inner.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        refuse_if_unsupported!(self, "EXISTS");
        self.inner.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        refuse_if_unsupported!(self, "PEXPIRE");
        self.inner.pexpire(key, ms, condition).await
    }
    async fn pexpireat(&self, key: &[u8], at: i64, condition: ExpireCondition) -> Result<bool> {
        refuse_if_unsupported!(self, "PEXPIREAT");
        self.inner.pexpireat(key, at, condition).await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        refuse_if_unsupported!(self, "PTTL");
        match self.inner.pttl(key).await? {
            -2 if self.bug == Bug::PttlMissingIsMinusOne => Ok(-1),
            pttl => Ok(pttl),
        }
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        refuse_if_unsupported!(self, "TTL");
        self.inner.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        refuse_if_unsupported!(self, "PERSIST");
        self.inner.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        refuse_if_unsupported!(self, "INCR");
        self.inner.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        refuse_if_unsupported!(self, "EVAL");
        if self.bug == Bug::ReleaseIgnoresToken
            && script.sha1() == script::COMPARE_AND_DELETE.sha1()
        {
            return Ok(Value::Int(self.inner.del(keys).await?));
        }
        self.inner.eval(script, keys, args).await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        if matches!(self.bug, Bug::NoPubSub | Bug::NothingSupported) {
            return Err(unsupported("PUBLISH"));
        }
        self.inner.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        if matches!(self.bug, Bug::NoPubSub | Bug::NothingSupported) {
            return Err(unsupported("SUBSCRIBE"));
        }
        self.inner.subscribe(channel).await
    }
    fn clock(&self) -> Clock {
        self.inner.clock()
    }
}

/// A harness for a mutant, declaring pub/sub and time control like the double's unless
/// told otherwise.
struct MutantHarness(Bug, Capabilities);

impl MutantHarness {
    fn declaring_all(bug: Bug) -> Self {
        let all = Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::TimeControl);
        Self(bug, all)
    }
}

impl Harness for MutantHarness {
    type Backend = Mutant;
    fn name(&self) -> String {
        format!("memory with planted bug {:?} (declares {})", self.0, self.1)
    }
    async fn backend(&self) -> std::result::Result<Mutant, String> {
        Ok(Mutant {
            inner: MemoryBackend::new(),
            bug: self.0,
        })
    }
    async fn advance(&self, backend: &Mutant, by: Duration) {
        backend.inner.advance(by);
    }
    fn capabilities(&self) -> Capabilities {
        self.1
    }
}

/// The cases that need pub/sub.
const PUBSUB_CASES: [&str; 4] = [
    "notify::release_publishes_a_wake_up",
    "notify::waiter_wakes_on_release_not_at_the_holder_ttl",
    "notify::lost_wake_up_is_bounded_by_the_holder_ttl",
    "fair::contended_cycles_cost_two_commands",
];

fn outcomes(report: &Report) -> Vec<(String, Outcome)> {
    report
        .cases
        .iter()
        .map(|c| (c.name.clone(), c.outcome.clone()))
        .collect()
}

#[rstest]
#[case::nx_overwrites(Bug::NxOverwrites, &["strings::set_nx_sets_only_missing_keys", "token::mutual_exclusion", "token::second_client_is_refused_while_held"])]
#[case::pttl_missing_is_minus_one(Bug::PttlMissingIsMinusOne, &["expiry::pttl_is_minus_two_when_missing_and_minus_one_without_ttl", "expiry::expired_keys_are_absent_to_every_command"])]
#[case::release_ignores_token(Bug::ReleaseIgnoresToken, &["scripts::compare_and_delete_only_deletes_the_matching_token", "token::stale_release_leaves_the_new_holder", "races::checked_release_leaves_the_new_holder"])]
#[case::error_text_differs(Bug::ErrorTextDiffers, &["strings::set_rejects_invalid_expire_times"])]
#[case::keys_never_expire(Bug::KeysNeverExpire, &["expiry::keys_expire_after_their_ttl", "token::expiry_frees_a_crashed_holder"])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_bug_fails_the_cases_that_check_it(#[case] bug: Bug, #[case] must_fail: &[&str]) {
    let report = run_all(&MutantHarness::declaring_all(bug)).await;
    println!("{report}");
    for name in must_fail {
        let case = report
            .case(name)
            .unwrap_or_else(|| panic!("no case named {name}"));
        assert_eq!(
            case.outcome,
            Outcome::Failed,
            "{name} did not catch {bug:?}"
        );
        assert!(!case.detail.is_empty(), "{name} failed without saying why");
    }
    assert!(report.failed() >= must_fail.len());
}

/// A backend without pub/sub whose harness says so gets those cases skipped, with the
/// reason, and fails nothing; two runs give the same verdict for every case.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_without_pubsub_gets_skips_not_failures() {
    let harness = MutantHarness(
        Bug::NoPubSub,
        Capabilities::none().with(Capability::TimeControl),
    );
    let first = run_all(&harness).await;
    println!("{first}");
    assert_eq!(first.failed(), 0, "{first}");
    for name in PUBSUB_CASES {
        let case = first.case(name).unwrap();
        assert_eq!(case.outcome, Outcome::Skipped, "{name}");
        assert!(case.detail.contains("pubsub"), "{name}: {}", case.detail);
    }
    let skipped = PUBSUB_CASES.len() + multi_node_cases().len();
    assert_eq!(first.skipped(), skipped, "{first}");
    let json: serde_json::Value = serde_json::from_str(&first.to_json()).unwrap();
    assert_eq!(json["skipped"], skipped);
    let second = run_all(&harness).await;
    assert_eq!(
        outcomes(&first),
        outcomes(&second),
        "verdicts changed between runs"
    );
}

/// A harness that declares pub/sub for a backend that answers `Unsupported` fails the
/// pub/sub cases, and says that pub/sub is what is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_pubsub_that_answers_unsupported_fails_and_says_so() {
    let report = run_all(&MutantHarness::declaring_all(Bug::NoPubSub)).await;
    for name in PUBSUB_CASES {
        let case = report.case(name).unwrap();
        assert_eq!(case.outcome, Outcome::Failed, "{name} did not fail");
        assert!(
            case.detail.contains("SUBSCRIBE") || case.detail.contains("PUBLISH"),
            "{name} failed without naming pub/sub: {}",
            case.detail
        );
    }
}

/// `Unsupported` is never a pass: against a backend that answers it to every command, no
/// case passes. The only skips are the failover and Redlock cases (the mutants are single
/// nodes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_is_never_counted_as_a_pass() {
    let report = run_all(&MutantHarness::declaring_all(Bug::NothingSupported)).await;
    let replication = multi_node_cases();
    let passed: Vec<_> = report
        .cases
        .iter()
        .filter(|c| c.outcome != Outcome::Failed)
        .filter(|c| !(c.outcome == Outcome::Skipped && replication.contains(&c.name.as_str())))
        .map(|c| c.name.as_str())
        .collect();
    assert!(passed.is_empty(), "cases not failed: {passed:?}");
    assert_eq!(report.skipped(), replication.len());
}

/// The cases that need a replicated deployment, independent instances, a cluster or
/// transactions, which no mutant harness offers.
fn multi_node_cases() -> Vec<&'static str> {
    nxlock::conformance::case_names()
        .iter()
        .copied()
        .filter(|name| {
            name.starts_with("replication::")
                || name.starts_with("redlock::")
                || name.starts_with("cluster::")
                || name.starts_with("transactions::")
        })
        .collect()
}

/// A lone double that claims to be a cluster of three primaries but holds to none of
/// its rules.
struct NotAClusterHarness;

impl Harness for NotAClusterHarness {
    type Backend = MemoryBackend;
    fn name(&self) -> String {
        "a lone double claiming to be a cluster".into()
    }
    async fn backend(&self) -> std::result::Result<MemoryBackend, String> {
        Ok(MemoryBackend::new())
    }
    async fn advance(&self, backend: &MemoryBackend, by: Duration) {
        backend.advance(by);
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with(Capability::Cluster)
    }
    /// The slots of the double's cluster harness (three primaries), without its rules.
    async fn cluster(&self) -> std::result::Result<Box<dyn Cluster>, String> {
        MemoryClusterHarness::default().cluster().await
    }
}

/// A backend that runs cross-slot commands and scripts a cluster would refuse fails the
/// cross-slot cases; its locks still work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backend_ignoring_cluster_rules_fails_the_cross_slot_cases() {
    let report = run_all(&NotAClusterHarness).await;
    for name in [
        "cluster::keys_of_two_slots_in_one_command_are_crossslot",
        "cluster::a_script_may_touch_only_keys_its_node_serves",
        "cluster::one_command_in_a_script_spanning_slots_is_refused",
    ] {
        let case = report.case(name).unwrap();
        assert_eq!(case.outcome, Outcome::Failed, "{name}: {}", case.detail);
    }
    let locks = report
        .case("cluster::every_lock_keeps_its_keys_in_one_slot")
        .unwrap();
    assert_eq!(locks.outcome, Outcome::Passed, "{}", locks.detail);
}
