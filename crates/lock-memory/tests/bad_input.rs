//! Bad input gets a typed error, never a panic.

use std::time::Duration;

use lock_core::{
    ErrorKind, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions, ScriptedLock,
    TokenLock, Value, scripts,
};
use lock_memory::MemoryBackend;

#[tokio::test]
async fn a_zero_ttl_is_an_invalid_config_for_every_algorithm() {
    let backend = MemoryBackend::new();
    let zero = LockOptions::new().ttl(Duration::ZERO);
    let token = TokenLock::with_options(backend.clone(), "k", zero.clone());
    assert!(matches!(
        token.try_acquire().await,
        Err(LockError::InvalidConfig(_))
    ));
    let scripted = ScriptedLock::with_options(backend.clone(), "k", zero);
    assert!(matches!(
        scripted.try_acquire().await,
        Err(LockError::InvalidConfig(_))
    ));
    assert_eq!(backend.stats().commands, 0, "nothing was sent");
}

#[tokio::test]
async fn extending_by_zero_is_an_invalid_config_and_keeps_the_lock() {
    let backend = MemoryBackend::new();
    let lock = TokenLock::new(backend.clone(), "k");
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
    // A TTL of i64::MAX overflows the safety PEXPIRE: Redis's error, not a panic. As in
    // Redis, the script's SETNX before the failing command stays written.
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
        "ERR invalid expire time in 'pexpire' command"
    );
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
