//! The floor nxlock's locks should reach on Redis: the token cycle written by hand on
//! redis-rs, one `SET NX PX` and one `EVALSHA` per cycle on a plain multiplexed
//! connection, no abstraction in between. It runs through the same client loop as
//! nxlock's runs, so both pay the same measuring costs and the ratio is the library's.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use lock_core::scripts::COMPARE_AND_DELETE;
use lock_core::{
    Attempt, Clock, LockAlgorithm, LockBinding, LockError, LockGuard, LockName, LockOptions,
    ReleaseError,
};
use redis::aio::MultiplexedConnection;

use super::BenchError;
use super::locks::run_clients;
use super::report::{BenchReport, connection_error};
use super::workload::Workload;

/// Runs `clients` clients doing hand-written uncontended cycles (each on its own key) on
/// `url` for `duration`; answers total cycles per second.
pub async fn hand_written_floor(
    url: &str,
    clients: usize,
    duration: Duration,
) -> Result<f64, BenchError> {
    let workload = Workload {
        clients,
        duration,
        ..Workload::default()
    };
    Ok(run_floor(url, &workload).await?.cycles_per_sec)
}

/// The hand-written cycle with `workload`'s clients, duration and TTL, every client on
/// its own key.
pub(crate) async fn run_floor(url: &str, workload: &Workload) -> Result<BenchReport, BenchError> {
    let failed = |e: redis::RedisError| BenchError::Floor(e.to_string());
    let client = redis::Client::open(url).map_err(failed)?;
    let connection = client
        .get_multiplexed_async_connection()
        .await
        .map_err(failed)?;
    let sha: Arc<str> = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(COMPARE_AND_DELETE.lua())
        .query_async::<String>(&mut connection.clone())
        .await
        .map_err(failed)?
        .into();
    let workload = Workload {
        keys: workload.clients,
        ..workload.clone()
    };
    let make = |name: &LockName, options: LockOptions| {
        Ok(FloorLock {
            connection: connection.clone(),
            sha: sha.clone(),
            binding: LockBinding::new("floor", name, options, Clock::system())?,
        })
    };
    let mut report = run_clients(url, &workload, || 0, make).await?;
    report.algorithm = "floor".into();
    Ok(report)
}

/// The hand-written cycle behind [`LockAlgorithm`], for the client loop only: its
/// acquire is one `SET NX PX` (tried again until it succeeds; every client has its own
/// key, so the first does).
struct FloorLock {
    connection: MultiplexedConnection,
    sha: Arc<str>,
    binding: LockBinding,
}

impl LockAlgorithm for FloorLock {
    type Guard = FloorGuard;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<FloorGuard>, LockError> {
        let token = uuid::Uuid::new_v4().to_string();
        let ttl_ms = u64::try_from(self.binding.ttl_ms()).unwrap_or(u64::MAX);
        let set: Option<String> = redis::cmd("SET")
            .arg(self.key())
            .arg(&token)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut self.connection.clone())
            .await
            .map_err(connection_error)?;
        Ok(match set {
            Some(_) => Attempt::Acquired(FloorGuard {
                connection: self.connection.clone(),
                key: self.key().to_vec(),
                sha: self.sha.clone(),
                token,
                clock: self.clock().clone(),
                valid_until_ms: self
                    .clock()
                    .now_ms()
                    .saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX)),
            }),
            None => Attempt::Held { holder_ttl: None },
        })
    }

    async fn acquire(&self) -> Result<FloorGuard, LockError> {
        loop {
            if let Attempt::Acquired(guard) = self.try_acquire().await? {
                return Ok(guard);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// A held [`FloorLock`].
struct FloorGuard {
    connection: MultiplexedConnection,
    key: Vec<u8>,
    sha: Arc<str>,
    token: String,
    clock: Clock,
    valid_until_ms: i64,
}

impl LockGuard for FloorGuard {
    reference_guard_accessors!();
    /// A failed release answers `false`: the client loop counts it as an error.
    async fn release(mut self) -> Result<bool, ReleaseError<Self>> {
        let released: Result<i64, _> = redis::cmd("EVALSHA")
            .arg(&*self.sha)
            .arg(1)
            .arg(&self.key)
            .arg(&self.token)
            .query_async(&mut self.connection)
            .await;
        Ok(released.is_ok_and(|released| released == 1))
    }
    async fn extend(&mut self, _ttl: Duration) -> Result<bool, LockError> {
        Err(LockError::Unsupported {
            algorithm: "floor",
            operation: "extend",
        })
    }
    fn abandon(self) {}
}

impl fmt::Debug for FloorGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FloorGuard")
            .field("key", &String::from_utf8_lossy(&self.key))
            .finish()
    }
}
