//! [`OverlapDetector`]: counts moments when two holders were inside at once.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts mutual-exclusion violations: every holder calls [`enter`](Self::enter) when its
/// critical section begins and drops the returned token when it ends.
#[derive(Debug, Default)]
pub struct OverlapDetector {
    inside: AtomicUsize,
    violations: AtomicUsize,
}

/// Marks one holder inside; leaving is dropping it.
#[derive(Debug)]
pub struct Inside<'a>(&'a OverlapDetector);

impl OverlapDetector {
    /// A detector with nobody inside.
    pub fn new() -> Self {
        Self::default()
    }

    /// Enters the critical section; a violation is counted if someone else is inside.
    pub fn enter(&self) -> Inside<'_> {
        if self.inside.fetch_add(1, Ordering::AcqRel) > 0 {
            self.violations.fetch_add(1, Ordering::AcqRel);
        }
        Inside(self)
    }

    /// Violations seen so far.
    pub fn violations(&self) -> usize {
        self.violations.load(Ordering::Acquire)
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.inside.fetch_sub(1, Ordering::AcqRel);
    }
}
