//! The server-side commands of `nxlock serve` against a real redis-server: INFO's sections
//! and fields, CONFIG GET/SET, COMMAND's description of every command, DEBUG, and CLIENT
//! LIST/INFO/KILL/REPLY/NO-EVICT. Values that depend on the process (ports, memory,
//! addresses) are compared by name and shape; everything else byte for byte.

use std::collections::BTreeMap;

use crate::support;
use support::raw::Raw;
use support::side_by_side::{Resp, both_servers, bulk_text, client_fields, mismatch, same};

/// INFO's text as section title → field names.
fn sections(info: &str) -> BTreeMap<String, Vec<String>> {
    let mut sections = BTreeMap::new();
    let mut current = String::new();
    for line in info.split("\r\n") {
        if let Some(title) = line.strip_prefix("# ") {
            current = title.to_string();
            sections.insert(current.clone(), Vec::new());
        } else if let Some((field, _)) = line.split_once(':') {
            sections.get_mut(&current).unwrap().push(field.to_string());
        }
    }
    sections
}

fn field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.split("\r\n")
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
}

#[tokio::test]
async fn info_has_redis_sections_and_only_fields_redis_has() {
    let Some(servers) = both_servers("info_has_redis_sections_and_only_fields_redis_has").await
    else {
        return;
    };
    let mut ours = Raw::connect(&servers.ours()).await;
    let mut redis = Raw::connect(&servers.redis_addr).await;
    let our_info = bulk_text(&ours.command(&["INFO"]).await);
    let redis_info = bulk_text(&redis.command(&["INFO", "everything"]).await);
    let (ours_by_section, redis_by_section) = (sections(&our_info), sections(&redis_info));
    let redis_default = sections(&bulk_text(&redis.command(&["INFO"]).await));
    assert_eq!(
        ours_by_section.keys().collect::<Vec<_>>(),
        redis_default.keys().collect::<Vec<_>>(),
        "the default sections"
    );
    // Every field reported is one Redis reports in the same section (errorstat_* and
    // db* fields come and go with errors and keys).
    for (section, fields) in &ours_by_section {
        for name in fields {
            let known = redis_by_section[section].contains(name)
                || name == "nxlock_version"
                || name.starts_with("errorstat_")
                || name.starts_with("db");
            assert!(known, "INFO {section} field {name} is not Redis's");
        }
    }
    // The fields clients read when they start (redis-py's conftest among them).
    for name in [
        "redis_version",
        "arch_bits",
        "cluster_enabled",
        "connected_clients",
        "blocked_clients",
        "number_of_cached_scripts",
        "used_memory",
        "maxmemory_policy",
        "role",
    ] {
        assert!(field(&our_info, name).is_some(), "INFO lacks {name}");
    }
    // The release of the version it answers as, the real server's.
    let version = servers.version;
    assert_eq!(field(&our_info, "redis_version"), Some(version.release()));
    assert_eq!(field(&our_info, "cluster_enabled"), Some("0"));
    // Section arguments, in any case, several at once; an unknown one is empty.
    for args in [
        &["INFO", "server"][..],
        &["INFO", "SERVER", "cluster"],
        &["INFO", "keyspace"],
        &["INFO", "nosuchsection"],
        &["INFO", "Clients", "clients"],
    ] {
        let ours_titles: Vec<String> = sections(&bulk_text(&ours.command(args).await))
            .into_keys()
            .collect();
        let redis_titles: Vec<String> = sections(&bulk_text(&redis.command(args).await))
            .into_keys()
            .collect();
        assert_eq!(ours_titles, redis_titles, "{args:?}");
    }
    assert_eq!(
        ours.command(&["INFO", "nosuchsection"]).await,
        redis.command(&["INFO", "nosuchsection"]).await
    );
}

