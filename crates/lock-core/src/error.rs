//! The one error type every backend returns.

use std::fmt;

/// What went wrong, as something a caller can match on.
///
/// New kinds may be added; match with a wildcard arm.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// An expire time Redis rejects (`ERR invalid expire time in 'set' command`).
    InvalidExpire,
    /// A value that is not a 64-bit integer (`ERR value is not an integer or out of range`).
    NotInteger,
    /// An increment that would overflow (`ERR increment or decrement would overflow`).
    Overflow,
    /// A malformed command (`ERR syntax error`).
    Syntax,
    /// An operation against a key holding the wrong kind of value (`WRONGTYPE …`).
    WrongType,
    /// EVALSHA of a script the server does not know (`NOSCRIPT …`).
    NoScript,
    /// A script raised an error, or returned something its caller cannot use.
    Script,
    /// The connection to the backend failed or was lost (I/O, refused, reset).
    Connection,
    /// The backend did not answer within the configured time.
    Timeout,
    /// The backend cannot do this at all (for example a script without a native body
    /// on the memory backend).
    Unsupported,
    /// Any other error reply from the server; the text says which.
    Response,
    /// The backend was configured wrongly (an unparsable URL, say).
    InvalidConfig,
    /// Redis Cluster: one command's keys hash to different slots
    /// (`CROSSSLOT Keys in request don't hash to the same slot`).
    CrossSlot,
    /// The server replied in a shape Redis never gives the command (a simple string where
    /// Redis sends a bulk string, say). The text names the command, the reply's RESP type
    /// and bytes, and what Redis replies.
    UnexpectedReply,
}

impl ErrorKind {
    /// Every kind, for tools that list or parse them.
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::InvalidExpire,
        ErrorKind::NotInteger,
        ErrorKind::Overflow,
        ErrorKind::Syntax,
        ErrorKind::WrongType,
        ErrorKind::NoScript,
        ErrorKind::Script,
        ErrorKind::Connection,
        ErrorKind::Timeout,
        ErrorKind::Unsupported,
        ErrorKind::Response,
        ErrorKind::InvalidConfig,
        ErrorKind::CrossSlot,
        ErrorKind::UnexpectedReply,
    ];

    /// The kind's name, as `Debug` spells it (`Timeout`, `WrongType`, …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::InvalidExpire => "InvalidExpire",
            ErrorKind::NotInteger => "NotInteger",
            ErrorKind::Overflow => "Overflow",
            ErrorKind::Syntax => "Syntax",
            ErrorKind::WrongType => "WrongType",
            ErrorKind::NoScript => "NoScript",
            ErrorKind::Script => "Script",
            ErrorKind::Connection => "Connection",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::Unsupported => "Unsupported",
            ErrorKind::Response => "Response",
            ErrorKind::InvalidConfig => "InvalidConfig",
            ErrorKind::CrossSlot => "CrossSlot",
            ErrorKind::UnexpectedReply => "UnexpectedReply",
        }
    }

    /// Whether an error of this kind is a server's error reply (its message is the
    /// reply's text), rather than what the client saw without one: a lost connection,
    /// a deadline, a bad configuration, a reply of the wrong shape, or something the
    /// backend cannot do.
    pub fn is_server_reply(self) -> bool {
        !matches!(
            self,
            ErrorKind::Connection
                | ErrorKind::Timeout
                | ErrorKind::Unsupported
                | ErrorKind::InvalidConfig
                | ErrorKind::UnexpectedReply
        )
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.name() == name)
    }
}

/// How an injected fault's text starts; the kind's name follows, in parentheses.
const INJECTED: &str = "ERR injected fault (";

/// A backend error: its [`ErrorKind`] and the server's exact message.
///
/// Where Redis has an error reply for the situation, [`Error::message`] is that reply
/// byte for byte (for example `ERR invalid expire time in 'set' command`), so tests can
/// compare doubles against real servers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

impl Error {
    /// An error of `kind` with the given message text.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the outcome of the failed command is unknown and trying again may succeed:
    /// [`ErrorKind::Connection`] and [`ErrorKind::Timeout`].
    pub fn is_transient(&self) -> bool {
        matches!(self.kind, ErrorKind::Connection | ErrorKind::Timeout)
    }

    /// The message, exactly as the server (or the double) phrased it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// This error with `command` named in front of its text, for errors of the client's
    /// making (a lost connection, a timeout, a reply that could not be read); a server's
    /// error reply keeps its exact text.
    pub fn during(self, command: &str) -> Self {
        match self.kind {
            ErrorKind::Connection | ErrorKind::Timeout | ErrorKind::UnexpectedReply => Self {
                message: format!("{command}: {}", self.message),
                ..self
            },
            _ => self,
        }
    }

    /// `ERR invalid expire time in '<command>' command`.
    pub fn invalid_expire(command: &str) -> Self {
        Self::new(
            ErrorKind::InvalidExpire,
            format!("ERR invalid expire time in '{command}' command"),
        )
    }

    /// `ERR value is not an integer or out of range`.
    pub fn not_integer() -> Self {
        Self::new(
            ErrorKind::NotInteger,
            "ERR value is not an integer or out of range",
        )
    }

