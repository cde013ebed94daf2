//! Redis commands against the [`Store`](crate::store::Store), grouped by kind (as in
//! miniredis). Each is synchronous: the backend runs it under the store's lock, and native
//! scripts call the same functions.

mod expire;
mod incr;
mod keyspace;
mod pubsub;
mod strings;
mod ttl;
