//! Bad input gets a typed error, never a panic.

use std::time::Duration;

use lock_core::{
    ErrorKind, FairLock, FencedLock, KvBackend, LegacyLock, LockAlgorithm, LockError, LockGuard,
    LockName, LockOptions, LockOwner, MAX_TTL, NamedLock, ReentrantLock, ScriptedLock, TokenLock,
    Value, Wait, scripts,
};
use lock_memory::MemoryBackend;

fn name() -> LockName {
    LockName::new("k").unwrap()
}

/// Builds every algorithm on `name` with `options`, each answer named.
fn build_all(
    backend: &MemoryBackend,
    name: &LockName,
    options: &LockOptions,
) -> Vec<(&'static str, Result<(), LockError>)> {
    let b = || backend.clone();
    let o = || options.clone();
    let owner = LockOwner::new();
    vec![
        ("token", TokenLock::with_options(b(), name, o()).map(drop)),
        ("legacy", LegacyLock::with_options(b(), name, o()).map(drop)),
        (
            "scripted",
            ScriptedLock::with_options(b(), name, o()).map(drop),
        ),
        (
            "reentrant",
            ReentrantLock::with_options(b(), name, owner, o()).map(drop),
        ),
        ("fenced", FencedLock::with_options(b(), name, o()).map(drop)),
        ("fair", FairLock::with_options(b(), name, o()).map(drop)),
    ]
}

#[tokio::test]
async fn a_ttl_out_of_range_is_refused_when_any_lock_is_built() {
    let backend = MemoryBackend::new();
    for ttl in [
        Duration::ZERO,
        Duration::from_micros(999),
        MAX_TTL + Duration::from_millis(1),
        Duration::from_millis(i64::MAX as u64),
    ] {
        for (algorithm, built) in build_all(&backend, &name(), &LockOptions::new().ttl(ttl)) {
            assert!(
                matches!(built, Err(LockError::InvalidConfig(_))),
                "{algorithm} with ttl {ttl:?}: {built:?}"
            );
        }
    }
    for (algorithm, built) in build_all(&backend, &name(), &LockOptions::new().ttl(MAX_TTL)) {
        assert!(built.is_ok(), "{algorithm} refused MAX_TTL: {built:?}");
    }
    assert_eq!(backend.stats().commands, 0, "nothing was sent");
}

#[tokio::test]
async fn wait_notify_is_refused_when_an_algorithm_cannot_honour_it() {
    let backend = MemoryBackend::new();
    let notify = LockOptions::new().wait(Wait::Notify);
    for (algorithm, built) in build_all(&backend, &name(), &notify) {
        match algorithm {
            "token" => assert!(built.is_ok(), "token refused Wait::Notify: {built:?}"),
            _ => match built {
                Err(LockError::InvalidConfig(why)) => {
                    assert!(why.contains("Wait::Notify"), "{why}")
                }
                other => panic!("{algorithm} accepted Wait::Notify: {other:?}"),
            },
        }
    }
}

#[test]
fn an_empty_name_cannot_name_a_lock() {
    // Every lock is built from a LockName, and there is no empty one: all unset keys
    // sharing one lock cannot happen.
    assert!(matches!(
        LockName::new(""),
        Err(LockError::InvalidConfig(_))
    ));
    assert!("".parse::<LockName>().is_err());
    assert!(LockName::try_from("").is_err());
}

#[tokio::test]
async fn a_scripted_acquire_whose_ttl_the_store_rejects_leaves_no_lock() {
    // Seed 001's order (SETNX, then PEXPIRE) left the key behind without a TTL when the
    // PEXPIRE failed: a lock nobody holds and nothing expires.
    let backend = MemoryBackend::new();
    let max = i64::MAX.to_string();
    let error = backend
        .eval(
            &scripts::LEGACY_ACQUIRE,
            &[b"k"],
            &[b"1", max.as_bytes(), b"0"],
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Script);
    assert_eq!(error.message(), "ERR invalid expire time in 'set' command");
    assert_eq!(backend.get(b"k").await.unwrap(), None, "{}", backend.dump());
}

#[tokio::test]
async fn extending_by_zero_is_an_invalid_config_and_keeps_the_lock() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::new(backend.clone(), &name());
    let mut guard = lock.acquire().await.unwrap();
    assert!(matches!(
        guard.extend(Duration::ZERO).await,
        Err(LockError::InvalidConfig(_))
    ));
    assert!(guard.release().await.unwrap());
}

#[tokio::test]
async fn scripts_given_extreme_or_garbage_arguments_answer_without_panicking() {
    let backend = MemoryBackend::new();
    let max = i64::MAX.to_string();
    let min = i64::MIN.to_string();
    // A safety TTL of i64::MAX overflows: Redis's error, not a panic, and nothing written.
    let overflow = backend
        .eval(
            &scripts::LEGACY_ACQUIRE,
            &[b"k"],
            &[max.as_bytes(), max.as_bytes(), min.as_bytes()],
        )
        .await
        .unwrap_err();
    assert_eq!(
        overflow.message(),
        "ERR invalid expire time in 'set' command"
    );
    backend
        .set(b"k", max.as_bytes(), Default::default())
        .await
        .unwrap();
    let held = backend
        .eval(
            &scripts::LEGACY_ACQUIRE,
            &[b"k"],
            &[b"1", b"1", min.as_bytes()],
        )
        .await
        .unwrap();
    assert_eq!(
        held,
        Value::Array(vec![Value::Int(2), Value::Int(i64::MAX)])
    );
    let garbage = backend
        .eval(
            &scripts::COMPARE_AND_PEXPIRE,
            &[b"k"],
            &[max.as_bytes(), b"soon"],
        )
        .await
        .unwrap_err();
    assert_eq!(garbage.kind(), ErrorKind::Script);
    backend
        .set(
            b"r",
            format!("me:{}", i64::MAX).as_bytes(),
            Default::default(),
        )
        .await
        .unwrap();
    let reentered = backend
        .eval(&scripts::REENTRANT_ACQUIRE, &[b"r"], &[b"me", b"1000"])
        .await
        .unwrap();
    assert_eq!(
        reentered,
        Value::Array(vec![Value::Int(1), Value::Int(i64::MAX)])
    );
}

#[test]
fn lock_names_that_would_break_hash_tags_are_rejected() {
    for bad in ["", "a{b", "a}b", "{x}"] {
        assert!(
            matches!(LockName::new(bad), Err(LockError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
}
