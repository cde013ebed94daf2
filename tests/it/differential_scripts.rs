//! Every built-in Script: its native body (on MemoryBackend) and its Lua source (on a real
//! redis-server) give the same reply and leave the same keyspace, across edge cases.

use crate::support;

use nxlock::backend::{SetOptions, Value};
use nxlock::script::Script;
use nxlock::{KvBackend, script};
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
        b"3:abc".to_vec(),
        b"12:x:y".to_vec(),
        b"0:".to_vec(),
        b":no-version".to_vec(),
        b"3abc".to_vec(),
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
        "notify-release" => vec![
            vec![s("token-1"), s("differential:wake")],
            vec![s("token-1"), s("differential:wake"), s("PUBLISH")],
        ],
        "acquire-or-pttl" => vec![vec![s("token-1"), n(5_000)]],
        // The claim (second key) is left as the runs before made it: missing, or another
        // script's value, or a claim by token-1 or token-2.
        "notify-acquire" => vec![
            vec![s("token-1"), n(5_000), n(0)],
            vec![s("token-1"), n(5_000), n(3_000)],
            vec![s("token-2"), n(5_000), n(3_000)],
            vec![s("token-2"), n(5_000), n(0)],
        ],
        // The write log (second key) is left as the runs before made it, so a write id
        // repeats: the second send of a write finds it there.
        "compare-and-set" => vec![
            vec![n(0), s("v"), s("00000000000000a1")],
            vec![n(3), s("new"), s("00000000000000b2")],
            vec![n(12), s(""), s("00000000000000c3")],
            vec![n(2), s("x"), s("00000000000000a1")],
            vec![n(4), s("y"), s("00000000000000d4")],
        ],
        other => panic!("no argument sets for script {other}: add them"),
    }
}

