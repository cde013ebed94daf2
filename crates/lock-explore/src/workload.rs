//! [`Workload`]: the code under test, one client's cycle at a time.

use std::future::Future;
use std::pin::Pin;

use crate::context::Context;

/// A cycle's future. It need not be `Send`: a run is one thread.
pub type Cycle = Pin<Box<dyn Future<Output = ()>>>;

/// The code under test: what one client does in one cycle (acquire, enter, work, exit,
/// release, say), given its [`Context`]. The explorer runs `cycles` cycles on each of
/// `clients` clients at once, then, once faults stop, more cycles until every client
/// made progress.
///
/// Any `Fn(Context) -> impl Future<Output = ()>` closure is a workload. It must get all
/// its time, randomness and I/O through the context (or the locks built on it): a
/// workload that reads the real clock or a thread RNG is reported as nondeterministic.
pub trait Workload: Send + Sync {
    /// One cycle of client `context.client()`.
    fn cycle(&self, context: Context) -> Cycle;
}

impl<F, Fut> Workload for F
where
    F: Fn(Context) -> Fut + Send + Sync,
    Fut: Future<Output = ()> + 'static,
{
    fn cycle(&self, context: Context) -> Cycle {
        Box::pin(self(context))
    }
}
