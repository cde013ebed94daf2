//! A user's Lua on the in-process double ([`LuaScripts`]) answers as `nxlock serve`
//! answers the same EVAL, error texts included; scripts with a native body keep it; the
//! double's writes from Lua replicate like any other.

use crate::support;

use lock_core::{ErrorKind, KvBackend, Script, Value};
use lock_memory::{MemoryBackend, MemoryReplicaSet};
use lock_server::{LuaScripts, Server, ServerOptions};
use support::raw::Raw;

/// What serve answers to `EVAL source numkeys keys… args…`, as RESP bytes.
async fn serve_reply(client: &mut Raw, source: &str, keys: &[&str], args: &[&str]) -> Vec<u8> {
    let numkeys = keys.len().to_string();
    let mut command = vec!["EVAL", source, &numkeys];
    command.extend(keys);
    command.extend(args);
    client.command(&command).await
}

/// The double's answer in RESP, for the replies these scripts give.
fn resp(reply: lock_core::Result<Value>) -> Vec<u8> {
    match reply {
        Ok(Value::Int(i)) => format!(":{i}\r\n").into_bytes(),
        Ok(Value::Nil) => b"$-1\r\n".to_vec(),
        Ok(Value::Status(s)) => format!("+{s}\r\n").into_bytes(),
        Ok(Value::Data(d)) => [format!("${}\r\n", d.len()).as_bytes(), &d, b"\r\n"].concat(),
        Ok(other) => format!("{other:?}").into_bytes(),
        Err(e) => format!("-{}\r\n", e.message()).into_bytes(),
    }
}

#[tokio::test]
async fn a_users_scripts_answer_on_the_double_as_on_serve() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    let double = MemoryBackend::new().with_script_runner(LuaScripts::shared());
    let cases: &[(&str, &[&str], &[&str])] = &[
        (
            "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
            &["lock"],
            &["me", "1000"],
        ),
        (
            "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])",
            &["lock"],
            &["you", "1000"],
        ),
        (
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
            &["lock"],
            &["you"],
        ),
        ("return redis.call('GET', KEYS[1])", &["lock"], &[]),
        (
            "return redis.call('PEXPIRE', KEYS[1], ARGV[1])",
            &["lock"],
            &["-5"],
        ),
        (
            "return redis.call('SET', KEYS[1], 'v', 'PX', ARGV[1])",
            &["k"],
            &["0"],
        ),
        ("return redis.call('NOSUCH', KEYS[1])", &["k"], &[]),
        ("return redis.call('GET')", &[], &[]),
        ("return redis.pcall('INCR', KEYS[1])", &["lock"], &[]),
        (
            "redis.call('SET', KEYS[1], 'x') return redis.call('INCR', KEYS[1])",
            &["n"],
            &[],
        ),
        ("return 1 +", &[], &[]),
        ("os.exit(1)", &[], &[]),
    ];
    for (source, keys, args) in cases {
        let script = Script::new("user", *source);
        let key_bytes: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let arg_bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let on_double = resp(double.eval(&script, &key_bytes, &arg_bytes).await);
        let on_serve = serve_reply(&mut client, source, keys, args).await;
        assert_eq!(
            String::from_utf8_lossy(&on_double),
            String::from_utf8_lossy(&on_serve),
            "{source}"
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn without_a_runner_the_double_refuses_lua_it_has_no_body_for() {
    let error = MemoryBackend::new()
        .eval(&Script::new("user", "return 1"), &[], &[])
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Unsupported);
    assert!(error.message().contains("with_script_runner"), "{error}");
}

#[tokio::test]
async fn a_native_body_still_runs_where_there_is_one() {
    let double = MemoryBackend::new().with_script_runner(LuaScripts::shared());
    // The Lua and the native body disagree on purpose: the native one must run.
    let script = Script::new("twin", "return 1").with_native(|_, _, _| Ok(Value::Int(2)));
    assert_eq!(double.eval(&script, &[], &[]).await.unwrap(), Value::Int(2));
}

#[tokio::test]
async fn writes_from_lua_on_a_primary_reach_its_replicas() {
    let set = MemoryReplicaSet::new(1);
    for node in 0..set.len() {
        set.node(node).set_script_runner(LuaScripts::shared());
    }
    let client = set.client();
    let script = Script::new("set", "return redis.call('SET', KEYS[1], ARGV[1])");
    client.eval(&script, &[b"k"], &[b"v"]).await.unwrap();
    set.fail_over();
    assert_eq!(client.get(b"k").await.unwrap(), Some(b"v".to_vec()));
}

/// A user's Lua on the double standing for a cluster is held to the rule its native
/// twin is held to, on every Redis version: a command inside the script may touch only
/// keys of its `KEYS`' node. Keys another primary serves (or any key, for a script
/// without keys) are refused with Redis's non-local-key error, and nothing is written.
#[tokio::test]
async fn a_users_lua_is_held_to_the_cluster_s_non_local_key_rule_as_native_bodies_are() {
    use lock_core::{RedisVersion, SlotLayout, hash_slot};
    let layout = SlotLayout::even(3);
    let node = |key: &str| layout.node_of(hash_slot(key.as_bytes()));
    // A key on another node than "lock"'s, and one on the same node.
    let names: Vec<String> = (0..200).map(|i| format!("other-{i}")).collect();
    let elsewhere = names.iter().find(|k| node(k) != node("lock")).unwrap();
    let alongside = names.iter().find(|k| node(k) == node("lock")).unwrap();
    for version in [RedisVersion::V7_0, RedisVersion::V7_2, RedisVersion::V7_4] {
        let double = MemoryBackend::new()
            .with_cluster_rules(layout.clone())
            .with_redis_version(version)
            .with_script_runner(LuaScripts::shared());
        let get = Script::new("get", "return redis.call('GET', ARGV[1])");
        let set = Script::new("set", "return redis.call('SET', ARGV[1], 'x')");
        let native_get = Script::new("get-native", "return redis.call('GET', ARGV[1])")
            .with_native(|store, _, args| Ok(store.get(args[0])?.map_or(Value::Nil, Value::Data)));
        for script in [&get, &set, &native_get] {
            let refused = double
                .eval(script, &[b"lock"], &[elsewhere.as_bytes()])
                .await
                .unwrap_err();
            assert_eq!(refused.kind(), ErrorKind::Script, "{version}: {refused:?}");
            assert!(
                refused.message().starts_with(
                    "ERR Script attempted to access a non local key in a cluster node"
                ),
                "{version} {}: {}",
                script.name(),
                refused.message()
            );
            // Without KEYS the script runs on a random node: every key is refused.
            let keyless = double.eval(script, &[], &[alongside.as_bytes()]).await;
            assert!(keyless.is_err(), "{version}: {keyless:?}");
        }
        assert_eq!(
            double.get(elsewhere.as_bytes()).await.unwrap(),
            None,
            "nothing written"
        );
        // The same node's keys are served.
        assert_eq!(
            double
                .eval(&set, &[b"lock"], &[alongside.as_bytes()])
                .await
                .unwrap(),
            Value::Status("OK".into())
        );
        assert_eq!(
            double
                .eval(&get, &[b"lock"], &[alongside.as_bytes()])
                .await
                .unwrap(),
            Value::Data(b"x".to_vec())
        );
    }
}
