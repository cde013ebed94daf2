//! nxlock's built-in scripts, called directly: what a server runs as Lua and a double runs
//! natively must give these replies.

use lock_core::{ErrorKind, KvBackend, SetOptions, Value, scripts};

use crate::{CaseResult, Ctx, Failure, Verdict, check, check_eq, check_reply};

fn pair(a: i64, b: i64) -> Value {
    Value::Array(vec![Value::Int(a), Value::Int(b)])
}

fn ms(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// Compare-and-delete removes the key only for the matching token.
pub async fn compare_and_delete_only_deletes_the_matching_token(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let s = &*scripts::COMPARE_AND_DELETE;
    check_eq!(
        b.eval(s, &[k], &[b"t1"]).await?,
        Value::Int(0),
        "on a missing key"
    );
    b.set(k, b"t1", SetOptions::new().px(10_000)).await?;
    check_eq!(
        b.eval(s, &[k], &[b"t2"]).await?,
        Value::Int(0),
        "with another token"
    );
    check_reply!(
        b.get(k).await,
        "$2 t1",
        "GET {}",
        String::from_utf8_lossy(k)
    );
    check_eq!(
        b.eval(s, &[k], &[b"t1"]).await?,
        Value::Int(1),
        "with the holder's token"
    );
    check_reply!(
        b.exists(&[k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(k)
    );
    Ok(Verdict::Passed)
}

/// Compare-and-pexpire extends only for the matching token.
pub async fn compare_and_pexpire_only_extends_the_matching_token(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let s = &*scripts::COMPARE_AND_PEXPIRE;
    check_eq!(
        b.eval(s, &[k], &[b"t1", b"50000"]).await?,
        Value::Int(0),
        "on a missing key"
    );
    b.set(k, b"t1", SetOptions::new().px(10_000)).await?;
    check_eq!(
        b.eval(s, &[k], &[b"t2", b"50000"]).await?,
        Value::Int(0),
        "with another token"
    );
    let pttl = b.pttl(k).await?;
    check!(pttl <= 10_000, "PTTL {pttl} after a wrong-token extend");
    check_eq!(
        b.eval(s, &[k], &[b"t1", b"50000"]).await?,
        Value::Int(1),
        "with the holder's token"
    );
    let pttl = b.pttl(k).await?;
    check!(
        (49_000..=50_000).contains(&pttl),
        "PTTL {pttl} after extending to 50000"
    );
    Ok(Verdict::Passed)
}

/// The one-command acquire takes a free key, refuses another token's with its PTTL, and
/// counts a key that already holds the caller's token as acquired, setting its TTL again:
/// what makes a retried acquire idempotent.
pub async fn acquire_or_pttl_recognises_its_own_token(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let s = &*scripts::ACQUIRE_OR_PTTL;
    check_eq!(
        b.eval(s, &[k], &[b"mine", b"5000"]).await?,
        pair(1, 0),
        "on a free key"
    );
    b.set(k, b"mine", SetOptions::new().px(1_000)).await?;
    check_eq!(
        b.eval(s, &[k], &[b"mine", b"5000"]).await?,
        pair(1, 0),
        "with our own token already there"
    );
    let pttl = b.pttl(k).await?;
    check!(
        (4_000..=5_000).contains(&pttl),
        "PTTL {pttl} after finding our own token: the TTL must be set again"
    );
    match b.eval(s, &[k], &[b"theirs", b"5000"]).await? {
        Value::Array(items) if items.first() == Some(&Value::Int(0)) => {}
        other => check!(false, "another token's attempt answered {other:?}"),
    }
    check_reply!(
        b.get(k).await,
        "$4 mine",
        "GET {}",
        String::from_utf8_lossy(k)
    );
    Ok(Verdict::Passed)
}

/// The fenced acquire recognises its own token: a retry with the same token holds the
/// lock again and takes a fresh, higher fence (it cannot tell whether its first send
/// took one, so it never hands out the counter's current value, which may be the
/// previous holder's), and another token is refused without taking one.
pub async fn fenced_acquire_recognises_its_own_token(ctx: &Ctx<'_>) -> CaseResult {
    let (b, lock, fence) = (&ctx.backend, ctx.key("lock"), ctx.key("fence"));
    let keys: [&[u8]; 2] = [&lock, &fence];
    let s = &*scripts::FENCED_ACQUIRE;
    check_eq!(
        b.eval(s, &keys, &[b"mine", b"5000"]).await?,
        pair(1, 1),
        "first acquire"
    );
    check_eq!(
        b.eval(s, &keys, &[b"mine", b"5000"]).await?,
        pair(1, 2),
        "the same token again"
    );
    check_eq!(b.get(&fence).await?, Some(b"2".to_vec()), "fence counter");
    match b.eval(s, &keys, &[b"theirs", b"5000"]).await? {
        Value::Array(items) if items.first() == Some(&Value::Int(0)) => {}
        other => check!(false, "another token's attempt answered {other:?}"),
    }
    b.del(&[&lock]).await?;
    check_eq!(
        b.eval(s, &keys, &[b"theirs", b"5000"]).await?,
        pair(1, 3),
        "the next holder's acquire"
    );
    Ok(Verdict::Passed)
}

/// A safety TTL the server rejects makes the scripted acquire fail without writing: no
/// lock is left without a TTL, on a free key or over a passed stamp. (Seed 001's SETNX
/// followed by EXPIRE left the key written when the second step failed.) The error is
/// of kind `Script` on every backend.
pub async fn legacy_acquire_with_a_rejected_ttl_writes_nothing(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let s = &*scripts::LEGACY_ACQUIRE;
    let now = ctx.clock().now_ms();
    let (too_long, now) = (ms(i64::MAX), ms(now));
    let (keys, args): ([&[u8]; 1], [&[u8]; 3]) = ([k], [b"1", &too_long, &now]);
    let acquire = || b.eval(s, &keys, &args);
    let rejected = |what: &str, reply: lock_core::Result<Value>| match reply {
        Err(e) if e.kind() == ErrorKind::Script && e.message().contains("invalid expire time") => {
            Ok(())
        }
        other => Err(Failure(format!(
            "{what}: expected a Script error about the expire time, got {other:?}"
        ))),
    };
    rejected("on a free key", acquire().await)?;
    check_reply!(
        b.exists(&[k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(k)
    );
    let passed = ms(ctx.clock().now_ms() - 1);
    b.set(k, &passed, SetOptions::new()).await?;
    rejected("over a passed stamp", acquire().await)?;
    check_eq!(
        b.get(k).await?,
        Some(passed),
        "the passed stamp after the rejected recovery"
    );
    check_reply!(
        b.pttl(k).await,
        ":-1",
        "PTTL {}",
        String::from_utf8_lossy(k)
    );
    Ok(Verdict::Passed)
}

/// Seed 001's acquire script: 0 on a free key (with the safety TTL it is given), `{2,
/// left}` on a live stamp, 0 over an expired stamp, `{2, 0}` over a value that is not a
/// stamp.
pub async fn legacy_acquire_reports_seed_001_codes(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let s = &*scripts::LEGACY_ACQUIRE;
    let now = ctx.clock().now_ms();
    let acquire =
        |stamp: i64| async move { b.eval(s, &[k], &[&ms(stamp), &ms(6_000), &ms(now)]).await };
    check_eq!(acquire(now + 5_000).await?, pair(0, 0), "on a free key");
    let pttl = b.pttl(k).await?;
    check!(
        (5_000..=6_000).contains(&pttl),
        "safety PTTL {pttl}, expected TTL + 1 s"
    );
    check_eq!(
        acquire(now + 5_000).await?,
        pair(2, 5_000),
        "over a live stamp"
    );
    b.set(k, &ms(now - 1), SetOptions::new()).await?;
    check_eq!(
        acquire(now + 7_000).await?,
        pair(0, 0),
        "over an expired stamp"
    );
    check_eq!(
        b.get(k).await?,
        Some(ms(now + 7_000)),
        "value after recovering an expired stamp"
    );
    b.set(k, b"not-a-stamp", SetOptions::new()).await?;
    check_eq!(
        acquire(now + 5_000).await?,
        pair(2, 0),
        "over a value that is not a stamp"
    );
    check_reply!(
        b.get(k).await,
        "$11 not-a-stamp",
        "GET {}",
        String::from_utf8_lossy(k)
    );
    Ok(Verdict::Passed)
}

/// The scripted lock's release and extend act only on our own, unexpired stamp.
pub async fn legacy_release_and_extend_check_stamp_and_time(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let now = ctx.clock().now_ms();
    let (ours, theirs) = (ms(now + 5_000), ms(now + 6_000));
    // Our stamp, extended to now + 9 s.
    let extend_args = [ours.clone(), ms(now + 9_000), b"10000".to_vec(), ms(now)];
    let extend_args: Vec<&[u8]> = extend_args.iter().map(Vec::as_slice).collect();
    let lock_key = [k];
    let extend = || b.eval(&scripts::LEGACY_EXTEND, &lock_key, &extend_args);
    b.set(k, &theirs, SetOptions::new()).await?;
    check_eq!(
        b.eval(&scripts::LEGACY_RELEASE, &[k], &[&ours, &ms(now)])
            .await?,
        Value::Int(0),
        "release with another's stamp"
    );
    check_eq!(
        extend().await?,
        Value::Int(0),
        "extend with another's stamp"
    );
    check_eq!(
        b.get(k).await?,
        Some(theirs),
        "value after refused release and extend"
    );
    b.set(k, &ours, SetOptions::new()).await?;
    check_eq!(
        b.eval(&scripts::LEGACY_RELEASE, &[k], &[&ours, &ms(now + 5_000)])
            .await?,
        Value::Int(0),
        "release once our stamp has passed"
    );
    check_eq!(extend().await?, Value::Int(1), "extend with our live stamp");
    let pttl = b.pttl(k).await?;
    check!(
        (9_000..=10_000).contains(&pttl),
        "safety PTTL {pttl} after extend"
    );
    let new = ms(now + 9_000);
    check_eq!(
        b.eval(&scripts::LEGACY_RELEASE, &[k], &[&new, &ms(now)])
            .await?,
        Value::Int(1),
        "release with our live stamp"
    );
    check_reply!(
        b.exists(&[k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(k)
    );
    Ok(Verdict::Passed)
}

/// The reentrant scripts count holds in `<owner>:<count>` and delete at zero.
pub async fn reentrant_scripts_count_holds(ctx: &Ctx<'_>) -> CaseResult {
    let (b, k) = (&ctx.backend, &ctx.key("lock")[..]);
    let acquire = |owner: &'static [u8]| async move {
        b.eval(&scripts::REENTRANT_ACQUIRE, &[k], &[owner, b"10000"])
            .await
    };
    let release = |owner: &'static [u8]| async move {
        b.eval(&scripts::REENTRANT_RELEASE, &[k], &[owner]).await
    };
    check_eq!(acquire(b"me").await?, pair(1, 1), "first hold");
    check_eq!(acquire(b"me").await?, pair(1, 2), "re-entry");
    check_reply!(
        b.get(k).await,
        "$4 me:2",
        "GET {}",
        String::from_utf8_lossy(k)
    );
    match acquire(b"you").await? {
        Value::Array(items) if items.first() == Some(&Value::Int(0)) => {}
        other => check!(false, "another owner's acquire answered {other:?}"),
    }
    check_eq!(
        b.eval(&scripts::REENTRANT_EXTEND, &[k], &[b"you", b"50000"])
            .await?,
        Value::Int(0),
        "another owner's extend"
    );
    check_eq!(release(b"me").await?, Value::Int(1), "first release");
    let pttl = b.pttl(k).await?;
    check!(pttl > 0, "PTTL {pttl}: a partial release must keep the TTL");
    check_eq!(release(b"me").await?, Value::Int(0), "last release");
    check_reply!(
        b.exists(&[k]).await,
        ":0",
        "EXISTS {}",
        String::from_utf8_lossy(k)
    );
    check_eq!(
        release(b"me").await?,
        Value::Int(-1),
        "release of a free lock"
    );
    Ok(Verdict::Passed)
}
