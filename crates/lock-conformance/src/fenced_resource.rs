//! [`FencedResource`]: a protected resource that rejects writes carrying stale fences.

use std::sync::Mutex;

/// Stands for the storage a lock protects (a database row, a file). Writers pass their
/// fencing token; a token lower than the highest seen so far is refused.
#[derive(Debug, Default)]
pub struct FencedResource {
    state: Mutex<(i64, Vec<u8>)>,
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

    /// Writes `value` if `fence` is at least the highest fence seen.
    pub fn write(&self, fence: i64, value: &[u8]) -> Result<(), StaleFence> {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if fence < state.0 {
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
