//! [`Context`]: what a workload's cycle gets: its client's connections and clock, and the
//! markers the checkers read.

use std::sync::Arc;
use std::time::Duration;

use lock_core::Clock;

use crate::client::ClientView;
use crate::monitor::{Monitor, StaleWrite, Validity};

/// One client's cycle's handle on the run.
///
/// Every marker is an await point: a pause or a cancellation aimed at the client can
/// land there, and other clients run in between.
#[derive(Clone, Debug)]
pub struct Context {
    monitor: Arc<Monitor>,
    client: usize,
    cycle: u32,
    views: Arc<[ClientView]>,
}

impl Context {
    pub(crate) fn new(
        monitor: Arc<Monitor>,
        client: usize,
        cycle: u32,
        views: Arc<[ClientView]>,
    ) -> Self {
        Self {
            monitor,
            client,
            cycle,
            views,
        }
    }

    /// This client's index.
    pub fn client(&self) -> usize {
        self.client
    }

    /// This cycle's index (cycles after the last planned one are the liveness probe's).
    pub fn cycle(&self) -> u32 {
        self.cycle
    }

    /// The client's connection: a [`KvBackend`](lock_core::KvBackend) for any lock. On
    /// the Redlock topology, its connection to node 0 ([`Context::nodes`] has them all).
    pub fn backend(&self) -> ClientView {
        self.views[0].clone()
    }

    /// The client's connection to each node: one per Redlock node, else one.
    pub fn nodes(&self) -> Vec<ClientView> {
        self.views.to_vec()
    }

    /// The client's own clock (what [`Fault::ClientClock`](crate::Fault::ClientClock) moves); the same
    /// as its backend's.
    pub fn clock(&self) -> Clock {
        self.monitor.client_clock(self.client)
    }

    /// A generator seeded by the run's seed, this client, this cycle and how many this
    /// cycle asked for before: randomness (tokens, jitter) that replays exactly, and a
    /// stream of its own on every call, so two tokens drawn from two calls differ. To
    /// seed a generator of your own (`rand`'s `StdRng::seed_from_u64`, for example),
    /// take its seed from here: `ctx.rng().u64(..)`.
    pub fn rng(&self) -> fastrand::Rng {
        fastrand::Rng::with_seed(self.monitor.rng_seed(self.client, self.cycle))
    }

    /// Lets `duration` of virtual time pass: work the client does. An operation, like
    /// every marker.
    pub async fn work(&self, duration: Duration) {
        self.marker().await;
        self.monitor.clock.sleep(duration).await;
        self.monitor.finish_marker(self.client, "WORK");
    }

    /// Pauses and cancellations aimed at this client land here; others run meanwhile.
    async fn marker(&self) {
        self.monitor.start_op(self.client, false).await;
        tokio::task::yield_now().await;
    }

    /// The client enters `resource`'s critical section, believing it holds the lock,
    /// with no word on how long: it counts as inside until it exits, and another client
    /// inside the same resource meanwhile is a mutual-exclusion violation. Prefer
    /// [`Context::enter_until`], which tells a bug from what every TTL lock does.
    pub async fn enter(&self, resource: &str) {
        self.marker().await;
        self.monitor.enter(self.client, resource, None, None);
        self.monitor.finish_marker(self.client, "ENTER");
    }

    /// The client enters `resource`'s critical section holding a lock that promised it
    /// is alone until `valid_until_ms` (Unix ms on [`Context::clock`], as
    /// [`LockGuard::valid_until_ms`](lock_core::LockGuard::valid_until_ms) gives it).
    ///
    /// Another client entering while this one is inside *within* that validity is a
    /// mutual-exclusion violation: the lock's bug. Inside *past* it, the overlap is an
    /// `expired-holder` finding: inherent to TTL locks on an unfenced resource, labelled
    /// so, and never the end of a search.
    pub async fn enter_until(&self, resource: &str, valid_until_ms: i64) {
        self.marker().await;
        self.monitor.enter(
            self.client,
            resource,
            None,
            Some(Validity::UntilMs(valid_until_ms)),
        );
        self.monitor.finish_marker(self.client, "ENTER");
    }

    /// The client enters `resource` holding a lock that handed it `fence`. The same fence
    /// entered by two clients is a fence-went-back violation; fenced sections may
    /// overlap (a paused holder enters late), since the resource refuses stale writes.
    pub async fn enter_fenced(&self, resource: &str, fence: i64) {
        self.marker().await;
        self.monitor.enter(self.client, resource, Some(fence), None);
        self.monitor.finish_marker(self.client, "ENTER");
    }

