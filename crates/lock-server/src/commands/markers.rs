//! The marker commands, `NXLOCK.ENTER`, `EXTEND`, `EXIT`, `HOLDS`, `WRITE`, `INCR`,
//! `DONE`, `FAILED`, `PERMANENT` and `COUNTER`: lock code in any language tells an
//! exploring server what it is doing through them ([`Marker`]). A server that explores
//! nothing, or a connection no client stands behind, checks their arguments and answers
//! `+OK`, so the same test runs against a plain `nxlock serve`.

use lock_core::Value;

use crate::protocol::args::{NOT_AN_INTEGER, SYNTAX_ERROR, integer, ok};
use crate::state::client::Client;
use crate::state::observer::{Marker, Validity};
use crate::state::shared::Shared;

/// The marker commands (their arity already checked).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MarkerCommand {
    Enter,
    Extend,
    Exit,
    Holds,
    Write,
    Increment,
    Done,
    Failed,
    Permanent,
    Counter,
}

/// The error a `MONOTONIC` deadline that is no number gets.
const NOT_A_DEADLINE: &str =
    "ERR MONOTONIC takes milliseconds of the host's monotonic clock, with at most 3 decimals";

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
        MarkerCommand::Enter => {
            let mut validity = None;
            let mut fence = None;
            let mut options = args[2..].iter();
            while let Some(option) = options.next() {
                let value = options.next().ok_or(SYNTAX_ERROR)?;
                if option.eq_ignore_ascii_case(b"fence") && fence.is_none() {
                    fence = Some(integer(value).ok_or(NOT_AN_INTEGER)?);
                } else if validity.is_none() {
                    validity = Some(parse_validity(option, value)?);
                } else {
                    return Err(SYNTAX_ERROR);
                }
            }
            Marker::Enter {
                resource: text(&args[1]),
                validity,
                fence,
            }
        }
        MarkerCommand::Extend => Marker::Extend {
            resource: text(&args[1]),
            validity: parse_validity(&args[2], &args[3])?,
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
        MarkerCommand::Permanent => Marker::Permanent {
            prefix: text(&args[1]),
        },
        MarkerCommand::Counter => Marker::Counter {
            counter: text(&args[1]),
            key: text(&args[2]),
        },
    })
}

/// `PX ms` or `MONOTONIC ms`.
fn parse_validity(option: &[u8], value: &[u8]) -> Result<Validity, &'static str> {
    if option.eq_ignore_ascii_case(b"px") {
        integer(value).map(Validity::Px).ok_or(NOT_AN_INTEGER)
    } else if option.eq_ignore_ascii_case(b"monotonic") {
        milliseconds_us(value)
            .map(Validity::MonotonicUs)
            .ok_or(NOT_A_DEADLINE)
    } else {
        Err(SYNTAX_ERROR)
    }
}

/// Milliseconds with at most three decimals (`123456.789`), in µs: what Python's
/// `time.monotonic() * 1000` and Node's `performance`-style readings print.
fn milliseconds_us(value: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(value).ok()?;
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty()
        || fraction.len() > 3
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let fraction: i64 = format!("{fraction:0<3}").parse().ok()?;
    whole.checked_mul(1000)?.checked_add(fraction)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn enter(resource: &str, validity: Option<Validity>, fence: Option<i64>) -> Marker {
        Marker::Enter {
            resource: resource.into(),
            validity,
            fence,
        }
    }

    #[test]
    fn markers_parse_with_their_options_and_refuse_bad_ones() {
        let parsed = |which, words: &[&str]| parse(which, &args(words));
        use MarkerCommand as M;
        assert_eq!(
            parsed(M::Enter, &["nxlock.enter", "r", "px", "150"]),
            Ok(enter("r", Some(Validity::Px(150)), None))
        );
        assert_eq!(
            parsed(M::Enter, &["nxlock.enter", "r"]),
            Ok(enter("r", None, None))
        );
        assert_eq!(
            parsed(
                M::Enter,
                &["nxlock.enter", "r", "MONOTONIC", "5123.5", "FENCE", "7"]
            ),
            Ok(enter("r", Some(Validity::MonotonicUs(5_123_500)), Some(7)))
        );
        assert_eq!(
            parsed(M::Enter, &["nxlock.enter", "r", "fence", "3", "px", "9"]),
            Ok(enter("r", Some(Validity::Px(9)), Some(3)))
        );
        for bad in [
            &["nxlock.enter", "r", "px"][..],
            &["nxlock.enter", "r", "ex", "1"],
            &["nxlock.enter", "r", "px", "1", "px", "2"],
            &["nxlock.enter", "r", "fence", "1", "fence", "2"],
        ] {
            assert_eq!(parsed(M::Enter, bad), Err(SYNTAX_ERROR), "{bad:?}");
        }
        assert_eq!(
            parsed(M::Enter, &["nxlock.enter", "r", "PX", "soon"]),
            Err(NOT_AN_INTEGER)
        );
        assert_eq!(
            parsed(M::Enter, &["nxlock.enter", "r", "FENCE", "x"]),
            Err(NOT_AN_INTEGER)
        );
        for deadline in ["1.2345", "-5", "", "1e3", ".5", "5."] {
            let refused = parsed(M::Enter, &["nxlock.enter", "r", "monotonic", deadline]);
            // "5." has an empty fraction, which reads as 5.000.
            if deadline == "5." {
                assert_eq!(
                    refused,
                    Ok(enter("r", Some(Validity::MonotonicUs(5000)), None))
                );
            } else {
                assert_eq!(refused, Err(NOT_A_DEADLINE), "{deadline:?}");
            }
        }
        assert_eq!(
            parsed(M::Extend, &["nxlock.extend", "r", "px", "200"]),
            Ok(Marker::Extend {
                resource: "r".into(),
                validity: Validity::Px(200)
            })
        );
        assert_eq!(
            parsed(M::Extend, &["nxlock.extend", "r", "fence", "2"]),
            Err(SYNTAX_ERROR)
        );
        assert_eq!(
            parsed(M::Write, &["nxlock.write", "r", "x"]),
            Err(NOT_AN_INTEGER)
        );
        assert_eq!(
            parsed(M::Holds, &["nxlock.holds", "k", "t"]),
            Ok(Marker::Holds {
                key: b"k".to_vec(),
                token: b"t".to_vec()
            })
        );
        assert_eq!(
            parsed(M::Permanent, &["nxlock.permanent", "{orders}:fence"]),
            Ok(Marker::Permanent {
                prefix: "{orders}:fence".into()
            })
        );
        assert_eq!(
            parsed(M::Counter, &["nxlock.counter", "hits", "{c}:hits"]),
            Ok(Marker::Counter {
                counter: "hits".into(),
                key: "{c}:hits".into()
            })
        );
    }
}
