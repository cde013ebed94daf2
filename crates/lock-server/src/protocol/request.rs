//! Reading requests the way Redis's `processMultibulkBuffer` and `processInlineBuffer` do,
//! with the same limits and the same `ERR Protocol error: …` texts.

/// Longest inline request, or count/length line, Redis accepts (`PROTO_INLINE_MAX_SIZE`).
const INLINE_MAX: usize = 64 * 1024;
/// Redis's default `proto-max-bulk-len`.
pub(crate) const MAX_BULK_LEN: i64 = 512 * 1024 * 1024;
/// Redis's `INT_MAX` bound on a multibulk count.
const MAX_MULTIBULK: i64 = i32::MAX as i64;
/// Before AUTH, Redis refuses larger counts and lengths than these.
const UNAUTHENTICATED_MULTIBULK: i64 = 10;
const UNAUTHENTICATED_BULK: i64 = 16_384;

use super::args::integer;

/// A frame's arguments and how many bytes of the buffer it used.
pub(crate) type Frame = (Vec<Vec<u8>>, usize);

/// A command's place in the server's command table: the table is looked up once per
/// request, by the connection, and every later step (a pipeline, MULTI's queue, a blocked
/// client's retry) reaches the command through this index instead of its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CommandId(pub(crate) u16);

/// A request for a command the server knows: which one, and its arguments (the name
/// first, as the client sent it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Request {
    pub(crate) command: CommandId,
    pub(crate) args: Vec<Vec<u8>>,
}

/// A request that cannot be read: the reply text, after which the connection closes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ProtocolError(pub(crate) String);

fn protocol_error(what: impl std::fmt::Display) -> ProtocolError {
    ProtocolError(format!("ERR Protocol error: {what}"))
}

/// What [`read`] found at the front of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// One request: its arguments (empty for a blank line or `*0`, which Redis skips)
    /// and how many bytes it used.
    Frame(Frame),
    /// A big bulk string that ends the buffer: the request's arguments so far, with an
    /// empty one for that bulk, where in the buffer the bulk's bytes are, and how many
    /// arguments are still to come ([`read_rest`] reads them). The reader moves the
    /// buffer itself into the argument rather than copying a value that may be hundreds
    /// of megabytes, as Redis keeps a big argument in the buffer it was read into,
    /// wherever the argument stands in its request (`SET key <value> EX 10`).
    Handoff(Vec<Vec<u8>>, std::ops::Range<usize>, usize),
    /// More bytes are needed. When a big bulk string (at least [`BIG_BULK`]) is
    /// arriving: the buffer length the request fills once that bulk and its CRLF are
    /// in, so that the reader reserves exactly that much rather than a buffer that
    /// doubles (and copies itself) as it grows.
    More(Option<usize>),
}

/// One request read from the front of `buffer`, or how much more is needed.
pub(crate) fn read(buffer: &[u8], authenticated: bool) -> Result<Parsed, ProtocolError> {
    match buffer.first() {
        None => Ok(Parsed::More(None)),
        Some(b'*') => parse_multibulk(buffer, authenticated),
        Some(_) => parse_inline(buffer),
    }
}

/// [`read`], with `Ok(None)` for more bytes needed.
#[cfg(test)]
fn parse(buffer: &[u8], authenticated: bool) -> Result<Option<Frame>, ProtocolError> {
    Ok(match read(buffer, authenticated)? {
        Parsed::Frame(frame) => Some(frame),
        Parsed::Handoff(mut args, range, 0) => {
            let end = range.end + 2;
            *args.last_mut().expect("a last argument") = buffer[range].to_vec();
            Some((args, end))
        }
        Parsed::Handoff(..) => panic!("a handoff before the request's end"),
        Parsed::More(_) => None,
    })
}

