//! The bottom layer: what a request and a reply are, and the pieces every command shares.
//! It knows nothing of the server's state or its commands.
//!
//! - [`request`] reads frames off the socket, as Redis's parser does;
//! - [`reply`] encodes values in RESP2 or RESP3;
//! - [`args`] reads integers as Redis does and holds the common replies and error texts;
//! - [`numbers`] formats and parses doubles as Redis does.

pub(crate) mod args;
pub(crate) mod numbers;
pub(crate) mod reply;
pub(crate) mod request;
