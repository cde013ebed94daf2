//! `ReplicatedRedis::pause` on real processes: it holds back the writes that follow it,
//! never one its primary had already acknowledged. A failover case that pauses right
//! after a release would otherwise find the released lock still on the promoted replica.

use redis::AsyncCommands;

/// Big enough that the replication stream is still crossing the link proxy when the
/// client has its reply.
const BIG: usize = 4 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_acknowledged_before_a_pause_survive_the_failover() {
    let mut deployment = match nxlock::testing::ReplicatedRedis::spawn(1).await {
        Ok(deployment) => deployment,
        Err(why) => {
            nxlock::testing::skip_or_fail("ReplicatedRedis::pause", &why);
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
