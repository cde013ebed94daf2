//! Redis 7's first line of a script, `#!lua flags=no-writes,allow-stale`: the engine and
//! the script's flags.

/// What a script's shebang declared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ScriptFlags {
    /// The script had a shebang. Such a script may not run under EVAL_RO unless it
    /// declares `no-writes`.
    pub(crate) declared: bool,
    /// `no-writes`: the script runs read-only under EVAL too.
    pub(crate) no_writes: bool,
    /// `allow-cross-slot-keys`: in a cluster, the script may touch keys of several slots
    /// of its node (as a script without a shebang may).
    pub(crate) allow_cross_slot: bool,
}

/// The flags Redis 7.0 knows. Besides `no-writes`, they concern out-of-memory,
/// stale replicas and cluster slots, none of which the double has: they are accepted and
/// change nothing.
const KNOWN: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

/// Reads `body`'s shebang: its flags, and the source Lua compiles (the shebang line
/// becomes a comment, so line numbers stay those of the body). Redis's error text when
/// the shebang is wrong.
pub(crate) fn parse(body: &[u8]) -> Result<(ScriptFlags, Vec<u8>), String> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags::default(), body.to_vec()));
    }
    let end = memchr::memchr(b'\n', body).ok_or("ERR Invalid script shebang")?;
    let line = String::from_utf8_lossy(&body[..end]);
    let mut parts = line.split(|c: char| c.is_ascii_whitespace() || c == '\x0b');
    let mut parts = parts.by_ref().filter(|part| !part.is_empty());
    let engine = parts.next().unwrap_or_default();
    if engine != "#!lua" {
        return Err(format!("ERR Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags {
        declared: true,
        ..ScriptFlags::default()
    };
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(format!("ERR Unknown lua shebang option: {part}"));
        };
        for flag in list.split(',').filter(|flag| !flag.is_empty()) {
            if !KNOWN.contains(&flag) {
                return Err(format!("ERR Unexpected flag in script shebang: {flag}"));
            }
            flags.no_writes |= flag == "no-writes";
            flags.allow_cross_slot |= flag == "allow-cross-slot-keys";
        }
    }
    let mut source = b"--".to_vec();
    source.extend_from_slice(&body[2..]);
    Ok((flags, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebangs_are_read_as_redis_reads_them() {
        let (flags, source) = parse(b"#!lua flags=no-writes,allow-stale\nreturn 1").unwrap();
        assert!(flags.declared && flags.no_writes);
        assert_eq!(source, b"--lua flags=no-writes,allow-stale\nreturn 1");
        assert_eq!(parse(b"return 1").unwrap().0, ScriptFlags::default());
        assert!(parse(b"#!lua\r\nreturn 1").unwrap().0.declared);
        for (body, error) in [
            (&b"#!lua"[..], "ERR Invalid script shebang"),
            (
                b"#!python\n",
                "ERR Unexpected engine in script shebang: #!python",
            ),
            (b"#! lua\n", "ERR Unexpected engine in script shebang: #!"),
            (
                b"#!lua flags=x\n",
                "ERR Unexpected flag in script shebang: x",
            ),
            (
                b"#!lua name=foo\n",
                "ERR Unknown lua shebang option: name=foo",
            ),
        ] {
            assert_eq!(parse(body).unwrap_err(), error);
        }
    }
}
