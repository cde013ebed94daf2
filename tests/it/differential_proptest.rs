//! Random sequences of KvBackend commands over a small key set, applied to MemoryBackend
//! and to a real redis-server: identical replies and errors (byte for byte), TTLs within a
//! tolerance.
//!
//! Time is handled explicitly: the double runs on the system clock, like the server, and
//! the generated TTLs are either long (>= 5 s, so nothing expires by accident during a
//! sequence) or non-positive / in the past (so expiry happens at once, on both). Short
//! positive TTLs would race the round trips and are left out on purpose.
//!
//! 2,000 sequences by default; `NXLOCK_PROPTEST_CASES=100000` runs more.

use crate::support;

use nxlock::backend::{ExpireCondition, SetExpiry, SetOptions, SetReply};
use nxlock::{Clock, ErrorKind, KvBackend};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use support::{Pair, ttl_close};

const KEYS: [&str; 3] = ["a", "b", "c"];
const VALUES: [&str; 8] = [
    "1",
    "41",
    "-5",
    "9223372036854775807",
    "abc",
    "",
    "01",
    "-0",
];

#[derive(Clone, Debug)]
enum Op {
    Set {
        key: usize,
        value: usize,
        options: SetOptions,
    },
    SetNx {
        key: usize,
        value: usize,
    },
    Get {
        key: usize,
    },
    GetSet {
        key: usize,
        value: usize,
    },
    GetDel {
        key: usize,
    },
    Del {
        keys: Vec<usize>,
    },
    Exists {
        keys: Vec<usize>,
    },
    PExpire {
        key: usize,
        ms: i64,
        condition: ExpireCondition,
    },
    /// Relative to now; negative is in the past.
    PExpireAt {
        key: usize,
        from_now_ms: i64,
        condition: ExpireCondition,
    },
    Pttl {
        key: usize,
    },
    Ttl {
        key: usize,
    },
    Persist {
        key: usize,
    },
    Incr {
        key: usize,
    },
}

/// What a command answered, comparable across backends.
#[derive(Clone, Debug, PartialEq)]
enum Reply {
    Set(SetReply),
    Bool(bool),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    /// PTTL/TTL: compared within a tolerance.
    Ttl {
        ms: i64,
    },
    Err(ErrorKind, String),
}

fn ttl_ms() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        Just(-1),
        Just(-10_000),
        5_000i64..100_000,
        Just(i64::MAX - 1_000)
    ]
}

fn condition() -> impl Strategy<Value = ExpireCondition> {
    prop_oneof![
        Just(ExpireCondition::Always),
        Just(ExpireCondition::IfNoExpiry),
        Just(ExpireCondition::IfHasExpiry),
        Just(ExpireCondition::IfGreater),
        Just(ExpireCondition::IfLess),
    ]
}

fn set_options() -> impl Strategy<Value = SetOptions> {
    let condition = prop_oneof![Just(0u8), Just(1), Just(2)];
    let expiry = prop_oneof![
        Just(SetExpiry::Clear),
        Just(SetExpiry::KeepTtl),
        ttl_ms().prop_map(SetExpiry::Px),
        prop_oneof![Just(0i64), Just(-3), 5i64..100].prop_map(SetExpiry::Ex),
        // Absolute times are filled in relative to now when the command runs.
        prop_oneof![Just(-1_000i64), 5_000i64..100_000].prop_map(SetExpiry::PxAt),
    ];
    (condition, expiry, any::<bool>()).prop_map(|(c, expiry, get)| {
        let options = SetOptions {
            expiry,
            get,
            ..SetOptions::new()
        };
        match c {
            0 => options,
            1 => options.nx(),
            _ => options.xx(),
        }
    })
}

fn op() -> impl Strategy<Value = Op> {
    let key = 0..KEYS.len();
    let value = 0..VALUES.len();
    let keys = prop::collection::vec(0..KEYS.len(), 1..4);
    prop_oneof![
        (key.clone(), value.clone(), set_options()).prop_map(|(key, value, options)| Op::Set {
            key,
            value,
            options
        }),
        (key.clone(), value.clone()).prop_map(|(key, value)| Op::SetNx { key, value }),
        key.clone().prop_map(|key| Op::Get { key }),
        (key.clone(), value.clone()).prop_map(|(key, value)| Op::GetSet { key, value }),
        key.clone().prop_map(|key| Op::GetDel { key }),
        keys.clone().prop_map(|keys| Op::Del { keys }),
        keys.prop_map(|keys| Op::Exists { keys }),
        (key.clone(), ttl_ms(), condition()).prop_map(|(key, ms, condition)| Op::PExpire {
            key,
            ms,
            condition
        }),
        (
            key.clone(),
            prop_oneof![Just(-1_000i64), 5_000i64..100_000],
            condition()
        )
            .prop_map(|(key, from_now_ms, condition)| Op::PExpireAt {
                key,
                from_now_ms,
                condition
            }),
        key.clone().prop_map(|key| Op::Pttl { key }),
        key.clone().prop_map(|key| Op::Ttl { key }),
        key.clone().prop_map(|key| Op::Persist { key }),
        key.prop_map(|key| Op::Incr { key }),
    ]
}

