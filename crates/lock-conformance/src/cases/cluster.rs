//! Redis Cluster: what a cluster refuses (one command across slots, a script reaching a
//! key its node does not serve), that every lock keeps its keys in one slot, and what a
//! held lock goes through when its slot moves or its shard fails over. The cluster
//! behind the harness is shared; a case moves only the slot of its own lock.

use lock_core::{
    ErrorKind, FairLock, FencedLock, KvBackend, LegacyLock, LockAlgorithm, LockGuard, LockName,
    LockOwner, NamedLock, RedisVersion, ReentrantLock, Script, ScriptedLock, SetOptions, TokenLock,
    TxWrite, Value, hash_slot,
};

use crate::{CaseResult, Cluster, Ctx, Failure, Verdict, check, check_eq, check_reply};

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
const NON_LOCAL: &str = "ERR Script attempted to access a non local key in a cluster node";

/// `GET ARGV[1]`: a key the script does not declare.
fn get_undeclared() -> Script {
    Script::new(
        "cluster-get-undeclared",
        "return redis.call('GET', ARGV[1])",
    )
    .with_native(|store, _keys, args| Ok(store.get(args[0])?.map_or(Value::Nil, Value::Data)))
}

/// `DEL ARGV[1] ARGV[2]`: one command inside a script, naming two undeclared keys.
fn del_two_undeclared() -> Script {
    Script::new(
        "cluster-del-two-undeclared",
        "return redis.call('DEL', ARGV[1], ARGV[2])",
    )
    .with_native(|store, _keys, args| Ok(Value::Int(store.del(&args[..2])?)))
}

/// `DEL KEYS[1] KEYS[2]`.
fn del_two_declared() -> Script {
    Script::new(
        "cluster-del-two-declared",
        "return redis.call('DEL', KEYS[1], KEYS[2])",
    )
    .with_native(|store, keys, _args| Ok(Value::Int(store.del(keys)?)))
}

/// A key of this case (`ctx.name(prefix)` plus a counter, no hash tag) for which `wanted`
/// holds, found by trying counters.
async fn find_key(
    ctx: &Ctx<'_>,
    prefix: &str,
    mut wanted: impl AsyncFnMut(u16) -> Result<bool, String>,
) -> Result<Option<Vec<u8>>, Failure> {
    for n in 0..2_000 {
        let key = ctx.name(&format!("{prefix}{n}")).into_bytes();
        if wanted(hash_slot(&key)).await? {
            return Ok(Some(key));
        }
    }
    Ok(None)
}

/// A key a script declares, the shard serving it, and a key of another slot on that
/// shard.
async fn declared_and_neighbour(
    ctx: &Ctx<'_>,
    cluster: &dyn Cluster,
) -> Result<(Vec<u8>, usize, Vec<u8>), Failure> {
    let declared = ctx.name("declared").into_bytes();
    let home = cluster.shard_of(hash_slot(&declared)).await?;
    let neighbour = find_key(ctx, "neighbour", async |slot| {
        Ok(slot != hash_slot(&declared) && cluster.shard_of(slot).await? == home)
    })
    .await?
    .ok_or_else(|| Failure("no other slot on the declared key's shard".into()))?;
    Ok((declared, home, neighbour))
}

