//! `nxlock serve` and a spawned redis-server side by side, and how their replies are
//! compared: byte for byte, except where Redis's order is its hash table's (compared as
//! sets) or its choice is random (compared by shape), and remaining times (compared
//! within a tolerance).

use nxlock::backend::RedisVersion;
use nxlock::server::{Server, ServerOptions};
use nxlock::testing::RedisTarget;

use tokio::io::AsyncWriteExt;

use super::raw::{Raw, reply_end, request};

/// nxlock serve and a real redis-server, side by side.
pub struct Servers {
    pub server: Server,
    /// `host:port` of the redis-server.
    pub redis_addr: String,
    /// Keeps a spawned redis-server alive for the test.
    pub _redis: RedisTarget,
    /// The Redis version nxlock serve answers as: the real server's.
    pub version: RedisVersion,
}

impl Servers {
    /// `host:port` of nxlock serve.
    pub fn ours(&self) -> String {
        self.server.addr().to_string()
    }
}

/// Both servers, or `None` after a loud SKIPPED line when there is no redis-server.
pub async fn both_servers(test: &str) -> Option<Servers> {
    let redis = match RedisTarget::from_env() {
        Ok(redis) => redis,
        Err(why) => {
            nxlock::testing::announce_skip(test, &why);
            return None;
        }
    };
    let redis_addr = redis.url().trim_start_matches("redis://").to_string();
    let version = version_of(&redis_addr).await;
    let options = ServerOptions {
        redis_version: version,
        ..ServerOptions::default()
    };
    Some(Servers {
        server: Server::start(options).await.unwrap(),
        redis_addr,
        _redis: redis,
        version,
    })
}

/// The version the server at `addr` answers as, by its `INFO server` (the newest for a
/// server nxlock has no profile for).
pub async fn version_of(addr: &str) -> RedisVersion {
    let mut client = Raw::connect(addr).await;
    let info = client.command(&["INFO", "server"]).await;
    RedisVersion::from_info(&String::from_utf8_lossy(&info)).unwrap_or_default()
}

/// Asserts that two transcripts (ours, then redis-server's) agree step by step.
pub fn assert_same_transcripts(transcripts: &[Vec<Vec<u8>>], what: &str) {
    assert_eq!(transcripts.len(), 2, "one transcript per server");
    assert_eq!(transcripts[0].len(), transcripts[1].len());
    for (i, (ours, redis)) in transcripts[0].iter().zip(&transcripts[1]).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(ours),
            String::from_utf8_lossy(redis),
            "step {i} of the {what} transcript"
        );
    }
}

/// Requests run in order from empty databases, each a command's arguments.
pub type Scenario = Vec<Vec<&'static str>>;

