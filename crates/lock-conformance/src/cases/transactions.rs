//! `WATCH` … `MULTI` … `EXEC` ([`KvBackend::watch`]): optimistic concurrency as Redis
//! offers it. A watched key written, deleted or expired before `EXEC` makes it write
//! nothing; a transaction dropped before `EXEC` writes nothing; retried transactions lose
//! no update. (`WATCH` on a shared multiplexed connection, unsafe in redis-rs, cannot be
//! built with this API: every transaction has a connection of its own.)

use std::time::Duration;

use lock_core::{KvBackend, SetOptions, TxWrite};

use super::optimistic::{WRITERS, counter};
use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq, check_reply};

/// Sixteen writers each increment a counter in a transaction, again until `EXEC`
/// applies: every increment lands.
pub async fn watch_loses_no_update_under_16_writers(ctx: &Ctx<'_>) -> CaseResult {
    let key = ctx.key("counter");
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let (backend, key) = (ctx.backend.clone(), key.clone());
        writers.push(tokio::spawn(async move {
            let mut aborted = 0u32;
            loop {
                let transaction = backend.watch(&[&key]).await?;
                let next = counter(transaction.values()[0].as_deref()) + 1;
                let write = TxWrite::set(key.clone(), next.to_string());
                if transaction.exec(vec![write]).await? {
                    return Ok::<_, lock_core::Error>(aborted);
                }
                aborted += 1;
                tokio::task::yield_now().await;
            }
        }));
    }
    for writer in writers {
        writer
            .await
            .map_err(|e| Failure(format!("a writer panicked: {e}")))??;
    }
    let total = counter(ctx.backend.get(&key).await?.as_deref());
    check_eq!(
        total,
        WRITERS as u64,
        "the counter after {WRITERS} increments"
    );
    Ok(Verdict::Passed)
}

/// A watched key another client writes before `EXEC`: nothing of the transaction is
/// written.
pub async fn a_watched_key_written_by_another_client_aborts_exec(ctx: &Ctx<'_>) -> CaseResult {
    let (b, key, other) = (&ctx.backend, ctx.key("watched"), ctx.key("other"));
    b.set(&key, b"1", SetOptions::new()).await?;
    let transaction = b.watch(&[&key]).await?;
    check_eq!(
        transaction.values(),
        [Some(b"1".to_vec())],
        "the value read under WATCH"
    );
    b.set(&key, b"theirs", SetOptions::new()).await?;
    let writes = vec![
        TxWrite::set(key.clone(), "mine"),
        TxWrite::set(other.clone(), "x"),
    ];
    check!(
        !transaction.exec(writes).await?,
        "EXEC applied after the watched key changed"
    );
    check_reply!(
        b.get(&key).await,
        "$6 theirs",
        "GET {} (the watched key)",
        String::from_utf8_lossy(&key)
    );
    check_reply!(
        b.exists(&[&other]).await,
        ":0",
        "EXISTS {} (the transaction's other write)",
        String::from_utf8_lossy(&other)
    );
    Ok(Verdict::Passed)
}

/// A watched key that expires before `EXEC` counts as changed (Redis 6.0.9 and later).
pub async fn a_watched_key_that_expires_aborts_exec(ctx: &Ctx<'_>) -> CaseResult {
    let (b, key, other) = (&ctx.backend, ctx.key("expiring"), ctx.key("other"));
    b.set(&key, b"1", SetOptions::new().px(100)).await?;
    let transaction = b.watch(&[&key]).await?;
    ctx.advance(Duration::from_millis(250)).await;
    check!(
        !transaction
            .exec(vec![TxWrite::set(other.clone(), "x")])
            .await?,
        "EXEC applied after the watched key expired"
    );
    check_reply!(
        b.exists(&[&other]).await,
        ":0",
        "EXISTS {} (the transaction's write)",
        String::from_utf8_lossy(&other)
    );
    Ok(Verdict::Passed)
}

/// A transaction dropped before `EXEC` (a cancelled task, an early return) writes
/// nothing, and its watch does not outlive it: a later transaction on the same key,
/// after another client wrote it, applies.
pub async fn a_dropped_transaction_writes_nothing(ctx: &Ctx<'_>) -> CaseResult {
    let (b, key) = (&ctx.backend, ctx.key("dropped"));
    b.set(&key, b"1", SetOptions::new()).await?;
    let transaction = b.watch(&[&key]).await?;
    drop(transaction);
    check_reply!(
        b.get(&key).await,
        "$1 1",
        "GET {} after the drop",
        String::from_utf8_lossy(&key)
    );
    b.set(&key, b"2", SetOptions::new()).await?;
    let next = b.watch(&[&key]).await?;
    check_eq!(next.values(), [Some(b"2".to_vec())], "the value read again");
    check!(
        next.exec(vec![TxWrite::set(key.clone(), "3")]).await?,
        "a fresh transaction after a dropped one did not apply"
    );
    check_reply!(
        b.get(&key).await,
        "$1 3",
        "GET {} after EXEC",
        String::from_utf8_lossy(&key)
    );
    Ok(Verdict::Passed)
}

/// An `EXEC` cancelled while in flight (its future dropped after its first poll) writes
/// all of the block or none of it, and leaves nothing queued behind: the next transaction
/// on the backend applies, and applies only its own write.
pub async fn a_transaction_cancelled_mid_exec_writes_all_or_nothing(ctx: &Ctx<'_>) -> CaseResult {
    let b = &ctx.backend;
    let (first, second, next) = (ctx.key("first"), ctx.key("second"), ctx.key("next"));
    let transaction = b.watch(&[&first]).await?;
    let block = vec![
        TxWrite::set(first.clone(), "1"),
        TxWrite::set(second.clone(), "1"),
    ];
    let _ = tokio::time::timeout(Duration::ZERO, transaction.exec(block)).await;
    // Whatever was already sent gets its reply meanwhile.
    ctx.advance(Duration::from_millis(100)).await;
    let written = b.exists(&[&first]).await? + b.exists(&[&second]).await?;
    check!(
        written == 0 || written == 2,
        "the cancelled block wrote {written} of its 2 keys"
    );
    let after = b.watch(&[&next]).await?;
    check!(
        after.exec(vec![TxWrite::set(next.clone(), "1")]).await?,
        "the transaction after a cancelled one did not apply"
    );
    // Both keys or neither, and as before the next transaction.
    let each = format!(":{}", written / 2);
    for key in [&first, &second] {
        check_reply!(
            b.exists(&[key]).await,
            &each,
            "EXISTS {} (the cancelled block's key, after the next transaction)",
            String::from_utf8_lossy(key)
        );
    }
    Ok(Verdict::Passed)
}
