//! Client-side caching (`CLIENT TRACKING`), as Redis 7.0 runs it: which clients read which
//! keys, and the invalidations that writes send them.
//!
//! - Default mode: the keys of every read-only command a tracking client runs are
//!   remembered for it; the next change of such a key sends it one invalidation and forgets
//!   the key for it.
//! - BCAST mode: every change of a key under one of the client's prefixes (or any key, with
//!   none) is sent to it.
//! - A flush sends every tracking client a null: all keys.
//!
//! Writes are collected by the databases themselves ([`MemoryBackend::record_writes`],
//! turned on while anyone tracks) and judged after each command, in the connection that
//! ran it. Invalidations for that client itself come after its reply, as in Redis;
//! others get theirs in their inbox, where pub/sub messages arrive.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use lock_memory::{Delivery, MemoryBackend};

use crate::state::clients::Registry;

/// How one client tracks (`CLIENT TRACKING ON …`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mode {
    /// The client invalidations go to; 0 for the client itself.
    pub(crate) redirect: u64,
    pub(crate) bcast: bool,
    /// BCAST's prefixes, sorted; none means every key.
    pub(crate) prefixes: Vec<Vec<u8>>,
    pub(crate) optin: bool,
    pub(crate) optout: bool,
    pub(crate) noloop: bool,
    /// The client invalidations were redirected to has gone.
    pub(crate) broken_redirect: bool,
}

impl Mode {
    /// Where client `id`'s invalidations go: itself, or the client it redirects to.
    fn target(&self, id: u64) -> u64 {
        if self.redirect == 0 {
            id
        } else {
            self.redirect
        }
    }
}

/// What INFO reports of client-side caching ([`Tracking::totals`]).
pub(crate) struct Totals {
    pub(crate) clients: usize,
    pub(crate) keys: usize,
    pub(crate) items: usize,
    pub(crate) prefixes: usize,
}

/// The tracking state of the whole server.
#[derive(Debug, Default)]
pub(crate) struct Tracking {
    state: Mutex<State>,
    /// Whether any client tracks: when none does, commands skip this entirely.
    active: AtomicBool,
}

#[derive(Debug, Default)]
struct State {
    clients: BTreeMap<u64, Mode>,
    /// Default mode: each key and the clients that read it since it last changed.
    readers: HashMap<Vec<u8>, BTreeSet<u64>>,
}

impl Tracking {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether any client tracks.
    pub(crate) fn active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// How client `id` tracks, if it does.
    pub(crate) fn mode(&self, id: u64) -> Option<Mode> {
        self.state().clients.get(&id).cloned()
    }

    /// Starts (or changes) tracking for client `id`; the databases start recording writes
    /// with the first tracking client.
    pub(crate) fn enable(&self, id: u64, mode: Mode, databases: &[MemoryBackend]) {
        let mut state = self.state();
        if state.clients.is_empty() {
            for db in databases {
                db.record_writes(true);
            }
        }
        let prefixes = match state.clients.remove(&id) {
            // Prefixes add up while BCAST stays on, as in Redis.
            Some(old) if old.bcast && mode.bcast => {
                let mut all: BTreeSet<Vec<u8>> = old.prefixes.into_iter().collect();
                all.extend(mode.prefixes.iter().cloned());
                all.into_iter().collect()
            }
            _ => mode.prefixes.clone(),
        };
        state.clients.insert(id, Mode { prefixes, ..mode });
        self.active.store(true, Ordering::Release);
    }

    /// Stops tracking for client `id` (CLIENT TRACKING OFF, RESET, or the connection
    /// closing); the databases stop recording with the last one.
    pub(crate) fn disable(&self, id: u64, databases: &[MemoryBackend]) {
        let mut state = self.state();
        if state.clients.remove(&id).is_none() {
            return;
        }
        if state.clients.is_empty() {
            state.readers.clear();
            self.active.store(false, Ordering::Release);
            for db in databases {
                db.record_writes(false);
            }
        }
    }

    /// INFO's counts: tracking clients, keys with readers, (key, reader) pairs, and the
    /// distinct BCAST prefixes (a client with none has the empty prefix).
    pub(crate) fn totals(&self) -> Totals {
        let state = self.state();
        let prefixes: BTreeSet<&[u8]> = state
            .clients
            .values()
            .filter(|mode| mode.bcast)
            .flat_map(|mode| {
                if mode.prefixes.is_empty() {
                    vec![b"".as_slice()]
                } else {
                    mode.prefixes.iter().map(Vec::as_slice).collect()
                }
            })
            .collect();
        Totals {
            clients: state.clients.len(),
            keys: state.readers.len(),
            items: state.readers.values().map(BTreeSet::len).sum(),
            prefixes: prefixes.len(),
        }
    }

