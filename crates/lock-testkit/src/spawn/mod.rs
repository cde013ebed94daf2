//! Real processes for tests: `redis-server` spawned on a free loopback port in a
//! temporary directory of its own and killed when dropped, alone ([`RedisServer`]), as a
//! replicated deployment with optional Sentinel ([`ReplicatedRedis`]), as independent
//! instances for Redlock ([`RedisInstances`]) or as a cluster ([`RedisCluster`]); and the
//! pausable [`Proxy`] that stalls, black-holes or redirects a link between them; and
//! [`CpuPlacement`], which keeps a benchmark's client and its servers on separate CPUs.

mod cluster;
mod cpus;
mod instances;
mod proxy;
mod replicated;
mod sentinel;
mod server;

pub use cluster::RedisCluster;
pub use cpus::{CpuPlacement, cpus_of};
pub use instances::{Durability, RedisInstances};
pub use proxy::Proxy;
pub use replicated::ReplicatedRedis;
pub use sentinel::MASTER_NAME;
pub use server::{
    REQUIRE_VAR, RedisServer, RedisTarget, URL_VAR, announce_skip, installed_server,
    installed_version, redis_required, skip_or_fail,
};
