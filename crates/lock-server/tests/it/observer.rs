//! An observed server: a client's own port tags its connections; the observer hears its
//! markers and decides what happens to each command (held, refused, its reply late or
//! lost). Without an observer, markers are checked and ignored.

use std::sync::Arc;
use std::time::Duration;

use lock_server::{After, Before, Marker, Observer, Server, ServerOptions};
use std::sync::Mutex;

use crate::support::raw::Raw;

/// Answers each command of client 1 as `plan` says, in order; records what it saw.
#[derive(Debug, Default)]
struct Scripted {
    plan: Mutex<Vec<(Before, After)>>,
    seen: Mutex<Vec<String>>,
}

impl Observer for Scripted {
    fn before(&self, client: usize, args: &[Vec<u8>]) -> Before {
        let name = String::from_utf8_lossy(&args[0]).into_owned();
        self.seen
            .lock()
            .unwrap()
            .push(format!("{client} before {name}"));
        let mut plan = self.plan.lock().unwrap();
        match plan.first() {
            // A refused or unanswered command gets no `after`: its step ends here.
            Some((Before::Refuse | Before::Unanswered(_), _)) if client == 1 => plan.remove(0).0,
            Some((before, _)) if client == 1 => *before,
            _ => Before::Run,
        }
    }

    fn after(&self, client: usize, args: &[Vec<u8>], reply: &[u8]) -> After {
        let name = String::from_utf8_lossy(&args[0]).into_owned();
        let reply = String::from_utf8_lossy(reply).trim_end().to_owned();
        self.seen
            .lock()
            .unwrap()
            .push(format!("{client} after {name} {reply}"));
        let mut plan = self.plan.lock().unwrap();
        if client == 1 && !plan.is_empty() {
            plan.remove(0).1
        } else {
            After::Send
        }
    }

    fn marker(&self, client: usize, marker: Marker) -> Result<(), String> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("{client} marker {marker:?}"));
        match marker {
            Marker::Write { fence, .. } if fence < 5 => Err(format!(
                "STALE fence {fence}: the resource has accepted fence 5"
            )),
            _ => Ok(()),
        }
    }
}

async fn observed(plan: Vec<(Before, After)>) -> (Server, Arc<Scripted>) {
    let observer = Arc::new(Scripted {
        plan: Mutex::new(plan),
        seen: Mutex::default(),
    });
    let options = ServerOptions {
        observer: Some(observer.clone()),
        ..ServerOptions::default()
    };
    (Server::start(options).await.unwrap(), observer)
}

#[tokio::test]
async fn a_plain_server_checks_markers_and_ignores_them() {
    let server = Server::start(ServerOptions::default()).await.unwrap();
    let mut client = Raw::connect(&server.addr().to_string()).await;
    for (request, reply) in [
        (&["NXLOCK.ENTER", "r", "PX", "150"][..], &b"+OK\r\n"[..]),
        (&["nxlock.enter", "r"], b"+OK\r\n"),
        (&["NXLOCK.HOLDS", "k", "t"], b"+OK\r\n"),
        (&["NXLOCK.WRITE", "r", "3"], b"+OK\r\n"),
        (&["NXLOCK.INCR", "c"], b"+OK\r\n"),
        (&["NXLOCK.DONE"], b"+OK\r\n"),
        (&["NXLOCK.FAILED"], b"+OK\r\n"),
        (&["NXLOCK.EXIT", "r"], b"+OK\r\n"),
        (&["NXLOCK.ENTER", "r", "PX"], b"-ERR syntax error\r\n"),
        (
            &["NXLOCK.WRITE", "r", "x"],
            b"-ERR value is not an integer or out of range\r\n",
        ),
        (
            &["NXLOCK.EXIT"],
            b"-ERR wrong number of arguments for 'nxlock.exit' command\r\n",
        ),
        (
            &["NXLOCK.ENTER", "r", "MONOTONIC", "12.5", "FENCE", "2"],
            b"+OK\r\n",
        ),
        (&["NXLOCK.EXTEND", "r", "PX", "100"], b"+OK\r\n"),
        (
            &["NXLOCK.EXTEND", "r"],
            b"-ERR wrong number of arguments for 'nxlock.extend' command\r\n",
        ),
        (&["NXLOCK.PERMANENT", "{o}:fence"], b"+OK\r\n"),
        (&["NXLOCK.COUNTER", "hits", "{c}:hits"], b"+OK\r\n"),
        (
            &["NXLOCK.COUNTER", "hits"],
            b"-ERR wrong number of arguments for 'nxlock.counter' command\r\n",
        ),
        (&["NXLOCK.FASTFORWARD", "0"], b"+OK\r\n"),
        (
            &["NXLOCK.FASTFORWARD", "-5"],
            b"-ERR NXLOCK.FASTFORWARD takes milliseconds to move forward, 0 or more\r\n",
        ),
        (
            &["NXLOCK.FASTFORWARD", "soon"],
            b"-ERR value is not an integer or out of range\r\n",
        ),
    ] {
        assert_eq!(client.command(request).await, reply, "{request:?}");
    }
    server.stop().await;
}