async fn apply(backend: &impl KvBackend, prefix: &str, op: &Op) -> Reply {
    let k = |i: &usize| format!("{prefix}{}", KEYS[*i]).into_bytes();
    let v = |i: &usize| VALUES[*i].as_bytes();
    let now = Clock::system().now_ms();
    let result = match op {
        Op::Set {
            key,
            value,
            options,
        } => {
            let mut options = *options;
            if let SetExpiry::PxAt(rel) = options.expiry {
                options.expiry = SetExpiry::PxAt(if rel < 0 { 1 } else { now + rel });
            }
            backend
                .set(&k(key), v(value), options)
                .await
                .map(Reply::Set)
        }
        Op::SetNx { key, value } => backend.setnx(&k(key), v(value)).await.map(Reply::Bool),
        Op::Get { key } => backend.get(&k(key)).await.map(Reply::Bulk),
        Op::GetSet { key, value } => backend.getset(&k(key), v(value)).await.map(Reply::Bulk),
        Op::GetDel { key } => backend.getdel(&k(key)).await.map(Reply::Bulk),
        Op::Del { keys } => {
            let keys: Vec<Vec<u8>> = keys.iter().map(k).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            backend.del(&refs).await.map(Reply::Int)
        }
        Op::Exists { keys } => {
            let keys: Vec<Vec<u8>> = keys.iter().map(k).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            backend.exists(&refs).await.map(Reply::Int)
        }
        Op::PExpire { key, ms, condition } => backend
            .pexpire(&k(key), *ms, *condition)
            .await
            .map(Reply::Bool),
        Op::PExpireAt {
            key,
            from_now_ms,
            condition,
        } => backend
            .pexpireat(&k(key), now + from_now_ms, *condition)
            .await
            .map(Reply::Bool),
        Op::Pttl { key } => backend.pttl(&k(key)).await.map(|ms| Reply::Ttl { ms }),
        Op::Ttl { key } => backend.ttl(&k(key)).await.map(|s| Reply::Ttl {
            ms: if s < 0 { s } else { s * 1000 },
        }),
        Op::Persist { key } => backend.persist(&k(key)).await.map(Reply::Bool),
        Op::Incr { key } => backend.incr(&k(key)).await.map(Reply::Int),
    };
    result.unwrap_or_else(|e| Reply::Err(e.kind(), e.message().to_string()))
}

fn agree(memory: &Reply, redis: &Reply) -> bool {
    match (memory, redis) {
        // TTL rounds to whole seconds, so allow one second there.
        (Reply::Ttl { ms: a }, Reply::Ttl { ms: b }) => ttl_close(*a, *b, 1_000),
        _ => memory == redis,
    }
}

async fn run_sequence(pair: &Pair, sequence: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let prefix = format!("prop:{sequence}:{}:", std::process::id());
    for (step, op) in ops.iter().enumerate() {
        let memory = apply(&pair.memory, &prefix, op).await;
        let redis = apply(&pair.redis, &prefix, op).await;
        prop_assert!(
            agree(&memory, &redis),
            "step {step} {op:?}: memory {memory:?}, redis {redis:?}"
        );
    }
    Ok(())
}

#[test]
fn random_command_sequences_agree_with_real_redis() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let Some(pair) = runtime.block_on(Pair::new("random_command_sequences_agree_with_real_redis"))
    else {
        return;
    };
    let cases = std::env::var("NXLOCK_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2_000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    let counter = std::cell::Cell::new(0usize);
    let result = runner.run(&prop::collection::vec(op(), 1..24), |ops| {
        counter.set(counter.get() + 1);
        runtime.block_on(run_sequence(&pair, counter.get(), &ops))
    });
    println!("{} sequences run against memory and redis", counter.get());
    if let Err(e) = result {
        panic!("the double and Redis diverge: {e}");
    }
}