/// One command naming keys of two slots is `CROSSSLOT`, outside a script and in a
/// script's `KEYS`, and writes nothing.
pub async fn keys_of_two_slots_in_one_command_are_crossslot(ctx: &Ctx<'_>) -> CaseResult {
    let b = &ctx.backend;
    let first = ctx.name("first").into_bytes();
    let other = find_key(ctx, "other", async |slot| Ok(slot != hash_slot(&first)))
        .await?
        .ok_or_else(|| Failure("no key of another slot".into()))?;
    b.set(&first, b"1", SetOptions::new()).await?;
    b.set(&other, b"1", SetOptions::new()).await?;
    for (what, refused) in [
        ("DEL", b.del(&[&first, &other]).await.map(Value::Int)),
        (
            "a script's KEYS",
            b.eval(&del_two_declared(), &[&first, &other], &[]).await,
        ),
    ] {
        let error = match refused {
            Err(error) => error,
            Ok(reply) => return Err(Failure(format!("{what} across slots answered {reply:?}"))),
        };
        check_eq!(
            error.kind(),
            ErrorKind::CrossSlot,
            "{what}: the error's kind"
        );
        check_eq!(error.message(), CROSSSLOT, "{what}: the error's text");
    }
    for key in [&first, &other] {
        check_reply!(
            b.exists(&[key]).await,
            ":1",
            "EXISTS {} (a key the refused commands named)",
            String::from_utf8_lossy(key)
        );
    }
    b.del(&[&first]).await?;
    b.del(&[&other]).await?;
    Ok(Verdict::Passed)
}

/// A `WATCH` transaction whose writes span two slots is refused whole, as EXEC refuses
/// queued commands that span slots, even when one node serves both; nothing is written.
/// A transaction writing only a slot of another shard than its watched key is refused too.
pub async fn a_transaction_writing_two_slots_writes_nothing(ctx: &Ctx<'_>) -> CaseResult {
    let cluster = ctx.cluster().await?;
    let b = &ctx.backend;
    let (declared, home, neighbour) = declared_and_neighbour(ctx, &*cluster).await?;
    let tx = b.watch(&[&declared]).await?;
    let writes = vec![
        TxWrite::set(declared.clone(), "a"),
        TxWrite::set(neighbour.clone(), "b"),
    ];
    match tx.exec(writes).await {
        Ok(applied) => {
            return Err(Failure(format!(
                "EXEC of writes to two slots answered {applied}"
            )));
        }
        Err(error) => {
            check_eq!(error.kind(), ErrorKind::CrossSlot, "the error's kind");
            check_eq!(error.message(), CROSSSLOT, "the error's text");
        }
    }
    for key in [&declared, &neighbour] {
        check_reply!(
            b.exists(&[key]).await,
            ":0",
            "EXISTS {} (a key the refused transaction wrote)",
            String::from_utf8_lossy(key)
        );
    }
    if cluster.shards() >= 2 {
        let stranger = find_key(ctx, "stranger", async |slot| {
            Ok(cluster.shard_of(slot).await? != home)
        })
        .await?
        .ok_or_else(|| Failure("no slot on another shard".into()))?;
        let tx = b.watch(&[&declared]).await?;
        let refused = tx.exec(vec![TxWrite::set(stranger.clone(), "c")]).await;
        check!(
            refused.is_err(),
            "EXEC of a write to another shard's slot answered {refused:?}"
        );
        check_reply!(
            b.exists(&[&stranger]).await,
            ":0",
            "EXISTS {} (another shard's key the refused transaction wrote)",
            String::from_utf8_lossy(&stranger)
        );
    }
    Ok(Verdict::Passed)
}

/// A script runs on its `KEYS`' node: it may read an undeclared key of another slot on
/// that node (Redis 7.0 allows it), but not one another shard serves.
pub async fn a_script_may_touch_only_keys_its_node_serves(ctx: &Ctx<'_>) -> CaseResult {
    let cluster = ctx.cluster().await?;
    let b = &ctx.backend;
    let (declared, home, neighbour) = declared_and_neighbour(ctx, &*cluster).await?;
    b.set(&neighbour, b"here", SetOptions::new()).await?;
    let read = b
        .eval(&get_undeclared(), &[&declared], &[&neighbour])
        .await?;
    check_eq!(
        read,
        Value::Data(b"here".to_vec()),
        "an undeclared key of another slot on the same node"
    );
    b.del(&[&neighbour]).await?;
    if cluster.shards() < 2 {
        return Ok(Verdict::Passed);
    }
    let stranger = find_key(ctx, "stranger", async |slot| {
        Ok(cluster.shard_of(slot).await? != home)
    })
    .await?
    .ok_or_else(|| Failure("no slot on another shard".into()))?;
    expect_non_local(
        b.eval(&get_undeclared(), &[&declared], &[&stranger]).await,
        "a key another shard serves",
    )
}

