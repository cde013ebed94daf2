//! Version profiles: the double answers as the Redis version it is given, the suite judges
//! a backend against the version its harness names, and a mismatch says which version's
//! text the backend gave.

use std::time::Duration;

use nxlock::backend::{RedisVersion, Replication};
use nxlock::conformance::{JudgedAs, Outcome, run_matching};
use nxlock::harness::MemoryClusterHarness;
use nxlock::memory::MemoryReplicaSet;
use nxlock::{ErrorKind, KvBackend, script};

const CASE: &str = "cluster::one_command_in_a_script_spanning_slots_is_refused";

/// The cross-slot case on a double answering as `answers`, judged against `judged`.
async fn cross_slot_case(answers: RedisVersion, judged: RedisVersion) -> (Outcome, String) {
    let harness = JudgedAs::new(
        MemoryClusterHarness::default().with_redis_version(answers),
        judged,
    );
    let report = run_matching(&harness, &|name| name == CASE).await;
    assert_eq!(report.redis_version, judged);
    let case = &report.cases[0];
    (case.outcome.clone(), case.detail.clone())
}

#[tokio::test]
async fn each_version_passes_when_judged_against_itself() {
    for version in RedisVersion::ALL {
        assert_eq!(
            cross_slot_case(version, version).await.0,
            Outcome::Passed,
            "{version}"
        );
    }
    // 7.0 and 7.2 share the text.
    let (outcome, _) = cross_slot_case(RedisVersion::V7_2, RedisVersion::V7_0).await;
    assert_eq!(outcome, Outcome::Passed);
}

#[tokio::test]
async fn a_mismatch_names_every_versions_text_and_the_one_given() {
    let (outcome, detail) = cross_slot_case(RedisVersion::V7_0, RedisVersion::V7_4).await;
    assert_eq!(outcome, Outcome::Failed);
    assert!(detail.contains("judged as Redis 7.4"), "{detail}");
    assert!(
        detail.contains("which is the text of 7.0 and 7.2"),
        "{detail}"
    );
    assert!(
        detail.contains("7.4: \"ERR Command 'del' in script attempted to access keys that don't hash to the same slot\""),
        "{detail}"
    );
}

/// `WAITAOF` exists from 7.2: the double's replica set acknowledges with its replicas
/// under the newest profile, and refuses it under 7.0, writing nothing.
#[tokio::test(start_paused = true)]
async fn waitaof_acquires_from_7_2_and_is_refused_on_7_0() {
    let fsync = Replication::new(1, Duration::from_millis(300)).fsync();
    let acquire = |set: MemoryReplicaSet| async move {
        let client = set.client();
        let reply = client
            .eval_replicated(
                &script::ACQUIRE_OR_PTTL,
                &[b"{f}:lock"],
                &[b"me", b"30000"],
                &fsync,
            )
            .await;
        (reply, client.exists(&[b"{f}:lock"]).await.unwrap())
    };
    let (newest, written) = acquire(MemoryReplicaSet::new(1)).await;
    assert_eq!(newest.unwrap().acknowledged, 1);
    assert_eq!(written, 1);
    let (old, written) =
        acquire(MemoryReplicaSet::new(1).with_redis_version(RedisVersion::V7_0)).await;
    let refused = old.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::Unsupported);
    assert!(
        refused
            .message()
            .starts_with("ERR unknown command 'WAITAOF'"),
        "{refused}"
    );
    assert_eq!(written, 0);
}

/// A user's Lua on the double sees the backend's version: one runner, shared by backends
/// of two versions, reports each one's and holds each one's rules for scripts.
#[tokio::test]
async fn lua_on_the_double_answers_as_the_backends_version() {
    use nxlock::MemoryBackend;
    use nxlock::backend::Value;
    use nxlock::memory::LuaScripts;
    use nxlock::script::Script;

    let runner = LuaScripts::shared();
    let reported = Script::new("version", "return redis.REDIS_VERSION");
    let waitaof = Script::new("waitaof", "return redis.call('WAITAOF', 0, 0, 0)");
    for version in RedisVersion::ALL {
        let double = MemoryBackend::new()
            .with_redis_version(version)
            .with_script_runner(runner.clone());
        assert_eq!(
            double.eval(&reported, &[], &[]).await.unwrap(),
            Value::Data(version.release().into()),
            "{version}"
        );
        let called = double.eval(&waitaof, &[], &[]).await;
        match version {
            RedisVersion::V7_0 => assert!(
                called
                    .unwrap_err()
                    .message()
                    .starts_with("ERR Unknown Redis command called from script")
            ),
            RedisVersion::V7_2 => assert!(
                called
                    .unwrap_err()
                    .message()
                    .starts_with("ERR This Redis command is not allowed from script")
            ),
            RedisVersion::V7_4 => assert_eq!(
                called.unwrap(),
                Value::Array(vec![Value::Int(0), Value::Int(0)])
            ),
        }
    }
}
