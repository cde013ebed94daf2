//! The suite can fail: backends with one planted bug each must fail the cases that check
//! that behaviour, by name.

use std::time::Duration;

use nxlock::conformance::{Harness, Outcome, run_all};
use nxlock::{
    Clock, Error, ErrorKind, ExpireCondition, KvBackend, MemoryBackend, Result, Script, SetExpiry,
    SetOptions, SetReply, Subscription, Value, scripts,
};
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
}

#[derive(Clone, Debug)]
struct Mutant {
    inner: MemoryBackend,
    bug: Bug,
}

impl KvBackend for Mutant {
    async fn set(&self, key: &[u8], value: &[u8], mut options: SetOptions) -> Result<SetReply> {
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
        self.inner.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.inner.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.inner.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.inner.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.inner.pexpire(key, ms, condition).await
    }
    async fn pexpireat(&self, key: &[u8], at: i64, condition: ExpireCondition) -> Result<bool> {
        self.inner.pexpireat(key, at, condition).await
    }
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        match self.inner.pttl(key).await? {
            -2 if self.bug == Bug::PttlMissingIsMinusOne => Ok(-1),
            pttl => Ok(pttl),
        }
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.inner.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.inner.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.inner.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        if self.bug == Bug::ReleaseIgnoresToken
            && script.sha1() == scripts::COMPARE_AND_DELETE.sha1()
        {
            return Ok(Value::Int(self.inner.del(keys).await?));
        }
        self.inner.eval(script, keys, args).await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.inner.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.inner.subscribe(channel).await
    }
    fn clock(&self) -> Clock {
        self.inner.clock()
    }
}

struct MutantHarness(Bug);

impl Harness for MutantHarness {
    type Backend = Mutant;
    fn name(&self) -> String {
        format!("memory with planted bug {:?}", self.0)
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
}

#[rstest]
#[case::nx_overwrites(Bug::NxOverwrites, &["strings::set_nx_sets_only_missing_keys", "token::mutual_exclusion", "token::second_client_is_refused_while_held"])]
#[case::pttl_missing_is_minus_one(Bug::PttlMissingIsMinusOne, &["expiry::pttl_is_minus_two_when_missing_and_minus_one_without_ttl", "expiry::expired_keys_are_absent_to_every_command"])]
#[case::release_ignores_token(Bug::ReleaseIgnoresToken, &["scripts::compare_and_delete_only_deletes_the_matching_token", "token::stale_release_leaves_the_new_holder", "races::checked_release_leaves_the_new_holder"])]
#[case::error_text_differs(Bug::ErrorTextDiffers, &["strings::set_rejects_invalid_expire_times"])]
#[case::keys_never_expire(Bug::KeysNeverExpire, &["expiry::keys_expire_after_their_ttl", "token::expiry_frees_a_crashed_holder"])]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planted_bug_fails_the_cases_that_check_it(#[case] bug: Bug, #[case] must_fail: &[&str]) {
    let report = run_all(&MutantHarness(bug)).await;
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
