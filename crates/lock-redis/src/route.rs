//! Where a [`RedisBackend`](crate::RedisBackend) sends its commands: one fixed server, or
//! the master that Redis Sentinel names, followed across failovers.
//!
//! With Sentinel, a command that fails the way a failover makes commands fail (the
//! connection is lost, it times out, or the old master, now a replica, answers READONLY)
//! makes the route ask the sentinels again (`SENTINEL get-master-addr-by-name`); if they
//! name another master, later commands go there. The failed command itself is reported
//! as a connection error, so a lock's retry policy tries again.

use std::sync::{Arc, RwLock};

use lock_core::{Error, ErrorKind, Result};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::{RedisOptions, errors};

/// The server commands go to now.
#[derive(Clone)]
pub(crate) struct Node {
    pub(crate) client: redis::Client,
    pub(crate) connection: ConnectionManager,
    /// `host:port`, to tell whether the sentinels moved the master.
    pub(crate) address: String,
}

/// The sentinels to ask, and the name of the master they watch.
#[derive(Clone, Debug)]
pub(crate) struct Sentinels {
    pub(crate) addresses: Vec<String>,
    pub(crate) master: String,
}

pub(crate) struct Route {
    /// Shared, so that a command clones a pointer rather than the client's strings.
    current: RwLock<Arc<Node>>,
    sentinels: Option<Sentinels>,
    options: RedisOptions,
    /// One re-resolution at a time: a failover fails many commands at once.
    resolving: tokio::sync::Mutex<()>,
}

impl Route {
    /// The server at `url`.
    pub(crate) async fn fixed(url: &str, options: RedisOptions) -> Result<Self> {
        crate::tls::prepare(&[url])?;
        let client = redis::Client::open(url).map_err(|e| {
            Error::new(
                ErrorKind::InvalidConfig,
                format!("invalid Redis URL {url:?}: {e}"),
            )
        })?;
        let address = client.get_connection_info().addr().to_string();
        Ok(Self {
            current: RwLock::new(Arc::new(connect(client, address, options).await?)),
            sentinels: None,
            options,
            resolving: tokio::sync::Mutex::new(()),
        })
    }

    /// The master the sentinels at `addresses` (`host:port` each) name `master`.
    pub(crate) async fn sentinel(sentinels: Sentinels, options: RedisOptions) -> Result<Self> {
        let address = resolve(&sentinels, options).await?;
        let node = connect(client_for(&address)?, address, options).await?;
        Ok(Self {
            current: RwLock::new(Arc::new(node)),
            sentinels: Some(sentinels),
            options,
            resolving: tokio::sync::Mutex::new(()),
        })
    }

    /// The node commands go to now.
    pub(crate) fn node(&self) -> Arc<Node> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether this route follows a Sentinel-named master.
    pub(crate) fn follows_sentinel(&self) -> bool {
        self.sentinels.is_some()
    }

    /// After `error` failed a command on `failed` (the address it was sent to): when the
    /// route follows Sentinel and the error is one a failover causes, asks the sentinels
    /// which master to use and switches to it. The error to report: a failover's errors
    /// become [`ErrorKind::Connection`], so that callers retry.
    pub(crate) async fn after_error(&self, failed: &str, error: Error) -> Error {
        let Some(sentinels) = &self.sentinels else {
            return error;
        };
        let read_only = error.message().starts_with("READONLY");
        if !error.is_transient() && !read_only {
            return error;
        }
        let _one = self.resolving.lock().await;
        if self.node().address == failed
            && let Ok(address) = resolve(sentinels, self.options).await
            && address != failed
            && let Ok(client) = client_for(&address)
            && let Ok(node) = connect(client, address, self.options).await
        {
            *self
                .current
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(node);
        }
        if read_only {
            Error::new(ErrorKind::Connection, error.message())
        } else {
            error
        }
    }
}

fn client_for(address: &str) -> Result<redis::Client> {
    redis::Client::open(format!("redis://{address}")).map_err(|e| {
        Error::new(
            ErrorKind::InvalidConfig,
            format!("invalid master address {address:?}: {e}"),
        )
    })
}

async fn connect(client: redis::Client, address: String, options: RedisOptions) -> Result<Node> {
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(options.connect_timeout))
        .set_response_timeout(Some(options.command_timeout))
        .set_number_of_retries(1);
    let connecting = ConnectionManager::new_with_config(client.clone(), config);
    let connection = tokio::time::timeout(options.command_timeout, connecting)
        .await
        .map_err(|_| errors::timed_out(options.command_timeout))?
        .map_err(errors::from_redis)?;
    Ok(Node {
        client,
        connection,
        address,
    })
}

/// Asks each sentinel in turn for the master's address; the first answer wins.
async fn resolve(sentinels: &Sentinels, options: RedisOptions) -> Result<String> {
    let mut last = Error::new(ErrorKind::InvalidConfig, "no sentinel address given");
    for sentinel in &sentinels.addresses {
        match ask(sentinel, &sentinels.master, options).await {
            Ok(address) => return Ok(address),
            Err(error) => last = error,
        }
    }
    Err(Error::new(
        last.kind(),
        format!(
            "no sentinel named a master for {:?}: {}",
            sentinels.master,
            last.message()
        ),
    ))
}

async fn ask(sentinel: &str, master: &str, options: RedisOptions) -> Result<String> {
    let client = client_for(sentinel)?;
    let limit = options.connect_timeout;
    let asking = async {
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .map_err(errors::from_redis)?;
        let reply: Option<(String, u16)> = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(master)
            .query_async(&mut connection)
            .await
            .map_err(errors::from_redis)?;
        reply
            .map(|(host, port)| format!("{host}:{port}"))
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidConfig,
                    format!("sentinel {sentinel} does not know a master named {master:?}"),
                )
            })
    };
    tokio::time::timeout(limit, asking)
        .await
        .map_err(|_| errors::timed_out(limit))?
}
