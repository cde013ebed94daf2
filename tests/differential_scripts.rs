//! Every built-in Script: its native body (on MemoryBackend) and its Lua source (on a real
//! redis-server) give the same reply and leave the same keyspace, across edge cases.

mod support;

use nxlock::{KvBackend, Script, SetOptions, Value, scripts};
use support::{Pair, observe, ttl_close};

/// A key's state before the script runs.
#[derive(Clone, Debug)]
enum State {
    Missing,
    /// A value, with a TTL in ms or none.
    Value(Vec<u8>, Option<i64>),
    /// A value whose expiry time has passed (set with `PXAT 1`).
    Expired(Vec<u8>),
}

async fn prepare(backend: &impl KvBackend, key: &[u8], state: &State) {
    backend.del(&[key]).await.unwrap();
    match state {
        State::Missing => {}
        State::Value(v, None) => {
            backend.set(key, v, SetOptions::new()).await.unwrap();
        }
        State::Value(v, Some(ttl)) => {
            backend
                .set(key, v, SetOptions::new().px(*ttl))
                .await
                .unwrap();
        }
        State::Expired(v) => {
            backend
                .set(key, v, SetOptions::new().pxat(1))
                .await
                .unwrap();
        }
    }
}

fn states(now: i64) -> Vec<State> {
    let values: Vec<Vec<u8>> = vec![
        b"token-1".to_vec(),
        b"token-2".to_vec(),
        (now + 3_000).to_string().into_bytes(),
        (now - 1_000).to_string().into_bytes(),
        b"garbage".to_vec(),
        b"me:1".to_vec(),
        b"me:2".to_vec(),
        b"you:1".to_vec(),
        b"me:x".to_vec(),
    ];
    let mut states = vec![State::Missing];
    for v in values {
        states.push(State::Value(v.clone(), None));
        states.push(State::Value(v.clone(), Some(10_000)));
        states.push(State::Expired(v));
    }
    states
}

fn arg_sets(script: &Script, now: i64) -> Vec<Vec<Vec<u8>>> {
    let n = |v: i64| v.to_string().into_bytes();
    let s = |v: &str| v.as_bytes().to_vec();
    match script.name() {
        "compare-and-delete" => vec![vec![s("token-1")], vec![s("token-2")]],
        "fenced-acquire" => vec![vec![s("token-1"), n(5_000)]],
        "compare-and-pexpire" => vec![vec![s("token-1"), n(5_000)], vec![s("token-2"), n(20_000)]],
        "legacy-acquire" => vec![vec![n(now + 5_000), n(5_000), n(now)]],
        "legacy-extend" => vec![
            vec![n(now + 3_000), n(now + 9_000), n(9_000), n(now)],
            vec![n(now - 1_000), n(now + 9_000), n(9_000), n(now)],
        ],
        "legacy-release" => vec![vec![n(now + 3_000), n(now)], vec![n(now - 1_000), n(now)]],
        "reentrant-acquire" | "reentrant-extend" => {
            vec![vec![s("me"), n(5_000)], vec![s("you"), n(5_000)]]
        }
        "reentrant-release" => vec![vec![s("me")], vec![s("you")]],
        other => panic!("no argument sets for script {other}: add them"),
    }
}

/// Equal, except that integers that are remaining times (>= 100 ms, from PTTL) may differ
/// by the time between the two calls. Codes and counts are small and compared exactly.
fn replies_close(a: &nxlock::Result<Value>, b: &nxlock::Result<Value>) -> bool {
    fn close(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) if *x >= 100 && *y >= 100 => (x - y).abs() <= 200,
            (Value::Array(xs), Value::Array(ys)) => {
                xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| close(x, y))
            }
            _ => a == b,
        }
    }
    match (a, b) {
        (Ok(x), Ok(y)) => close(x, y),
        _ => a == b,
    }
}

#[tokio::test]
async fn native_and_lua_bodies_agree_on_every_edge_case() {
    let Some(pair) = Pair::new("native_and_lua_bodies_agree_on_every_edge_case").await else {
        return;
    };
    let key = b"differential:script".as_slice();
    // The fenced script's second key: its counter, compared like the lock key.
    let fence = b"differential:fence".as_slice();
    let now = nxlock::Clock::system().now_ms();
    let mut compared = 0;
    for script in scripts::all() {
        for state in states(now) {
            for args in arg_sets(script, now) {
                let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                prepare(&pair.memory, key, &state).await;
                prepare(&pair.redis, key, &state).await;
                let keys: &[&[u8]] = if script.name() == "fenced-acquire" {
                    &[key, fence]
                } else {
                    &[key]
                };
                let native = pair.memory.eval(script, keys, &args).await;
                let lua = pair.redis.eval(script, keys, &args).await;
                let case = format!(
                    "{} on {state:?} with {:?}",
                    script.name(),
                    args.iter()
                        .map(|a| String::from_utf8_lossy(a))
                        .collect::<Vec<_>>()
                );
                assert!(
                    replies_close(&native, &lua),
                    "reply of {case}: native {native:?}, lua {lua:?}"
                );
                let (mem_value, mem_ttl) = observe(&pair.memory, key).await;
                let (redis_value, redis_ttl) = observe(&pair.redis, key).await;
                assert_eq!(mem_value, redis_value, "value after {case}");
                assert!(
                    ttl_close(mem_ttl, redis_ttl, 200),
                    "PTTL after {case}: memory {mem_ttl}, redis {redis_ttl}"
                );
                assert_eq!(
                    observe(&pair.memory, fence).await,
                    observe(&pair.redis, fence).await,
                    "fence counter after {case}"
                );
                compared += 1;
            }
        }
    }
    println!("compared {compared} script runs on both backends");
    assert!(compared >= 9 * 28);
}