    /// Keeps the table of keys with readers within `max_keys` (0: no limit), as Redis's
    /// `tracking-table-max-keys` does: keys beyond it are forgotten, picked at random,
    /// and each of their readers is sent an invalidation for them, since it will not
    /// hear of their next change.
    pub(crate) fn limit(&self, max_keys: usize, registry: &Registry) {
        if max_keys == 0 {
            return;
        }
        let mut state = self.state();
        let excess = state.readers.len().saturating_sub(max_keys);
        if excess == 0 {
            return;
        }
        let evicted: Vec<Vec<u8>> = state.readers.keys().take(excess).cloned().collect();
        for key in evicted {
            for id in state.readers.remove(&key).unwrap_or_default() {
                let Some(mode) = state.clients.get(&id) else {
                    continue;
                };
                registry.deliver(
                    mode.target(id),
                    Delivery::Invalidate(Some(vec![key.as_slice().into()])),
                );
            }
        }
    }

    /// Remembers that client `id` read `keys` (default mode).
    pub(crate) fn remember<'a>(&self, id: u64, keys: impl IntoIterator<Item = &'a [u8]>) {
        let mut state = self.state();
        if state.clients.get(&id).is_none_or(|mode| mode.bcast) {
            return;
        }
        for key in keys {
            state.readers.entry(key.to_vec()).or_default().insert(id);
        }
    }

    /// Sends the invalidations for what `databases` changed since the last call, on
    /// behalf of client `writer`, whose command just ran: the deliveries for `writer`'s
    /// own connection (written after its reply); the others go to their inboxes.
    pub(crate) fn invalidate(
        &self,
        writer: u64,
        databases: &[MemoryBackend],
        registry: &Registry,
    ) -> Vec<Delivery> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut flushed = false;
        for db in databases {
            let writes = db.take_writes();
            keys.extend(writes.keys);
            flushed |= writes.flushed;
        }
        if keys.is_empty() && !flushed {
            return Vec::new();
        }
        let mut state = self.state();
        // Per target client: what it is to be told.
        let mut outgoing: BTreeMap<u64, Vec<Delivery>> = BTreeMap::new();
        let mut seen = BTreeSet::new();
        // BCAST: per client and prefix, the changed keys under it, sorted as Redis's radix
        // tree keeps them; one invalidation per prefix.
        let mut broadcast: BTreeMap<u64, BTreeMap<Vec<u8>, BTreeSet<Vec<u8>>>> = BTreeMap::new();
        for key in keys.into_iter().filter(|key| seen.insert(key.clone())) {
            for id in state.readers.remove(&key).unwrap_or_default() {
                let Some(mode) = state.clients.get(&id) else {
                    continue;
                };
                if mode.bcast || (mode.noloop && id == writer) {
                    continue;
                }
                outgoing
                    .entry(id)
                    .or_default()
                    .push(Delivery::Invalidate(Some(vec![key.as_slice().into()])));
            }
            for (id, mode) in &state.clients {
                if !mode.bcast || (mode.noloop && *id == writer) {
                    continue;
                }
                let prefix = if mode.prefixes.is_empty() {
                    Some(Vec::new())
                } else {
                    mode.prefixes
                        .iter()
                        .find(|prefix| key.starts_with(prefix))
                        .cloned()
                };
                if let Some(prefix) = prefix {
                    broadcast
                        .entry(*id)
                        .or_default()
                        .entry(prefix)
                        .or_default()
                        .insert(key.clone());
                }
            }
        }
        for (id, prefixes) in broadcast {
            let deliveries = outgoing.entry(id).or_default();
            for keys in prefixes.into_values() {
                deliveries.push(Delivery::Invalidate(Some(
                    keys.iter().map(|key| key.as_slice().into()).collect(),
                )));
            }
        }
        if flushed {
            state.readers.clear();
            for id in state.clients.keys() {
                outgoing.insert(*id, vec![Delivery::Invalidate(None)]);
            }
        }
        let mut own = Vec::new();
        for (id, deliveries) in outgoing {
            let Some(mode) = state.clients.get_mut(&id) else {
                continue;
            };
            let target = mode.target(id);
            for delivery in deliveries {
                if target == writer {
                    own.push(delivery);
                } else if !registry.deliver(target, delivery) && target != id {
                    // The redirect target has gone: the tracking client hears of it.
                    mode.broken_redirect = true;
                    let broken = Delivery::RedirectBroken(mode.redirect);
                    if id == writer {
                        own.push(broken);
                    } else {
                        registry.deliver(id, broken);
                    }
                }
            }
        }
        own
    }
}
