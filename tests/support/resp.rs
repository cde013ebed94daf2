//! Raw RESP for tests that talk to a server byte by byte.

/// `args` as a RESP request (an array of bulk strings).
pub fn request<S: AsRef<[u8]>>(args: &[S]) -> Vec<u8> {
    let mut bytes = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        let arg = arg.as_ref();
        bytes.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        bytes.extend_from_slice(arg);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes
}

/// Where the reply starting at `at` ends, once all of it is in `buffer` (RESP2 and the
/// RESP3 types a server sends here: null, push, map).
pub fn reply_end(buffer: &[u8], at: usize) -> Option<usize> {
    let line_end = at + buffer.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
    let header = std::str::from_utf8(&buffer[at + 1..line_end]).ok()?;
    match buffer[at] {
        b'+' | b'-' | b':' | b'_' => Some(line_end + 2),
        b'$' => {
            let length: i64 = header.parse().ok()?;
            if length < 0 {
                return Some(line_end + 2);
            }
            let end = line_end + 2 + length as usize + 2;
            (buffer.len() >= end).then_some(end)
        }
        b'*' | b'>' | b'%' => {
            let mut count: i64 = header.parse().ok()?;
            if buffer[at] == b'%' {
                count *= 2;
            }
            let mut end = line_end + 2;
            for _ in 0..count.max(0) {
                end = reply_end(buffer, end)?;
            }
            Some(end)
        }
        _ => None,
    }
}
