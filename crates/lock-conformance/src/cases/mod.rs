//! Every case of the suite, one `pub async fn` per behaviour, grouped by kind. A case takes
//! a [`Ctx`](crate::Ctx) and returns a [`CaseResult`](crate::CaseResult); call any of them
//! directly, or all of them through [`run_all`](crate::run_all) or
//! [`conformance_tests!`](crate::conformance_tests).

pub mod algorithm;
pub mod cancellation;
pub mod cluster;
pub mod expiry;
pub mod fair;
pub mod fenced;
pub mod keys;
pub mod lease;
pub mod legacy;
pub mod notify;
pub mod optimistic;
pub mod races;
pub mod redlock;
pub mod reentrant;
pub mod replication;
pub mod scripted;
pub mod scripts;
pub mod strings;
pub mod token;
pub mod transactions;
mod waiting;
