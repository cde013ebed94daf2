//! Random interleavings of acquire, release, extend, cancellation, pauses, crashes and
//! faults, for every algorithm, on the double with paused (virtual) time. A ledger of
//! holds checks the invariants each algorithm documents:
//!
//! - **exclusion**: no client acquires while another's hold is valid
//!   ([`LockGuard::valid_until_ms`]) and not released;
//! - **truthful release**: a release that answers `true` was not preceded by a takeover;
//! - **liveness**: once every client is done and the longest TTL (plus the stamp locks'
//!   1 s safety margin) has passed, a new client gets the lock;
//! - **nothing left behind**: by then no lock key remains, except what an algorithm keeps
//!   by design (fence counters, the fair line's counters, the legacy lock's stamp).
//!
//! Runs are deterministic: plans from a fixed seed, one current-thread runtime on paused
//! time per plan, backoffs without jitter. `NXLOCK_PROPTEST_CASES` sets the plans per
//! algorithm (default 200).
//! Two planted bugs (the seed-001 acquire that writes the stamp before its TTL, and a
//! release that ignores the token) must be caught.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use nxlock::backend::{SetOptions, SetReply, Value};
use nxlock::pubsub::Wait;
use nxlock::script::Script;
use nxlock::{
    AcquirePolicy, Attempt, Backoff, Clock, ErrorKind, FairLock, FencedLock, KvBackend, LegacyLock,
    LockAlgorithm, LockBinding, LockError, LockGuard, LockName, LockOptions, LockOwner,
    MemoryBackend, NamedLock, ReentrantLock, ReleaseError, Retry, ScriptedLock, TokenLock, script,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};

// ---------------------------------------------------------------------------------------
// Plans

/// One step of one client.
#[derive(Clone, Debug)]
enum Op {
    /// Acquire: one attempt when `patience_ms` is 0, else retry for that long.
    Acquire { patience_ms: u16 },
    /// A patient acquire, dropped after `after_ms`.
    CancelledAcquire { after_ms: u16 },
    /// Let time pass, holding or not: a pause when it outlasts the TTL.
    Hold { ms: u16 },
    /// Extend the hold to the TTL.
    Extend,
    /// Release the hold.
    Release,
    /// Release, dropped after `after_ms`.
    CancelledRelease { after_ms: u16 },
    /// Let the hold go without releasing it.
    Crash,
}

/// A fault armed at a moment of the run, for whichever command comes next.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The next command fails before it runs.
    Refused(ErrorKind),
    /// The next command runs and its reply is lost.
    LostReply,
    /// The next script stops after this many of its commands.
    Interrupted(u32),
}

#[derive(Clone, Debug)]
struct Plan {
    ttl_ms: u64,
    latency_ms: u64,
    clients: Vec<Vec<Op>>,
    faults: Vec<(u16, Fault)>,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => Just(Op::Acquire { patience_ms: 0 }),
        2 => (1..300u16).prop_map(|patience_ms| Op::Acquire { patience_ms }),
        1 => (0..60u16).prop_map(|after_ms| Op::CancelledAcquire { after_ms }),
        3 => (0..400u16).prop_map(|ms| Op::Hold { ms }),
        1 => Just(Op::Extend),
        3 => Just(Op::Release),
        1 => (0..8u16).prop_map(|after_ms| Op::CancelledRelease { after_ms }),
        1 => Just(Op::Crash),
    ]
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        Just(Fault::Refused(ErrorKind::Connection)),
        Just(Fault::Refused(ErrorKind::Timeout)),
        Just(Fault::LostReply),
        (0..4u32).prop_map(Fault::Interrupted),
    ]
}

/// Plans for an algorithm; `latency` says whether commands may take time (await points
/// for cancellation, and windows between a client's steps).
fn plan(latency: bool) -> impl Strategy<Value = Plan> {
    let latency_ms = if latency { 0..3u64 } else { 0..1u64 };
    (
        20..250u64,
        latency_ms,
        prop::collection::vec(prop::collection::vec(op(), 1..7), 2..5),
        prop::collection::vec((0..800u16, fault()), 0..4),
    )
        .prop_map(|(ttl_ms, latency_ms, clients, faults)| Plan {
            ttl_ms,
            latency_ms,
            clients,
            faults,
        })
}

// ---------------------------------------------------------------------------------------
// The ledger

#[derive(Debug)]
struct Hold {
    client: usize,
    from: i64,
    until: i64,
    /// When the holder started to release (or crashed: never).
    ended: Option<i64>,
}