/// One command inside a script naming two slots is refused, even when one node serves
/// both, with the text of the judged version: Redis 7.0 and 7.2 call it a non-local key,
/// 7.4 (and Valkey 8) name the command.
pub async fn one_command_in_a_script_spanning_slots_is_refused(ctx: &Ctx<'_>) -> CaseResult {
    let cluster = ctx.cluster().await?;
    let (declared, _, neighbour) = declared_and_neighbour(ctx, &*cluster).await?;
    let reply = ctx
        .backend
        .eval(
            &del_two_undeclared(),
            &[&declared],
            &[&declared, &neighbour],
        )
        .await;
    let what = "DEL of two slots inside a script";
    let error = match reply {
        Ok(reply) => return Err(Failure(format!("{what}: answered {reply:?}"))),
        Err(error) => error,
    };
    check_eq!(error.kind(), ErrorKind::Script, "{what}: the error's kind");
    versioned_text(ctx.redis_version(), what, error.message(), |version| {
        version.cross_slot_in_script("del").message().to_owned()
    })
}

/// Whether `got` starts with the text the judged `version` gives; where versions differ,
/// a failure lists every version's text and says which one `got` matched, if any.
fn versioned_text(
    version: RedisVersion,
    what: &str,
    got: &str,
    text_of: impl Fn(RedisVersion) -> String,
) -> CaseResult {
    let expected = text_of(version);
    if got.starts_with(&expected) {
        return Ok(Verdict::Passed);
    }
    let texts: Vec<String> = RedisVersion::ALL
        .into_iter()
        .map(|v| format!("{v}: {:?}", text_of(v)))
        .collect();
    let matched = RedisVersion::ALL
        .into_iter()
        .filter(|v| got.starts_with(&text_of(*v)))
        .map(RedisVersion::name)
        .collect::<Vec<_>>();
    let matched = if matched.is_empty() {
        "no version's text".to_owned()
    } else {
        format!("the text of {}", matched.join(" and "))
    };
    Err(Failure(format!(
        "{what}: judged as Redis {version}, expected {expected:?}, got {got:?}, which is {matched} (by version: {})",
        texts.join("; ")
    )))
}

fn expect_non_local(reply: lock_core::Result<Value>, what: &str) -> CaseResult {
    match reply {
        Ok(reply) => Err(Failure(format!("{what}: answered {reply:?}"))),
        Err(error) => {
            check_eq!(error.kind(), ErrorKind::Script, "{what}: the error's kind");
            check!(
                error.message().starts_with(NON_LOCAL),
                "{what}: expected {NON_LOCAL:?}, got {:?}",
                error.message()
            );
            Ok(Verdict::Passed)
        }
    }
}

/// Every algorithm takes, contends for and releases its lock on a cluster: all of a lock's
/// keys share its name's hash tag, so no command or script of theirs crosses a slot.
pub async fn every_lock_keeps_its_keys_in_one_slot(ctx: &Ctx<'_>) -> CaseResult {
    let b = || ctx.backend.clone();
    let name = |n: &str| ctx.lock_name(n);
    let token = name("token");
    cycle(TokenLock::new(b(), &token), TokenLock::new(b(), &token)).await?;
    let fenced = name("fenced");
    cycle(FencedLock::new(b(), &fenced), FencedLock::new(b(), &fenced)).await?;
    let scripted = name("scripted");
    cycle(
        ScriptedLock::new(b(), &scripted),
        ScriptedLock::new(b(), &scripted),
    )
    .await?;
    let legacy = name("legacy");
    cycle(LegacyLock::new(b(), &legacy), LegacyLock::new(b(), &legacy)).await?;
    let fair = name("fair");
    cycle(FairLock::new(b(), &fair), FairLock::new(b(), &fair)).await?;
    let reentrant = name("reentrant");
    cycle(
        ReentrantLock::new(b(), &reentrant, LockOwner::new()).fenced(),
        ReentrantLock::new(b(), &reentrant, LockOwner::new()).fenced(),
    )
    .await?;
    Ok(Verdict::Passed)
}