/// The first `byte` at or after `from` as Redis's `strchr` finds it in its query buffer,
/// which is a C string to it: a NUL before `byte` ends the search empty-handed.
fn c_strchr(buffer: &[u8], from: usize, byte: u8) -> Option<usize> {
    let at = from + memchr::memchr2(byte, 0, &buffer[from..])?;
    (buffer[at] == byte).then_some(at)
}

/// A count or length line, read as Redis reads it: up to the first `\r`, and the next
/// line starts two bytes later, whatever the second byte is.
enum Line<'a> {
    /// The line's text and where the next starts.
    Read(&'a [u8], usize),
    /// No `\r` yet (the caller applies its size limit).
    NoCr,
    /// The `\r` has arrived, but not the byte after it.
    Incomplete,
}

fn line(buffer: &[u8], from: usize) -> Line<'_> {
    match c_strchr(buffer, from, b'\r') {
        None => Line::NoCr,
        Some(cr) if cr + 2 > buffer.len() => Line::Incomplete,
        Some(cr) => Line::Read(&buffer[from..cr], cr + 2),
    }
}

/// Bulk strings at least this long are read into a buffer of their exact size (Redis's
/// `PROTO_MBULK_BIG_ARG`).
pub(crate) const BIG_BULK: usize = 32 * 1024;

fn parse_multibulk(buffer: &[u8], authenticated: bool) -> Result<Parsed, ProtocolError> {
    let (count_line, at) = match line(buffer, 0) {
        Line::Read(text, next) => (text, next),
        Line::NoCr if buffer.len() > INLINE_MAX => {
            return Err(protocol_error("too big mbulk count string"));
        }
        Line::NoCr | Line::Incomplete => return Ok(Parsed::More(None)),
    };
    let count = match integer(&count_line[1..]) {
        Some(n) if n > MAX_MULTIBULK => return Err(protocol_error("invalid multibulk length")),
        Some(n) if !authenticated && n > UNAUTHENTICATED_MULTIBULK => {
            return Err(protocol_error("unauthenticated multibulk length"));
        }
        Some(n) => n,
        None => return Err(protocol_error("invalid multibulk length")),
    };
    if count <= 0 {
        return Ok(Parsed::Frame((Vec::new(), at)));
    }
    let count = usize::try_from(count).map_err(|_| protocol_error("invalid multibulk length"))?;
    read_bulks(buffer, at, count, authenticated)
}

/// The rest of a request a [`Parsed::Handoff`] left with `remaining` arguments to come:
/// those arguments alone, read from the front of `buffer`.
pub(crate) fn read_rest(
    buffer: &[u8],
    remaining: usize,
    authenticated: bool,
) -> Result<Parsed, ProtocolError> {
    read_bulks(buffer, 0, remaining, authenticated)
}

/// `count` bulk strings from `at`.
fn read_bulks(
    buffer: &[u8],
    mut at: usize,
    count: usize,
    authenticated: bool,
) -> Result<Parsed, ProtocolError> {
    let mut args = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        // As in Redis, the whole length line must be there before its `$` is checked.
        let (length_line, data_at) = match line(buffer, at) {
            Line::Read(text, next) => (text, next),
            Line::NoCr if buffer.len() - at > INLINE_MAX => {
                return Err(protocol_error("too big bulk count string"));
            }
            Line::NoCr | Line::Incomplete => return Ok(Parsed::More(None)),
        };
        if buffer[at] != b'$' {
            return Err(protocol_error(format!(
                "expected '$', got '{}'",
                buffer[at] as char
            )));
        }
        let length = match integer(&length_line[1..]) {
            Some(n) if !(0..=MAX_BULK_LEN).contains(&n) => {
                return Err(protocol_error("invalid bulk length"));
            }
            Some(n) if !authenticated && n > UNAUTHENTICATED_BULK => {
                return Err(protocol_error("unauthenticated bulk length"));
            }
            Some(n) => usize::try_from(n).map_err(|_| protocol_error("invalid bulk length"))?,
            None => return Err(protocol_error("invalid bulk length")),
        };
        let end = data_at + length + 2;
        if buffer.len() < end {
            return Ok(Parsed::More((length >= BIG_BULK).then_some(end)));
        }
        if length >= BIG_BULK && end == buffer.len() {
            args.push(Vec::new());
            let remaining = count - args.len();
            return Ok(Parsed::Handoff(args, data_at..data_at + length, remaining));
        }
        args.push(buffer[data_at..data_at + length].to_vec());
        at = data_at + length + 2;
    }
    Ok(Parsed::Frame((args, at)))
}

