//! # lock-core
//!
//! The heart of nxlock: the [`KvBackend`] trait (the Redis commands a SETNX-family lock
//! needs, with exact Redis 7 semantics), [`Script`]s (atomic operations written once in Lua
//! for servers and once in Rust for in-process doubles), a [`Clock`] that can be virtual,
//! and the lock algorithms of the seed documents, generic over any backend:
//!
//! | algorithm | seed | acquire | release |
//! |---|---|---|---|
//! | [`TokenLock`] | 000 | `SET NX PX` + random token | compare-and-delete script |
//! | [`LegacyLock`] | 002-004 | `SETNX` stamp, `GET`, `GETSET` recovery | `DEL` if our stamp has not passed |
//! | [`ScriptedLock`] | 001 | one script: SETNX/GET/GETSET, codes 0-3 | script: our stamp, not passed |
//! | [`ReentrantLock`] | 000 | script: `<owner>:<count>` | script: decrement, delete at 0 |
//! | [`FencedLock`] | 000 + fencing | script: `SET NX PX` + `INCR` fence | compare-and-delete script |
//! | [`FairLock`] | Redisson's fair lock | script: ticket line, FIFO | script: hand to the next waiter |
//! | [`Redlock`] | 000's remedy | `SET NX PX` on a quorum of N nodes | compare-and-delete on all N |
//!
//! And the optimistic alternative of seed 002, no lock at all: [`Versioned`], a value
//! with a version, written by compare-and-set.
//!
//! "Seed 000" to "seed 004" are the five documents the algorithms come from (blog posts on
//! `SETNX` locks and the old Redis `SETNX` page); `docs/SEEDS.md` in the repository says
//! what each describes and where it is implemented.
//!
//! Every algorithm implements [`LockAlgorithm`]; [`LockAlgorithm::acquire`] retries by the
//! lock's [`AcquirePolicy`] and never forever unless asked ([`Retry::Forever`]).

mod algorithm_kind;
mod algorithms;
mod backend;
mod binding;
mod clock;
mod counting;
mod dyn_backend;
mod either;
mod error;
mod keys;
mod lease;
mod lock;
mod outcome;
mod owned;
mod policy;
mod pubsub;
mod random;
mod replication;
mod script;
pub mod scripts;
mod slots;
mod topology_kind;
mod transaction;
mod turns;
mod value;
mod version;
mod versioned;
mod wake;

pub use algorithm_kind::{AlgorithmKind, UnknownAlgorithm};
pub use algorithms::{
    DEFAULT_PATIENCE, FairGuard, FairLock, FencedGuard, FencedLock, LegacyGuard, LegacyLock,
    LockOwner, Redlock, RedlockGuard, RedlockOptions, ReentrantGuard, ReentrantLock, ScriptedGuard,
    ScriptedLock, TokenGuard, TokenLock,
};
pub use backend::{
    ExpireCondition, KvBackend, SetCondition, SetExpiry, SetOptions, SetReply, publish_command,
};
pub use binding::LockBinding;
pub use clock::Clock;
pub use counting::CountingBackend;
pub use dyn_backend::DynBackend;
pub use either::Either;
pub use error::{Error, ErrorKind, Result};
pub use keys::LockName;
pub use lease::{Lease, LeaseOptions, LostReason};
pub use lock::{
    DEFAULT_BARGING_WINDOW, LockAlgorithm, LockGuard, LockOptions, MAX_TTL, NamedLock, ReleaseError,
};
pub use outcome::{Attempt, LockError};
pub use owned::OwnedCommands;
pub use policy::{AcquirePolicy, Backoff, Retry};
pub use pubsub::{Fanout, Message, Missed, Subscription};
pub use random::{SeededRandom, fresh_token};
pub use replication::{Replicated, Replication};
pub use script::{NativeScript, Script, ScriptContext, integer_arg, nth};
pub use slots::{SLOTS, SlotLayout, common_slot, hash_slot};
pub use topology_kind::{TopologyKind, UnknownTopology};
pub use transaction::{Session, Transaction, TxWrite};
pub use value::Value;
pub use version::{RedisVersion, UnknownVersion};
pub use versioned::{Snapshot, Updated, Versioned};
pub use wake::Wait;