    /// [`Context::enter_fenced`] with the validity the lock promised, so that
    /// [`Context::holds`] is checked (lost ownership) while it lasts.
    pub async fn enter_fenced_until(&self, resource: &str, fence: i64, valid_until_ms: i64) {
        self.marker().await;
        self.monitor.enter(
            self.client,
            resource,
            Some(fence),
            Some(Validity::UntilMs(valid_until_ms)),
        );
        self.monitor.finish_marker(self.client, "ENTER");
    }

    /// The client's lock on `resource` was extended: it is alone until `valid_until_ms`
    /// now. A declaration, not an operation. Another client inside the resource
    /// meanwhile is judged as if this one had entered now: within both validities, a
    /// mutual-exclusion violation (an extend of a lock the client had lost).
    pub fn extended_until(&self, resource: &str, valid_until_ms: i64) {
        self.monitor
            .extend(self.client, resource, Validity::UntilMs(valid_until_ms));
    }

    /// Keys starting with `prefix` may outlive the run without a TTL (a fence counter,
    /// data the lock keeps by design): the same as
    /// [`Explorer::permanent_keys`](crate::Explorer::permanent_keys), said by the lock
    /// code itself. A declaration, not an operation.
    pub fn permanent(&self, prefix: &str) {
        self.monitor.permanent(prefix);
    }

    /// The client holds lock `key` with `token`, until it leaves its sections (or its
    /// own command changes the key: a release). A declaration, not an operation.
    ///
    /// While the client is inside a section within its validity, the key must hold
    /// `token` (on Redlock's nodes: a majority must). Checked at each of the client's
    /// operations and after every command of anyone, so a release, extend or acquire
    /// that touches a lock it does not own is caught at that command: a
    /// `lost-ownership` violation, before any overlap. With
    /// [`Context::enter_fenced`], a refused write while the key holds `token` is a
    /// `fence-order` violation.
    pub fn holds(&self, key: &[u8], token: &[u8]) {
        self.monitor.holds(self.client, key, token);
    }

    /// The client leaves `resource`.
    pub async fn exit(&self, resource: &str) {
        self.marker().await;
        self.monitor.exit(self.client, resource);
        self.monitor.finish_marker(self.client, "EXIT");
    }

    /// Writes to the fenced `resource` with `fence`, judged by the explorer's
    /// [`Fencing`](crate::Fencing): refused when stale. Accepting a fence not newer than
    /// another client's accepted one is a stale-fence violation.
    pub async fn write(&self, resource: &str, fence: i64) -> Result<(), StaleWrite> {
        self.marker().await;
        let written = self.monitor.write(self.client, resource, fence);
        self.monitor.finish_marker(self.client, "WRITE");
        written
    }

    /// Reads the explorer's `counter` (0 before any write).
    pub async fn read_counter(&self, counter: &str) -> i64 {
        self.marker().await;
        let value = self.monitor.counter_read(self.client, counter);
        self.monitor.finish_marker(self.client, "READ");
        value
    }

    /// Writes the explorer's `counter`.
    pub async fn write_counter(&self, counter: &str, value: i64) {
        self.marker().await;
        self.monitor.counter_write(self.client, counter, value);
        self.monitor.finish_marker(self.client, "WRITE-COUNTER");
    }

    /// Starts one increment of `counter`: say how it ended with [`Increment::done`] or
    /// [`Increment::failed`]. One dropped without either (its cycle was cancelled, or
    /// an error left the outcome unknown) may or may not have been applied. At the end
    /// the counter must equal the increments done, give or take the unknown ones: fewer
    /// is a lost update, more is an update applied twice.
    pub fn increment(&self, counter: &str) -> Increment {
        Increment {
            monitor: self.monitor.clone(),
            client: self.client,
            counter: counter.to_owned(),
            settled: false,
        }
    }
}

/// One increment of a counter, under way (see [`Context::increment`]).
#[derive(Debug)]
#[must_use = "an increment dropped unsettled counts as one of unknown outcome"]
pub struct Increment {
    monitor: Arc<Monitor>,
    client: usize,
    counter: String,
    settled: bool,
}

impl Increment {
    /// It was applied, and the client knows it.
    pub fn done(mut self) {
        self.settled = true;
        self.monitor.counted(self.client, &self.counter, Some(true));
    }

    /// It was not applied, and the client knows it (refused before it ran).
    pub fn failed(mut self) {
        self.settled = true;
        self.monitor
            .counted(self.client, &self.counter, Some(false));
    }

    /// Whether it ran is unknown (a lost reply); the same as dropping it.
    pub fn unknown(self) {}
}

impl Drop for Increment {
    fn drop(&mut self) {
        if !self.settled {
            self.monitor.counted(self.client, &self.counter, None);
        }
    }
}