/// Equal, except that integers that are remaining times (>= 100 ms, from PTTL) may differ
/// by the time between the two calls. Codes and counts are small and compared exactly.
fn replies_close(a: &nxlock::backend::Result<Value>, b: &nxlock::backend::Result<Value>) -> bool {
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
    // The fair-queue scripts use several keys; `fair_queue_scripts_agree` covers them.
    for script in script::all()
        .into_iter()
        .filter(|s| !s.name().starts_with("fair-"))
    {
        // A second key is the fence counter; the reentrant acquire runs with and without it.
        let key_sets: &[&[&[u8]]] = match script.name() {
            "fenced-acquire" | "notify-acquire" | "compare-and-set" => &[&[key, fence]],
            "reentrant-acquire" => &[&[key], &[key, fence]],
            _ => &[&[key]],
        };
        // Each script starts with the second key missing, whatever the last one left.
        pair.memory.del(&[fence]).await.unwrap();
        pair.redis.del(&[fence]).await.unwrap();
        for &keys in key_sets {
            for state in states(now) {
                for args in arg_sets(script, now) {
                    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                    prepare(&pair.memory, key, &state).await;
                    prepare(&pair.redis, key, &state).await;
                    let native = pair.memory.eval(script, keys, &args).await;
                    let lua = pair.redis.eval(script, keys, &args).await;
                    let case = format!(
                        "{} with {} key(s) on {state:?} with {:?}",
                        script.name(),
                        keys.len(),
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
                    let (mem_fence, mem_fence_ttl) = observe(&pair.memory, fence).await;
                    let (redis_fence, redis_fence_ttl) = observe(&pair.redis, fence).await;
                    assert_eq!(mem_fence, redis_fence, "second key after {case}");
                    assert!(
                        ttl_close(mem_fence_ttl, redis_fence_ttl, 200),
                        "second key's PTTL after {case}: memory {mem_fence_ttl}, redis {redis_fence_ttl}"
                    );
                    compared += 1;
                }
            }
        }
    }
    println!("compared {compared} script runs on both backends");
    assert!(compared >= 12 * 28);
}

/// Fair-queue keys: the lock, the issued and served counters, and tickets 1 to 4.
const FAIR_LOCK: &[u8] = b"{fair}:lock";
const FAIR_ISSUED: &[u8] = b"{fair}:issued";
const FAIR_SERVED: &[u8] = b"{fair}:served";
const FAIR_TICKETS: &[u8] = b"{fair}:ticket:";
const FAIR_WAKE: &[u8] = b"{fair}:wake";

fn fair_keys() -> Vec<Vec<u8>> {
    let mut keys = vec![
        FAIR_LOCK.to_vec(),
        FAIR_ISSUED.to_vec(),
        FAIR_SERVED.to_vec(),
    ];
    keys.extend((1..=4).map(|n| [FAIR_TICKETS, n.to_string().as_bytes()].concat()));
    keys
}

/// A fair lock's state: (key, value, PX) for each key present.
type FairState = Vec<(Vec<u8>, Vec<u8>, Option<i64>)>;

fn fair_states() -> Vec<(&'static str, FairState)> {
    let k = |suffix: &str| [b"{fair}:".as_slice(), suffix.as_bytes()].concat();
    let entry = |suffix: &str, value: &str, px| (k(suffix), value.as_bytes().to_vec(), px);
    let held = entry("lock", "A", Some(10_000));
    let line = |served: &str| vec![entry("issued", "3", None), entry("served", served, None)];
    vec![
        ("empty", vec![]),
        ("held, nobody waiting", vec![held.clone()]),
        ("held, B and C waiting", {
            let mut s = vec![held.clone()];
            s.extend(line("1"));
            s.push(entry("ticket:2", "B", Some(5_000)));
            s.push(entry("ticket:3", "C", Some(5_000)));
            s
        }),
        ("held, B dead, C waiting", {
            let mut s = vec![held.clone()];
            s.extend(line("1"));
            s.push(entry("ticket:3", "C", Some(5_000)));
            s
        }),
        ("free, B and C waiting", {
            let mut s = line("1");
            s.push(entry("ticket:2", "B", Some(5_000)));
            s.push(entry("ticket:3", "C", Some(5_000)));
            s
        }),
        ("free, everyone dead", line("1")),
        ("handed to B", {
            let mut s = vec![entry("lock", "B+line", Some(2_000))];
            s.extend(line("2"));
            s.push(entry("ticket:3", "C", Some(5_000)));
            s
        }),
        // A newcomer's SET NX took a lapsed lock ahead of the line: not marked yet.
        ("taken bare by B, C waiting", {
            let mut s = vec![entry("lock", "B", Some(10_000))];
            s.extend(line("2"));
            s.push(entry("ticket:3", "C", Some(5_000)));
            s
        }),
        (
            "held marked, nobody waiting",
            vec![entry("lock", "A+line", Some(10_000))],
        ),
    ]
}

async fn prepare_fair(backend: &impl KvBackend, state: &FairState) {
    let keys = fair_keys();
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    backend.del(&keys).await.unwrap();
    for (key, value, px) in state {
        let options = px.map_or(SetOptions::new(), |px| SetOptions::new().px(px));
        backend.set(key, value, options).await.unwrap();
    }
}

/// Every fair-queue script call, on every queue state: same reply, same keys and TTLs,
/// and the same wake-up messages on the lock's channel.
#[tokio::test]
async fn fair_queue_scripts_agree() {
    let Some(pair) = Pair::new("fair_queue_scripts_agree").await else {
        return;
    };
    let calls: Vec<(&Script, Vec<&str>)> = vec![
        (&script::FAIR_ACQUIRE, vec!["A", "0"]),
        (&script::FAIR_ACQUIRE, vec!["B", "2"]),
        (&script::FAIR_ACQUIRE, vec!["C", "3"]),
        (&script::FAIR_ACQUIRE, vec!["D", "0"]),
        (&script::FAIR_ACQUIRE, vec!["D", "2"]),
        (&script::FAIR_ACQUIRE, vec!["D", "-1"]),
        (&script::FAIR_RELEASE, vec!["A", "0"]),
        (&script::FAIR_RELEASE, vec!["B", "2"]),
        (&script::FAIR_RELEASE, vec!["C", "3"]),
        (&script::FAIR_RELEASE, vec!["C", "0"]),
        // Passes: the holder names a successor of its own process.
        (&script::FAIR_RELEASE, vec!["A", "0", "E"]),
        (&script::FAIR_RELEASE, vec!["B", "0", "E"]),
        (&script::FAIR_EXTEND, vec!["A", "30000"]),
        (&script::FAIR_EXTEND, vec!["B", "30000"]),
    ];
    let mut memory_wake = pair.memory.subscribe(FAIR_WAKE).await.unwrap();
    let mut redis_wake = pair.redis.subscribe(FAIR_WAKE).await.unwrap();
    let mut compared = 0;
    for (name, state) in fair_states() {
        for (script, call) in &calls {
            prepare_fair(&pair.memory, &state).await;
            prepare_fair(&pair.redis, &state).await;
            let (own, successor) = call.split_at(call.len().min(2));
            let mut args: Vec<&[u8]> = own.iter().map(|a| a.as_bytes()).collect();
            let keys: &[&[u8]] = if script.name() == "fair-extend" {
                &[FAIR_LOCK]
            } else {
                args.extend([b"2000".as_slice(), FAIR_TICKETS, FAIR_WAKE, b"PUBLISH"]);
                &[FAIR_LOCK, FAIR_ISSUED, FAIR_SERVED]
            };
            if let [successor] = successor {
                args.extend([successor.as_bytes(), b"10000"]);
            }
            if script.name() == "fair-acquire" {
                args.push(b"10000");
            }
            let native = pair.memory.eval(script, keys, &args).await;
            let lua = pair.redis.eval(script, keys, &args).await;
            let case = format!("{} {call:?} when {name}", script.name());
            assert!(
                replies_close(&native, &lua),
                "reply of {case}: native {native:?}, lua {lua:?}"
            );
            for key in fair_keys() {
                let (mem, redis) = (
                    observe(&pair.memory, &key).await,
                    observe(&pair.redis, &key).await,
                );
                let key = String::from_utf8_lossy(&key);
                assert_eq!(mem.0, redis.0, "{key} after {case}");
                assert!(ttl_close(mem.1, redis.1, 200), "PTTL of {key} after {case}");
            }
            // A wake-up names the new holder; PING-free check: publish a marker after the
            // call, so "nothing published" reads the marker on both sides.
            pair.memory.publish(FAIR_WAKE, b"-").await.unwrap();
            pair.redis.publish(FAIR_WAKE, b"-").await.unwrap();
            let (mem_msg, redis_msg) = (
                memory_wake.recv().await.unwrap(),
                redis_wake.recv().await.unwrap(),
            );
            assert_eq!(mem_msg, redis_msg, "wake-up after {case}");
            if &*mem_msg != b"-" {
                assert_eq!(&*memory_wake.recv().await.unwrap(), b"-");
                assert_eq!(&*redis_wake.recv().await.unwrap(), b"-");
            }
            compared += 1;
        }
    }
    println!("compared {compared} fair-queue script runs on both backends");
    assert_eq!(compared, 9 * 14);
}