impl Hold {
    fn valid_at(&self, t: i64) -> bool {
        t < self.until && self.ended.is_none_or(|end| end > t)
    }
}

#[derive(Default)]
struct Ledger {
    holds: Vec<Hold>,
    violations: Vec<String>,
}

impl Ledger {
    fn acquired(&mut self, client: usize, now: i64, until: i64) {
        for other in self.holds.iter().filter(|h| h.client != client) {
            if other.valid_at(now) {
                self.violations.push(format!(
                    "exclusion: client {client} acquired at {now} while client {} held \
                     ({}..{}, ended {:?})",
                    other.client, other.from, other.until, other.ended
                ));
            }
        }
        self.holds.push(Hold {
            client,
            from: now,
            until,
            ended: None,
        });
    }

    fn current(&mut self, client: usize) -> Option<&mut Hold> {
        self.holds
            .iter_mut()
            .rev()
            .find(|h| h.client == client && h.ended.is_none())
    }

    fn extended(&mut self, client: usize, until: i64) {
        if let Some(hold) = self.current(client) {
            hold.until = until;
        }
    }

    fn ending(&mut self, client: usize, now: i64) {
        if let Some(hold) = self.current(client) {
            hold.ended = Some(now);
        }
    }

    /// A release of `client`'s last hold answered `true`: nobody may have acquired since.
    fn released_as_held(&mut self, client: usize) {
        let Some(ours) = self.holds.iter().rev().find(|h| h.client == client) else {
            return;
        };
        let from = ours.from;
        if let Some(later) = self
            .holds
            .iter()
            .find(|h| h.client != client && h.from > from)
        {
            self.violations.push(format!(
                "truthful release: client {client}'s release (hold from {from}) answered \
                 true after client {} acquired at {}",
                later.client, later.from
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Running a plan

/// Builds a lock for one client with the given options.
type Factory<A> = Arc<dyn Fn(&MemoryBackend, usize, LockOptions) -> A + Send + Sync>;

/// What an algorithm leaves in the keyspace by design, besides nothing.
#[derive(Clone, Copy, PartialEq)]
enum Keeps {
    Nothing,
    FenceCounter,
    LineCounters,
    Stamp,
}

fn policy(patience_ms: u16) -> AcquirePolicy {
    AcquirePolicy::retry(Retry::For(Duration::from_millis(patience_ms.into())))
        .with_backoff(Backoff::Fixed(Duration::from_millis(2)))
}

async fn run_client<A>(
    id: usize,
    ops: Vec<Op>,
    ttl: Duration,
    backend: MemoryBackend,
    make: Factory<A>,
    ledger: Arc<Mutex<Ledger>>,
) where
    A: LockAlgorithm + 'static,
{
    let clock = backend.clock();
    let record = |f: &mut dyn FnMut(&mut Ledger)| f(&mut ledger.lock().unwrap());
    let now = || clock.now_ms();
    let lock_with = |patience_ms: u16| {
        make(
            &backend,
            id,
            LockOptions::new().ttl(ttl).policy(policy(patience_ms)),
        )
    };
    let mut guard: Option<A::Guard> = None;
    for op in ops.into_iter().chain([Op::Release]) {
        match op {
            Op::Acquire { patience_ms } if guard.is_none() => {
                let lock = lock_with(patience_ms);
                let got = if patience_ms == 0 {
                    lock.try_acquire().await.map(Attempt::acquired)
                } else {
                    lock.acquire().await.map(Some)
                };
                if let Ok(Some(got)) = got {
                    let until = got.valid_until_ms();
                    record(&mut |l| l.acquired(id, now(), until));
                    guard = Some(got);
                }
            }
            Op::CancelledAcquire { after_ms } if guard.is_none() => {
                let lock = lock_with(400);
                let after = Duration::from_millis(after_ms.into());
                if let Ok(Ok(got)) = tokio::time::timeout(after, lock.acquire()).await {
                    let until = got.valid_until_ms();
                    record(&mut |l| l.acquired(id, now(), until));
                    guard = Some(got);
                }
            }
            Op::Hold { ms } => tokio::time::sleep(Duration::from_millis(ms.into())).await,
            Op::Extend => {
                if let Some(held) = guard.as_mut()
                    && let Ok(true) = held.extend(ttl).await
                {
                    let until = held.valid_until_ms();
                    record(&mut |l| l.extended(id, until));
                }
            }
            Op::Release => {
                if let Some(held) = guard.take() {
                    record(&mut |l| l.ending(id, now()));
                    match held.release().await {
                        Ok(true) => record(&mut |l| l.released_as_held(id)),
                        Ok(false) => {}
                        // Dropped with the error: released again in the background.
                        Err(failed) => drop::<ReleaseError<_>>(failed),
                    }
                }
            }
            Op::CancelledRelease { after_ms } => {
                if let Some(held) = guard.take() {
                    record(&mut |l| l.ending(id, now()));
                    let after = Duration::from_millis(after_ms.into());
                    if let Ok(Ok(true)) = tokio::time::timeout(after, held.release()).await {
                        record(&mut |l| l.released_as_held(id));
                    }
                }
            }
            Op::Crash => {
                if let Some(held) = guard.take() {
                    held.abandon();
                }
            }
            Op::Acquire { .. } | Op::CancelledAcquire { .. } => {}
        }
    }
}

async fn arm_faults(backend: MemoryBackend, mut faults: Vec<(u16, Fault)>) {
    faults.sort_by_key(|(at, _)| *at);
    let start = tokio::time::Instant::now();
    for (at, fault) in faults {
        tokio::time::sleep_until(start + Duration::from_millis(at.into())).await;
        let faults = backend.faults();
        match fault {
            Fault::Refused(kind) => faults.fail_next(1, kind),
            Fault::LostReply => faults.lose_replies(None, 1),
            Fault::Interrupted(after) => faults.interrupt_next_script(after, ErrorKind::Response),
        }
    }
}

/// Runs `plan` with locks from `make` and checks every invariant; the first violation (or
/// a client that never finished) is the error.
async fn check<A>(plan: Plan, make: Factory<A>, keeps: Keeps) -> Result<(), String>
where
    A: LockAlgorithm + 'static,
{
    let backend = MemoryBackend::new();
    backend
        .faults()
        .set_latency(Duration::from_millis(plan.latency_ms));
    let ttl = Duration::from_millis(plan.ttl_ms);
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let chaos = tokio::spawn(arm_faults(backend.clone(), plan.faults.clone()));
    let clients: Vec<_> = plan
        .clients
        .iter()
        .cloned()
        .enumerate()
        .map(|(id, ops)| {
            let (backend, make, ledger) = (backend.clone(), make.clone(), ledger.clone());
            tokio::spawn(run_client(id, ops, ttl, backend, make, ledger))
        })
        .collect();
    for (id, client) in clients.into_iter().enumerate() {
        match tokio::time::timeout(Duration::from_secs(600), client).await {
            Ok(Ok(())) => {}
            Ok(Err(panic)) => return Err(format!("client {id} panicked: {panic}")),
            Err(_) => return Err(format!("liveness: client {id} still running after 600 s")),
        }
    }
    chaos.abort();
    backend.faults().clear();
    if let Some(violation) = ledger.lock().unwrap().violations.first() {
        return Err(violation.clone());
    }
    // Every hold has ended by release or crash. After the longest TTL (and the stamp
    // locks' safety margin), and background releases, the lock must be free and gone.
    tokio::time::sleep(ttl + Duration::from_millis(1_050)).await;
    let dump = backend.dump();
    let left: Vec<String> = dump
        .keys
        .iter()
        .map(|k| String::from_utf8_lossy(&k.key).into_owned())
        .filter(|key| match keeps {
            Keeps::Nothing => true,
            Keeps::FenceCounter => key != "{il}:fence",
            Keeps::LineCounters => key != "{il}:issued" && key != "{il}:served",
            Keeps::Stamp => key != "{il}:lock",
        })
        .collect();
    if !left.is_empty() {
        return Err(format!("left behind: {left:?}\n{dump}"));
    }
    let fresh = make(
        &backend,
        usize::MAX,
        LockOptions::new()
            .ttl(ttl)
            .policy(AcquirePolicy::try_once()),
    );
    match fresh.try_acquire().await {
        Ok(Attempt::Acquired(guard)) => match guard.release().await {
            Ok(true) => Ok(()),
            other => Err(format!("the fresh client's release: {other:?}")),
        },
        other => Err(format!(
            "liveness: lock not free after every hold ended: {other:?}\n{}",
            backend.dump()
        )),
    }
}

fn lock_name() -> LockName {
    LockName::new("il").unwrap()
}

fn cases() -> u32 {
    std::env::var("NXLOCK_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

/// Runs `cases` plans through `check` on a fresh paused runtime each. The plans come from
/// a fixed seed, so a run in CI explores the same plans every time.
fn explore<A>(
    cases: u32,
    latency: bool,
    make: Factory<A>,
    keeps: Keeps,
) -> Result<(), TestError<Plan>>
where
    A: LockAlgorithm + 'static,
{
    let config = Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    };
    let rng = TestRng::deterministic_rng(RngAlgorithm::ChaCha);
    let mut runner = TestRunner::new_with_rng(config, rng);
    runner.run(&plan(latency), |plan| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .unwrap();
        runtime
            .block_on(check(plan, make.clone(), keeps))
            .map_err(TestCaseError::fail)
    })
}

fn holds<A>(make: Factory<A>, latency: bool, keeps: Keeps)
where
    A: LockAlgorithm + 'static,
{
    if let Err(failure) = explore(cases(), latency, make, keeps) {
        panic!("{failure}");
    }
}

// ---------------------------------------------------------------------------------------
// Every algorithm

#[test]
fn token_lock_keeps_its_invariants() {
    let make: Factory<_> = Arc::new(|b: &MemoryBackend, _, o| {
        TokenLock::with_options(b.clone(), &lock_name(), o).unwrap()
    });
    holds(make, true, Keeps::Nothing);
}

#[test]
fn notify_lock_keeps_its_invariants() {
    let make: Factory<_> = Arc::new(|b: &MemoryBackend, _, o: LockOptions| {
        TokenLock::with_options(b.clone(), &lock_name(), o.wait(Wait::Notify)).unwrap()
    });
    holds(make, true, Keeps::Nothing);
}

#[test]
fn fenced_lock_keeps_its_invariants() {
    let make: Factory<_> = Arc::new(|b: &MemoryBackend, _, o| {
        FencedLock::with_options(b.clone(), &lock_name(), o).unwrap()
    });
    holds(make, true, Keeps::FenceCounter);
}

#[test]
fn fair_lock_keeps_its_invariants() {
    let make: Factory<_> = Arc::new(|b: &MemoryBackend, _, o| {
        FairLock::with_options(b.clone(), &lock_name(), o).unwrap()
    });
    holds(make, true, Keeps::LineCounters);
}

#[test]
fn reentrant_lock_keeps_its_invariants() {
    // One owner per client: client ids are small, the fresh client's is usize::MAX.
    let owners: Arc<Mutex<Vec<(usize, LockOwner)>>> = Arc::default();
    let make: Factory<_> = Arc::new(move |b: &MemoryBackend, client, o| {
        let mut owners = owners.lock().unwrap();
        let owner = match owners.iter().find(|(id, _)| *id == client) {
            Some((_, owner)) => owner.clone(),
            None => {
                let owner = LockOwner::new();
                owners.push((client, owner.clone()));
                owner
            }
        };
        ReentrantLock::with_options(b.clone(), &lock_name(), owner, o).unwrap()
    });
    holds(make, true, Keeps::Nothing);
}

#[test]
fn scripted_lock_keeps_its_invariants() {
    let make: Factory<_> = Arc::new(|b: &MemoryBackend, _, o| {
        ScriptedLock::with_options(b.clone(), &lock_name(), o).unwrap()
    });
    holds(make, true, Keeps::Nothing);
}

/// Without latency: the legacy release checks the time and then sends DEL, two steps, and
/// a holder delayed between them deletes a successor's lock (a documented hazard of
/// seeds 002-004, shown by the suite's `races` cases).
#[test]
fn legacy_lock_keeps_its_invariants_when_commands_take_no_time() {
    let make: Factory<_> = Arc::new(|b: &MemoryBackend, _, o| {
        LegacyLock::with_options(b.clone(), &lock_name(), o).unwrap()
    });
    holds(make, false, Keeps::Stamp);
}

// ---------------------------------------------------------------------------------------
// Planted bugs

/// What a [`Mutant`] lock gets wrong.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Bug {
    /// Seed 001's acquire as the scripted lock first had it: SETNX, then PEXPIRE.
    StampBeforeTtl,
    /// A token lock whose release deletes the key whoever holds it.
    ReleaseIgnoresToken,
}

/// Seed 001's acquire in its original order: the stamp is written before its TTL, so a
/// failure in between leaves a key that never expires.
static STAMP_THEN_TTL: std::sync::LazyLock<Script> = std::sync::LazyLock::new(|| {
    Script::new(
        "stamp-then-ttl",
        "if redis.call('SETNX', KEYS[1], ARGV[1]) == 1 then \
         redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end return 0",
    )
    .with_native(|store, keys, args| {
        if store.setnx(keys[0], args[0])? {
            let safety = std::str::from_utf8(args[1]).unwrap().parse().unwrap();
            store.pexpire(keys[0], safety, Default::default())?;
            return Ok(Value::Int(1));
        }
        Ok(Value::Int(0))
    })
});

#[derive(Clone, Debug)]
struct Mutant {
    backend: MemoryBackend,
    binding: LockBinding,
    bug: Bug,
}

#[derive(Debug)]
struct MutantGuard {
    backend: MemoryBackend,
    value: String,
    valid_until_ms: i64,
    clock: Clock,
    bug: Bug,
}

const MUTANT_KEY: &[u8] = b"{il}:lock";

impl LockAlgorithm for Mutant {
    type Guard = MutantGuard;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }
    async fn try_acquire(&self) -> Result<Attempt<MutantGuard>, LockError> {
        let clock = self.clock().clone();
        let ttl = self.binding.ttl_ms();
        let now = clock.now_ms();
        let (value, acquired) = match self.bug {
            Bug::StampBeforeTtl => {
                let stamp = (now + ttl).to_string();
                let safety = (ttl + 1_000).to_string();
                let reply = self
                    .backend
                    .eval(
                        &STAMP_THEN_TTL,
                        &[MUTANT_KEY],
                        &[stamp.as_bytes(), safety.as_bytes()],
                    )
                    .await?;
                (stamp, reply == Value::Int(1))
            }
            Bug::ReleaseIgnoresToken => {
                let token = format!("{now}-{}", next_token());
                let reply = self
                    .backend
                    .set(MUTANT_KEY, token.as_bytes(), SetOptions::new().nx().px(ttl))
                    .await?;
                (token, reply == SetReply::Applied)
            }
        };
        if !acquired {
            return Ok(Attempt::Held { holder_ttl: None });
        }
        Ok(Attempt::Acquired(MutantGuard {
            backend: self.backend.clone(),
            value,
            valid_until_ms: now + ttl,
            clock,
            bug: self.bug,
        }))
    }
}

fn next_token() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl LockGuard for MutantGuard {
    fn key(&self) -> &[u8] {
        MUTANT_KEY
    }
    fn clock(&self) -> &Clock {
        &self.clock
    }
    fn valid_until_ms(&self) -> i64 {
        self.valid_until_ms
    }
    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        let released = match self.bug {
            Bug::StampBeforeTtl => {
                let now = self.clock.now_ms().to_string();
                self.backend
                    .eval(
                        &script::LEGACY_RELEASE,
                        &[MUTANT_KEY],
                        &[self.value.as_bytes(), now.as_bytes()],
                    )
                    .await
                    .map(|reply| reply == Value::Int(1))
            }
            Bug::ReleaseIgnoresToken => self.backend.del(&[MUTANT_KEY]).await.map(|n| n == 1),
        };
        Ok(released.unwrap_or(false))
    }
    async fn extend(&mut self, _ttl: Duration) -> Result<bool, LockError> {
        Ok(false)
    }
    fn abandon(self) {}
}

fn mutant(bug: Bug) -> Factory<Mutant> {
    Arc::new(move |b: &MemoryBackend, _, options| Mutant {
        backend: b.clone(),
        binding: LockBinding::new("mutant", &LockName::new("il").unwrap(), options, b.clock())
            .unwrap(),
        bug,
    })
}

#[test]
fn a_stamp_written_before_its_ttl_is_caught() {
    let found = explore(2_000, true, mutant(Bug::StampBeforeTtl), Keeps::Nothing);
    match found {
        Err(TestError::Fail(why, plan)) => {
            println!("caught: {why}\nminimal plan: {plan:#?}");
            assert!(why.message().contains("left behind"), "{why}");
        }
        other => panic!("the planted bug was not caught: {other:?}"),
    }
}

#[test]
fn a_release_that_ignores_the_token_is_caught() {
    let found = explore(
        2_000,
        true,
        mutant(Bug::ReleaseIgnoresToken),
        Keeps::Nothing,
    );
    match found {
        Err(TestError::Fail(why, plan)) => {
            println!("caught: {why}\nminimal plan: {plan:#?}");
            let why = why.message();
            assert!(
                why.contains("exclusion") || why.contains("truthful release"),
                "{why}"
            );
        }
        other => panic!("the planted bug was not caught: {other:?}"),
    }
}
