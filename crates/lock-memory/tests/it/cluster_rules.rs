//! The double in cluster mode refuses what a Redis Cluster refuses, with Redis's texts
//! (checked against redis-server 7.0.15 in cluster mode).

use lock_core::{
    ErrorKind, KvBackend, RedisVersion, Script, SetOptions, SlotLayout, Value, hash_slot,
};
use lock_memory::MemoryBackend;

const CROSSSLOT: &str = "CROSSSLOT Keys in request don't hash to the same slot";
const NON_LOCAL: &str = "ERR Script attempted to access a non local key in a cluster node";

fn three_primaries() -> MemoryBackend {
    MemoryBackend::new().with_cluster_rules(SlotLayout::even(3))
}

fn get_argv() -> Script {
    Script::new("get-argv", "return redis.call('GET', ARGV[1])")
        .with_native(|store, _, args| Ok(store.get(args[0])?.map_or(Value::Nil, Value::Data)))
}

#[tokio::test]
async fn a_script_declaring_keys_of_two_slots_is_crossslot() {
    let backend = three_primaries();
    let del = Script::new("del-keys", "return redis.call('DEL', KEYS[1], KEYS[2])")
        .with_native(|store, keys, _| Ok(Value::Int(store.del(keys)?)));
    backend.set(b"foo", b"1", SetOptions::new()).await.unwrap();
    let error = backend
        .eval(&del, &[b"foo", b"bar"], &[])
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::CrossSlot);
    assert_eq!(error.message(), CROSSSLOT);
    // Refused before running: nothing was deleted.
    assert_eq!(backend.get(b"foo").await.unwrap(), Some(b"1".to_vec()));
    // The same keys with one hash tag are one slot.
    let tagged: [&[u8]; 2] = [b"{foo}:a", b"{foo}:b"];
    assert_eq!(
        backend.eval(&del, &tagged, &[]).await.unwrap(),
        Value::Int(0)
    );
}

#[tokio::test]
async fn multi_key_commands_across_slots_are_crossslot() {
    let backend = three_primaries();
    for refused in [
        backend.del(&[b"foo", b"bar"]).await,
        backend.exists(&[b"foo", b"bar"]).await,
    ] {
        assert_eq!(refused.unwrap_err().message(), CROSSSLOT);
    }
    assert_eq!(backend.del(&[b"{x}1", b"{x}2"]).await.unwrap(), 0);
    // Without cluster rules the same command is fine.
    assert_eq!(
        MemoryBackend::new().del(&[b"foo", b"bar"]).await.unwrap(),
        0
    );
}

#[tokio::test]
async fn a_script_reaching_another_nodes_key_is_refused_and_its_own_nodes_is_not() {
    let backend = three_primaries();
    let layout = SlotLayout::even(3);
    // foo is slot 12182 (node 2), bar 5061 (node 0), k1 12706 (node 2).
    assert_eq!(layout.node_of(hash_slot(b"foo")), 2);
    assert_eq!(layout.node_of(hash_slot(b"k1")), 2);
    backend.set(b"k1", b"v1", SetOptions::new()).await.unwrap();
    assert_eq!(
        backend
            .eval(&get_argv(), &[b"foo"], &[b"k1"])
            .await
            .unwrap(),
        Value::Data(b"v1".to_vec())
    );
    let error = backend
        .eval(&get_argv(), &[b"foo"], &[b"bar"])
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Script);
    assert_eq!(error.message(), NON_LOCAL);
    // No KEYS: a cluster client sends the script to any node; every key is a guess.
    let error = backend.eval(&get_argv(), &[], &[b"k1"]).await.unwrap_err();
    assert_eq!(error.message(), NON_LOCAL);
}

/// One command inside a script naming two slots: Redis 7.0 and 7.2 answer the non-local
/// text, 7.4 (and Valkey 8) its own, naming the command. The texts are 7.0.15's and
/// Valkey 8.0.1's replies.
#[tokio::test]
async fn one_command_inside_a_script_spanning_slots_is_refused_as_each_version_does() {
    let del = Script::new("del-argv", "return redis.call('DEL', ARGV[1], ARGV[2])")
        .with_native(|store, _, args| Ok(Value::Int(store.del(&args[..2])?)));
    let newest =
        "ERR Command 'del' in script attempted to access keys that don't hash to the same slot";
    for (version, expected) in [
        (RedisVersion::V7_0, NON_LOCAL),
        (RedisVersion::V7_2, NON_LOCAL),
        (RedisVersion::V7_4, newest),
    ] {
        let backend = three_primaries().with_redis_version(version);
        // k1 and k5 are both node 2's, in two slots.
        let error = backend
            .eval(&del, &[b"foo"], &[b"k1", b"k5"])
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::Script);
        assert_eq!(error.message(), expected, "{version}");
        assert_eq!(backend.cluster_rules(), Some(SlotLayout::even(3)));
    }
    // The default is the newest.
    let error = three_primaries()
        .eval(&del, &[b"foo"], &[b"k1", b"k5"])
        .await
        .unwrap_err();
    assert_eq!(error.message(), newest);
}