/// A scenario written one request per line, arguments separated by single spaces.
pub fn lines(requests: &[&'static str]) -> Scenario {
    requests
        .iter()
        .map(|line| line.split(' ').collect())
        .collect()
}

/// How a reply that differs is reported.
pub fn mismatch(how: &str, command: &[&str], ours: &[u8], redis: &[u8]) -> String {
    format!(
        "{how}{}\n  nxlock serve: {:?}\n  redis-server: {:?}",
        command.join(" "),
        String::from_utf8_lossy(ours),
        String::from_utf8_lossy(redis)
    )
}

/// Runs each scenario from empty databases on both servers, one command at a time, and
/// asserts the same replies: how many commands were compared.
pub async fn compare_one_by_one(servers: &Servers, scenarios: &[Scenario], how: &str) -> usize {
    let mut compared = 0;
    for scenario in scenarios {
        let mut ours = Raw::connect(&servers.ours()).await;
        let mut redis = Raw::connect(&servers.redis_addr).await;
        ours.command(&["FLUSHALL"]).await;
        redis.command(&["FLUSHALL"]).await;
        for command in scenario {
            let (a, b) = (ours.command(command).await, redis.command(command).await);
            assert!(same(command, &a, &b), "{}", mismatch(how, command, &a, &b));
            compared += 1;
        }
    }
    compared
}

/// Like [`compare_one_by_one`], but goes on past a difference: every mismatch, as
/// [`mismatch`] words it, so one run shows all that differs.
pub async fn mismatches(servers: &Servers, scenarios: &[Scenario]) -> Vec<String> {
    let mut found = Vec::new();
    for scenario in scenarios {
        let mut ours = Raw::connect(&servers.ours()).await;
        let mut redis = Raw::connect(&servers.redis_addr).await;
        ours.command(&["FLUSHALL"]).await;
        redis.command(&["FLUSHALL"]).await;
        for command in scenario {
            let (a, b) = (ours.command(command).await, redis.command(command).await);
            if !same(command, &a, &b) {
                found.push(mismatch("", command, &a, &b));
            }
        }
    }
    found
}

/// Each scenario sent as one pipelined write: the replies must be Redis's, in order.
pub async fn compare_pipelined(servers: &Servers, scenarios: &[Scenario]) {
    for scenario in scenarios {
        let mut replies = Vec::new();
        for addr in [servers.ours(), servers.redis_addr.clone()] {
            let mut client = Raw::connect(&addr).await;
            client.command(&["FLUSHALL"]).await;
            let pipeline: Vec<u8> = scenario.iter().flat_map(|c| request(c)).collect();
            client.stream.write_all(&pipeline).await.unwrap();
            let mut answered = Vec::new();
            for _ in scenario {
                answered.push(client.read_reply().await);
            }
            replies.push(answered);
        }
        for (command, (a, b)) in scenario.iter().zip(replies[0].iter().zip(&replies[1])) {
            assert!(
                same(command, a, b),
                "{}",
                mismatch("pipelined ", command, a, b)
            );
        }
    }
}

/// A RESP reply as a tree, to normalise before comparing.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resp {
    /// A line reply (`+`, `-`, `:`, `,`, `#`, `_`, `$-1`, `*-1`) as written.
    Line(Vec<u8>),
    Bulk(Vec<u8>),
    /// An aggregate: its type byte (`*`, `%`, `~`, `>`) and elements.
    Many(u8, Vec<Resp>),
}

impl Resp {
    /// Parses one whole reply.
    pub fn parse(reply: &[u8]) -> Resp {
        let (resp, end) = parse_at(reply, 0);
        assert_eq!(
            end,
            reply.len(),
            "one reply: {:?}",
            String::from_utf8_lossy(reply)
        );
        resp
    }

    /// Sorts the elements of this aggregate and of those at `depth` levels below.
    fn sort_at(&mut self, depth: usize) {
        if let Resp::Many(_, items) = self {
            if depth == 0 {
                items.sort();
            } else {
                for item in items {
                    item.sort_at(depth - 1);
                }
            }
        }
    }

    /// Only the shape: every bulk string emptied.
    fn shape(&self) -> Resp {
        match self {
            Resp::Bulk(_) => Resp::Bulk(Vec::new()),
            Resp::Many(kind, items) => Resp::Many(*kind, items.iter().map(Resp::shape).collect()),
            line => line.clone(),
        }
    }
}

