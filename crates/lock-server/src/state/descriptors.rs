//! How many clients the process's file descriptors allow, as Redis's
//! `adjustOpenFilesLimit` decides it: each client needs a descriptor, and 32 more are
//! kept for the listener, the runtime and the rest. The soft limit is raised towards
//! the hard one where that is short; where even the hard limit is short, `maxclients` is
//! lowered to fit, so that a connection over it can still be accepted and told
//! `ERR max number of clients reached` instead of waiting in the listen queue.

/// Descriptors kept beside the clients' (Redis's `CONFIG_MIN_RESERVED_FDS`).
pub(crate) const RESERVED: u64 = 32;

/// What fitting `maxclients` to the descriptor limit decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fitted {
    /// The clients the limit allows: the requested number, or fewer.
    pub(crate) max_clients: usize,
    /// What Redis logs when it had to lower it, line by line (empty when it fits).
    pub(crate) warnings: Vec<String>,
}

/// Raises the soft descriptor limit as far as `requested` clients need (never past the
/// hard limit) and says how many clients fit.
pub(crate) fn fit(requested: usize) -> Fitted {
    let wanted = (requested as u64).saturating_add(RESERVED);
    let Some((soft, hard)) = limits() else {
        return Fitted {
            max_clients: requested,
            warnings: Vec::new(),
        };
    };
    if soft >= wanted {
        return Fitted {
            max_clients: requested,
            warnings: Vec::new(),
        };
    }
    let raised = wanted.min(hard);
    let now = if raised > soft && set_soft(raised, hard) {
        raised
    } else {
        soft
    };
    decide(requested, now, wanted)
}

/// The decision for a limit of `limit` descriptors, `wanted` being what `requested`
/// clients need.
fn decide(requested: usize, limit: u64, wanted: u64) -> Fitted {
    if limit >= wanted {
        return Fitted {
            max_clients: requested,
            warnings: Vec::new(),
        };
    }
    let max_clients = usize::try_from(limit.saturating_sub(RESERVED).max(1)).unwrap_or(1);
    Fitted {
        max_clients,
        warnings: vec![
            format!(
                "You requested maxclients of {requested} requiring at least {wanted} max file descriptors."
            ),
            format!(
                "Current maximum open files is {limit}. maxclients has been reduced to {max_clients} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
            ),
        ],
    }
}

#[cfg(unix)]
fn limits() -> Option<(u64, u64)> {
    rlimit::getrlimit(rlimit::Resource::NOFILE).ok()
}

#[cfg(unix)]
fn set_soft(soft: u64, hard: u64) -> bool {
    rlimit::setrlimit(rlimit::Resource::NOFILE, soft, hard).is_ok()
}

#[cfg(not(unix))]
fn limits() -> Option<(u64, u64)> {
    None
}

#[cfg(not(unix))]
fn set_soft(_: u64, _: u64) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_limit_lowers_maxclients_as_redis_does() {
        let fitted = decide(10_000, 256, 10_032);
        assert_eq!(fitted.max_clients, 224);
        assert_eq!(
            fitted.warnings[1],
            "Current maximum open files is 256. maxclients has been reduced to 224 to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
        );
        assert_eq!(decide(10_000, 20_000, 10_032).max_clients, 10_000);
        assert!(decide(10_000, 20_000, 10_032).warnings.is_empty());
        // Never below one client, however low the limit.
        assert_eq!(decide(10, 8, 42).max_clients, 1);
    }
}
