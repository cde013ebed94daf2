//! For backend and server authors: run the conformance suite against a `KvBackend`. The
//! backend here is the double with one planted bug (PTTL answers -1 for a missing key,
//! where Redis answers -2), and the suite names the cases it breaks.
//!
//! `cargo run --release -p nxlock-examples --example check_a_backend`

use std::time::Duration;

use nxlock::backend::{ExpireCondition, Result, SetOptions, SetReply, Value};
use nxlock::conformance::{Capabilities, Capability, Harness, run_all};
use nxlock::pubsub::Subscription;
use nxlock::script::Script;
use nxlock::{Clock, KvBackend, MemoryBackend};

/// The backend under test: every command goes to the double, but PTTL is wrong.
#[derive(Clone, Debug)]
struct SloppyPttl(MemoryBackend);

impl KvBackend for SloppyPttl {
    async fn pttl(&self, key: &[u8]) -> Result<i64> {
        match self.0.pttl(key).await? {
            -2 => Ok(-1), // the bug
            pttl => Ok(pttl),
        }
    }
    async fn set(&self, key: &[u8], value: &[u8], options: SetOptions) -> Result<SetReply> {
        self.0.set(key, value, options).await
    }
    async fn setnx(&self, key: &[u8], value: &[u8]) -> Result<bool> {
        self.0.setnx(key, value).await
    }
    async fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.get(key).await
    }
    async fn getset(&self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.getset(key, value).await
    }
    async fn getdel(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.0.getdel(key).await
    }
    async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        self.0.del(keys).await
    }
    async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        self.0.exists(keys).await
    }
    async fn pexpire(&self, key: &[u8], ms: i64, condition: ExpireCondition) -> Result<bool> {
        self.0.pexpire(key, ms, condition).await
    }
    async fn pexpireat(&self, key: &[u8], at: i64, condition: ExpireCondition) -> Result<bool> {
        self.0.pexpireat(key, at, condition).await
    }
    async fn ttl(&self, key: &[u8]) -> Result<i64> {
        self.0.ttl(key).await
    }
    async fn persist(&self, key: &[u8]) -> Result<bool> {
        self.0.persist(key).await
    }
    async fn incr(&self, key: &[u8]) -> Result<i64> {
        self.0.incr(key).await
    }
    async fn eval(&self, script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Result<Value> {
        self.0.eval(script, keys, args).await
    }
    async fn publish(&self, channel: &[u8], message: &[u8]) -> Result<i64> {
        self.0.publish(channel, message).await
    }
    async fn subscribe(&self, channel: &[u8]) -> Result<Subscription> {
        self.0.subscribe(channel).await
    }
    fn clock(&self) -> Clock {
        self.0.clock()
    }
}

/// How the suite gets a fresh backend and lets time pass for it.
struct SloppyHarness;

impl Harness for SloppyHarness {
    type Backend = SloppyPttl;

    fn name(&self) -> String {
        "the double with PTTL -1 for missing keys".into()
    }
    async fn backend(&self) -> std::result::Result<SloppyPttl, String> {
        Ok(SloppyPttl(MemoryBackend::new()))
    }
    async fn advance(&self, backend: &SloppyPttl, by: Duration) {
        backend.0.advance(by);
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::TimeControl)
    }
}

#[tokio::main]
async fn main() {
    let report = run_all(&SloppyHarness).await;
    println!(
        "{} cases: {} passed, {} failed, {} skipped",
        report.cases.len(),
        report.passed(),
        report.failed(),
        report.skipped()
    );
    for failure in report.failures() {
        println!("FAIL {}: {}", failure.name, failure.detail);
    }
    assert!(
        report
            .failures()
            .any(|c| c.name == "expiry::pttl_is_minus_two_when_missing_and_minus_one_without_ttl"),
        "the suite missed the planted bug"
    );
}
