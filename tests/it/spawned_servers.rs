//! The test spawners on real processes: what they promise that the suites rely on.

use nxlock::testing::{RedisServer, ReplicatedRedis, skip_or_fail};
use redis::AsyncCommands;

/// Big enough that the replication stream is still crossing the link proxy when the
/// client has its reply.
const BIG: usize = 4 * 1024 * 1024;

/// A server spawned on a port another server holds fails to start: the one answering
/// there is not it. (Two spawns can be given the same free port; taking the other's
/// answer for its own once made two test deployments share a primary.)
#[test]
fn a_spawn_on_a_taken_port_is_not_answered_for_by_the_other_server() {
    let holder = match RedisServer::spawn() {
        Ok(server) => server,
        Err(why) => {
            skip_or_fail("RedisServer::spawn_on", &why);
            return;
        }
    };
    let second = RedisServer::spawn_on(holder.port(), &[]);
    let error = second.expect_err("a second server cannot listen on a taken port");
    assert!(error.contains("exited at start"), "{error}");
}

/// `ReplicatedRedis::pause` holds back the writes that follow it, never one its primary
/// had already acknowledged: a failover case that pauses right after a release would
/// otherwise find the released lock still on the promoted replica.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_acknowledged_before_a_pause_survive_the_failover() {
    let mut deployment = match ReplicatedRedis::spawn(1).await {
        Ok(deployment) => deployment,
        Err(why) => {
            skip_or_fail("ReplicatedRedis::pause", &why);
            return;
        }
    };
    let client = redis::Client::open(deployment.url()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = connection.set("big", vec![b'x'; BIG]).await.unwrap();
    let _: () = connection.set("before", "kept").await.unwrap();
    deployment.pause().await.expect("the replica catches up");
    let _: () = connection.set("after", "lost").await.unwrap();

    deployment.crash_primary();
    deployment.promote().await.expect("the replica is promoted");
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let big: usize = connection.strlen("big").await.unwrap();
    let before: Option<String> = connection.get("before").await.unwrap();
    let after: Option<String> = connection.get("after").await.unwrap();
    assert_eq!(big, BIG, "the big value did not reach the replica whole");
    assert_eq!(before.as_deref(), Some("kept"));
    assert_eq!(after, None, "a write after the pause reached the replica");
}

/// `keep_on_cpus` places every instance, and a restarted instance (a new process) lands
/// on the same CPUs: `nxlock bench --pin` restarts the killed node between scenarios.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn instances_kept_on_cpus_stay_there_across_a_restart() {
    use nxlock::testing::{Durability, RedisInstances, cpus_of};

    let instances = match RedisInstances::spawn(2, Durability::None).await {
        Ok(instances) => instances,
        Err(why) => {
            skip_or_fail("RedisInstances::keep_on_cpus", &why);
            return;
        }
    };
    // The last CPU this process may use: a placement every machine can make.
    let allowed = cpus_of(std::process::id()).unwrap();
    let last = [*allowed.last().unwrap()];
    instances.keep_on_cpus(&last).unwrap();
    for pid in instances.pids() {
        assert_eq!(cpus_of(pid.unwrap()).unwrap(), last);
    }
    let before = instances.pids()[0];
    instances.kill(0).unwrap();
    assert_eq!(instances.pids()[0], None);
    instances.restart(0, false).unwrap();
    let after = instances.pids()[0].unwrap();
    assert_ne!(Some(after), before, "a restart is a new process");
    assert_eq!(cpus_of(after).unwrap(), last);
}
