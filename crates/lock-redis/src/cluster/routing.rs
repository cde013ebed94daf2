//! How commands reach a cluster's nodes: the redis-rs client's configuration, a command
//! sent to a slot's primary, and the cluster's refusals as nxlock errors. Shared by the
//! backend, its pub/sub and its transactions.

use lock_core::{Error, ErrorKind, Result};
use redis::Cmd;
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

use super::ClusterOptions;
use crate::errors;

/// Sends `command` where `routing` says; an error reply is an error (redis-rs hands a
/// routed command's error reply back as a value).
pub(crate) async fn routed(
    connection: &mut ClusterConnection,
    command: Cmd,
    routing: RoutingInfo,
) -> Result<redis::Value> {
    match connection.route_command(command, routing).await {
        Ok(redis::Value::ServerError(error)) => Err(server_error(error)),
        Ok(reply) => Ok(reply),
        Err(e) => Err(from_cluster(e)),
    }
}

/// An error reply redis-rs handed back as a value.
pub(crate) fn server_error(error: redis::ServerError) -> Error {
    let text = match error.details() {
        Some(detail) => format!("{} {detail}", error.code()),
        None => error.code().to_string(),
    };
    redirected_or_down(Error::from_reply(text))
}

/// The redis-rs client configuration for `nodes` and `options`.
pub(crate) fn client_builder(nodes: &[String], options: &ClusterOptions) -> ClusterClientBuilder {
    ClusterClientBuilder::new(nodes.to_vec())
        .retries(options.retries)
        .min_retry_wait(10)
        .max_retry_wait(options.max_retry_wait.as_millis().max(11) as u64)
        .retry_wait_formula(10, 2)
        .connection_timeout(options.connect_timeout)
        .response_timeout(options.response_timeout)
        .overall_response_timeout(Some(options.command_timeout))
}

pub(crate) fn to_primary(slot: u16) -> RoutingInfo {
    RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        slot,
        SlotAddr::Master,
    )))
}

/// A redis-rs error as an nxlock error; a redirection or an unavailable cluster that
/// outlasted the retries is [`ErrorKind::Connection`] (nothing ran; try again).
pub(crate) fn from_cluster(e: redis::RedisError) -> Error {
    redirected_or_down(errors::from_redis(e))
}

fn redirected_or_down(error: Error) -> Error {
    let unavailable = [
        "MOVED",
        "ASK",
        "TRYAGAIN",
        "CLUSTERDOWN",
        "MASTERDOWN",
        "LOADING",
    ]
    .iter()
    .any(|code| error.message().starts_with(code));
    if unavailable && error.kind() == ErrorKind::Response {
        Error::new(ErrorKind::Connection, error.message())
    } else {
        error
    }
}
