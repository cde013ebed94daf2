//! [`ClusterOptions`]: how a [`ClusterBackend`](super::ClusterBackend) waits and retries.

use std::time::Duration;

/// How [`ClusterBackend`](super::ClusterBackend) waits and retries.
///
/// redis-rs's defaults (16 retries, waits from 1,280 ms) suit a cache, not a lock whose
/// TTL is seconds: these retry a redirection or a node's hiccup a few times within
/// milliseconds, and leave longer outages to the lock's own [`AcquirePolicy`].
///
/// [`AcquirePolicy`]: lock_core::AcquirePolicy
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterOptions {
    /// The longest one command may take, redirections and retries included; then it fails
    /// with [`ErrorKind::Timeout`](lock_core::ErrorKind::Timeout). Default 2 s.
    pub command_timeout: Duration,
    /// The longest one node may take to answer one attempt. Default 500 ms.
    pub response_timeout: Duration,
    /// The longest a connection to a node may take to open. Default 1 s.
    pub connect_timeout: Duration,
    /// How often a command is retried after a redirection, `TRYAGAIN`, `CLUSTERDOWN` or a
    /// lost node. Default 4.
    pub retries: u32,
    /// The longest wait between two retries. Default 200 ms (the shortest is 10 ms).
    pub max_retry_wait: Duration,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        Self {
            command_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(1),
            retries: 4,
            max_retry_wait: Duration::from_millis(200),
        }
    }
}
