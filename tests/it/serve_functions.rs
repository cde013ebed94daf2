//! Redis 7 functions on `nxlock serve` against a real redis-server, byte for byte:
//! FUNCTION LOAD (metadata, registration and its errors, the load-time API), FCALL and
//! FCALL_RO (Redis's order of checks, arguments, errors and their positions), FUNCTION
//! LIST, STATS, DELETE, FLUSH, KILL and HELP, in and out of MULTI, over RESP2 and RESP3.

use crate::support;
use support::raw::Raw;
use support::side_by_side::{Scenario, both_servers, compare_one_by_one, mismatch, same};

const LIBRARY: &str = "#!lua name=mylib
redis.register_function('hello', function(keys, args) return 'hi ' .. (args[1] or '') end)
redis.register_function{function_name='reader', callback=function(keys, args)
  return redis.call('get', keys[1])
end, flags={'no-writes', 'allow-stale'}, description='reads a key'}
redis.register_function('writer', function(keys, args)
  redis.call('set', keys[1], args[1])
  return redis.call('incr', keys[2])
end)
redis.register_function('fails', function(keys, args)
  local x = 1
  return redis.call('nosuchcommand')
end)
redis.register_function('raises', function(keys, args) error('my error') end)
redis.register_function('globals', function(keys, args) return KEYS end)";

const OTHER: &str = "#!lua name=other
redis.register_function('Hello', function() return 1 end)";