fn parse_inline(buffer: &[u8]) -> Result<Parsed, ProtocolError> {
    let Some(newline) = c_strchr(buffer, 0, b'\n') else {
        if buffer.len() > INLINE_MAX {
            return Err(protocol_error("too big inline request"));
        }
        return Ok(Parsed::More(None));
    };
    let mut text = &buffer[..newline];
    if text.last() == Some(&b'\r') {
        text = &text[..text.len() - 1];
    }
    let args = split_args(text).ok_or_else(|| protocol_error("unbalanced quotes in request"))?;
    Ok(Parsed::Frame((args, newline + 1)))
}

/// Redis's `sdssplitargs`, step for step: words split by white space; a `"` or `'`
/// anywhere in a word opens a quoted part (so `k"v a"` is the one word `kv a`); inside
/// "double quotes" `\n`, `\xHH` and the like are escapes; a closing quote must be
/// followed by white space or the end. The line is a C string: it ends at a NUL.
pub(crate) fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let line = match memchr::memchr(0, line) {
        Some(nul) => &line[..nul],
        None => line,
    };
    // Reads past the end as C reads a string's terminating NUL.
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut args = Vec::new();
    let mut p = 0;
    loop {
        while p < line.len() && c_isspace(line[p]) {
            p += 1;
        }
        if p >= line.len() {
            return Some(args);
        }
        let (mut in_double, mut in_single, mut done) = (false, false, false);
        let mut current = Vec::new();
        while !done {
            let c = at(p);
            if in_double {
                if c == b'\\'
                    && at(p + 1) == b'x'
                    && at(p + 2).is_ascii_hexdigit()
                    && at(p + 3).is_ascii_hexdigit()
                {
                    let hex = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
                    current.push(hex(at(p + 2)) * 16 + hex(at(p + 3)));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    current.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    done = closes_word(at(p + 1))?;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else if in_single {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    current.push(b'\'');
                } else if c == b'\'' {
                    done = closes_word(at(p + 1))?;
                } else if c == 0 {
                    return None;
                } else {
                    current.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => done = true,
                    b'"' => in_double = true,
                    b'\'' => in_single = true,
                    other => current.push(other),
                }
            }
            if c != 0 {
                p += 1;
            }
        }
        args.push(current);
    }
}

/// A closing quote ends its word: `Some(true)` when white space or the end follows it,
/// `None` (unbalanced quotes) otherwise.
fn closes_word(next: u8) -> Option<bool> {
    (next == 0 || c_isspace(next)).then_some(true)
}

