//! The abstract lock states a run reached: what coverage feedback steers by, and what a
//! report's "states reached" counts.
//!
//! After every operation, the state is read relative to the client that made it, so
//! that clients running the same workload are symmetric (who is who does not count):
//! - the operation's name (`SET`, `compare-and-delete`, `ENTER`, ...);
//! - that client's phase, and how many of the others are in each phase: acquiring (no
//!   section entered yet this cycle), inside within its validity, inside past it, and
//!   released (left its section this cycle);
//! - the lock key where clients read it: absent, holding the token of this client, of
//!   another client inside, or a value no client inside claims; and whether it has no
//!   TTL.
//!
//! A fault that strikes is a state of its own: its kind, and the state of the client it
//! hits (of the client whose operation armed it, for a node fault) with that client's
//! last operation. A schedule whose fault strikes at a kind of moment none struck
//! before is new coverage, even before anything else differs: that is the gradient
//! toward a bug of one well-placed fault.
//!
//! Each state packs into a `u64`, so a run's set of states is a sorted list of numbers.

/// A client's phase in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Not inside a section, and none left this cycle.
    Acquiring = 0,
    /// Inside a section, within its validity (or with none stated).
    Inside = 1,
    /// Inside a section past its validity.
    Late = 2,
    /// Left its section this cycle.
    Released = 3,
}

/// The lock key where clients read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyState {
    /// No client declared a lock key yet.
    Unknown = 0,
    /// Not there.
    Absent = 1,
    /// Holding the acting client's token.
    Own = 2,
    /// Holding the token of another client inside.
    Another = 3,
    /// Holding a value no client inside claims (a released or stale token).
    Unclaimed = 4,
}

/// One abstract state, before packing.
pub(crate) struct LockState {
    /// The name of the operation just made, hashed ([`operation`]).
    pub(crate) operation: u16,
    pub(crate) actor: Phase,
    /// How many of the other clients are in each phase, indexed by [`Phase`].
    pub(crate) others: [usize; 4],
    pub(crate) key: KeyState,
    pub(crate) key_without_ttl: bool,
}

impl LockState {
    /// The state as one number: equal states, equal numbers.
    pub(crate) fn packed(&self) -> u64 {
        // How many others are in each phase, each capped at 3 (two bits).
        let counts = self
            .others
            .iter()
            .fold(0u64, |packed, n| (packed << 2) | (*n).min(3) as u64);
        (u64::from(self.operation) << 16)
            | (counts << 8)
            | ((self.actor as u64) << 4)
            | ((self.key as u64) << 1)
            | u64::from(self.key_without_ttl)
    }

    /// The state in which `fault` struck: apart from every state an operation reached.
    pub(crate) fn struck_by(&self, fault: crate::step::FaultKind) -> u64 {
        (1 << 63) | ((fault as u64) << 40) | self.packed()
    }
}

/// A packed state without the other clients' phases: the operation, the acting
/// client's phase and the key's state alone.
pub(crate) fn without_others(packed: u64) -> u64 {
    packed & !(0xff << 8)
}

/// An operation's name as a state holds it: a 16-bit FNV-1a hash.
pub(crate) fn operation(name: &str) -> u16 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in name.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    ((hash >> 16) ^ (hash & 0xffff)) as u16
}

/// The states one run reached.
#[derive(Debug, Default)]
pub(crate) struct Reached {
    states: Vec<u64>,
}

impl Reached {
    pub(crate) fn push(&mut self, state: u64) {
        // Runs stay in one state for many operations (a retry loop): the repeat is
        // dropped here, the rest when the list is taken.
        if self.states.last() != Some(&state) {
            self.states.push(state);
        }
    }

    /// The distinct states, sorted.
    pub(crate) fn take(&mut self) -> Vec<u64> {
        let mut states = std::mem::take(&mut self.states);
        states.sort_unstable();
        states.dedup();
        states
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(name: &str, actor: Phase, others: &[Phase]) -> LockState {
        let mut counts = [0; 4];
        for phase in others {
            counts[*phase as usize] += 1;
        }
        LockState {
            operation: operation(name),
            actor,
            others: counts,
            key: KeyState::Own,
            key_without_ttl: false,
        }
    }

    #[test]
    fn a_state_without_the_others_keeps_the_operation_and_the_phase() {
        let inside = state("GET", Phase::Inside, &[Phase::Acquiring]).packed();
        let late = state("GET", Phase::Late, &[Phase::Released]).packed();
        let alone = state("GET", Phase::Inside, &[]).packed();
        assert_eq!(without_others(inside), alone);
        assert_ne!(without_others(inside), without_others(late));
        assert_ne!(inside, alone);
    }

    #[test]
    fn who_the_others_are_does_not_count_but_what_they_do_does() {
        let a = state("SET", Phase::Inside, &[Phase::Acquiring, Phase::Released]);
        let b = state("SET", Phase::Inside, &[Phase::Released, Phase::Acquiring]);
        let c = state("SET", Phase::Inside, &[Phase::Acquiring, Phase::Acquiring]);
        assert_eq!(a.packed(), b.packed());
        assert_ne!(a.packed(), c.packed());
        let d = state("ENTER", Phase::Inside, &[Phase::Acquiring, Phase::Released]);
        assert_ne!(a.packed(), d.packed());
        let e = state("SET", Phase::Late, &[Phase::Acquiring, Phase::Released]);
        assert_ne!(a.packed(), e.packed());
        let f = LockState {
            key_without_ttl: true,
            ..state("SET", Phase::Inside, &[Phase::Acquiring, Phase::Released])
        };
        assert_ne!(a.packed(), f.packed());
        let paused = a.struck_by(crate::step::FaultKind::Pause);
        assert_ne!(paused, a.packed());
        assert_ne!(paused, a.struck_by(crate::step::FaultKind::Failover));
    }

    #[test]
    fn a_run_reports_each_state_once_in_order() {
        let mut reached = Reached::default();
        for s in [5, 5, 3, 5, 3, 9] {
            reached.push(s);
        }
        assert_eq!(reached.take(), vec![3, 5, 9]);
        assert!(reached.take().is_empty());
    }
}
