//! Seed 000's reentrancy: one owner may hold a lock several times.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::held::{Held, Releaser};
use super::{Hold, bind, int_reply, ms_arg, refused, replicated_enough, unexpected, write};
use crate::lock::{ReleaseError, Supports, ttl_ms};
use crate::scripts::{REENTRANT_ACQUIRE, REENTRANT_EXTEND, REENTRANT_RELEASE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockBinding, LockError, LockGuard, LockName,
    LockOptions, Replication, Value,
};

/// Who holds a reentrant lock: a handle, not an OS thread (tokio tasks move between
/// threads, so seed 000's thread-local UUID would be wrong here).
///
/// Clones are the same owner; [`LockOwner::new`] makes a distinct one. Give one to each
/// task, request or actor that should be able to re-enter its own locks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LockOwner {
    id: Arc<str>,
}

impl LockOwner {
    /// A fresh owner with a random UUID v4 id ([`fresh_token`](crate::fresh_token)).
    pub fn new() -> Self {
        Self {
            id: crate::fresh_token().into(),
        }
    }

    /// The owner's id, as written into the lock value `<id>:<count>`.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Default for LockOwner {
    fn default() -> Self {
        Self::new()
    }
}

/// A reentrant lock: the value of `{name}:lock` is `<owner>:<count>`. The owner's acquire
/// increments the count and refreshes the TTL ([`REENTRANT_ACQUIRE`]); each release
/// decrements it and the key is deleted at 0 ([`REENTRANT_RELEASE`]). The count lives in
/// Redis, so clones of one [`LockOwner`] in different tasks or processes share it.
///
/// # Invariants
///
/// - At most one owner holds the lock at a time; one owner may hold it many times.
/// - The key is deleted when the owner's last hold is released, or by its TTL, which
///   every acquire and extend of the owner sets again.
/// - Release and extend touch the key only if it belongs to this owner.
///
/// An acquire retried after a lost reply cannot tell whether the lost attempt counted: the
/// owner may then hold one count more than it has guards, which the TTL ends.
#[derive(Clone, Debug)]
pub struct ReentrantLock<B> {
    backend: B,
    binding: LockBinding,
    owner: LockOwner,
    /// `{name}:fence` for [`ReentrantLock::fenced`].
    fence_key: Option<Vec<u8>>,
}

impl<B: KvBackend + Clone + 'static> ReentrantLock<B> {
    /// A reentrant lock named `name`, held on behalf of `owner`, with default options.
    pub fn new(backend: B, name: &LockName, owner: LockOwner) -> Self {
        Self::with_options(backend, name, owner, LockOptions::default())
            .expect("the default options are valid")
    }

    /// A reentrant lock named `name`, held on behalf of `owner`, with `options`;
    /// [`LockError::InvalidConfig`] if they are out of range or ask for
    /// [`Wait::Notify`](crate::Wait::Notify).
    pub fn with_options(
        backend: B,
        name: &LockName,
        owner: LockOwner,
        options: LockOptions,
    ) -> Result<Self, LockError> {
        let supports = Supports {
            notify: false,
            replication: true,
        };
        Ok(Self {
            binding: bind(&backend, name, options, "reentrant", supports)?,
            backend,
            owner,
            fence_key: None,
        })
    }

    /// This lock with fencing tokens (key `{name}:fence`, [`ReentrantGuard::fence`]): the
    /// owner's first hold takes a new one, and re-entering reports the same one.
    pub fn fenced(mut self) -> Self {
        self.fence_key = Some(self.binding.name.key("fence"));
        self
    }

    /// The owner this lock acquires for.
    pub fn owner(&self) -> &LockOwner {
        &self.owner
    }
}

