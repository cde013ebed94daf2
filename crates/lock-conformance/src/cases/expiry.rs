//! Expiry: lazy expiry, PTTL/TTL, PEXPIRE and its conditions, PEXPIREAT, PERSIST.

use std::time::Duration;

use lock_core::{ErrorKind, ExpireCondition, KvBackend, SetOptions};

use crate::{CaseResult, Ctx, Verdict, check, check_eq, check_reply};

const MS: Duration = Duration::from_millis(1);

/// PTTL and TTL are -2 for a missing key and -1 for a key without TTL.
pub async fn pttl_is_minus_two_when_missing_and_minus_one_without_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_reply!(
        b.pttl(&k).await,
        ":-2",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.ttl(&k).await,
        ":-2",
        "TTL {}",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"v", SetOptions::new()).await?;
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.ttl(&k).await,
        ":-1",
        "TTL {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// TTL rounds the remaining milliseconds to the nearest second.
pub async fn ttl_rounds_to_the_nearest_second(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new().px(10_000)).await?;
    check_reply!(
        b.ttl(&k).await,
        ":10",
        "TTL {}",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"v", SetOptions::new().px(1_400)).await?;
    check_reply!(b.ttl(&k).await, ":1", "TTL {}", String::from_utf8_lossy(&k));
    b.set(&k, b"v", SetOptions::new().px(2_700)).await?;
    check_reply!(b.ttl(&k).await, ":3", "TTL {}", String::from_utf8_lossy(&k));
    Ok(Verdict::Passed)
}