/// `holder` acquires, `rival` (another client of the same lock) tries, `holder` releases.
async fn cycle<A: LockAlgorithm>(holder: A, rival: A) -> Result<(), Failure> {
    let guard = holder.acquire().await?;
    check!(
        rival.try_acquire().await?.acquired().is_none(),
        "a second client took a held lock"
    );
    check!(guard.release().await?, "the release found the lock gone");
    Ok(())
}

/// The slot of `name`'s lock and the shard after the one serving it: where a case moves
/// it.
async fn slot_and_next_shard(
    name: &LockName,
    cluster: &dyn Cluster,
) -> Result<(u16, usize), Failure> {
    let slot = hash_slot(&name.lock_key());
    let from = cluster.shard_of(slot).await?;
    Ok((slot, (from + 1) % cluster.shards()))
}

/// A lock held while its slot moves to another shard stays held, step by step: while
/// the slot is migrating, once its keys moved (clients are sent on with `ASK`) and once
/// the move is done (`MOVED`); it keeps its TTL, and its holder can still release it.
pub async fn a_lock_held_across_a_slot_migration_stays_exclusive(ctx: &Ctx<'_>) -> CaseResult {
    let cluster = ctx.cluster().await?;
    check!(cluster.shards() >= 2, "a migration needs two shards");
    let name = ctx.lock_name("migrating");
    let (slot, to) = slot_and_next_shard(&name, &*cluster).await?;
    let holder = TokenLock::new(ctx.backend.clone(), &name);
    let rival = TokenLock::new(ctx.backend.clone(), &name);
    let guard = holder.acquire().await?;
    let mut steps: Vec<(&str, crate::Step<'_>)> = vec![
        ("slot migrating", cluster.start_migration(slot, to)),
        ("keys moved", cluster.move_keys(slot, to)),
        ("migration finished", cluster.finish_migration(slot, to)),
    ];
    for (when, step) in steps.drain(..) {
        step.await?;
        check!(
            rival.try_acquire().await?.acquired().is_none(),
            "{when}: a second client took the lock"
        );
    }
    check_eq!(
        cluster.shard_of(slot).await?,
        to,
        "the slot's shard after the move"
    );
    let pttl = ctx.backend.pttl(&name.lock_key()).await?;
    check!(
        pttl > 0 && pttl <= 30_000,
        "the lock's TTL after the move: {pttl} ms"
    );
    check!(
        guard.release().await?,
        "the holder's release after the move"
    );
    let next = rival.try_acquire().await?.acquired();
    check!(next.is_some(), "the lock was not free after the release");
    if let Some(next) = next {
        next.release().await?;
    }
    Ok(Verdict::Passed)
}

/// A manual failover (`CLUSTER FAILOVER`: the replica catches up, then takes over) keeps
/// a held lock and its fence: nobody else takes it, the holder releases it on the new
/// primary, and the next fence is higher.
pub async fn a_lock_survives_a_manual_failover(ctx: &Ctx<'_>) -> CaseResult {
    let cluster = ctx.cluster().await?;
    let name = ctx.lock_name("failover");
    let slot = hash_slot(&name.lock_key());
    let lock = FencedLock::new(ctx.backend.clone(), &name);
    let guard = lock.acquire().await?;
    let fence = guard.fence();
    cluster.fail_over(slot).await?;
    check!(
        lock.try_acquire().await?.acquired().is_none(),
        "a second client took the lock after the failover"
    );
    check!(
        guard.release().await?,
        "the holder's release on the new primary"
    );
    let next = lock.acquire().await?;
    check!(
        next.fence() > fence,
        "fence after the failover {} is not above {fence}",
        next.fence()
    );
    next.release().await?;
    Ok(Verdict::Passed)
}