/// C's `isspace` in the "C" locale: space, `\t`, `\n`, `\v`, `\f` and `\r`.
fn c_isspace(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_last_bulk_that_ends_the_buffer_is_handed_over_not_copied() {
        let value = vec![b'v'; BIG_BULK];
        let mut request =
            format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", value.len()).into_bytes();
        let start = request.len();
        request.extend_from_slice(&value);
        request.extend_from_slice(b"\r\n");
        match read(&request, true) {
            Ok(Parsed::Handoff(args, range, 0)) => {
                assert_eq!(args, vec![b"SET".to_vec(), b"k".to_vec(), Vec::new()]);
                assert_eq!(range, start..start + value.len());
            }
            other => panic!("expected a handoff, got {other:?}"),
        }
        // With more bytes after it (a pipelined request), the bulk is copied out.
        request.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        assert!(matches!(read(&request, true), Ok(Parsed::Frame(_))));
        // A small last bulk is copied too.
        assert!(matches!(
            read(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n", true),
            Ok(Parsed::Frame(_))
        ));
    }

    #[test]
    fn a_big_bulk_before_other_arguments_is_handed_over_and_the_rest_read_after() {
        let value = vec![b'v'; BIG_BULK];
        let mut request =
            format!("*5\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", value.len()).into_bytes();
        let start = request.len();
        request.extend_from_slice(&value);
        request.extend_from_slice(b"\r\n");
        match read(&request, true) {
            Ok(Parsed::Handoff(args, range, 2)) => {
                assert_eq!(args, vec![b"SET".to_vec(), b"k".to_vec(), Vec::new()]);
                assert_eq!(range, start..start + value.len());
            }
            other => panic!("expected a handoff with 2 to come, got {other:?}"),
        }
        let rest = b"$2\r\nEX\r\n$3\r\n100\r\n";
        assert!(matches!(
            read_rest(&rest[..9], 2, true),
            Ok(Parsed::More(None))
        ));
        assert_eq!(
            read_rest(rest, 2, true),
            Ok(Parsed::Frame((args(&["EX", "100"]), rest.len())))
        );
        assert!(
            read_rest(b"*1\r\n", 1, true).is_err(),
            "a bulk, not a count"
        );
    }

    fn args(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|a| a.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_requests_are_read_whole_or_not_at_all() {
        let request = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        assert_eq!(
            parse(request, true),
            Ok(Some((args(&["GET", "k"]), request.len())))
        );
        for cut in 1..request.len() {
            assert_eq!(parse(&request[..cut], true), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn malformed_requests_get_redis_texts() {
        let error = |bytes: &[u8]| parse(bytes, true).unwrap_err().0;
        assert_eq!(
            error(b"*x\r\n"),
            "ERR Protocol error: invalid multibulk length"
        );
        assert_eq!(
            error(b"*1\r\n+GET\r\n"),
            "ERR Protocol error: expected '$', got '+'"
        );
        assert_eq!(
            error(b"*1\r\n$-1\r\n"),
            "ERR Protocol error: invalid bulk length"
        );
        assert_eq!(
            error(b"GET \"k\r\n"),
            "ERR Protocol error: unbalanced quotes in request"
        );
        assert_eq!(
            parse(b"*11\r\n", false).unwrap_err().0,
            "ERR Protocol error: unauthenticated multibulk length"
        );
    }

    #[test]
    fn lines_end_where_redis_strchr_finds_them() {
        // The byte after `\r` is skipped unread.
        let stray = b"*1\rX$4\r\nPING\r\n";
        assert_eq!(parse(stray, true), Ok(Some((args(&["PING"]), stray.len()))));
        // A NUL hides the `\r` (or `\n`) behind it, so the request never completes.
        assert_eq!(parse(b"*1\0\r\n$4\r\nPING\r\n", true), Ok(None));
        assert_eq!(parse(b"*1\r\n$4\0\r\nPING\r\n", true), Ok(None));
        assert_eq!(parse(b"PING\0\r\n", true), Ok(None));
        // `$` is checked only once its line is complete.
        assert_eq!(parse(b"*1\r\nX", true), Ok(None));
        assert_eq!(
            parse(b"*1\r\nX\r\n", true).unwrap_err().0,
            "ERR Protocol error: expected '$', got 'X'"
        );
    }

    #[test]
    fn inline_requests_split_like_sdssplitargs() {
        let parsed = parse(b"SET k \"a b\\x41\" 'c d'\r\n", true)
            .unwrap()
            .unwrap();
        assert_eq!(parsed.0, args(&["SET", "k", "a bA", "c d"]));
        assert_eq!(
            parse(b"\r\n", true).unwrap().unwrap().0,
            Vec::<Vec<u8>>::new()
        );
    }
}