impl<B: KvBackend + Clone + 'static> LockAlgorithm for ReentrantLock<B> {
    type Guard = ReentrantGuard<B>;

    fn binding(&self) -> &LockBinding {
        &self.binding
    }

    async fn try_acquire(&self) -> Result<Attempt<ReentrantGuard<B>>, LockError> {
        let LockBinding {
            key,
            ttl_ms,
            clock,
            options,
            ..
        } = &self.binding;
        let backend = &self.backend;
        let started = clock.now_ms();
        let keys: &[&[u8]] = match &self.fence_key {
            Some(fence) => &[key, fence],
            None => &[key],
        };
        let replication = options.replication.as_ref();
        let (reply, acknowledged) = write(
            backend,
            replication,
            &REENTRANT_ACQUIRE,
            keys,
            &[self.owner.id().as_bytes(), &ms_arg(*ttl_ms)],
        )
        .await?;
        let (code, depth_or_pttl, fence) = match &reply {
            Value::Array(items) => match items.as_slice() {
                [Value::Int(1), Value::Int(depth), Value::Int(fence)] => (1, *depth, Some(*fence)),
                [Value::Int(code), Value::Int(n)] => (*code, *n, None),
                _ => return Err(unexpected(&REENTRANT_ACQUIRE, &reply)),
            },
            _ => return Err(unexpected(&REENTRANT_ACQUIRE, &reply)),
        };
        if code == 1
            && let Err(not_replicated) = replicated_enough(key, replication, acknowledged)
        {
            // Undo this one hold; holds the owner had before stay.
            leave_once(backend, key, &self.owner).await?;
            return Err(not_replicated);
        }
        match (code, depth_or_pttl) {
            (1, depth) => {
                let releaser = LeaveOnce {
                    backend: backend.clone(),
                    key: key.clone(),
                    owner: self.owner.clone(),
                    replication: options.replication,
                };
                let hold = Hold::new(clock.clone(), started, *ttl_ms);
                Ok(Attempt::Acquired(ReentrantGuard {
                    held: Held::new(releaser, hold),
                    depth,
                    fence,
                }))
            }
            (_, pttl) => Ok(refused(pttl)),
        }
    }
}

/// One hold of a [`ReentrantLock`]; releasing it leaves the lock once.
pub struct ReentrantGuard<B: KvBackend + Clone + 'static> {
    held: Held<LeaveOnce<B>>,
    depth: i64,
    fence: Option<i64>,
}

impl<B: KvBackend + Clone + 'static> ReentrantGuard<B> {
    /// How many holds the owner had, this one included, when it was acquired.
    pub fn depth(&self) -> i64 {
        self.depth
    }

    /// The fencing token of the owner's hold, for a [`ReentrantLock::fenced`] lock: the
    /// same for every re-entry of one continuous hold.
    pub fn fence(&self) -> Option<i64> {
        self.fence
    }
}

/// [`REENTRANT_RELEASE`]: the owner leaves the lock once (the key goes at count 0).
#[derive(Clone)]
struct LeaveOnce<B> {
    backend: B,
    key: Arc<[u8]>,
    owner: LockOwner,
    /// Replicas every extend must reach ([`LockOptions::replication`]).
    replication: Option<Replication>,
}

impl<B: KvBackend + Clone + 'static> Releaser for LeaveOnce<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(&mut self, _hold: &Hold) -> Result<bool, LockError> {
        leave_once(&self.backend, &self.key, &self.owner).await
    }

    fn detach(&mut self) -> Self {
        self.clone()
    }

    fn describe(&self, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("owner", &self.owner.id());
    }
}

async fn leave_once<B: KvBackend>(
    backend: &B,
    key: &[u8],
    owner: &LockOwner,
) -> Result<bool, LockError> {
    let reply = backend
        .eval(&REENTRANT_RELEASE, &[key], &[owner.id().as_bytes()])
        .await?;
    Ok(int_reply(&REENTRANT_RELEASE, reply)? >= 0)
}

held_debug!(ReentrantGuard, depth, fence);

impl<B: KvBackend + Clone + 'static> LockGuard for ReentrantGuard<B> {
    held_guard!();

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let Held { releaser, hold, .. } = &mut self.held;
        let started = hold.clock.now_ms();
        let replication = releaser.replication.as_ref();
        let (reply, acknowledged) = write(
            &releaser.backend,
            replication,
            &REENTRANT_EXTEND,
            &[&*releaser.key],
            &[releaser.owner.id().as_bytes(), &ms_arg(ttl_ms)],
        )
        .await?;
        let extended = int_reply(&REENTRANT_EXTEND, reply)? == 1;
        if extended {
            *hold = Hold::new(hold.clock.clone(), started, ttl_ms);
            replicated_enough(&releaser.key, replication, acknowledged)?;
        }
        Ok(extended)
    }
}
