//! `CONFIG GET|SET|RESETSTAT|REWRITE`, over the parameters of [`crate::state::config`].

use lock_core::Value;

use crate::protocol::args::{ok, wrong_arity};
use crate::state::shared::Shared;

/// Runs `CONFIG <subcommand> …`.
pub(crate) fn config(shared: &Shared, args: &[Vec<u8>]) -> Value {
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    match sub.as_str() {
        "get" if args.len() >= 3 => Value::Map(
            shared
                .config
                .get(&args[2..])
                .into_iter()
                .map(|(name, value)| {
                    (
                        Value::Data(name.into_bytes()),
                        Value::Data(value.into_bytes()),
                    )
                })
                .collect(),
        ),
        "set" if args.len() >= 4 => match shared.config.set(&args[2..]) {
            Ok(()) => {
                // The databases share one setting (as they share pub/sub).
                shared
                    .db(0)
                    .set_keyspace_events(shared.config.keyspace_events());
                ok()
            }
            Err(error) => Value::Error(error),
        },
        "resetstat" if args.len() == 2 => {
            shared.stats.reset();
            ok()
        }
        "rewrite" if args.len() == 2 => {
            Value::Error("ERR The server is running without a config file".into())
        }
        "get" | "set" | "resetstat" | "rewrite" => wrong_arity(&format!("config|{sub}")),
        _ => Value::Error(format!(
            "ERR unknown subcommand '{}'. Try CONFIG HELP.",
            String::from_utf8_lossy(&args[1])
        )),
    }
}
