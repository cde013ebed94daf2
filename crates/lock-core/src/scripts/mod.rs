//! The atomic operations nxlock's algorithms need, each a [`Script`](crate::Script) whose
//! Lua and native bodies sit side by side in one file.

mod acquire_or_pttl;
mod compare_and_delete;
mod compare_and_pexpire;
mod compare_and_set;
mod fair;
mod fenced_acquire;
mod legacy_acquire;
mod legacy_extend;
mod legacy_release;
mod notify_acquire;
mod notify_release;
mod reentrant_acquire;
mod reentrant_extend;
mod reentrant_release;

pub use acquire_or_pttl::ACQUIRE_OR_PTTL;
pub use compare_and_delete::COMPARE_AND_DELETE;
pub use compare_and_pexpire::COMPARE_AND_PEXPIRE;
pub use compare_and_set::{COMPARE_AND_SET, WRITE_LOG_ENTRIES};
pub(crate) use compare_and_set::{new_write_id, split_versioned};
pub use fair::{FAIR_ACQUIRE, FAIR_EXTEND, FAIR_RELEASE, LINE_MARK};
pub use fenced_acquire::FENCED_ACQUIRE;
pub use legacy_acquire::LEGACY_ACQUIRE;
pub use legacy_extend::LEGACY_EXTEND;
pub use legacy_release::LEGACY_RELEASE;
pub use notify_acquire::NOTIFY_ACQUIRE;
pub use notify_release::NOTIFY_RELEASE;
pub use reentrant_acquire::REENTRANT_ACQUIRE;
pub use reentrant_extend::REENTRANT_EXTEND;
pub use reentrant_release::REENTRANT_RELEASE;

/// Every built-in script, for tools that check them all (the differential tests).
pub fn all() -> [&'static crate::Script; 16] {
    [
        &ACQUIRE_OR_PTTL,
        &COMPARE_AND_DELETE,
        &COMPARE_AND_PEXPIRE,
        &COMPARE_AND_SET,
        &FAIR_ACQUIRE,
        &FAIR_EXTEND,
        &FAIR_RELEASE,
        &FENCED_ACQUIRE,
        &LEGACY_ACQUIRE,
        &LEGACY_EXTEND,
        &LEGACY_RELEASE,
        &NOTIFY_ACQUIRE,
        &NOTIFY_RELEASE,
        &REENTRANT_ACQUIRE,
        &REENTRANT_EXTEND,
        &REENTRANT_RELEASE,
    ]
}

/// Splits a reentrant lock value `<owner>:<count>` the way the Lua pattern
/// `^(.*):(%d+)$` does: at the last colon that is followed only by digits.
pub(crate) fn split_owner_count(value: &[u8]) -> Option<(&[u8], i64)> {
    let colon = value.iter().rposition(|&b| b == b':')?;
    let digits = &value[colon + 1..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let count = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some((&value[..colon], count))
}

/// `owner .. ':' .. count`.
pub(crate) fn owner_count(owner: &[u8], count: i64) -> Vec<u8> {
    let mut v = owner.to_vec();
    v.push(b':');
    v.extend_from_slice(count.to_string().as_bytes());
    v
}

/// Lua's `tonumber(s)` for the decimal integers these scripts store.
pub(crate) fn parse_integer(value: &[u8]) -> Option<i64> {
    std::str::from_utf8(value).ok()?.trim().parse().ok()
}
