//! The sixth layer: the runners, which take a request through the server. [`dispatch`]
//! checks and routes one request; [`keyspace`] runs keyspace commands in a database's
//! atomic section (one, a pipeline step, an EXEC block, a script's call);
//! [`transaction`] is MULTI/EXEC and WATCH; [`scripting`] is EVAL and what a script's
//! `redis.call` runs; [`pipeline`] gathers a client's pipelined commands into one step;
//! [`blocked`] serves clients blocked in BLPOP and its kin; [`caching`] is client-side
//! caching's bookkeeping after each command; [`replicas`] is WAIT on a replica set's node; [`steering`] decides, for an explored
//! or faulted client, whether a command runs and its reply goes.

pub(crate) mod blocked;
pub(crate) mod caching;
pub(crate) mod dispatch;
pub(crate) mod functions;
pub(crate) mod keyspace;
pub(crate) mod pipeline;
pub(crate) mod replicas;
pub(crate) mod scripting;
pub(crate) mod steering;
pub(crate) mod transaction;
pub(crate) mod undo;
