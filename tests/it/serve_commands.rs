//! The data-type commands of `nxlock serve` (lists, hashes, sets, sorted sets, and the
//! string and key commands lock libraries use) against a real redis-server, byte for
//! byte, three ways: from a client one by one, pipelined in one write, and through
//! `redis.pcall` in a script. Errors (WRONGTYPE, arity, options) included; which writes
//! WATCH sees, too.

use crate::support;
use support::raw::Raw;
use support::side_by_side::{
    Scenario, assert_same_transcripts, both_servers, compare_one_by_one, compare_pipelined,
};

fn s(lines: &[&'static str]) -> Scenario {
    lines.iter().map(|line| line.split(' ').collect()).collect()
}

fn lists() -> Vec<Scenario> {
    vec![
        s(&[
            "RPUSH l a b c d e",
            "LPUSH l z",
            "LRANGE l 0 -1",
            "LRANGE l -3 -2",
            "LRANGE l 5 1",
            "LRANGE l 0 100",
            "LRANGE l x 1",
            "LRANGE missing 0 -1",
            "LLEN l",
            "LINDEX l 0",
            "LINDEX l -1",
            "LINDEX l 99",
            "LINDEX l x",
            "LSET l 1 A",
            "LSET l 99 x",
            "LSET missing 0 x",
            "LRANGE l 0 -1",
            "RPOP l",
            "RPOP l 2",
            "RPOP l 0",
            "RPOP l -1",
            "RPOP missing",
            "RPOP missing 2",
            "LPOP l 10",
            "EXISTS l",
            "RPUSHX l x",
            "LPUSHX l x",
            "LPUSH l x",
            "LPUSHX l y z",
            "RPUSHX l w",
            "LRANGE l 0 -1",
            "SET str v",
            "LPUSH str x",
            "LRANGE str 0 1",
            "LLEN str",
            "RPOP str",
        ]),
        s(&[
            "RPUSH l a b a c a d",
            "LREM l 2 a",
            "LRANGE l 0 -1",
            "LREM l -1 a",
            "LREM l 0 zz",
            "LREM l x a",
            "RPUSH m 1 2 3 4 5 6",
            "LTRIM m 1 -2",
            "LRANGE m 0 -1",
            "LTRIM m 10 20",
            "EXISTS m",
            "RPUSH n a b c",
            "LINSERT n BEFORE b x",
            "LINSERT n AFTER c y",
            "LINSERT n AFTER zz y",
            "LINSERT n MIDDLE b y",
            "LINSERT missing BEFORE a b",
            "LRANGE n 0 -1",
            "RPUSH p a b c a b c",
            "LPOS p b",
            "LPOS p b RANK 2",
            "LPOS p b RANK -1",
            "LPOS p b COUNT 0",
            "LPOS p b COUNT 1 RANK 2",
            "LPOS p a MAXLEN 3 COUNT 0",
            "LPOS p zz",
            "LPOS p a RANK 0",
            "LPOS p a COUNT -1",
            "LPOS p a FOO 1",
            "LPOS missing a",
            "LPOS missing a COUNT 0",
        ]),
        s(&[
            "RPUSH src a b c",
            "LMOVE src dst LEFT RIGHT",
            "LMOVE src dst RIGHT LEFT",
            "LMOVE src src LEFT RIGHT",
            "LRANGE src 0 -1",
            "LRANGE dst 0 -1",
            "LMOVE src dst UP DOWN",
            "LMOVE missing dst LEFT LEFT",
            "RPOPLPUSH dst src",
            "RPOPLPUSH missing src",
            "SET str v",
            "LMOVE src str LEFT LEFT",
            "LRANGE src 0 -1",
            "RPUSH a 1 2 3",
            "RPUSH b 4 5",
            "LMPOP 2 missing a LEFT",
            "LMPOP 2 missing a RIGHT COUNT 5",
            "LMPOP 2 missing b LEFT COUNT 1",
            "LMPOP 1 missing LEFT",
            "LMPOP 0 a LEFT",
            "LMPOP 2 a LEFT",
            "LMPOP 1 a UP",
            "LMPOP 1 a LEFT COUNT 0",
            "LMPOP 1 a LEFT COUNT x",
            "LMPOP 1 a LEFT FOO 1",
            "LMPOP x a LEFT",
            "LMPOP 1 str LEFT",
        ]),
        // Blocking commands that find something answer at once, as from a client; a
        // bad timeout is refused before anything is popped.
        s(&[
            "RPUSH q a b c",
            "BLPOP q 0",
            "BRPOP missing q 0.5",
            "BLMOVE q out LEFT RIGHT 0",
            "BRPOPLPUSH out q 0",
            "BLMPOP 0 1 q RIGHT COUNT 5",
            "RPUSH q x",
            "BLPOP q -1",
            "BLPOP q abc",
            "BLMOVE q out LEFT RIGHT -1",
            "BLMPOP -1 1 q LEFT",
            "BLMPOP 0 1 q SIDEWAYS",
            "LLEN q",
            "SET str v",
            "BLPOP str 0",
            "BLMOVE str out LEFT LEFT 0",
        ]),
    ]
}

fn hashes() -> Vec<Scenario> {
    vec![s(&[
        "HSET h f1 v1 f2 v2",
        "HSET h f1 new f3 v3",
        "HSET h f1",
        "HMSET h a 1 b 2",
        "HMSET h a",
        "HSETNX h a 9",
        "HSETNX h z 9",
        "HGET h f1",
        "HGET h nope",
        "HGET missing f",
        "HMGET h f1 nope a",
        "HMGET missing a b",
        "HGETALL h",
        "HKEYS h",
        "HVALS h",
        "HLEN h",
        "HLEN missing",
        "HEXISTS h a",
        "HEXISTS h nope",
        "HSTRLEN h f1",
        "HSTRLEN h nope",
        "HDEL h a nope",
        "HDEL h nope",
        "HGETALL h",
        "HGETALL missing",
        "HINCRBY h n 5",
        "HINCRBY h n -7",
        "HINCRBY h f1 1",
        "HINCRBY h n x",
        "HINCRBY h n 9223372036854775807",
        "HINCRBYFLOAT h fl 1.5",
        "HINCRBYFLOAT h fl 0.1",
        "HINCRBYFLOAT h fl 1e400",
        "HINCRBYFLOAT h fl x",
        "HINCRBYFLOAT h f1 1",
        "HINCRBYFLOAT h n 2.0e1",
        "HGET h n",
        "HDEL h f1 f2 f3 z n fl b",
        "EXISTS h",
        "SET str v",
        "HSET str a b",
        "HGET str a",
        "HGETALL str",
        "HLEN str",
    ])]
}

fn sets() -> Vec<Scenario> {
    vec![s(&[
        "SADD s a b c",
        "SADD s a d",
        "SADD n 3 1 2 10",
        "SMEMBERS n",
        "SMEMBERS s",
        "SCARD s",
        "SCARD missing",
        "SISMEMBER s a",
        "SISMEMBER s zz",
        "SMISMEMBER s a zz b",
        "SREM s a zz",
        "SREM s zz",
        "SREM missing a",
        "SMOVE s t b",
        "SMOVE s t zz",
        "SMOVE missing t a",
        "SMEMBERS t",
        "SADD u c x y",
        "SINTER s u",
        "SUNION s u t",
        "SDIFF u s",
        "SINTER s missing",
        "SINTERSTORE dest s u",
        "SUNIONSTORE dest s u",
        "SDIFFSTORE dest u u",
        "EXISTS dest",
        "SINTERCARD 2 s u",
        "SINTERCARD 2 s u LIMIT 1",
        "SINTERCARD 0 s",
        "SINTERCARD 3 s u",
        "SINTERCARD 1 s LIMIT -1",
        "SINTERCARD 1 s FOO 1",
        "SPOP n",
        "SPOP n 2",
        "SPOP n 0",
        "SPOP n -1",
        "SPOP missing",
        "SPOP missing 3",
        "SRANDMEMBER u",
        "SRANDMEMBER u 2",
        "SRANDMEMBER u -5",
        "SRANDMEMBER u 0",
        "SRANDMEMBER missing",
        "SRANDMEMBER missing 3",
        "SET str v",
        "SADD str a",
        "SMEMBERS str",
        "SINTER s str",
        "SUNIONSTORE str2 s str",
        "SINTERSTORE str s u",
        "TYPE str",
    ])]
}

fn sorted_sets() -> Vec<Scenario> {
    vec![
        s(&[
            "ZADD z 1 a 2 b 3 c",
            "ZADD z 1.5 a",
            "ZADD z NX 9 a 4 d",
            "ZADD z XX 5 d 6 e",
            "ZADD z GT 1 d",
            "ZADD z LT 1 d",
            "ZADD z CH 7 d 8 f",
            "ZADD z INCR 2 a",
            "ZADD z INCR 2 a 3 b",
            "ZADD z NX XX 1 a",
            "ZADD z GT LT 1 a",
            "ZADD z NX GT 1 a",
            "ZADD z 1 a 2",
            "ZADD z x a",
            "ZADD z nan a",
            "ZADD z inf top -inf bottom",
            "ZSCORE z a",
            "ZSCORE z top",
            "ZSCORE z nope",
            "ZMSCORE z a nope b",
            "ZCARD z",
            "ZCARD missing",
            "ZINCRBY z 0.1 a",
            "ZINCRBY z x a",
            "ZINCRBY z 1 new",
            "ZRANK z a",
            "ZREVRANK z a",
            "ZRANK z nope",
            "ZCOUNT z 1 3",
            "ZCOUNT z (1 3",
            "ZCOUNT z -inf +inf",
            "ZCOUNT z x 3",
            "ZRANGE z 0 -1",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZRANGE z 1 2 REV",
            "ZRANGE z (1 5 BYSCORE",
            "ZRANGE z 5 (1 BYSCORE REV WITHSCORES",
            "ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
            "ZRANGE z 0 -1 LIMIT 1 2",
            "ZRANGE z a b BYLEX",
            "ZRANGE z 0 1 BYSCORE BYLEX",
            "ZRANGE z 0 1 FOO",
            "ZREVRANGE z 0 2",
            "ZREVRANGE z 0 2 WITHSCORES",
            "ZRANGEBYSCORE z 2 8",
            "ZRANGEBYSCORE z (2 8 WITHSCORES LIMIT 0 2",
            "ZRANGEBYSCORE z 2 x",
            "ZREVRANGEBYSCORE z 8 2",
            "ZREMRANGEBYSCORE z -inf 1",
            "ZREMRANGEBYRANK z 0 0",
            "ZRANGE z 0 -1 WITHSCORES",
            "ZPOPMIN z",
            "ZPOPMAX z 2",
            "ZPOPMIN z 0",
            "ZPOPMIN z -1",
            "ZPOPMIN missing",
            "ZPOPMAX missing 2",
            "ZREM z top nope",
            "ZREM missing a",
            "SET str v",
            "ZADD str 1 a",
            "ZRANGE str 0 -1",
            "ZSCORE str a",
        ]),
        s(&[
            "ZADD lex 0 a 0 b 0 c 0 d 0 e",
            "ZRANGEBYLEX lex - +",
            "ZRANGEBYLEX lex [b (d",
            "ZRANGEBYLEX lex (a [c LIMIT 1 1",
            "ZRANGEBYLEX lex a c",
            "ZREVRANGEBYLEX lex + -",
            "ZREVRANGEBYLEX lex [d [b",
            "ZLEXCOUNT lex [b +",
            "ZLEXCOUNT lex x y",
            "ZREMRANGEBYLEX lex [a [b",
            "ZRANGE lex 0 -1",
            "ZADD scores 0.1 a 1e-20 b 123456789012 c -0.0 d 3.0 e",
            "ZRANGE scores 0 -1 WITHSCORES",
            "ZSCORE scores d",
            "ZINCRBY scores 1e308 c",
            "ZINCRBY scores 1e308 c",
            "ZADD scores INCR inf e",
            "ZADD scores INCR -inf e",
        ]),
    ]
}

fn strings_and_keys() -> Vec<Scenario> {
    vec![
        s(&[
            "SET n 10.5",
            "INCRBYFLOAT n 0.1",
            "INCRBYFLOAT n -5",
            "INCRBYFLOAT n 5.0e3",
            "INCRBYFLOAT n 1e400",
            "INCRBYFLOAT n abc",
            "INCRBYFLOAT new 3",
            "SET big 1.7976931348623157e308",
            "INCRBYFLOAT big 1.7976931348623157e308",
            "SET s abc",
            "INCRBYFLOAT s 1",
            "SETEX k 100 v",
            "TTL k",
            "SETEX k 0 v",
            "SETEX k -1 v",
            "SETEX k x v",
            "PSETEX k 100000 v",
            "PTTL k",
            "PSETEX k 0 v",
            "GETEX k",
            "GETEX k PERSIST",
            "TTL k",
            "GETEX k EX 100",
            "TTL k",
            "GETEX k PX 100000 EX 10",
            "GETEX k EXAT 99999999999",
            "GETEX k PXAT 99999999999000",
            "EXPIRETIME k",
            "PEXPIRETIME k",
            "GETEX k FOO",
            "GETEX k EX 0",
            "GETEX missing EX 10",
            "MSET a 1 b 2",
            "MSET a",
            "MGET a b missing",
            "MSETNX a 9 c 3",
            "MSETNX c 3 d 4",
            "MGET c d",
            "APPEND a xyz",
            "APPEND fresh abc",
            "STRLEN a",
            "STRLEN missing",
            "GETRANGE fresh 0 1",
            "GETRANGE fresh -2 -1",
            "GETRANGE fresh 5 10",
            "GETRANGE missing 0 1",
            "GETRANGE fresh x 1",
            "SETRANGE fresh 1 Z",
            "SETRANGE fresh 6 end",
            "GET fresh",
            "SETRANGE padded 2 x",
            "GET padded",
            "SETRANGE fresh -1 x",
            "SETRANGE fresh 536870912 x",
            "SETRANGE empty 5 ",
            "EXISTS empty",
            "RPUSH l x",
            "APPEND l x",
            "STRLEN l",
            "GETRANGE l 0 1",
            "SETRANGE l 0 x",
            "INCRBYFLOAT l 1",
            "MGET l a",
            "GETEX l",
        ]),
        s(&[
            "SET a 1",
            "EXPIREAT a 99999999999",
            "RENAME a b",
            "GET a",
            "GET b",
            "EXPIRETIME b",
            "RENAME missing x",
            "RENAME b b",
            "SET c 3",
            "RENAMENX b c",
            "RENAMENX b d",
            "RENAMENX d d",
            "RENAMENX missing x",
            "COPY d e",
            "COPY d e",
            "COPY d e REPLACE",
            "COPY d d",
            "COPY missing e",
            "COPY d e FOO",
            "COPY d e DB",
            "COPY d e DB x",
            "COPY d e DB 99",
            "COPY d e REPLACE DB 0",
            "EXPIRETIME e",
            "PEXPIRETIME e",
            "EXPIRETIME c",
            "EXPIRETIME missing",
            "UNLINK c e missing",
            "TOUCH d d missing",
            "RPUSH l a b",
            "COPY l l2",
            "LRANGE l2 0 -1",
            "HSET h f v",
            "RENAME h h2",
            "HGETALL h2",
            "SCAN 0",
            "SCAN 0 MATCH l*",
            "SCAN 0 TYPE list",
            "SCAN 0 TYPE nothing",
            "SCAN 0 COUNT 0",
            "SCAN 0 COUNT x",
            "SCAN 0 MATCH",
            "SCAN 0 FOO 1",
            "SCAN x",
            "SCAN -1 COUNT 0",
            "SCAN 18446744073709551616",
            "HSET hs a 1 b 2 ab 3",
            "HSCAN hs 0",
            "HSCAN hs 0 MATCH a*",
            "HSCAN hs 0 TYPE x",
            "HSCAN hs x",
            "HSCAN missing 0",
            "HSCAN l 0",
            "SADD ss x y 1",
            "SSCAN ss 0",
            "SSCAN ss 0 MATCH x",
            "ZADD zs 1.5 a 2 b",
            "ZSCAN zs 0",
            "ZSCAN zs 0 COUNT 100",
            "RANDOMKEY",
            "FLUSHDB",
            "RANDOMKEY",
        ]),
        s(&[
            "SET int 12345",
            "SET neg -7",
            "SET lead 012",
            "SET short hello",
            "SET long aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "SET bigint 123456789012345678901",
            "OBJECT ENCODING int",
            "OBJECT ENCODING neg",
            "OBJECT ENCODING lead",
            "OBJECT ENCODING short",
            "OBJECT ENCODING long",
            "OBJECT ENCODING bigint",
            "RPUSH l a",
            "OBJECT ENCODING l",
            "HSET h a b",
            "OBJECT ENCODING h",
            "HSET hbig f aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "OBJECT ENCODING hbig",
            "SADD si 1 2 3",
            "OBJECT ENCODING si",
            "SADD ss a",
            "OBJECT ENCODING ss",
            "ZADD z 1 a",
            "OBJECT ENCODING z",
            "ZADD zbig 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "OBJECT ENCODING zbig",
            "OBJECT ENCODING missing",
            "OBJECT REFCOUNT int",
            "OBJECT REFCOUNT short",
            "OBJECT IDLETIME short",
            "OBJECT FREQ short",
            "OBJECT HELP",
            "OBJECT FOO short",
            "OBJECT ENCODING",
            "OBJECT ENCODING a b",
            "OBJECT HELP x",
            "OBJECT",
        ]),
    ]
}

/// Writes that change nothing are not seen by WATCH; writes that change something are.
fn watched_writes() -> Vec<Scenario> {
    let probes = [
        "LPOP l 0",
        "LREM l 0 zz",
        "LTRIM l 0 -1",
        "LSET l 0 a",
        "RPUSHX missing x",
        "LMOVE missing l LEFT LEFT",
        "HDEL h zz",
        "HSET h f v",
        "HSETNX h f v",
        "HINCRBY h n 0",
        "SREM s zz",
        "SADD s a",
        "SMOVE s t zz",
        "SPOP s 0",
        "ZREM z zz",
        "ZADD z 1 a",
        "ZADD z NX 5 a",
        "ZINCRBY z 0 a",
        "ZREMRANGEBYSCORE z 100 200",
        "ZPOPMIN z 0",
        "SINTERSTORE s missing",
        "APPEND str ",
        "SETRANGE str 0 ",
        "GETEX str",
        "GETEX str PERSIST",
        "RENAME str str",
        "COPY str copy",
        "UNLINK missing",
        "TOUCH str",
        "INCRBYFLOAT str 0",
        "MSETNX str x",
    ];
    probes
        .iter()
        .map(|probe| {
            let key = probe.split(' ').nth(1).expect("a key");
            let mut lines = vec![
                "RPUSH l a b".to_string(),
                "HSET h f v n 1".into(),
                "SADD s a b".into(),
                "ZADD z 1 a".into(),
                "SET str 5".into(),
                format!("WATCH {key}"),
                (*probe).into(),
                "MULTI".into(),
                "PING".into(),
                "EXEC".into(),
            ];
            if probe.starts_with("SINTERSTORE") || probe.starts_with("SMOVE") {
                lines.insert(5, "SADD t x".into());
            }
            lines
                .into_iter()
                .map(|line| line.leak().split(' ').collect())
                .collect()
        })
        .collect()
}

fn all() -> Vec<Scenario> {
    [lists(), hashes(), sets(), sorted_sets(), strings_and_keys()].concat()
}

#[tokio::test]
async fn data_type_commands_reply_like_redis() {
    let Some(servers) = both_servers("data_type_commands_reply_like_redis").await else {
        return;
    };
    let compared = compare_one_by_one(&servers, &all(), "").await;
    println!("{compared} commands answered like redis-server");
}

#[tokio::test]
async fn data_type_commands_reply_like_redis_when_pipelined() {
    let Some(servers) = both_servers("data_type_commands_reply_like_redis_when_pipelined").await
    else {
        return;
    };
    compare_pipelined(&servers, &all()).await;
}

/// Each command run by a script, `redis.pcall(unpack(ARGV))`: the same command table,
/// arity checks and replies (converted to Lua and back) as from a client.
#[tokio::test]
async fn data_type_commands_reply_like_redis_from_scripts() {
    let Some(servers) = both_servers("data_type_commands_reply_like_redis_from_scripts").await
    else {
        return;
    };
    let scripted: Vec<Scenario> = all()
        .into_iter()
        .map(|scenario| {
            scenario
                .into_iter()
                .map(|command| {
                    let mut eval = vec!["EVAL", "return redis.pcall(unpack(ARGV))", "0"];
                    eval.extend(command);
                    eval
                })
                .collect()
        })
        .collect();
    let compared = compare_one_by_one(&servers, &scripted, "from a script:").await;
    println!("{compared} scripted commands answered like redis-server");
}

#[tokio::test]
async fn writes_that_change_nothing_are_invisible_to_watch_like_redis() {
    let Some(servers) =
        both_servers("writes_that_change_nothing_are_invisible_to_watch_like_redis").await
    else {
        return;
    };
    compare_one_by_one(&servers, &watched_writes(), "watched:").await;
}

/// BRPOP, BLMOVE and BLMPOP wait, in line, for pushes; each push serves the oldest
/// waiter first, an element BLMOVE moves serves a waiter on its destination in the same
/// turn, timeouts answer a null array, and a waiter that leaves takes nothing.
#[tokio::test]
async fn blocking_list_commands_are_served_like_redis() {
    let Some(servers) = both_servers("blocking_list_commands_are_served_like_redis").await else {
        return;
    };
    let mut transcripts = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut waiters = Vec::new();
        for _ in 0..4 {
            waiters.push(Raw::connect(&addr).await);
        }
        let mut pusher = Raw::connect(&addr).await;
        let mut transcript = vec![pusher.command(&["FLUSHALL"]).await];
        let blocking: [&[&str]; 4] = [
            &["BRPOP", "jobs", "0"],
            &["BLMOVE", "jobs", "done", "LEFT", "RIGHT", "0"],
            &["BLMPOP", "0", "2", "none", "jobs", "LEFT", "COUNT", "2"],
            &["BLPOP", "done", "0"],
        ];
        for (n, (waiter, command)) in waiters.iter_mut().zip(blocking).enumerate() {
            waiter.send_only(command).await;
            pusher.await_blocked(n + 1).await;
        }
        transcript.push(
            pusher
                .command(&["RPUSH", "jobs", "1", "2", "3", "4", "5"])
                .await,
        );
        for waiter in &mut waiters {
            transcript.push(waiter.read_reply().await);
        }
        transcript.push(pusher.command(&["LRANGE", "jobs", "0", "-1"]).await);
        transcript.push(pusher.command(&["LLEN", "done"]).await);
        // Timeouts.
        for command in [
            &["BRPOP", "nothing", "0.05"][..],
            &["BRPOPLPUSH", "nothing", "x", "0.05"],
            &["BLMOVE", "nothing", "x", "LEFT", "LEFT", "0.05"],
            &["BLMPOP", "0.05", "1", "nothing", "RIGHT"],
        ] {
            transcript.push(waiters[0].command(command).await);
        }
        // Inside MULTI they do not wait.
        transcript.push(waiters[0].command(&["MULTI"]).await);
        transcript.push(
            waiters[0]
                .command(&["BLMOVE", "nothing", "x", "LEFT", "LEFT", "0"])
                .await,
        );
        transcript.push(
            waiters[0]
                .command(&["BRPOPLPUSH", "nothing", "x", "0"])
                .await,
        );
        transcript.push(
            waiters[0]
                .command(&["BLMPOP", "0", "1", "nothing", "RIGHT"])
                .await,
        );
        transcript.push(waiters[0].command(&["EXEC"]).await);
        // A BLMOVE waiter that leaves moves nothing.
        let mut leaver = Raw::connect(&addr).await;
        leaver
            .send_only(&["BLMOVE", "kept", "dest", "LEFT", "LEFT", "0"])
            .await;
        pusher.await_blocked(1).await;
        drop(leaver);
        pusher.await_blocked(0).await;
        transcript.push(pusher.command(&["RPUSH", "kept", "v"]).await);
        transcript.push(pusher.command(&["LRANGE", "kept", "0", "-1"]).await);
        transcript.push(pusher.command(&["EXISTS", "dest"]).await);
        transcripts.push(transcript);
    }
    assert_same_transcripts(&transcripts, "blocking list commands");
}
