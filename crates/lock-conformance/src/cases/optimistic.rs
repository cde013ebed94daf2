//! Optimistic concurrency (seed 002): a read-modify-write without protection loses
//! updates; a versioned compare-and-set ([`Versioned`]) loses none and refuses a write
//! computed from a stale version.

use std::sync::Arc;

use lock_core::{KvBackend, SetOptions, Versioned};
use tokio::sync::Barrier;

use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq};

/// Concurrent writers of the cases.
pub const WRITERS: usize = 16;

/// A decimal counter's value; absent or unparsable counts as 0.
pub(crate) fn counter(value: Option<&[u8]>) -> u64 {
    value
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
        .unwrap_or(0)
}

/// Sixteen writers each read a counter, then (all reads done) write it back plus one:
/// all but one increment is lost. The hazard optimistic concurrency exists to prevent.
pub async fn a_read_modify_write_without_protection_loses_updates(ctx: &Ctx<'_>) -> CaseResult {
    let key = ctx.key("unprotected");
    let all_read = Arc::new(Barrier::new(WRITERS));
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let (backend, key, all_read) = (ctx.backend.clone(), key.clone(), all_read.clone());
        writers.push(tokio::spawn(async move {
            let read = counter(backend.get(&key).await?.as_deref());
            all_read.wait().await;
            let next = (read + 1).to_string();
            backend
                .set(&key, next.as_bytes(), SetOptions::new())
                .await?;
            Ok::<_, lock_core::Error>(())
        }));
    }
    for writer in writers {
        writer
            .await
            .map_err(|e| Failure(format!("a writer panicked: {e}")))??;
    }
    let total = counter(ctx.backend.get(&key).await?.as_deref());
    check!(
        total < WRITERS as u64,
        "the unprotected writers lost nothing ({total} of {WRITERS}): the hazard did not show"
    );
    Ok(Verdict::ExpectedFailure(format!(
        "lost {} of {WRITERS} increments without protection",
        WRITERS as u64 - total
    )))
}

/// Sixteen concurrent [`Versioned::update`]s of one counter: every increment lands, and
/// the version counts every write.
pub async fn compare_and_set_loses_no_update_under_16_writers(ctx: &Ctx<'_>) -> CaseResult {
    let name = ctx.lock_name("counter");
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let value = Versioned::new(ctx.backend.clone(), &name);
        writers.push(tokio::spawn(async move {
            value
                .update(|old| (counter(old) + 1).to_string().into_bytes())
                .await
        }));
    }
    for writer in writers {
        writer
            .await
            .map_err(|e| Failure(format!("a writer panicked: {e}")))??;
    }
    let snapshot = Versioned::new(ctx.backend.clone(), &name).read().await?;
    check_eq!(
        counter(snapshot.value.as_deref()),
        WRITERS as u64,
        "the counter after {WRITERS} increments"
    );
    check_eq!(snapshot.version, WRITERS as i64, "the version");
    Ok(Verdict::Passed)
}

/// Versions start at 1 and count writes; a write naming a version that is no longer
/// current is refused and changes nothing; an update after it computes from the new value.
pub async fn a_write_from_a_stale_version_is_refused(ctx: &Ctx<'_>) -> CaseResult {
    let value = Versioned::new(ctx.backend.clone(), &ctx.lock_name("stale"));
    let empty = value.read().await?;
    check_eq!((empty.version, empty.value), (0, None), "a missing value");
    check_eq!(
        value.compare_and_set(0, b"a").await?,
        Some(1),
        "the first write"
    );
    check_eq!(
        value.compare_and_set(1, b"b").await?,
        Some(2),
        "the second write"
    );
    check_eq!(
        value.compare_and_set(1, b"stale").await?,
        None,
        "a write from version 1 after version 2"
    );
    let now = value.read().await?;
    check_eq!(
        (now.version, now.value),
        (2, Some(b"b".to_vec())),
        "after the refused write"
    );
    let updated = value
        .update(|old| [old.unwrap_or_default(), b"+"].concat())
        .await?;
    check_eq!(
        (updated.version, updated.value, updated.conflicts),
        (3, b"b+".to_vec(), 0),
        "the update after it"
    );
    Ok(Verdict::Passed)
}
