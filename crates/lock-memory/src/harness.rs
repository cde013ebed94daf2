//! The conformance harness for [`MemoryBackend`].

use std::time::Duration;

use lock_conformance::{Capabilities, Capability, Harness};

use crate::MemoryBackend;

/// Runs the conformance suite on a fresh [`MemoryBackend`] per case; time advances
/// virtually (instantly) through [`MemoryBackend::advance`].
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryHarness;

impl Harness for MemoryHarness {
    type Backend = MemoryBackend;

    fn name(&self) -> String {
        "memory (embedded MemoryBackend)".into()
    }

    async fn backend(&self) -> Result<MemoryBackend, String> {
        Ok(MemoryBackend::new())
    }

    async fn advance(&self, backend: &MemoryBackend, by: Duration) {
        backend.advance(by);
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
            .with(Capability::PubSub)
            .with(Capability::TimeControl)
    }
}
