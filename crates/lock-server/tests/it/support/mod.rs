//! Shared by the server's tests.

pub mod raw;
