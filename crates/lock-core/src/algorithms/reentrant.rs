//! Seed 000's reentrancy: one owner may hold a lock several times.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{Binding, Hold, int_reply, ms_arg, refused, replicated_enough, unexpected, write};
use crate::lock::{ReleaseError, Supports, run_in_background, ttl_ms};
use crate::scripts::{REENTRANT_ACQUIRE, REENTRANT_EXTEND, REENTRANT_RELEASE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions,
    Replication, Value,
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
    binding: Binding<B>,
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
        Ok(Self {
            binding: Binding::new(
                backend,
                name,
                options,
                "reentrant",
                Supports {
                    notify: false,
                    replication: true,
                },
            )?,
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

    fn name(&self) -> &'static str {
        "reentrant"
    }
    binding_accessors!();

    async fn try_acquire(&self) -> Result<Attempt<ReentrantGuard<B>>, LockError> {
        let Binding {
            backend,
            key,
            ttl_ms,
            clock,
            options,
            ..
        } = &self.binding;
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
            (1, depth) => Ok(Attempt::Acquired(ReentrantGuard {
                backend: backend.clone(),
                key: key.clone(),
                owner: self.owner.clone(),
                depth,
                fence,
                replication: options.replication,
                hold: Hold::new(clock.clone(), started, *ttl_ms),
                armed: true,
            })),
            (_, pttl) => Ok(refused(pttl)),
        }
    }
}

/// One hold of a [`ReentrantLock`]; releasing it leaves the lock once.
pub struct ReentrantGuard<B: KvBackend + Clone + 'static> {
    backend: B,
    key: Arc<[u8]>,
    owner: LockOwner,
    depth: i64,
    fence: Option<i64>,
    /// Replicas every extend must reach ([`LockOptions::replication`]).
    replication: Option<Replication>,
    hold: Hold,
    armed: bool,
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

impl<B: KvBackend + Clone + 'static> fmt::Debug for ReentrantGuard<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReentrantGuard")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("owner", &self.owner.id())
            .field("depth", &self.depth)
            .field("fence", &self.fence)
            .field("valid_until_ms", &self.hold.valid_until_ms)
            .field("armed", &self.armed)
            .finish()
    }
}

impl<B: KvBackend + Clone + 'static> LockGuard for ReentrantGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }
    hold_accessors!();

    async fn release(self) -> Result<bool, ReleaseError<Self>> {
        let left = leave_once(&self.backend, &self.key, &self.owner).await;
        ReleaseError::settle(left, self, |guard| guard.armed = false)
    }

    fn abandon(mut self) {
        self.armed = false;
    }

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = ttl_ms(ttl)?;
        let started = self.hold.clock.now_ms();
        let (reply, acknowledged) = write(
            &self.backend,
            self.replication.as_ref(),
            &REENTRANT_EXTEND,
            &[&*self.key],
            &[self.owner.id().as_bytes(), &ms_arg(ttl_ms)],
        )
        .await?;
        let extended = int_reply(&REENTRANT_EXTEND, reply)? == 1;
        if extended {
            self.hold = Hold::new(self.hold.clock.clone(), started, ttl_ms);
            replicated_enough(&self.key, self.replication.as_ref(), acknowledged)?;
        }
        Ok(extended)
    }
}

impl<B: KvBackend + Clone + 'static> Drop for ReentrantGuard<B> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let backend = self.backend.clone();
        let key = self.key.clone();
        let owner = self.owner.clone();
        run_in_background(async move {
            let _ = leave_once(&backend, &key, &owner).await;
        });
    }
}
