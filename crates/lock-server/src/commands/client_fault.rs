//! `NXLOCK.FAULT`: faults on the clients of a given name ([`ClientFaults`]).
//!
//! ```text
//! NXLOCK.FAULT name DELAY ms [COUNT n]   its commands wait ms first (FASTFORWARD ends it)
//! NXLOCK.FAULT name DISCONNECT [COUNT n] its connection closes; the command never runs
//! NXLOCK.FAULT name LOSE-REPLY [COUNT n] the command runs; the connection closes unanswered
//! NXLOCK.FAULT name CLEAR                its fault ends
//! NXLOCK.FAULT RESET                     every fault ends
//! ```
//!
//! Without COUNT, a delay lasts until cleared, and a disconnect or a lost reply befalls
//! one command (a fault on every command would never let the client back in).

use std::time::Duration;

use lock_core::Value;

use crate::protocol::args::{SYNTAX_ERROR, integer, ok};
use crate::state::client_faults::{ClientFault, ClientFaults};

/// The answer to a DELAY that is no number of milliseconds, 0 or more.
const BAD_DELAY: &str = "ERR NXLOCK.FAULT DELAY takes milliseconds, 0 or more";

/// The answer to a COUNT that is no number of commands, 1 or more.
const BAD_COUNT: &str = "ERR NXLOCK.FAULT COUNT takes a number of commands, 1 or more";

/// Runs `NXLOCK.FAULT` (its arity, at least 2, already checked).
pub(crate) fn run(faults: &ClientFaults, args: &[Vec<u8>]) -> Value {
    let is = |arg: &[u8], word: &str| arg.eq_ignore_ascii_case(word.as_bytes());
    if args.len() == 2 {
        if is(&args[1], "reset") {
            faults.clear(None);
            return ok();
        }
        return Value::Error(SYNTAX_ERROR.into());
    }
    let name = &args[1];
    let kind = &args[2];
    let (fault, options) = if is(kind, "clear") {
        if args.len() != 3 {
            return Value::Error(SYNTAX_ERROR.into());
        }
        faults.clear(Some(name));
        return ok();
    } else if is(kind, "delay") {
        let Some(ms) = args.get(3) else {
            return Value::Error(SYNTAX_ERROR.into());
        };
        match integer(ms) {
            Some(ms) if ms >= 0 => (
                ClientFault::Delay(Duration::from_millis(ms as u64)),
                &args[4..],
            ),
            _ => return Value::Error(BAD_DELAY.into()),
        }
    } else if is(kind, "disconnect") {
        (ClientFault::Disconnect, &args[3..])
    } else if is(kind, "lose-reply") {
        (ClientFault::LoseReply, &args[3..])
    } else {
        return Value::Error(SYNTAX_ERROR.into());
    };
    let count = match options {
        [] => match fault {
            ClientFault::Delay(_) => None,
            _ => Some(1),
        },
        [word, n] if is(word, "count") => match integer(n) {
            Some(n) if n >= 1 => Some(n as u64),
            _ => return Value::Error(BAD_COUNT.into()),
        },
        _ => return Value::Error(SYNTAX_ERROR.into()),
    };
    faults.set(name, fault, count);
    ok()
}
