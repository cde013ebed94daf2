//! Pub/sub counts: once an UNSUBSCRIBE has been answered, no PUBLISH counts the
//! subscriptions it ended, however the two connections' requests interleave.

use crate::support;

use lock_server::{Server, ServerOptions};
use support::raw::Raw;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answered_unsubscribe_is_never_counted_by_a_later_publish() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let addr = server.addr().to_string();
    let mut publisher = Raw::connect(&addr).await;
    for round in 0..300 {
        let mut subscriber = Raw::connect(&addr).await;
        subscriber.send_only(&["SUBSCRIBE", "c1", "c2", "c3"]).await;
        for _ in 0..3 {
            subscriber.read_reply().await;
        }
        // Only the first confirmation is read: all three subscriptions end with it.
        subscriber.send_only(&["UNSUBSCRIBE"]).await;
        subscriber.read_reply().await;
        for channel in ["c1", "c2", "c3"] {
            let counted = publisher.command(&["PUBLISH", channel, "x"]).await;
            assert_eq!(counted, b":0\r\n", "round {round}, {channel}");
        }
        let mut pattern = Raw::connect(&addr).await;
        pattern.send_only(&["PSUBSCRIBE", "c*"]).await;
        pattern.read_reply().await;
        pattern.send_only(&["PUNSUBSCRIBE"]).await;
        pattern.read_reply().await;
        assert_eq!(publisher.command(&["PUBLISH", "c1", "x"]).await, b":0\r\n");
    }
    server.stop().await;
}
