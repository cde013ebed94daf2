//! What a backend author implements to run the suite: [`Harness`].

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use lock_core::{Clock, DynBackend, KvBackend, LockName, RedisVersion};

use crate::Capabilities;

/// Connects the suite to one backend.
///
/// A harness for any backend whose clock is the wall clock (a real server, say), which
/// lets time pass by sleeping; the double's harness moves its virtual clock instead.
///
/// ```
/// use std::time::Duration;
/// use lock_conformance::{Capabilities, Capability, Harness};
/// use lock_core::KvBackend;
///
/// struct Server<B>(B);
///
/// impl<B: KvBackend + Clone + 'static> Harness for Server<B> {
///     type Backend = B;
///     fn name(&self) -> String {
///         "my server".into()
///     }
///     async fn backend(&self) -> Result<B, String> {
///         Ok(self.0.clone())
///     }
///     async fn advance(&self, _: &B, by: Duration) {
///         tokio::time::sleep(by).await;
///     }
///     fn capabilities(&self) -> Capabilities {
///         Capabilities::none().with(Capability::PubSub)
///     }
/// }
/// ```
pub trait Harness: Send + Sync {
    /// The backend under test.
    type Backend: KvBackend + Clone + 'static;

    /// A name for reports, e.g. `memory` or `redis://127.0.0.1:6379`.
    fn name(&self) -> String;

    /// A backend for one case. Every case namespaces its keys (see [`Ctx::key`]), so a
    /// shared server may return the same connection every time.
    fn backend(&self) -> impl Future<Output = Result<Self::Backend, String>> + Send;

    /// Lets `by` pass for `backend` and for the clock its clients use: a virtual advance
    /// for doubles, a real sleep for servers. Cases keep such waits under a second.
    fn advance(&self, backend: &Self::Backend, by: Duration) -> impl Future<Output = ()> + Send;

    /// How the backend is deployed, for reports: `single` (the default), `replicated`,
    /// `sentinel`…
    fn topology(&self) -> String {
        "single".into()
    }

    /// What the backend can do beyond the commands every backend has. Cases that need a
    /// capability missing here are skipped, with the reason. Default: none.
    fn capabilities(&self) -> Capabilities {
        Capabilities::none()
    }

    /// The Redis version the backend's answers are judged against where versions differ
    /// ([`RedisVersion`]: `WAITAOF`, a cluster script's cross-slot text). Default: the
    /// newest. A harness of a real server says which it runs; `nxlock check` reads it
    /// from `INFO server`.
    fn redis_version(&self) -> RedisVersion {
        RedisVersion::default()
    }

    /// Why this harness cannot run here (no server available, say); generated tests then
    /// skip with a loud line instead of failing. `None` by default.
    fn skip_reason(&self) -> Option<String> {
        None
    }

    /// A fresh primary with one replica for one failover case, replicating, and the
    /// controls to stall it and fail it over. The backend talks to whichever node is
    /// primary (it follows a failover, as a Sentinel-aware client does). Called only when
    /// the harness declares [`Capability::Replication`](crate::Capability::Replication);
    /// the default has none.
    fn replicated(
        &self,
    ) -> impl Future<Output = Result<(Self::Backend, Box<dyn Failover>), String>> + Send {
        async { Err("this harness has no replicated deployment".to_string()) }
    }

    /// Fresh independent nodes for one Redlock case (no replication between them; an odd
    /// number, at least 3), a backend for each, and the controls to fail them. Called
    /// only when the harness declares
    /// [`Capability::MultiInstance`](crate::Capability::MultiInstance); the default has
    /// none.
    fn instances(&self) -> impl Future<Output = Result<Deployment<Self::Backend>, String>> + Send {
        async { Err("this harness has no independent instances".to_string()) }
    }

    /// The cluster the backend talks to, for the cluster cases: which shard serves which
    /// slot and, with [`Capability::ClusterOperations`](crate::Capability::ClusterOperations),
    /// moving slots and failing shards over. Called only when the harness declares
    /// [`Capability::Cluster`](crate::Capability::Cluster); the default has none.
    fn cluster(&self) -> impl Future<Output = Result<Box<dyn Cluster>, String>> + Send {
        async { Err("this harness has no cluster".to_string()) }
    }
}

/// A future a [`Cluster`] query returns.
pub type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, String>> + Send + 'a>>;