#[tokio::test]
async fn info_counts_what_happens() {
    let Some(servers) = both_servers("info_counts_what_happens").await else {
        return;
    };
    let mut admin = Raw::connect(&servers.ours()).await;
    let number = |text: &str, name: &str| -> i64 { field(text, name).unwrap().parse().unwrap() };
    let before = bulk_text(&admin.command(&["INFO"]).await);
    assert_eq!(number(&before, "connected_clients"), 1);
    assert_eq!(number(&before, "blocked_clients"), 0);
    assert_eq!(number(&before, "number_of_cached_scripts"), 0);
    let mut waiter = Raw::connect(&servers.ours()).await;
    waiter.send_only(&["BLPOP", "nothing", "0"]).await;
    admin.await_blocked(1).await;
    admin.command(&["SCRIPT", "LOAD", "return 1"]).await;
    admin.command(&["SET", "k", "v", "EX", "100"]).await;
    admin.command(&["NOSUCHCOMMAND"]).await;
    let after = bulk_text(&admin.command(&["INFO"]).await);
    assert_eq!(number(&after, "connected_clients"), 2);
    assert_eq!(number(&after, "blocked_clients"), 1);
    assert_eq!(number(&after, "number_of_cached_scripts"), 1);
    assert_eq!(field(&after, "errorstat_ERR"), Some("count=1"));
    let keyspace = field(&after, "db0").unwrap();
    assert!(
        keyspace.starts_with("keys=1,expires=1,avg_ttl="),
        "{keyspace}"
    );
    admin.command(&["CONFIG", "RESETSTAT"]).await;
    let reset = bulk_text(&admin.command(&["INFO", "errorstats"]).await);
    assert_eq!(reset, "# Errorstats\r\n");
}

#[tokio::test]
async fn config_get_and_set_answer_like_redis() {
    let Some(servers) = both_servers("config_get_and_set_answer_like_redis").await else {
        return;
    };
    let mut ours = Raw::connect(&servers.ours()).await;
    let mut redis = Raw::connect(&servers.redis_addr).await;
    let commands: &[&[&str]] = &[
        &["CONFIG", "GET", "hash-max-listpack-entries"],
        &[
            "CONFIG",
            "GET",
            "hash-max-ziplist-entries",
            "zset-max-listpack-value",
        ],
        &["CONFIG", "GET", "maxmemory-policy"],
        &["CONFIG", "GET", "set-max-intset-entries"],
        &["CONFIG", "GET", "lua-time-limit"],
        &["CONFIG", "GET", "busy-reply-threshold"],
        &["CONFIG", "GET", "appendonly"],
        &["CONFIG", "GET", "databases"],
        &["CONFIG", "GET", "nosuchparameter"],
        &["CONFIG", "GET"],
        &["CONFIG", "SET", "nosuchparameter", "1"],
        &["CONFIG", "SET", "databases", "4"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "x"],
        &["CONFIG", "SET", "hash-max-listpack-entries", "-1"],
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "1",
            "set-max-intset-entries",
        ],
        &[
            "CONFIG",
            "SET",
            "hash-max-listpack-entries",
            "1",
            "hash-max-listpack-entries",
            "2",
        ],
        &["CONFIG", "SET", "appendonly", "no"],
        &["CONFIG", "FOO"],
        &["CONFIG"],
        &["CONFIG", "RESETSTAT", "x"],
        &["CONFIG", "REWRITE"],
        // The limits the server honours: encodings follow them.
        &["HSET", "h", "a", "1", "b", "2"],
        &["OBJECT", "ENCODING", "h"],
        &["CONFIG", "SET", "hash-max-ziplist-entries", "1"],
        &["CONFIG", "GET", "hash-max-listpack-entries"],
        &["HSET", "h2", "a", "1", "b", "2"],
        &["OBJECT", "ENCODING", "h2"],
        &["SADD", "s", "3", "1", "2"],
        &["CONFIG", "SET", "set-max-intset-entries", "2"],
        &["SADD", "s2", "3", "1", "2"],
        &["OBJECT", "ENCODING", "s2"],
        &[
            "CONFIG",
            "SET",
            "set-max-intset-entries",
            "512",
            "hash-max-listpack-entries",
            "512",
        ],
        &["DEBUG", "SLEEP", "0"],
        &["DEBUG", "JMAP"],
    ];
    ours.command(&["FLUSHALL"]).await;
    redis.command(&["FLUSHALL"]).await;
    for command in commands {
        let (a, b) = (ours.command(command).await, redis.command(command).await);
        assert!(same(command, &a, &b), "{}", mismatch("", command, &a, &b));
    }
    // A parameter Redis may change but the double cannot is refused, not ignored.
    let refused = ours.command(&["CONFIG", "SET", "appendonly", "yes"]).await;
    assert!(
        refused.starts_with(b"-ERR CONFIG SET failed (possibly related to argument 'appendonly')"),
        "{}",
        String::from_utf8_lossy(&refused)
    );
}

