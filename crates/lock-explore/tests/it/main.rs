//! lock-explore's tests: the known unsafe cases found by search alone, the safe
//! configurations staying clean, determinism, replay, shrinking, and bad input.

mod anchored_replay;
mod checkers;
mod confirmation;
mod declarations;
mod determinism;
mod exhaustive;
mod faults_per_client;
mod guided;
mod known_unsafe;
mod precision;
mod replay;
mod safe;
mod support;
mod timeline_browser;
mod user_locks;