fn parse_at(reply: &[u8], at: usize) -> (Resp, usize) {
    let line_end = at
        + reply[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a line")
        + 2;
    let line = &reply[at..line_end - 2];
    let number = || -> i64 { std::str::from_utf8(&line[1..]).unwrap().parse().unwrap() };
    match line[0] {
        b'$' | b'=' | b'(' if number() >= 0 => {
            let end = line_end + number() as usize;
            (Resp::Bulk(reply[line_end..end].to_vec()), end + 2)
        }
        b'*' | b'%' | b'~' | b'>' if number() >= 0 => {
            let count = number() as usize * if line[0] == b'%' { 2 } else { 1 };
            let mut items = Vec::with_capacity(count);
            let mut next = line_end;
            for _ in 0..count {
                let (item, end) = parse_at(reply, next);
                items.push(item);
                next = end;
            }
            (Resp::Many(line[0], items), next)
        }
        _ => (Resp::Line(line.to_vec()), line_end),
    }
}

/// How a command's reply is compared.
fn comparison(command: &[&str]) -> Comparison {
    let name = command[0].to_ascii_lowercase();
    let sub = command
        .get(1)
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_default();
    match name.as_str() {
        "keys" | "smembers" | "sinter" | "sunion" | "sdiff" => Comparison::Unordered(0),
        "scan" | "sscan" => Comparison::Unordered(1),
        "hscan" | "zscan" => Comparison::Pairs,
        "spop" | "srandmember" | "hrandfield" | "zrandmember" | "randomkey" => Comparison::Shape,
        "ttl" | "pttl" => Comparison::Time,
        // A script's reply is compared as the command it ran would be.
        "eval" if command.len() > 3 => comparison(&command[3..]),
        "object" if sub == "idletime" => Comparison::Idle,
        "config" if sub == "get" => Comparison::FlatPairs,
        _ => Comparison::Exact,
    }
}

enum Comparison {
    Exact,
    /// Arrays this many levels down hold elements in hash-table order.
    Unordered(usize),
    /// `[cursor, [field, value, …]]` with pairs in hash-table order.
    Pairs,
    /// `[name, value, …]` with pairs in hash-table order.
    FlatPairs,
    /// A random choice: the same kinds and counts.
    Shape,
    /// A remaining time, within 100 ms.
    Time,
    /// Seconds since a key's last use, within 1: Redis reads them off its LRU clock,
    /// which counts whole seconds and moves ten times a second, so a second boundary
    /// between the two servers' answers shows as 1.
    Idle,
}

/// Whether `ours` answers `command` as `redis` did.
pub fn same(command: &[&str], ours: &[u8], redis: &[u8]) -> bool {
    if ours == redis {
        return true;
    }
    // An error is compared byte for byte, whatever the command's comparison.
    if ours.starts_with(b"-") || redis.starts_with(b"-") {
        return false;
    }
    if reply_end(ours, 0) != Some(ours.len()) || reply_end(redis, 0) != Some(redis.len()) {
        return false;
    }
    let (mut a, mut b) = (Resp::parse(ours), Resp::parse(redis));
    match comparison(command) {
        Comparison::Exact => false,
        Comparison::Unordered(depth) => {
            a.sort_at(depth);
            b.sort_at(depth);
            a == b
        }
        Comparison::Pairs => pairs(a) == pairs(b),
        Comparison::FlatPairs => {
            let flat = |reply: Resp| pairs(Resp::Many(b'*', vec![Resp::Line(Vec::new()), reply]));
            flat(a) == flat(b)
        }
        Comparison::Shape => a.shape() == b.shape(),
        Comparison::Time | Comparison::Idle => {
            let number = |r: &Resp| match r {
                Resp::Line(line) => std::str::from_utf8(&line[1..]).ok()?.parse::<i64>().ok(),
                _ => None,
            };
            let tolerance = match comparison(command) {
                Comparison::Idle => 1,
                _ => 100,
            };
            match (number(&a), number(&b)) {
                (Some(x), Some(y)) if x >= 0 && y >= 0 => (x - y).abs() <= tolerance,
                _ => false,
            }
        }
    }
}

/// `[cursor, [k, v, k, v…]]` as its cursor and sorted pairs.
fn pairs(reply: Resp) -> Option<(Resp, Vec<(Resp, Resp)>)> {
    let Resp::Many(_, mut parts) = reply else {
        return None;
    };
    let Resp::Many(_, items) = parts.pop()? else {
        return None;
    };
    let mut pairs: Vec<(Resp, Resp)> = items
        .chunks(2)
        .map(|pair| {
            (
                pair[0].clone(),
                pair.get(1).cloned().unwrap_or(Resp::Line(Vec::new())),
            )
        })
        .collect();
    pairs.sort();
    Some((parts.pop()?, pairs))
}

/// A bulk string reply's text.
pub fn bulk_text(reply: &[u8]) -> String {
    match Resp::parse(reply) {
        Resp::Bulk(bytes) => String::from_utf8(bytes).unwrap(),
        other => panic!("a bulk string, not {other:?}"),
    }
}

/// A `CLIENT INFO` or `CLIENT LIST` line's `name=value` fields, in order.
pub fn client_fields(line: &str) -> Vec<(String, String)> {
    line.trim_end()
        .split(' ')
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap();
            (name.to_string(), value.to_string())
        })
        .collect()
}
