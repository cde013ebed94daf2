//! Seed 000's reentrancy: one owner may hold a lock several times.

use std::sync::Arc;
use std::time::Duration;

use super::{Binding, int_reply, ms_arg, refused, unexpected};
use crate::lock::run_in_background;
use crate::scripts::{REENTRANT_ACQUIRE, REENTRANT_EXTEND, REENTRANT_RELEASE};
use crate::{
    Attempt, Clock, KvBackend, LockAlgorithm, LockError, LockGuard, LockName, LockOptions, Value,
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
    /// A fresh owner with a random UUID v4 id.
    pub fn new() -> Self {
        Self {
            id: uuid::Uuid::new_v4().to_string().into(),
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

/// A reentrant lock: the value is `<owner>:<count>`. The owner's acquire increments the
/// count and refreshes the TTL ([`REENTRANT_ACQUIRE`]); each release decrements it and the
/// key is deleted at 0 ([`REENTRANT_RELEASE`]). The count lives in Redis, so clones of one
/// [`LockOwner`] in different tasks or processes share it.
#[derive(Clone, Debug)]
pub struct ReentrantLock<B> {
    binding: Binding<B>,
    owner: LockOwner,
    /// `{name}:fence` for [`ReentrantLock::fenced`].
    fence_key: Option<Vec<u8>>,
}

impl<B: KvBackend + Clone + 'static> ReentrantLock<B> {
    /// A reentrant lock on `key` held on behalf of `owner`, with default options.
    pub fn new(backend: B, key: impl Into<Vec<u8>>, owner: LockOwner) -> Self {
        Self::with_options(backend, key, owner, LockOptions::default())
    }

    /// A reentrant lock on `key` held on behalf of `owner`, with `options`.
    pub fn with_options(
        backend: B,
        key: impl Into<Vec<u8>>,
        owner: LockOwner,
        options: LockOptions,
    ) -> Self {
        Self {
            binding: Binding::new(backend, key, options),
            owner,
            fence_key: None,
        }
    }

    /// A reentrant lock named `name` (keys `{name}:lock` and `{name}:fence`) whose holds
    /// carry fencing tokens ([`ReentrantGuard::fence`]): the owner's first hold takes a new
    /// one, and re-entering reports the same one.
    pub fn fenced(backend: B, name: &LockName, owner: LockOwner, options: LockOptions) -> Self {
        Self {
            fence_key: Some(name.key("fence")),
            ..Self::with_options(backend, name.key("lock"), owner, options)
        }
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
            options,
            ..
        } = &self.binding;
        let ttl_ms = options.ttl_ms()?;
        let keys: &[&[u8]] = match &self.fence_key {
            Some(fence) => &[key, fence],
            None => &[key],
        };
        let reply = backend
            .eval(
                &REENTRANT_ACQUIRE,
                keys,
                &[self.owner.id().as_bytes(), &ms_arg(ttl_ms)],
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
        match (code, depth_or_pttl) {
            (1, depth) => Ok(Attempt::Acquired(ReentrantGuard {
                backend: backend.clone(),
                key: key.clone(),
                owner: self.owner.clone(),
                depth,
                fence,
                armed: true,
            })),
            (_, pttl) => Ok(refused(pttl)),
        }
    }
}

/// One hold of a [`ReentrantLock`]; releasing it leaves the lock once.
#[derive(Debug)]
pub struct ReentrantGuard<B: KvBackend + Clone + 'static> {
    backend: B,
    key: Arc<[u8]>,
    owner: LockOwner,
    depth: i64,
    fence: Option<i64>,
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

impl<B: KvBackend + Clone + 'static> LockGuard for ReentrantGuard<B> {
    fn key(&self) -> &[u8] {
        &self.key
    }

    async fn release(mut self) -> Result<bool, LockError> {
        let left = leave_once(&self.backend, &self.key, &self.owner).await;
        self.armed = false;
        left
    }

    async fn extend(&mut self, ttl: Duration) -> Result<bool, LockError> {
        let ttl_ms = LockOptions::new().ttl(ttl).ttl_ms()?;
        let reply = self
            .backend
            .eval(
                &REENTRANT_EXTEND,
                &[&*self.key],
                &[self.owner.id().as_bytes(), &ms_arg(ttl_ms)],
            )
            .await?;
        Ok(int_reply(&REENTRANT_EXTEND, reply)? == 1)
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
