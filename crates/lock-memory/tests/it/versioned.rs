//! `Versioned` on the double: a conflict past the policy's limit is a typed error, and
//! the update writes nothing.

use lock_core::{AcquirePolicy, LockError, LockName, Retry, Versioned};
use lock_memory::MemoryBackend;

#[tokio::test(start_paused = true)]
async fn a_conflict_on_every_allowed_attempt_is_conflicted_and_writes_nothing() {
    let backend = MemoryBackend::new();
    let name = LockName::new("stock:7").unwrap();
    let value = Versioned::new(backend.clone(), &name)
        .with_policy(AcquirePolicy::retry(Retry::Attempts(1)));
    assert_eq!(value.compare_and_set(0, b"10").await.unwrap(), Some(1));
    // The one attempt allowed is overtaken between its read and its write: here by a
    // FLUSHALL, which the compute step runs (it is synchronous on the double).
    let error = value
        .update(|_| {
            backend.flush();
            b"11".to_vec()
        })
        .await
        .unwrap_err();
    match error {
        LockError::Conflicted { conflicts, .. } => assert_eq!(conflicts, 1),
        other => panic!("expected Conflicted, got {other:?}"),
    }
    let snapshot = value.read().await.unwrap();
    assert_eq!((snapshot.version, snapshot.value), (0, None));
}

fn increment(old: Option<&[u8]>) -> Vec<u8> {
    let n: i64 = old.map_or(0, |v| std::str::from_utf8(v).unwrap().parse().unwrap());
    (n + 1).to_string().into_bytes()
}

#[tokio::test(start_paused = true)]
async fn an_update_whose_reply_was_lost_runs_once() {
    let backend = MemoryBackend::new();
    let value = Versioned::new(backend.clone(), &LockName::new("counter").unwrap());
    value.update(increment).await.unwrap();
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    let updated = value.update(increment).await.unwrap();
    assert_eq!((updated.version, updated.value), (2, b"2".to_vec()));
    let snapshot = value.read().await.unwrap();
    assert_eq!((snapshot.version, snapshot.value), (2, Some(b"2".to_vec())));
}

#[tokio::test(start_paused = true)]
async fn sixteen_writers_with_lost_replies_apply_each_ok_update_exactly_once() {
    let backend = MemoryBackend::new();
    let name = LockName::new("counter").unwrap();
    // Commands take a millisecond, so the writers interleave; the first 80 scripts, whoever
    // sent them, run and lose their replies.
    backend
        .faults()
        .set_latency(std::time::Duration::from_millis(1));
    backend.faults().lose_replies(Some("EVALSHA"), 80);
    let mut writers = Vec::new();
    for _ in 0..16 {
        let value = Versioned::new(backend.clone(), &name);
        writers.push(tokio::spawn(async move {
            let mut outcomes = (0u64, 0u64);
            for _ in 0..15 {
                match value.update(increment).await {
                    Ok(_) => outcomes.0 += 1,
                    Err(LockError::OutcomeUnknown { .. }) => outcomes.1 += 1,
                    Err(other) => panic!("unexpected error: {other}"),
                }
            }
            outcomes
        }));
    }
    let (mut ok, mut unknown) = (0, 0);
    for writer in writers {
        let (o, u) = writer.await.unwrap();
        ok += o;
        unknown += u;
    }
    let stored: u64 = {
        let snapshot = Versioned::new(backend.clone(), &name).read().await.unwrap();
        std::str::from_utf8(&snapshot.value.unwrap())
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(backend.faults().injected(), 80, "replies lost");
    assert_eq!(ok + unknown, 16 * 15);
    assert!(
        (ok..=ok + unknown).contains(&stored),
        "{ok} Ok updates and {unknown} of unknown outcome stored {stored}"
    );
    // With 16 writers, the write log always settles a lost reply.
    assert_eq!(unknown, 0);
}

#[tokio::test(start_paused = true)]
async fn a_lost_reply_under_a_policy_without_retries_is_outcome_unknown() {
    let backend = MemoryBackend::new();
    let value = Versioned::new(backend.clone(), &LockName::new("counter").unwrap())
        .with_policy(AcquirePolicy::retry(Retry::Once));
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    let error = value.update(increment).await.unwrap_err();
    assert!(
        matches!(
            error,
            LockError::OutcomeUnknown {
                last_error: Some(_),
                ..
            }
        ),
        "{error:?}"
    );
    // It ran once.
    assert_eq!(value.read().await.unwrap().version, 1);
}

#[tokio::test(start_paused = true)]
async fn a_lost_write_overtaken_by_more_writes_than_the_log_keeps_is_outcome_unknown() {
    use lock_core::scripts::WRITE_LOG_ENTRIES;
    let backend = MemoryBackend::new();
    let name = LockName::new("counter").unwrap();
    let value = Versioned::new(backend.clone(), &name);
    backend.faults().lose_replies(Some("EVALSHA"), 1);
    // The first send ran and lost its reply; before it is sent again, others write more
    // times than the log keeps (the retry waits out the policy's backoff first).
    let other = Versioned::new(backend.clone(), &name);
    let overtaking = tokio::spawn(async move {
        for _ in 0..=WRITE_LOG_ENTRIES {
            other.update(increment).await.unwrap();
        }
    });
    let error = value.update(increment).await.unwrap_err();
    overtaking.await.unwrap();
    assert!(
        matches!(error, LockError::OutcomeUnknown { .. }),
        "{error:?}"
    );
    assert_eq!(
        value.read().await.unwrap().version,
        1 + WRITE_LOG_ENTRIES as i64 + 1
    );
}