#[tokio::test]
async fn a_clients_port_tags_its_connections_and_its_markers_reach_the_observer() {
    let (server, observer) = observed(Vec::new()).await;
    let port = server.listen_as(1).await.unwrap();
    let mut tagged = Raw::connect(&port.to_string()).await;
    let mut untagged = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(tagged.command(&["SET", "k", "v"]).await, b"+OK\r\n");
    assert_eq!(
        tagged.command(&["NXLOCK.ENTER", "r", "PX", "150"]).await,
        b"+OK\r\n"
    );
    assert_eq!(
        tagged.command(&["NXLOCK.WRITE", "r", "3"]).await,
        b"-STALE fence 3: the resource has accepted fence 5\r\n"
    );
    // The main port's connections are nobody's: served, and their markers ignored.
    assert_eq!(untagged.command(&["GET", "k"]).await, b"$1\r\nv\r\n");
    assert_eq!(
        untagged.command(&["NXLOCK.WRITE", "r", "3"]).await,
        b"+OK\r\n"
    );
    assert_eq!(
        *observer.seen.lock().unwrap(),
        [
            "1 before SET",
            "1 after SET +OK",
            "1 before NXLOCK.ENTER",
            "1 marker Enter { resource: \"r\", validity: Some(Px(150)), fence: None }",
            "1 after NXLOCK.ENTER +OK",
            "1 before NXLOCK.WRITE",
            "1 marker Write { resource: \"r\", fence: 3 }",
            "1 after NXLOCK.WRITE -STALE fence 3: the resource has accepted fence 5",
        ]
    );
    server.stop().await;
}

#[tokio::test]
async fn a_refused_command_never_runs_and_a_lost_reply_ran() {
    let (server, _) = observed(vec![
        (Before::Refuse, After::Send),
        (Before::Run, After::Lose),
    ])
    .await;
    let port = server.listen_as(1).await.unwrap().to_string();
    let mut refused = Raw::connect(&port).await;
    assert_eq!(refused.command(&["SET", "a", "1"]).await, b"", "closed");
    let mut lost = Raw::connect(&port).await;
    assert_eq!(lost.command(&["SET", "b", "1"]).await, b"", "closed");
    let mut look = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(
        look.command(&["EXISTS", "a", "b"]).await,
        b":1\r\n",
        "b ran"
    );
    assert_eq!(look.command(&["EXISTS", "b"]).await, b":1\r\n");
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_held_command_and_a_late_reply_wait_on_the_servers_clock() {
    let (server, _) = observed(vec![
        (Before::Hold(Duration::from_millis(300)), After::Send),
        (Before::Run, After::Late(Duration::from_millis(200))),
    ])
    .await;
    let port = server.listen_as(1).await.unwrap().to_string();
    let mut client = Raw::connect(&port).await;
    let started = tokio::time::Instant::now();
    assert_eq!(client.command(&["SET", "k", "v"]).await, b"+OK\r\n");
    assert!(started.elapsed() >= Duration::from_millis(300));
    let started = tokio::time::Instant::now();
    assert_eq!(client.command(&["GET", "k"]).await, b"$1\r\nv\r\n");
    assert!(started.elapsed() >= Duration::from_millis(200));
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_command_never_runs_and_its_connection_closes_after_the_wait() {
    let (server, _) = observed(vec![(
        Before::Unanswered(Duration::from_millis(900)),
        After::Send,
    )])
    .await;
    let port = server.listen_as(1).await.unwrap().to_string();
    let mut client = Raw::connect(&port).await;
    let started = tokio::time::Instant::now();
    assert_eq!(client.command(&["SET", "a", "1"]).await, b"", "closed");
    assert!(started.elapsed() >= Duration::from_millis(900));
    let mut look = Raw::connect(&server.addr().to_string()).await;
    assert_eq!(look.command(&["EXISTS", "a"]).await, b":0\r\n", "never ran");
    server.stop().await;
}

/// Holds every command of client 1, then says what befell it meanwhile.
#[derive(Debug)]
struct HeldThen(Before);

impl Observer for HeldThen {
    fn before(&self, _client: usize, _args: &[Vec<u8>]) -> Before {
        Before::Hold(Duration::from_millis(100))
    }

    fn held(&self, _client: usize, _args: &[Vec<u8>]) -> Before {
        self.0
    }

    fn after(&self, _client: usize, _args: &[Vec<u8>], _reply: &[u8]) -> After {
        After::Send
    }

    fn marker(&self, _client: usize, _marker: Marker) -> Result<(), String> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_held_command_meets_what_befell_its_server_while_it_waited() {
    for (then, runs) in [
        (Before::Run, true),
        (Before::Hold(Duration::from_secs(60)), true),
        (Before::Refuse, false),
        (Before::Unanswered(Duration::from_millis(500)), false),
    ] {
        let server = Server::start(ServerOptions {
            observer: Some(Arc::new(HeldThen(then))),
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        let port = server.listen_as(1).await.unwrap().to_string();
        let mut client = Raw::connect(&port).await;
        let reply = client.command(&["SET", "k", "v"]).await;
        assert_eq!(reply.is_empty(), !runs, "{then:?}: {reply:?}");
        let mut look = Raw::connect(&server.addr().to_string()).await;
        let exists: &[u8] = if runs { b":1\r\n" } else { b":0\r\n" };
        assert_eq!(look.command(&["EXISTS", "k"]).await, exists, "{then:?}");
        server.stop().await;
    }
}
