//! `PUBSUB CHANNELS|NUMSUB|NUMPAT|HELP`: who subscribes to what, over every connection
//! (the databases share one pub/sub table, as in Redis).

use lock_core::Value;

use crate::protocol::args::wrong_arity;
use crate::state::shared::Shared;

/// Subcommands and their arity (Redis's convention: negative is a minimum).
const SUBCOMMANDS: &[(&str, i32)] = &[("channels", -2), ("numsub", -2), ("numpat", 2), ("help", 2)];

const HELP: &[&str] = &[
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
    "    Prints this help.",
];

/// Runs `PUBSUB <subcommand> …`.
pub(crate) fn pubsub(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let shown = String::from_utf8_lossy(&args[1]);
    let sub = shown.to_ascii_lowercase();
    let Some((_, arity)) = SUBCOMMANDS.iter().find(|(name, _)| *name == sub) else {
        return Value::Error(format!(
            "ERR unknown subcommand '{shown}'. Try PUBSUB HELP."
        ));
    };
    let argc = args.len() as i32;
    if (*arity >= 0 && argc != *arity) || (*arity < 0 && argc < -arity) {
        return wrong_arity(&format!("pubsub|{sub}"));
    }
    let table = shared.db(0);
    let count = |n: usize| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    match sub.as_str() {
        "channels" if args.len() <= 3 => Value::Array(
            table
                .pubsub_channels(args.get(2).map(Vec::as_slice))
                .into_iter()
                .map(Value::Data)
                .collect(),
        ),
        "numsub" => Value::Array(
            args[2..]
                .iter()
                .flat_map(|channel| {
                    [
                        Value::Data(channel.clone()),
                        count(table.pubsub_numsub(channel)),
                    ]
                })
                .collect(),
        ),
        "numpat" => count(table.pubsub_numpat()),
        "help" => Value::Array(
            HELP.iter()
                .map(|line| Value::Status((*line).into()))
                .collect(),
        ),
        _ => Value::Error(format!(
            "ERR unknown subcommand or wrong number of arguments for '{shown}'. Try PUBSUB HELP."
        )),
    }
}
