//! Redis's glob patterns (`KEYS`, `PSUBSCRIBE`): `*`, `?`, `[a-z]`, `[^…]` and `\` escapes.

/// Whether `subject` matches the Redis glob `pattern`, case-sensitively.
///
/// This follows Redis 7.0's `stringmatchlen` exactly, including its lenient corners: an
/// unterminated `[` set ends at the end of the pattern, a reversed range `[z-a]` is
/// swapped, and a trailing `\` matches itself.
pub fn glob_match(pattern: &[u8], subject: &[u8]) -> bool {
    let mut skip_longer = false;
    matches_from(pattern, subject, &mut skip_longer)
}

/// The byte at `i`, or 0 past the end: Redis reads its NUL-terminated pattern this way.
fn at(bytes: &[u8], i: usize) -> u8 {
    bytes.get(i).copied().unwrap_or(0)
}

fn matches_from(pattern: &[u8], subject: &[u8], skip_longer: &mut bool) -> bool {
    let (mut p, mut s) = (0, 0);
    while p < pattern.len() && s < subject.len() {
        match pattern[p] {
            b'*' => {
                while at(pattern, p + 1) == b'*' {
                    p += 1;
                }
                if p + 1 == pattern.len() {
                    return true;
                }
                while s < subject.len() {
                    if matches_from(&pattern[p + 1..], &subject[s..], skip_longer) {
                        return true;
                    }
                    // A later `*` failed on every suffix: longer prefixes cannot help, so
                    // Redis stops here instead of backtracking exponentially.
                    if *skip_longer {
                        return false;
                    }
                    s += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => s += 1,
            b'[' => {
                p += 1;
                let negate = at(pattern, p) == b'^';
                if negate {
                    p += 1;
                }
                let c = subject[s];
                let mut matched = false;
                loop {
                    if at(pattern, p) == b'\\' && pattern.len() - p >= 2 {
                        p += 1;
                        matched |= pattern[p] == c;
                    } else if at(pattern, p) == b']' {
                        break;
                    } else if p >= pattern.len() {
                        p -= 1;
                        break;
                    } else if pattern.len() - p >= 3 && pattern[p + 1] == b'-' {
                        let (mut start, mut end) = (pattern[p], pattern[p + 2]);
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        p += 2;
                        matched |= (start..=end).contains(&c);
                    } else {
                        matched |= pattern[p] == c;
                    }
                    p += 1;
                }
                if matched == negate {
                    return false;
                }
                s += 1;
            }
            first => {
                let literal = if first == b'\\' && pattern.len() - p >= 2 {
                    p += 1;
                    pattern[p]
                } else {
                    first
                };
                if literal != subject[s] {
                    return false;
                }
                s += 1;
            }
        }
        p += 1;
        if s == subject.len() {
            while at(pattern, p) == b'*' {
                p += 1;
            }
            break;
        }
    }
    p >= pattern.len() && s == subject.len()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn matches_like_redis_stringmatchlen() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            // Redis too: KEYS special-cases a lone `*` to include the empty key.
            ("*", "", false),
            ("", "", true),
            ("", "a", false),
            ("a*", "a", true),
            ("a**", "abc", true),
            ("*c", "abc", true),
            ("*c", "abd", false),
            ("?", "a", true),
            ("?", "ab", false),
            ("?", "", false),
            ("[ab]", "b", true),
            ("[ab]", "c", false),
            ("[^a]*", "l2", true),
            ("[^a]*", "a", false),
            ("[a-c]x", "bx", true),
            ("[c-a]x", "bx", true),
            ("[a-", "a", true),
            ("[a-", "b", false),
            ("\\a", "a", true),
            ("\\*", "*", true),
            ("\\*", "x", false),
            ("a\\", "a\\", true),
            ("[\\]]", "]", true),
            ("lock:*:wake", "lock:x:wake", true),
            ("lock:*:wake", "lock:x:wakes", false),
            (
                "*a*a*a*a*a*a*a*b",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaac",
                false,
            ),
        ];
        for (pattern, subject, expected) in cases {
            assert_eq!(
                glob_match(pattern.as_bytes(), subject.as_bytes()),
                *expected,
                "{pattern:?} against {subject:?}"
            );
        }
    }
}
