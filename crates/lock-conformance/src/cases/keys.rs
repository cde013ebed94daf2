//! DEL, EXISTS, INCR.

use std::time::Duration;

use lock_core::{ErrorKind, KvBackend, SetOptions};

use crate::{CaseResult, Ctx, Verdict, check, check_eq, check_reply};

/// DEL counts only keys that existed, each once, and expired keys do not count.
pub async fn del_counts_only_live_keys(ctx: &Ctx<'_>) -> CaseResult {
    let b = &ctx.backend;
    let (a, c, gone, expiring) = (ctx.key("a"), ctx.key("c"), ctx.key("gone"), ctx.key("exp"));
    b.set(&a, b"1", SetOptions::new()).await?;
    b.set(&c, b"1", SetOptions::new()).await?;
    b.set(&expiring, b"1", SetOptions::new().px(50)).await?;
    ctx.advance(Duration::from_millis(120)).await;
    check_eq!(
        b.del(&[&a, &a, &gone, &expiring, &c]).await?,
        2,
        "DEL a a gone expired c"
    );
    check_eq!(b.exists(&[&a, &c]).await?, 0, "EXISTS after DEL");
    Ok(Verdict::Passed)
}

/// EXISTS counts a key named twice twice.
pub async fn exists_counts_repeated_keys(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"1", SetOptions::new()).await?;
    check_eq!(
        b.exists(&[&k, &k, &ctx.key("missing")]).await?,
        2,
        "EXISTS k k missing"
    );
    Ok(Verdict::Passed)
}

/// INCR treats a missing key as 0, keeps the TTL, and stores the decimal result.
pub async fn incr_counts_from_zero_and_keeps_the_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("n"));
    check_reply!(
        b.incr(&k).await,
        ":1",
        "INCR {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"41", SetOptions::new().px(10_000)).await?;
    check_reply!(
        b.incr(&k).await,
        ":42",
        "INCR {}",
        String::from_utf8_lossy(&k)
    );
    let pttl = b.pttl(&k).await?;
    check!(
        (9_000..=10_000).contains(&pttl),
        "PTTL after INCR is {pttl}, the TTL was lost"
    );
    check_reply!(
        b.get(&k).await,
        "$2 42",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// INCR of a non-integer is `ERR value is not an integer or out of range`; of i64::MAX,
/// `ERR increment or decrement would overflow`; the value is left alone.
pub async fn incr_rejects_non_integers_and_overflow(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("n"));
    for bad in [
        "abc",
        "1.0",
        " 1",
        "01",
        "-0",
        "+1",
        "",
        "9223372036854775808",
    ] {
        b.set(&k, bad.as_bytes(), SetOptions::new()).await?;
        match b.incr(&k).await {
            Err(e) => {
                // The kind and the text together, so a failure shows both.
                check_eq!(
                    (e.kind(), e.message()),
                    (
                        ErrorKind::NotInteger,
                        "ERR value is not an integer or out of range"
                    ),
                    "error of INCR on {bad:?}"
                );
            }
            Ok(n) => check!(false, "INCR on {bad:?} answered {n} instead of an error"),
        }
        check_eq!(
            b.get(&k).await?,
            Some(bad.as_bytes().to_vec()),
            "value after a failed INCR"
        );
    }
    b.set(&k, i64::MAX.to_string().as_bytes(), SetOptions::new())
        .await?;
    match b.incr(&k).await {
        Err(e) => {
            // The kind and the text together, so a failure shows both.
            check_eq!(
                (e.kind(), e.message()),
                (
                    ErrorKind::Overflow,
                    "ERR increment or decrement would overflow"
                ),
                "error of INCR on i64::MAX"
            );
        }
        Ok(n) => check!(false, "INCR on i64::MAX answered {n}"),
    }
    Ok(Verdict::Passed)
}
