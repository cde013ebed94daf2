//! [`FencedResource`]: a protected resource that rejects writes carrying stale fences.

use std::sync::Mutex;

/// Stands for the storage a lock protects (a database row, a file). Writers pass their
/// fencing token; a token lower than the highest seen so far is refused, or, for a
/// [`FencedResource::strict`] one, a token not higher than it.
#[derive(Debug, Default)]
pub struct FencedResource {
    state: Mutex<(i64, Vec<u8>)>,
    strict: bool,
}

/// A write refused because a later holder has already written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleFence {
    /// The fence the write carried.
    pub fence: i64,
    /// The highest fence the resource has accepted.
    pub highest: i64,
}

impl FencedResource {
    /// An empty resource that has seen no fence.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty resource that accepts one write per fence: it refuses any fence not
    /// higher than the highest it has seen. A failover can hand the same fence out twice
    /// (the counter is only as durable as the primary's writes); this rule keeps the
    /// second holder out even then.
    pub fn strict() -> Self {
        Self {
            strict: true,
            ..Self::default()
        }
    }

    /// Writes `value` if `fence` is at least the highest fence seen (higher, for a strict
    /// resource).
    pub fn write(&self, fence: i64, value: &[u8]) -> Result<(), StaleFence> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let stale = if self.strict {
            fence <= state.0
        } else {
            fence < state.0
        };
        if stale {
            return Err(StaleFence {
                fence,
                highest: state.0,
            });
        }
        *state = (fence, value.to_vec());
        Ok(())
    }

    /// Writes `value` with no check at all: what a resource without fencing does.
    pub fn write_unfenced(&self, value: &[u8]) {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1 = value.to_vec();
    }

    /// The current value.
    pub fn value(&self) -> Vec<u8> {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }
}