    /// `WRONGTYPE Operation against a key holding the wrong kind of value`.
    pub fn wrong_type() -> Self {
        Self::new(
            ErrorKind::WrongType,
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        )
    }

    /// `ERR increment or decrement would overflow`.
    pub fn overflow() -> Self {
        Self::new(
            ErrorKind::Overflow,
            "ERR increment or decrement would overflow",
        )
    }

    /// A fault injected on purpose (by a test double), of `kind`:
    /// `ERR injected fault (<Kind>): <what>`. [`Error::from_reply`] reads the kind back,
    /// so a fault injected into a server reaches its clients with the same kind.
    pub fn injected(kind: ErrorKind, what: &str) -> Self {
        Self::new(kind, format!("{INJECTED}{}): {what}", kind.name()))
    }

    /// A server's error reply, classified by its text (the text is kept as is).
    ///
    /// Errors raised inside a Lua script carry Redis 7's ` script: <sha1>, on
    /// @user_script:<line>.` suffix and are [`ErrorKind::Script`]; injected faults
    /// ([`Error::injected`]) keep the kind they were injected with.
    pub fn from_reply(text: impl Into<String>) -> Self {
        let text = text.into();
        let injected = text
            .strip_prefix(INJECTED)
            .and_then(|rest| rest.split_once(')'))
            .and_then(|(name, _)| ErrorKind::from_name(name));
        let kind = if let Some(kind) = injected {
            kind
        } else if text.contains(" script: ") || text.starts_with("ERR user_script:") {
            ErrorKind::Script
        } else if text.starts_with("ERR invalid expire time") {
            ErrorKind::InvalidExpire
        } else if text == "ERR value is not an integer or out of range" {
            ErrorKind::NotInteger
        } else if text == "ERR increment or decrement would overflow" {
            ErrorKind::Overflow
        } else if text == "ERR syntax error" {
            ErrorKind::Syntax
        } else if text.starts_with("WRONGTYPE") {
            ErrorKind::WrongType
        } else if text.starts_with("NOSCRIPT") {
            ErrorKind::NoScript
        } else if text.starts_with("CROSSSLOT") {
            ErrorKind::CrossSlot
        } else {
            ErrorKind::Response
        };
        Self::new(kind, text)
    }

    /// `CROSSSLOT Keys in request don't hash to the same slot` (Redis Cluster).
    pub fn cross_slot() -> Self {
        Self::new(
            ErrorKind::CrossSlot,
            "CROSSSLOT Keys in request don't hash to the same slot",
        )
    }

    /// What a Redis Cluster node answers when a script touches a key it does not serve,
    /// or one command in it spans slots: `ERR Script attempted to access a non local key
    /// in a cluster node` ([`ErrorKind::Script`]). A server adds ` script: <sha1>, on
    /// @user_script:<line>.`; an in-process double, which has no Lua line, does not.
    pub fn non_local_key() -> Self {
        Self::new(
            ErrorKind::Script,
            "ERR Script attempted to access a non local key in a cluster node",
        )
    }

    /// `NOSCRIPT No matching script. Please use EVAL.`
    pub fn no_script() -> Self {
        Self::new(
            ErrorKind::NoScript,
            "NOSCRIPT No matching script. Please use EVAL.",
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Result with the backend [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_classified_by_their_text() {
        let kind = |t: &str| Error::from_reply(t).kind();
        assert_eq!(
            kind("ERR invalid expire time in 'set' command"),
            ErrorKind::InvalidExpire
        );
        assert_eq!(
            kind("ERR value is not an integer or out of range"),
            ErrorKind::NotInteger
        );
        assert_eq!(
            kind("ERR increment or decrement would overflow"),
            ErrorKind::Overflow
        );
        assert_eq!(kind("ERR syntax error"), ErrorKind::Syntax);
        assert_eq!(
            kind("WRONGTYPE Operation against a key holding the wrong kind of value"),
            ErrorKind::WrongType
        );
        assert_eq!(
            kind("NOSCRIPT No matching script. Please use EVAL."),
            ErrorKind::NoScript
        );
        assert_eq!(
            kind("ERR invalid expire time in 'pexpire' command script: 9f2c, on @user_script:3."),
            ErrorKind::Script
        );
        assert_eq!(kind("ERR unknown command 'EVALSHA'"), ErrorKind::Response);
        assert_eq!(
            Error::from_reply("ERR syntax error").message(),
            "ERR syntax error"
        );
    }

    #[test]
    fn injected_faults_keep_their_kind_through_a_reply() {
        for kind in ErrorKind::ALL {
            let injected = Error::injected(kind, "on purpose");
            assert_eq!(injected.kind(), kind);
            assert_eq!(Error::from_reply(injected.message()), injected);
        }
        assert_eq!(
            Error::injected(ErrorKind::Timeout, "command timed out").message(),
            "ERR injected fault (Timeout): command timed out"
        );
        assert_eq!(
            kind_of("ERR injected fault (Nonsense): x"),
            ErrorKind::Response
        );
    }

    fn kind_of(text: &str) -> ErrorKind {
        Error::from_reply(text).kind()
    }
}
