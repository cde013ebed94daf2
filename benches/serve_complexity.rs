//! `cargo bench --bench serve_complexity`: what one call of serve's collection and
//! keyspace commands costs as the collection grows, at 10k, 100k and 1M members (or
//! keys). Redis answers these in O(log n + m) or O(1); so must serve, whose commands
//! every client waits behind. Each command runs in process, through the double's Lua
//! runner (serve's own command code, without a socket), so the fixed cost of a script
//! call is in every figure and the growth is the command's own. The ratio of the 1M
//! figure to the 10k one is in docs/PERFORMANCE.md; it must stay at or below 3.
//!
//! The commands on part of a string (GETRANGE, SUBSTR, STRLEN, SETRANGE, APPEND, GETBIT,
//! SETBIT, BITCOUNT and BITPOS with a range) are
//! timed on a string of 1 MB and of 128 MB: Redis's cost the part, not the value, so
//! the ratio of the two must stay at or below 3 too.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use nxlock::MemoryBackend;
use nxlock::backend::{KvBackend, Value};
use nxlock::memory::LuaScripts;
use nxlock::script::Script;

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

/// A double holding a sorted set `z` and a set `s` of `n` members each (`m0`…, scored by
/// their number), and `n` string keys.
fn filled(runtime: &tokio::runtime::Runtime, n: usize) -> MemoryBackend {
    let backend = MemoryBackend::new().with_script_runner(LuaScripts::shared());
    // As serve's databases do: RANDOMKEY and DBSIZE in O(1).
    backend.index_keys();
    let fill = Script::new(
        "fill",
        "for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do \
           redis.call('ZADD', 'z', i, 'm' .. i) \
           redis.call('SADD', 's', 'm' .. i) \
           redis.call('SET', 'k' .. i, i) \
         end return 1",
    );
    runtime.block_on(async {
        let mut from = 0;
        while from < n {
            let to = (from + 10_000).min(n) - 1;
            let (a, b) = (from.to_string(), to.to_string());
            backend
                .eval(&fill, &[], &[a.as_bytes(), b.as_bytes()])
                .await
                .expect("fills");
            from = to + 1;
        }
    });
    backend
}

fn complexity(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Each script leaves the collections as it found them, so every call sees n members.
    let commands: [(&str, &str); 11] = [
        ("ZRANGE z 0 0", "return redis.call('ZRANGE', 'z', 0, 0)"),
        ("ZRANK", "return redis.call('ZRANK', 'z', 'm' .. ARGV[1])"),
        (
            "ZCOUNT",
            "return redis.call('ZCOUNT', 'z', ARGV[1], ARGV[1] + 10)",
        ),
        (
            "ZRANGEBYSCORE",
            "return redis.call('ZRANGEBYSCORE', 'z', ARGV[1], ARGV[1] + 10)",
        ),
        (
            "ZREMRANGEBYRANK z 0 0",
            "local m = redis.call('ZRANGE', 'z', 0, 0, 'WITHSCORES') \
             redis.call('ZREMRANGEBYRANK', 'z', 0, 0) return redis.call('ZADD', 'z', m[2], m[1])",
        ),
        (
            "ZPOPMIN",
            "local m = redis.call('ZPOPMIN', 'z') return redis.call('ZADD', 'z', m[2], m[1])",
        ),
        (
            "ZPOPMAX",
            "local m = redis.call('ZPOPMAX', 'z') return redis.call('ZADD', 'z', m[2], m[1])",
        ),
        (
            "SRANDMEMBER s 5",
            "return redis.call('SRANDMEMBER', 's', 5)",
        ),
        (
            "SPOP",
            "local m = redis.call('SPOP', 's') return redis.call('SADD', 's', m)",
        ),
        ("RANDOMKEY", "return redis.call('RANDOMKEY')"),
        ("DBSIZE", "return redis.call('DBSIZE')"),
    ];
    let mut group = c.benchmark_group("serve-complexity");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));
    for n in SIZES {
        let backend = filled(&runtime, n);
        let middle = (n / 2).to_string();
        for (name, body) in commands {
            let script = Script::new(name, body);
            // Loaded once: the figure is the call, not the compilation.
            let first = runtime.block_on(backend.eval(&script, &[], &[middle.as_bytes()]));
            assert!(
                !matches!(first, Err(_) | Ok(Value::Nil)),
                "{name} at {n}: {first:?}"
            );
            group.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| runtime.block_on(backend.eval(&script, &[], &[middle.as_bytes()])));
            });
        }
    }
    group.finish();
}

/// The sizes of the big-string group.
const STRING_SIZES: [(usize, &str); 2] = [(1 << 20, "1MB"), (128 << 20, "128MB")];

fn big_strings(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // APPEND grows the value by a byte a call: by well under 1% over a measurement.
    let commands: [(&str, &str); 9] = [
        (
            "GETRANGE big 0 0",
            "return redis.call('GETRANGE', 'big', 0, 0)",
        ),
        (
            "SUBSTR big -2 -1",
            "return redis.call('SUBSTR', 'big', -2, -1)",
        ),
        ("STRLEN big", "return redis.call('STRLEN', 'big')"),
        (
            "SETRANGE big <middle> x",
            "return redis.call('SETRANGE', 'big', ARGV[1], 'x')",
        ),
        ("APPEND big x", "return redis.call('APPEND', 'big', 'x')"),
        (
            "GETBIT big <middle>",
            "return redis.call('GETBIT', 'big', ARGV[1])",
        ),
        (
            "SETBIT big <middle> 1",
            "return redis.call('SETBIT', 'big', ARGV[1], 1)",
        ),
        (
            "BITCOUNT big 0 1023",
            "return redis.call('BITCOUNT', 'big', 0, 1023)",
        ),
        (
            "BITPOS big 1 -1024 -1",
            "return redis.call('BITPOS', 'big', 1, -1024, -1)",
        ),
    ];
    let mut group = c.benchmark_group("serve-big-strings");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(2));
    group.warm_up_time(Duration::from_millis(500));
    for (size, label) in STRING_SIZES {
        let backend = MemoryBackend::new().with_script_runner(LuaScripts::shared());
        runtime
            .block_on(backend.set(b"big", &vec![b'v'; size], Default::default()))
            .expect("stores the string");
        let middle = (size / 2).to_string();
        for (name, body) in commands {
            let script = Script::new(name, body);
            let first = runtime.block_on(backend.eval(&script, &[], &[middle.as_bytes()]));
            assert!(
                matches!(first, Ok(Value::Data(_) | Value::Int(_))),
                "{name} at {label}: {first:?}"
            );
            group.bench_function(BenchmarkId::new(name, label), |b| {
                b.iter(|| runtime.block_on(backend.eval(&script, &[], &[middle.as_bytes()])));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, complexity, big_strings);
criterion_main!(benches);
