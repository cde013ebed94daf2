//! SET and its options, SETNX, GET, GETSET, GETDEL.

use lock_core::{ErrorKind, KvBackend, SetOptions, SetReply};

use crate::{CaseResult, Ctx, Verdict, check, check_eq, check_reply};

/// SET NX and SETNX write only when the key is missing.
pub async fn set_nx_sets_only_missing_keys(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_eq!(
        b.set(&k, b"one", SetOptions::new().nx()).await?,
        SetReply::Applied,
        "SET NX on a missing key"
    );
    check_eq!(
        b.set(&k, b"two", SetOptions::new().nx()).await?,
        SetReply::NotApplied,
        "SET NX on an existing key"
    );
    check_reply!(
        b.setnx(&k, b"three").await,
        ":0",
        "SETNX {} three",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.get(&k).await,
        "$3 one",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    check_eq!(
        b.setnx(&ctx.key("other"), b"x").await?,
        true,
        "SETNX on a missing key"
    );
    Ok(Verdict::Passed)
}

/// SETNX never gives the key a TTL.
pub async fn setnx_never_sets_a_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.setnx(&k, b"v").await?;
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// SET XX writes only when the key exists.
pub async fn set_xx_sets_only_existing_keys(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_eq!(
        b.set(&k, b"one", SetOptions::new().xx()).await?,
        SetReply::NotApplied,
        "SET XX on a missing key"
    );
    check_reply!(
        b.exists(&[&k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"one", SetOptions::new()).await?;
    check_eq!(
        b.set(&k, b"two", SetOptions::new().xx()).await?,
        SetReply::Applied,
        "SET XX on an existing key"
    );
    check_reply!(
        b.get(&k).await,
        "$3 two",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// SET PX and EX give a TTL that PTTL reports (within the time the round trips took).
pub async fn set_px_and_ex_set_the_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new().px(10_000)).await?;
    let pttl = b.pttl(&k).await?;
    check!(
        (9_000..=10_000).contains(&pttl),
        "PTTL after SET PX 10000 is {pttl}"
    );
    b.set(&k, b"v", SetOptions::new().ex(100)).await?;
    let pttl = b.pttl(&k).await?;
    check!(
        (99_000..=100_000).contains(&pttl),
        "PTTL after SET EX 100 is {pttl}"
    );
    let at = ctx.clock().now_ms() + 50_000;
    b.set(&k, b"v", SetOptions::new().pxat(at)).await?;
    let pttl = b.pttl(&k).await?;
    check!(
        (49_000..=50_000).contains(&pttl),
        "PTTL after SET PXAT now+50000 is {pttl}"
    );
    Ok(Verdict::Passed)
}

/// A SET without expiry argument discards the old TTL.
pub async fn set_without_expiry_clears_the_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new().px(10_000)).await?;
    b.set(&k, b"w", SetOptions::new()).await?;
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// SET KEEPTTL keeps the old TTL.
pub async fn set_keepttl_keeps_the_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new().px(10_000)).await?;
    b.set(&k, b"w", SetOptions::new().keep_ttl()).await?;
    let pttl = b.pttl(&k).await?;
    check!(
        (9_000..=10_000).contains(&pttl),
        "PTTL after SET KEEPTTL is {pttl}"
    );
    check_reply!(
        b.get(&k).await,
        "$1 w",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// SET GET replies with the old value, and with NX still refuses to overwrite.
pub async fn set_get_replies_with_the_old_value(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_eq!(
        b.set(&k, b"one", SetOptions::new().get()).await?,
        SetReply::OldValue(None),
        "SET GET on a missing key"
    );
    check_eq!(
        b.set(&k, b"two", SetOptions::new().get()).await?,
        SetReply::OldValue(Some(b"one".to_vec())),
        "SET GET on an existing key"
    );
    check_eq!(
        b.set(&k, b"three", SetOptions::new().nx().get()).await?,
        SetReply::OldValue(Some(b"two".to_vec())),
        "SET NX GET on an existing key"
    );
    check_reply!(
        b.get(&k).await,
        "$3 two",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// Zero, negative and overflowing expire times are `ERR invalid expire time in 'set'
/// command`, and the key is left alone.
pub async fn set_rejects_invalid_expire_times(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"kept", SetOptions::new()).await?;
    let invalid = [
        ("PX 0", SetOptions::new().px(0)),
        ("PX -1", SetOptions::new().px(-1)),
        ("EX 0", SetOptions::new().ex(0)),
        ("EX -5", SetOptions::new().ex(-5)),
        ("PXAT 0", SetOptions::new().pxat(0)),
        ("EX i64::MAX", SetOptions::new().ex(i64::MAX)),
        ("PX near i64::MAX", SetOptions::new().px(i64::MAX - 1000)),
        ("NX PX 0", SetOptions::new().nx().px(0)),
    ];
    for (what, options) in invalid {
        match b.set(&k, b"new", options).await {
            Err(e) => {
                // The kind and the text together, so a failure shows both.
                check_eq!(
                    (e.kind(), e.message()),
                    (
                        ErrorKind::InvalidExpire,
                        "ERR invalid expire time in 'set' command"
                    ),
                    "error of SET {what}"
                );
            }
            Ok(reply) => check!(false, "SET {what} answered {reply:?} instead of an error"),
        }
    }
    check_reply!(
        b.get(&k).await,
        "$4 kept",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// GET of a missing key is nil; values are binary-safe.
pub async fn values_and_keys_are_binary_safe(ctx: &Ctx<'_>) -> CaseResult {
    let b = &ctx.backend;
    let mut key = ctx.key("bin");
    key.extend_from_slice(&[0, 255, b'\n', b'\r', b' ']);
    let value: Vec<u8> = (0..=255u8).collect();
    check_eq!(b.get(&key).await?, None, "GET of a missing key");
    b.set(&key, &value, SetOptions::new()).await?;
    check_eq!(
        b.get(&key).await?,
        Some(value.clone()),
        "binary value read back"
    );
    check_eq!(
        b.set(&key, b"", SetOptions::new()).await?,
        SetReply::Applied,
        "SET of an empty value"
    );
    check_eq!(
        b.get(&key).await?,
        Some(Vec::new()),
        "empty value read back (not nil)"
    );
    Ok(Verdict::Passed)
}

/// GETSET replies with the old value and the new value has no TTL.
pub async fn getset_returns_the_old_value_and_clears_the_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_reply!(
        b.getset(&k, b"one").await,
        "$-1",
        "GETSET {} one",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"two", SetOptions::new().px(10_000)).await?;
    check_reply!(
        b.getset(&k, b"three").await,
        "$3 two",
        "GETSET {} three",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.get(&k).await,
        "$5 three",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// GETDEL replies with the value and removes the key.
pub async fn getdel_returns_and_removes(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_reply!(
        b.getdel(&k).await,
        "$-1",
        "GETDEL {}",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"v", SetOptions::new()).await?;
    check_reply!(
        b.getdel(&k).await,
        "$1 v",
        "GETDEL {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.exists(&[&k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}
