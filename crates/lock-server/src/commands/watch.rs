//! WATCH and UNWATCH: optimistic locking for MULTI/EXEC. The store stamps every write to
//! a watched key; EXEC checks the stamps in the same atomic step as its commands.

use lock_core::Value;

use crate::server::{DATABASES, Shared};
use crate::session::{Session, Watched};

/// `WATCH key [key ...]`. A key already watched in the same database keeps its first mark.
pub(crate) async fn watch(shared: &Shared, session: &mut Session, args: &[Vec<u8>]) -> Value {
    let db = session.db;
    let mut fresh: Vec<Vec<u8>> = Vec::new();
    for key in &args[1..] {
        let known = session.watched.iter().any(|w| w.db == db && &w.key == key);
        if !known && !fresh.contains(key) {
            fresh.push(key.clone());
        }
    }
    let marks = match shared.watch(db, &fresh).await {
        Ok(marks) => marks,
        Err(reply) => return reply,
    };
    for (key, mark) in fresh.into_iter().zip(marks) {
        session.watched.push(Watched { db, key, mark });
    }
    Value::Status("OK".into())
}

/// Ends every watch of `session`: true if any watched key changed meanwhile. Keys of
/// database `keep_db` are left for the caller, who checks them atomically with EXEC.
pub(crate) async fn release(
    shared: &Shared,
    session: &mut Session,
    keep_db: Option<usize>,
) -> bool {
    let mut broken = false;
    for db in 0..DATABASES {
        if Some(db) == keep_db {
            continue;
        }
        let watches = marks_of(&session.watched, db);
        if !watches.is_empty() {
            broken |=
                shared.keyspace_batch(db, &watches, &[], &mut |_| {}).await == Value::NilArray;
        }
    }
    session.watched.retain(|w| Some(w.db) == keep_db);
    broken
}

/// The watches of database `db`, as [`Shared::keyspace_batch`] takes them.
pub(crate) fn marks_of(watched: &[Watched], db: usize) -> Vec<(&[u8], lock_core::WatchMark)> {
    watched
        .iter()
        .filter(|w| w.db == db)
        .map(|w| (w.key.as_slice(), w.mark))
        .collect()
}