/// Controls the cluster behind a harness's backend ([`Harness::cluster`]). Shards are
/// numbered from 0 and keep their number across failovers (a shard is a primary and its
/// replicas). The cluster is shared by every case: a case that moves a slot picks one of
/// its own keys' slots.
pub trait Cluster: Send + Sync {
    /// How many shards serve slots.
    fn shards(&self) -> usize;
    /// The shard serving `slot` now.
    fn shard_of(&self, slot: u16) -> Answer<'_, usize>;
    /// Starts moving `slot` to shard `to` (`MIGRATING` on its owner, `IMPORTING` there).
    /// The defaults of this and the next three say the cluster cannot be changed: a
    /// harness without [`Capability::ClusterOperations`](crate::Capability::ClusterOperations)
    /// implements only the two above.
    fn start_migration(&self, slot: u16, to: usize) -> Step<'_> {
        let _ = (slot, to);
        unchangeable()
    }
    /// Moves the keys of `slot`, mid-migration, to shard `to` (`MIGRATE`).
    fn move_keys(&self, slot: u16, to: usize) -> Step<'_> {
        let _ = (slot, to);
        unchangeable()
    }
    /// Ends the migration: shard `to` owns `slot` (`CLUSTER SETSLOT … NODE`).
    fn finish_migration(&self, slot: u16, to: usize) -> Step<'_> {
        let _ = (slot, to);
        unchangeable()
    }
    /// A manual failover (`CLUSTER FAILOVER`) of the shard serving `slot`: a replica
    /// catches up and takes over; returns once every node agrees.
    fn fail_over(&self, slot: u16) -> Step<'_> {
        let _ = slot;
        unchangeable()
    }
}

fn unchangeable() -> Step<'static> {
    Box::pin(async { Err("this cluster's slots cannot be moved from here".to_string()) })
}

/// Controls N independent nodes for the Redlock cases ([`Harness::instances`]). Node
/// indexes follow the backends' order. Dropping it tears the nodes down.
pub trait Instances: Send + Sync {
    /// The clock the nodes' clients use.
    fn clock(&self) -> Clock;
    /// Lets `by` pass for every node and client (virtual for doubles, a sleep for
    /// servers).
    fn advance(&self, by: Duration) -> Step<'_>;
    /// Kills node `node`: its clients' commands fail at once (connection refused).
    fn kill(&self, node: usize) -> Step<'_>;
    /// Starts node `node` again, with the data it had (`appendfsync always`) or empty.
    fn restart(&self, node: usize, keep_data: bool) -> Step<'_>;
    /// Stops answering on node `node`: commands hang until the client's timeout.
    fn blackhole(&self, node: usize) -> Step<'_>;
    /// Ends [`Instances::blackhole`] on node `node`.
    fn heal(&self, node: usize) -> Step<'_>;
    /// Steps node `node`'s clock `by` ahead: its keys expire that much sooner. (Servers
    /// whose clock cannot be stepped may shorten every key's TTL by `by` instead, which
    /// is the same to a lock.)
    fn jump_clock(&self, node: usize, by: Duration) -> Step<'_>;
}

/// Why `nodes` independent nodes cannot run the Redlock cases, if they cannot: the cases
/// take a bare majority and lose it by one node, which needs an odd count of at least 3.
pub fn check_instance_count(nodes: usize) -> Result<(), String> {
    if nodes < 3 || nodes.is_multiple_of(2) {
        return Err(format!(
            "the Redlock cases need an odd number of instances, at least 3 (got {nodes})"
        ));
    }
    Ok(())
}

/// Independent nodes' backends, in node order, and their controls ([`Harness::instances`]).
pub type Deployment<B> = (Vec<B>, Box<dyn Instances>);

/// A future a [`Failover`] control returns.
pub type Step<'a> = Pin<Box<dyn Future<Output = Result<(), String>> + Send + 'a>>;

/// Controls a replicated deployment for the failover cases ([`Harness::replicated`]).
/// Dropping it tears the deployment down.
pub trait Failover: Send + Sync {
    /// Stalls replication once the replicas have every write made so far: writes from
    /// now on reach only the primary, until [`Failover::resume`].
    fn pause(&self) -> Step<'_>;
    /// Lets replication flow again; what was held back arrives.
    fn resume(&self) -> Step<'_>;
    /// Kills the primary. Until [`Failover::promote`], no node takes writes.
    fn crash_primary(&self) -> Step<'_>;
    /// Promotes the replica (as Sentinel would after the primary died); the deployment's
    /// clients are sent to it from now on.
    fn promote(&self) -> Step<'_>;
}

