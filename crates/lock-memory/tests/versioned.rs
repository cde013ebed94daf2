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