const SECOND: &str = "#!LUA NAME=second
redis.register_function('second_f', function(keys, args) return #keys + #args end)";

/// Each load that fails, with why (Redis's texts).
const REFUSED: &[&str] = &[
    "return 1",
    "#!lua name=x",
    "#!lua\nreturn 1",
    "#!lua name=a name=b\n",
    "#!lua foo=bar\n",
    "#!lua name=a-b\n",
    "#!js name=a\n",
    "#!lua name=empty\nreturn 1",
    "#!lua name=syntax\nthis is not lua",
    "#!lua name=noglobals\nlocal s = string.len('x')",
    "#!lua name=nocall\nredis.call('ping')",
    "#!lua name=nosetresp\nredis.setresp(3)",
    "#!lua name=args0\nredis.register_function()",
    "#!lua name=args3\nredis.register_function('a', function() end, 3)",
    "#!lua name=firstarg\nredis.register_function(function() end, function() end)",
    "#!lua name=secondarg\nredis.register_function('a', 'b')",
    "#!lua name=single\nredis.register_function('a')",
    "#!lua name=noname\nredis.register_function{callback=function() end}",
    "#!lua name=nocallback\nredis.register_function{function_name='a'}",
    "#!lua name=badflag\nredis.register_function{function_name='a', callback=function() end, flags={'bogus'}}",
    "#!lua name=flagsnottable\nredis.register_function{function_name='a', callback=function() end, flags='no-writes'}",
    "#!lua name=unknownarg\nredis.register_function{function_name='a', callback=function() end, extra=1}",
    "#!lua name=badcallback\nredis.register_function{function_name='a', callback=1}",
    "#!lua name=badfname\nredis.register_function('a-b', function() end)",
    "#!lua name=twice\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)",
    "#!lua name=taken\nredis.register_function('HELLO', function() end)",
    "#!lua name=writesglobal\nx = 1",
    "#!lua name=raisesatload\nerror('at load')",
];

fn scenarios() -> Vec<Scenario> {
    let mut refused: Scenario = vec![vec!["FUNCTION", "FLUSH"], vec!["FUNCTION", "LOAD", LIBRARY]];
    refused.extend(REFUSED.iter().map(|code| vec!["FUNCTION", "LOAD", code]));
    refused.push(vec!["FUNCTION", "STATS"]);
    vec![
        vec![
            vec!["FUNCTION", "FLUSH"],
            vec!["FUNCTION", "LOAD", LIBRARY],
            vec!["FUNCTION", "LOAD", LIBRARY],
            vec!["FUNCTION", "LOAD", "REPLACE", LIBRARY],
            vec!["FUNCTION", "LOAD", "BOGUS", LIBRARY],
            vec!["FUNCTION", "LOAD", "REPLACE"],
            vec!["FUNCTION", "LOAD"],
            vec!["FCALL", "hello", "0", "bob"],
            vec!["FCALL", "HELLO", "0"],
            vec!["FCALL", "writer", "2", "k", "n", "v"],
            vec!["FCALL", "writer", "2", "k", "n", "w"],
            vec!["FCALL_RO", "reader", "1", "k"],
            vec!["FCALL_RO", "writer", "2", "k", "n", "v"],
            vec!["FCALL", "fails", "0"],
            vec!["FCALL", "raises", "0"],
            vec!["FCALL", "globals", "0"],
            vec!["FCALL", "nosuch", "0"],
            vec!["FCALL", "hello", "x"],
            vec!["FCALL", "hello", "2", "a"],
            vec!["FCALL", "hello", "-1"],
            vec!["FCALL", "hello"],
            vec!["FCALL", "nosuch", "x"],
            vec!["EVAL", "return redis.call('fcall', 'hello', '0')", "0"],
            vec!["FUNCTION", "LOAD", OTHER],
            vec!["FUNCTION", "LOAD", SECOND],
            vec!["FCALL", "second_f", "2", "a", "b", "c"],
            // Redis lists libraries and functions in the order of its hash tables: the
            // lists compared hold one of each.
            vec!["FUNCTION", "LIST", "LIBRARYNAME", "SEC*"],
            vec!["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "other"],
            vec!["FUNCTION", "LIST", "LIBRARYNAME"],
            vec!["FUNCTION", "LIST", "BOGUS"],
            vec!["FUNCTION", "LIST", "WITHCODE", "WITHCODE"],
            vec!["FUNCTION", "STATS"],
            vec!["FUNCTION", "STATS", "x"],
            vec!["FUNCTION", "DELETE", "second"],
            vec!["FUNCTION", "DELETE", "second"],
            vec!["FUNCTION", "DELETE"],
            vec!["FCALL", "second_f", "0"],
            vec!["FUNCTION", "KILL"],
            vec!["FUNCTION", "FLUSH", "BOGUS"],
            vec!["FUNCTION", "FLUSH", "ASYNC", "x"],
            vec!["FUNCTION", "FLUSH", "SYNC"],
            vec!["FUNCTION", "LIST"],
            vec!["FUNCTION", "STATS"],
            vec!["FUNCTION", "NOSUCH"],
            vec!["FUNCTION", "HELP"],
            vec!["FUNCTION", "HELP", "x"],
            vec!["FCALL", "hello", "0"],
            // Queued in a transaction: loaded, then called, in one EXEC.
            vec!["MULTI"],
            vec!["FUNCTION", "LOAD", SECOND],
            vec!["FCALL", "second_f", "1", "k", "a"],
            vec!["EXEC"],
        ],
        refused,
    ]
}

#[tokio::test]
async fn functions_answer_like_redis() {
    let Some(servers) = both_servers("functions_answer_like_redis").await else {
        return;
    };
    let compared = compare_one_by_one(&servers, &scenarios(), "functions: ").await;
    assert!(compared > 70, "{compared} compared");
    // RESP3: FUNCTION LIST and STATS are maps, a function's flags a set.
    let mut ours = Raw::connect(&servers.ours()).await;
    let mut redis = Raw::connect(&servers.redis_addr).await;
    for client in [&mut ours, &mut redis] {
        client.command(&["HELLO", "3"]).await;
    }
    for command in [
        &["FUNCTION", "FLUSH"][..],
        &["FUNCTION", "LOAD", LIBRARY],
        &["FUNCTION", "LOAD", SECOND],
        &["FUNCTION", "LIST", "LIBRARYNAME", "second"],
        &["FUNCTION", "STATS"],
        &["FCALL", "reader", "1", "missing"],
        &["FUNCTION", "FLUSH"],
    ] {
        let (a, b) = (ours.command(command).await, redis.command(command).await);
        assert!(
            same(command, &a, &b),
            "{}",
            mismatch("RESP3: ", command, &a, &b)
        );
    }
}