/// A [`Harness`] with its backend's type erased, as the cases see it: every case is
/// compiled once, for [`DynBackend`], whatever backends the suite runs on.
pub(crate) trait AnyHarness: Send + Sync {
    fn capabilities(&self) -> Capabilities;
    fn redis_version(&self) -> RedisVersion;
    fn backend(&self) -> Answer<'_, DynBackend>;
    fn advance<'a>(&'a self, backend: &'a DynBackend, by: Duration) -> Step<'a>;
    fn replicated(&self) -> Answer<'_, (DynBackend, Box<dyn Failover>)>;
    fn instances(&self) -> Answer<'_, Deployment<DynBackend>>;
    fn cluster(&self) -> Answer<'_, Box<dyn Cluster>>;
}

impl<H: Harness> AnyHarness for H {
    fn capabilities(&self) -> Capabilities {
        Harness::capabilities(self)
    }

    fn redis_version(&self) -> RedisVersion {
        Harness::redis_version(self)
    }

    fn backend(&self) -> Answer<'_, DynBackend> {
        Box::pin(async move { Ok(DynBackend::new(Harness::backend(self).await?)) })
    }

    fn advance<'a>(&'a self, backend: &'a DynBackend, by: Duration) -> Step<'a> {
        Box::pin(async move {
            match backend.downcast_ref::<H::Backend>() {
                Some(backend) => Harness::advance(self, backend, by).await,
                // A case's own backend is always the harness's; any other waits for real.
                None => tokio::time::sleep(by).await,
            }
            Ok(())
        })
    }

    fn replicated(&self) -> Answer<'_, (DynBackend, Box<dyn Failover>)> {
        Box::pin(async move {
            let (backend, failover) = Harness::replicated(self).await?;
            Ok((DynBackend::new(backend), failover))
        })
    }

    fn instances(&self) -> Answer<'_, Deployment<DynBackend>> {
        Box::pin(async move {
            let (nodes, control) = Harness::instances(self).await?;
            Ok((nodes.into_iter().map(DynBackend::new).collect(), control))
        })
    }

    fn cluster(&self) -> Answer<'_, Box<dyn Cluster>> {
        Box::pin(Harness::cluster(self))
    }
}

/// What one case gets: the backend (its type erased, so that the suite is compiled once),
/// its own key namespace, and the harness's time and deployments.
pub struct Ctx<'h> {
    harness: &'h dyn AnyHarness,
    /// The backend under test.
    pub backend: DynBackend,
    prefix: String,
}

impl<'h> Ctx<'h> {
    /// The Redis version this case's answers are judged against
    /// ([`Harness::redis_version`]).
    pub fn redis_version(&self) -> RedisVersion {
        self.harness.redis_version()
    }

    /// A context for the case `case`, with a fresh backend and a unique key prefix.
    pub async fn new<H: Harness>(harness: &'h H, case: &str) -> Result<Self, String> {
        Self::erased(harness, case).await
    }

    /// [`Ctx::new`] for a harness whose type is erased: compiled once for every harness.
    pub(crate) async fn erased(harness: &'h dyn AnyHarness, case: &str) -> Result<Self, String> {
        let backend = AnyHarness::backend(harness).await?;
        let unique = uuid::Uuid::new_v4().simple();
        Ok(Self {
            harness,
            backend,
            prefix: format!("nxlock-check:{case}:{unique}:"),
        })
    }

    /// The namespaced key for `name`: `{<case prefix>}name`, so that every key one case
    /// names hashes to one Redis Cluster slot and multi-key commands stay legal there.
    pub fn key(&self, name: &str) -> Vec<u8> {
        format!("{{{}}}{name}", self.prefix).into_bytes()
    }

    /// The namespaced name for `name`, as text.
    pub fn name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The namespaced [`LockName`] for `name`.
    pub fn lock_name(&self, name: &str) -> LockName {
        LockName::new(self.name(name)).expect("namespaced names are non-empty and brace-free")
    }

    /// What the harness declared its backend can do.
    pub fn capabilities(&self) -> Capabilities {
        self.harness.capabilities()
    }

    /// A fresh replicated deployment for this case (see [`Harness::replicated`]).
    pub async fn replicated(&self) -> Result<(DynBackend, Box<dyn Failover>), String> {
        self.harness.replicated().await
    }

    /// The cluster behind the backend (see [`Harness::cluster`]).
    pub async fn cluster(&self) -> Result<Box<dyn Cluster>, String> {
        self.harness.cluster().await
    }

    /// Fresh independent nodes for this case (see [`Harness::instances`]).
    pub async fn instances(&self) -> Result<Deployment<DynBackend>, String> {
        self.harness.instances().await
    }

    /// Lets `by` pass (see [`Harness::advance`]).
    pub async fn advance(&self, by: Duration) {
        let _ = self.harness.advance(&self.backend, by).await;
    }

    /// The clock clients of this backend use.
    pub fn clock(&self) -> Clock {
        self.backend.clock()
    }
}
