//! Where lock tokens, owner ids, write ids and backoff jitter get their randomness: the
//! system's random source, or, on a thread that asked for it, a seeded sequence, so that
//! a simulated run writes and waits the same every time it is replayed.

use std::cell::Cell;

thread_local! {
    /// The state of this thread's seeded sequence, if one is installed.
    static SEEDED: Cell<Option<u64>> = const { Cell::new(None) };
}

/// While alive, tokens, owner ids, write ids and backoff jitter made on this thread come
/// from a sequence seeded by `seed` instead of the system's random source. Dropping it
/// restores what was there.
///
/// For deterministic simulation (`nxlock::explore`): a run on a current-thread runtime
/// installs one, so that two runs of one seed write byte-identical lock values. The
/// values still look like UUID v4s and stay distinct within a run; they are not secret,
/// which a simulation does not need.
///
/// ```
/// use lock_core::SeededRandom;
/// let first = { let _seeded = SeededRandom::install(7); lock_core::fresh_token() };
/// let again = { let _seeded = SeededRandom::install(7); lock_core::fresh_token() };
/// assert_eq!(first, again);
/// assert_ne!(lock_core::fresh_token(), lock_core::fresh_token()); // random again
/// ```
#[derive(Debug)]
#[must_use = "the seeded sequence is removed when this guard is dropped"]
pub struct SeededRandom {
    previous: Option<u64>,
}

impl SeededRandom {
    /// Installs a sequence seeded by `seed` on this thread.
    pub fn install(seed: u64) -> Self {
        let previous = SEEDED.with(|cell| cell.replace(Some(seed)));
        Self { previous }
    }
}

impl Drop for SeededRandom {
    fn drop(&mut self) {
        SEEDED.with(|cell| cell.set(self.previous));
    }
}

/// SplitMix64: a full-period step, so a sequence never repeats within a run.
fn split_mix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The next value of this thread's seeded sequence, if one is installed.
fn seeded_u64() -> Option<u64> {
    SEEDED.with(|cell| {
        let mut state = cell.get()?;
        let value = split_mix(&mut state);
        cell.set(Some(state));
        Some(value)
    })
}

/// A random `u64`: seeded when a [`SeededRandom`] is installed.
pub(crate) fn random_u64() -> u64 {
    seeded_u64().unwrap_or_else(|| fastrand::u64(..))
}

/// A random `f64` in `[0, 1)`: seeded when a [`SeededRandom`] is installed.
pub(crate) fn random_f64() -> f64 {
    match seeded_u64() {
        // The top 53 bits, as fastrand does.
        Some(bits) => (bits >> 11) as f64 / (1u64 << 53) as f64,
        None => fastrand::f64(),
    }
}

/// A fresh token: a random UUID v4 in lower-case hyphenated form, from this thread's
/// [`SeededRandom`] sequence when one is installed.
pub fn fresh_token() -> String {
    let uuid = match (seeded_u64(), seeded_u64()) {
        (Some(high), Some(low)) => uuid::Builder::from_random_bytes(
            (u128::from(high) << 64 | u128::from(low)).to_be_bytes(),
        )
        .into_uuid(),
        _ => uuid::Uuid::new_v4(),
    };
    let mut buffer = uuid::Uuid::encode_buffer();
    String::from(uuid.hyphenated().encode_lower(&mut buffer))
}
