//! Random members of a collection, as SRANDMEMBER, HRANDFIELD and ZRANDMEMBER pick
//! them: a positive count picks distinct members (all of them when the count reaches the
//! size), a negative one picks that many with repeats.

use crate::protocol::args::{MAX_REPLY_ELEMENTS, NOT_AN_INTEGER, SYNTAX_ERROR, integer};

/// What HRANDFIELD and ZRANDMEMBER were asked: `None` for no count (one member, as a
/// bulk string); otherwise the count and whether the values (`WITHVALUES`,
/// `WITHSCORES`) come too. Redis's checks, in its order: the count's range, the option,
/// then the doubled reply's range.
pub(crate) fn request(args: &[&[u8]], with: &[u8]) -> Result<Option<(i64, bool)>, String> {
    let Some(count) = count(args)? else {
        return Ok(None);
    };
    let with_values = match &args[3..] {
        [] => false,
        [option] if option.eq_ignore_ascii_case(with) => true,
        _ => return Err(SYNTAX_ERROR.into()),
    };
    if with_values && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err("ERR value is out of range".into());
    }
    Ok(Some((count, with_values)))
}

/// The count in `args[2]`, if given: an integer from -(2^63 - 1) to 2^63 - 1.
pub(crate) fn count(args: &[&[u8]]) -> Result<Option<i64>, String> {
    let Some(count) = args.get(2) else {
        return Ok(None);
    };
    let count = integer(count).ok_or(NOT_AN_INTEGER)?;
    if count == i64::MIN {
        return Err(format!(
            "ERR value is out of range, value must between {} and {}",
            -i64::MAX,
            i64::MAX
        ));
    }
    Ok(Some(count))
}

/// The reply for a key that does not exist: nil for a single member, else an empty
/// array.
pub(crate) fn absent(counted: bool) -> lock_core::Value {
    if counted {
        lock_core::Value::Array(Vec::new())
    } else {
        lock_core::Value::Nil
    }
}

/// The indices (below `len`) of the members a count picks; an error for a negative
/// count whose reply would exceed [`MAX_REPLY_ELEMENTS`] (Redis streams it for as long
/// as its memory lasts; this server builds a reply whole).
pub(crate) fn indices(len: usize, count: i64) -> Result<Vec<usize>, String> {
    if count >= 0 {
        return Ok(distinct_indices(len, count as u64));
    }
    if count.unsigned_abs() > MAX_REPLY_ELEMENTS as u64 {
        return Err(crate::protocol::args::reply_too_large());
    }
    Ok((0..count.unsigned_abs())
        .map(|_| fastrand::usize(..len))
        .collect())
}

/// `count` distinct indices below `len` (all of them, shuffled, when `count` reaches
/// `len`), in O(count): drawn at random while they are few next to `len`, by a partial
/// shuffle otherwise (then `count` is at least half of `len`).
pub(crate) fn distinct_indices(len: usize, count: u64) -> Vec<usize> {
    let count = count.min(len as u64) as usize;
    if count * 2 <= len {
        let mut chosen = std::collections::HashSet::with_capacity(count);
        let mut picked = Vec::with_capacity(count);
        while picked.len() < count {
            let at = fastrand::usize(..len);
            if chosen.insert(at) {
                picked.push(at);
            }
        }
        return picked;
    }
    let mut all: Vec<usize> = (0..len).collect();
    for i in 0..count {
        let j = fastrand::usize(i..len);
        all.swap(i, j);
    }
    all.truncate(count);
    all
}
