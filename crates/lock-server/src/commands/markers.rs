//! The marker commands, `NXLOCK.ENTER`, `EXIT`, `HOLDS`, `WRITE`, `INCR`, `DONE` and
//! `FAILED`: lock code in any language tells an exploring server what it is doing
//! through them ([`Marker`]). A server that explores nothing, or a connection no
//! client stands behind, checks their arguments and answers `+OK`, so the same test
//! runs against a plain `nxlock serve`.

use lock_core::Value;

use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok};
use crate::state::client::Client;
use crate::state::observer::Marker;
use crate::state::shared::Shared;

/// The marker commands (their arity already checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MarkerCommand {
    Enter,
    Exit,
    Holds,
    Write,
    Increment,
    Done,
    Failed,
}

/// Runs `which` for `client`.
pub(crate) fn run(
    shared: &Shared,
    client: &Client,
    which: MarkerCommand,
    args: &[Vec<u8>],
) -> Value {
    let marker = match parse(which, args) {
        Ok(marker) => marker,
        Err(error) => return Value::Error(error.into()),
    };
    match (&shared.options.observer, client.tag) {
        (Some(observer), Some(tag)) => match observer.marker(tag, marker) {
            Ok(()) => ok(),
            Err(text) => Value::Error(text),
        },
        _ => ok(),
    }
}

fn parse(which: MarkerCommand, args: &[Vec<u8>]) -> Result<Marker, &'static str> {
    let text = |arg: &[u8]| String::from_utf8_lossy(arg).into_owned();
    Ok(match which {
        MarkerCommand::Enter => Marker::Enter {
            resource: text(&args[1]),
            valid_for_ms: match &args[2..] {
                [] => None,
                [px, ms] if px.eq_ignore_ascii_case(b"px") => match integer(ms) {
                    Some(ms) => Some(ms),
                    None => return Err(NOT_AN_INTEGER),
                },
                _ => return Err(SYNTAX_ERROR),
            },
        },
        MarkerCommand::Exit => Marker::Exit {
            resource: text(&args[1]),
        },
        MarkerCommand::Holds => Marker::Holds {
            key: args[1].clone(),
            token: args[2].clone(),
        },
        MarkerCommand::Write => Marker::Write {
            resource: text(&args[1]),
            fence: integer(&args[2]).ok_or(NOT_AN_INTEGER)?,
        },
        MarkerCommand::Increment => Marker::Increment {
            counter: text(&args[1]),
        },
        MarkerCommand::Done => Marker::Done,
        MarkerCommand::Failed => Marker::Failed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn markers_parse_with_their_options_and_refuse_bad_ones() {
        assert_eq!(
            parse(
                MarkerCommand::Enter,
                &args(&["nxlock.enter", "r", "px", "150"])
            ),
            Ok(Marker::Enter {
                resource: "r".into(),
                valid_for_ms: Some(150)
            })
        );
        assert_eq!(
            parse(MarkerCommand::Enter, &args(&["nxlock.enter", "r"])),
            Ok(Marker::Enter {
                resource: "r".into(),
                valid_for_ms: None
            })
        );
        assert_eq!(
            parse(MarkerCommand::Enter, &args(&["nxlock.enter", "r", "px"])),
            Err(SYNTAX_ERROR)
        );
        assert_eq!(
            parse(
                MarkerCommand::Enter,
                &args(&["nxlock.enter", "r", "ex", "1"])
            ),
            Err(SYNTAX_ERROR)
        );
        assert_eq!(
            parse(
                MarkerCommand::Enter,
                &args(&["nxlock.enter", "r", "PX", "soon"])
            ),
            Err(NOT_AN_INTEGER)
        );
        assert_eq!(
            parse(MarkerCommand::Write, &args(&["nxlock.write", "r", "x"])),
            Err(NOT_AN_INTEGER)
        );
        assert_eq!(
            parse(MarkerCommand::Holds, &args(&["nxlock.holds", "k", "t"])),
            Ok(Marker::Holds {
                key: b"k".to_vec(),
                token: b"t".to_vec()
            })
        );
    }
}