/// A key whose TTL has run out is absent to every command, even before anything reaps it.
pub async fn expired_keys_are_absent_to_every_command(ctx: &Ctx<'_>) -> CaseResult {
    let b = &ctx.backend;
    let k = ctx.key("k");
    let expire = || b.set(&k, b"7", SetOptions::new().px(50));
    let pass = || ctx.advance(120 * MS);
    expire().await?;
    pass().await;
    check_reply!(
        b.get(&k).await,
        "$-1",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.exists(&[&k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pttl(&k).await,
        ":-2",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.persist(&k).await,
        ":0",
        "PERSIST {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 10_000, ExpireCondition::Always).await,
        ":0",
        "PEXPIRE {} 10000",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.getset(&k, b"1").await,
        "$-1",
        "GETSET {} 1",
        String::from_utf8_lossy(&k)
    );
    expire().await?;
    pass().await;
    check_reply!(
        b.getdel(&k).await,
        "$-1",
        "GETDEL {}",
        String::from_utf8_lossy(&k)
    );
    expire().await?;
    pass().await;
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
    expire().await?;
    pass().await;
    check_reply!(
        b.setnx(&k, b"new").await,
        ":1",
        "SETNX {} new",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    expire().await?;
    pass().await;
    check_eq!(
        b.set(&k, b"x", SetOptions::new().xx()).await?,
        lock_core::SetReply::NotApplied,
        "SET XX over an expired key"
    );
    Ok(Verdict::Passed)
}

/// PEXPIRE with 0 or a negative TTL deletes the key and answers 1; on a missing key, 0.
pub async fn pexpire_non_positive_deletes_the_key(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    for ttl in [0, -1, -10_000] {
        b.set(&k, b"v", SetOptions::new()).await?;
        check_eq!(
            b.pexpire(&k, ttl, ExpireCondition::Always).await?,
            true,
            "PEXPIRE {ttl} on an existing key"
        );
        check_reply!(
            b.exists(&[&k]).await,
            ":0",
            "EXISTS {}",
            String::from_utf8_lossy(&k)
        );
    }
    check_reply!(
        b.pexpire(&k, 0, ExpireCondition::Always).await,
        ":0",
        "PEXPIRE {} 0",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 1_000, ExpireCondition::Always).await,
        ":0",
        "PEXPIRE {} 1000",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// PEXPIRE NX sets only without a TTL, XX only with one.
pub async fn pexpire_nx_and_xx_look_at_the_current_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new()).await?;
    check_reply!(
        b.pexpire(&k, 5_000, ExpireCondition::IfHasExpiry).await,
        ":0",
        "PEXPIRE {} 5000 XX",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 5_000, ExpireCondition::IfNoExpiry).await,
        ":1",
        "PEXPIRE {} 5000 NX",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 9_000, ExpireCondition::IfNoExpiry).await,
        ":0",
        "PEXPIRE {} 9000 NX",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 9_000, ExpireCondition::IfHasExpiry).await,
        ":1",
        "PEXPIRE {} 9000 XX",
        String::from_utf8_lossy(&k)
    );
    let pttl = b.pttl(&k).await?;
    check!(
        (8_000..=9_000).contains(&pttl),
        "PTTL after PEXPIRE XX 9000 is {pttl}"
    );
    check_reply!(
        b.pexpire(&k, -1, ExpireCondition::IfNoExpiry).await,
        ":0",
        "PEXPIRE {} -1 NX",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.exists(&[&k]).await,
        ":1",
        "EXISTS {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// PEXPIRE GT and LT compare with the current TTL, a key without TTL counting as infinite.
pub async fn pexpire_gt_and_lt_treat_no_ttl_as_infinite(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new()).await?;
    check_reply!(
        b.pexpire(&k, 5_000, ExpireCondition::IfGreater).await,
        ":0",
        "PEXPIRE {} 5000 GT",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 5_000, ExpireCondition::IfLess).await,
        ":1",
        "PEXPIRE {} 5000 LT",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 1_000, ExpireCondition::IfGreater).await,
        ":0",
        "PEXPIRE {} 1000 GT",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 9_000, ExpireCondition::IfLess).await,
        ":0",
        "PEXPIRE {} 9000 LT",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 9_000, ExpireCondition::IfGreater).await,
        ":1",
        "PEXPIRE {} 9000 GT",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.pexpire(&k, 2_000, ExpireCondition::IfLess).await,
        ":1",
        "PEXPIRE {} 2000 LT",
        String::from_utf8_lossy(&k)
    );
    let pttl = b.pttl(&k).await?;
    check!(
        (1_000..=2_000).contains(&pttl),
        "PTTL after PEXPIRE LT 2000 is {pttl}"
    );
    check_reply!(
        b.pexpire(&k, -1, ExpireCondition::IfLess).await,
        ":1",
        "PEXPIRE {} -1 LT",
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

/// A PEXPIRE whose expiry overflows is `ERR invalid expire time in 'pexpire' command`.
pub async fn pexpire_overflow_is_an_invalid_expire(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new()).await?;
    match b
        .pexpire(&k, i64::MAX - 1000, ExpireCondition::Always)
        .await
    {
        Err(e) => {
            check_eq!(e.kind(), ErrorKind::InvalidExpire, "error kind");
            check_eq!(
                e.message(),
                "ERR invalid expire time in 'pexpire' command",
                "error text"
            );
        }
        Ok(set) => check_reply!(
            Ok::<bool, lock_core::Error>(set),
            "-ERR invalid expire time in 'pexpire' command",
            "PEXPIRE {} {}",
            String::from_utf8_lossy(&k),
            i64::MAX - 1000
        ),
    }
    check_reply!(
        b.pttl(&k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// PEXPIREAT sets an absolute expiry; one in the past deletes the key.
pub async fn pexpireat_sets_absolute_time_and_past_deletes(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new()).await?;
    let at = ctx.clock().now_ms() + 20_000;
    check_eq!(
        b.pexpireat(&k, at, ExpireCondition::Always).await?,
        true,
        "PEXPIREAT now+20000"
    );
    let pttl = b.pttl(&k).await?;
    check!(
        (19_000..=20_000).contains(&pttl),
        "PTTL after PEXPIREAT now+20000 is {pttl}"
    );
    check_reply!(
        b.pexpireat(&k, 1, ExpireCondition::Always).await,
        ":1",
        "PEXPIREAT {} 1",
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

/// PERSIST removes a TTL (1), and answers 0 without one.
pub async fn persist_removes_the_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    check_reply!(
        b.persist(&k).await,
        ":0",
        "PERSIST {}",
        String::from_utf8_lossy(&k)
    );
    b.set(&k, b"v", SetOptions::new().px(100)).await?;
    check_reply!(
        b.persist(&k).await,
        ":1",
        "PERSIST {}",
        String::from_utf8_lossy(&k)
    );
    check_reply!(
        b.persist(&k).await,
        ":0",
        "PERSIST {}",
        String::from_utf8_lossy(&k)
    );
    ctx.advance(200 * MS).await;
    check_reply!(
        b.get(&k).await,
        "$1 v",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// A key lives until its TTL has passed, then is gone.
pub async fn keys_expire_after_their_ttl(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, ctx.key("k"));
    b.set(&k, b"v", SetOptions::new().px(300)).await?;
    ctx.advance(100 * MS).await;
    check_reply!(
        b.get(&k).await,
        "$1 v",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    ctx.advance(300 * MS).await;
    check_reply!(
        b.get(&k).await,
        "$-1",
        "GET {}",
        String::from_utf8_lossy(&k)
    );
    Ok(Verdict::Passed)
}

/// A day-long TTL runs out on time: the key is there a second before, gone a second
/// after. Only a harness that can let a day pass at once runs it.
pub async fn a_day_long_ttl_runs_out_on_time(ctx: &Ctx<'_>) -> CaseResult {
    const DAY_MS: i64 = 86_400_000;
    let (b, k) = (&ctx.backend, &ctx.key("k")[..]);
    b.set(k, b"v", SetOptions::new().px(DAY_MS)).await?;
    ctx.advance(std::time::Duration::from_millis((DAY_MS - 1_000) as u64))
        .await;
    let pttl = b.pttl(k).await?;
    check!(
        (0..=1_000).contains(&pttl),
        "PTTL {pttl} a second before a day-long TTL ends"
    );
    ctx.advance(std::time::Duration::from_secs(2)).await;
    check_reply!(
        b.exists(&[k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(k)
    );
    Ok(Verdict::Passed)
}