/// `COMMAND INFO` of every command and subcommand the server lists: the same arity, key
/// positions, flags and ACL categories as Redis gives; `COMMAND LIST` and its filters give
/// what Redis gives, less what this server does not run.
#[tokio::test]
async fn command_describes_every_command_as_redis_does() {
    let Some(servers) = both_servers("command_describes_every_command_as_redis_does").await else {
        return;
    };
    let mut ours = Raw::connect(&servers.ours()).await;
    let mut redis = Raw::connect(&servers.redis_addr).await;
    let names = |reply: Vec<u8>| -> Vec<String> {
        let Resp::Many(_, names) = Resp::parse(&reply) else {
            panic!("COMMAND LIST is an array");
        };
        names
            .into_iter()
            .map(|name| match name {
                Resp::Bulk(name) => String::from_utf8(name).unwrap(),
                other => panic!("a name: {other:?}"),
            })
            .collect()
    };
    let listed = names(ours.command(&["COMMAND", "LIST"]).await);
    assert!(listed.contains(&"client|list".to_string()), "{listed:?}");
    let top_level = listed.iter().filter(|name| !name.contains('|')).count();
    let count = ours.command(&["COMMAND", "COUNT"]).await;
    assert_eq!(count, format!(":{top_level}\r\n").into_bytes());
    let mut compared = 0;
    let mut wrong = Vec::new();
    for name in &listed {
        if name.starts_with("nxlock.") {
            continue;
        }
        // Name, arity, flags, first, last, step, categories; and subcommand names.
        let describe = |reply: Vec<u8>| -> (Vec<Resp>, Vec<Resp>) {
            let Resp::Many(_, mut entries) = Resp::parse(&reply) else {
                panic!("an array")
            };
            let Resp::Many(_, entry) = entries.remove(0) else {
                panic!("{name} is unknown to one of the servers")
            };
            let mut described = entry[..7].to_vec();
            for set in [2, 6] {
                if let Resp::Many(_, items) = &mut described[set] {
                    items.sort();
                }
            }
            let Resp::Many(_, subs) = &entry[9] else {
                panic!("subcommands")
            };
            let subs = subs
                .iter()
                .map(|sub| match sub {
                    Resp::Many(_, fields) => fields[0].clone(),
                    other => other.clone(),
                })
                .collect();
            (described, subs)
        };
        let (our_entry, our_subs) = describe(ours.command(&["COMMAND", "INFO", name]).await);
        let (redis_entry, redis_subs) = describe(redis.command(&["COMMAND", "INFO", name]).await);
        if our_entry != redis_entry {
            wrong.push(format!("{name}: {our_entry:?}, Redis {redis_entry:?}"));
        }
        for sub in our_subs.iter().filter(|sub| !redis_subs.contains(sub)) {
            wrong.push(format!("{name}: subcommand {sub:?} is not Redis's"));
        }
        compared += 1;
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    println!("{compared} commands described as redis-server describes them");
    let ours_of = |theirs: Vec<String>| -> Vec<String> {
        let mut kept: Vec<String> = theirs.into_iter().filter(|n| listed.contains(n)).collect();
        kept.sort();
        kept
    };
    for filter in [
        &["PATTERN", "config*"][..],
        &["PATTERN", "cl*help"],
        &["PATTERN", "non_exists*"],
        &["ACLCAT", "scripting"],
        &["ACLCAT", "keyspace"],
        &["ACLCAT", "read"],
        &["ACLCAT", "write"],
        &["ACLCAT", "fast"],
        &["ACLCAT", "slow"],
        &["ACLCAT", "blocking"],
        &["ACLCAT", "pubsub"],
        &["ACLCAT", "connection"],
        &["ACLCAT", "no_such_category"],
        &["MODULE", "no_such_module"],
    ] {
        let mut args = vec!["COMMAND", "LIST", "FILTERBY"];
        args.extend_from_slice(filter);
        let mut our_names = names(ours.command(&args).await);
        our_names.sort();
        let redis_names = ours_of(names(redis.command(&args).await));
        assert_eq!(our_names, redis_names, "COMMAND LIST FILTERBY {filter:?}");
    }
    for refused in [
        &["COMMAND", "LIST", "bad_arg"][..],
        &["COMMAND", "LIST", "FILTERBY", "bad_arg"],
        &["COMMAND", "LIST", "FILTERBY", "bad_arg", "x"],
        &["COMMAND", "INFO", "nosuchcommand"],
        &["COMMAND", "INFO", "get|key"],
        &["COMMAND", "INFO", "config|get|key"],
        &["COMMAND", "FOO"],
    ] {
        assert_eq!(
            ours.command(refused).await,
            redis.command(refused).await,
            "{refused:?}"
        );
    }
}

#[tokio::test]
async fn client_subcommands_behave_like_redis() {
    let Some(servers) = both_servers("client_subcommands_behave_like_redis").await else {
        return;
    };
    // The same fields, in the same order, as Redis lists.
    let mut field_names = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut client = Raw::connect(&addr).await;
        client.command(&["CLIENT", "SETNAME", "me"]).await;
        client.command(&["SELECT", "3"]).await;
        let info = bulk_text(&client.command(&["CLIENT", "INFO"]).await);
        let fields = client_fields(&info);
        let value = |name: &str| fields.iter().find(|(n, _)| n == name).unwrap().1.clone();
        assert_eq!(value("name"), "me");
        assert_eq!(value("db"), "3");
        assert_eq!(value("cmd"), "client|info");
        assert_eq!(value("flags"), "N");
        field_names.push(fields.into_iter().map(|(n, _)| n).collect::<Vec<_>>());
    }
    assert_eq!(field_names[0], field_names[1]);

    // Transcripts: REPLY OFF and SKIP silence replies, KILL closes connections.
    let mut transcripts = Vec::new();
    for addr in [servers.ours(), servers.redis_addr.clone()] {
        let mut me = Raw::connect(&addr).await;
        let mut other = Raw::connect(&addr).await;
        let mut transcript = Vec::new();
        let other_id = other.command(&["CLIENT", "ID"]).await;
        let other_id = String::from_utf8_lossy(&other_id[1..other_id.len() - 2]).to_string();
        for command in [
            &["CLIENT", "REPLY", "SKIP"][..],
            &["PING", "skipped"],
            &["PING", "answered"],
            &["CLIENT", "REPLY", "OFF"],
            &["PING", "silent"],
            &["CLIENT", "REPLY", "ON"],
            &["CLIENT", "NO-EVICT", "on"],
            &["CLIENT", "NO-EVICT", "maybe"],
            &["CLIENT", "REPLY", "maybe"],
            &["CLIENT", "LIST", "TYPE", "master"],
            &["CLIENT", "LIST", "TYPE", "bogus"],
            &["CLIENT", "LIST", "ID", "x"],
            &["CLIENT", "KILL", "ID", "0"],
            &["CLIENT", "KILL", "ID", "999999"],
            &["CLIENT", "KILL", "999.0.0.1:1"],
            &["CLIENT", "KILL", "USER", "nobody"],
            &["CLIENT", "KILL", "SKIPME", "maybe"],
            &["CLIENT", "KILL", "ID"],
        ] {
            me.send_only(command).await;
        }
        me.send_only(&["CLIENT", "KILL", "ID", &other_id]).await;
        me.send_only(&["ECHO", "end"]).await;
        let replies = me.read_through(b"end").await;
        transcript.push(replies);
        // The killed connection is closed.
        transcript.push(other.finish().await);
        // A connection that kills itself gets its reply, then is closed.
        let me_id = me.command(&["CLIENT", "ID"]).await;
        let me_id = String::from_utf8_lossy(&me_id[1..me_id.len() - 2]).to_string();
        me.send_only(&["CLIENT", "KILL", "ID", &me_id, "SKIPME", "no"])
            .await;
        transcript.push(me.finish().await);
        transcripts.push(transcript);
    }
    support::side_by_side::assert_same_transcripts(&transcripts, "CLIENT");
}
