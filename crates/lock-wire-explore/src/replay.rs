//! [`WireReplay`]: a finding of `nxlock explore --exec` saved to a file, to replay
//! against the fixed code (`nxlock explore --exec CMD --replay FILE`). A replay of
//! processes is not exact: it runs the schedule [`WireExplorer::replays`] times and
//! says how many broke the lock.
//!
//! [`WireExplorer::replays`]: crate::WireExplorer::replays

use std::path::Path;

use lock_explore::{Step, Topology};
use serde::{Deserialize, Serialize};

/// The format a replay file names, so that an older or newer one is refused plainly.
pub const WIRE_REPLAY_FORMAT: &str = "nxlock-wire-replay/1";

/// What a replay needs: the clients' shape and the schedule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireReplay {
    /// [`WIRE_REPLAY_FORMAT`].
    pub format: String,
    /// The command explored when it was found (a replay runs the one it is given).
    pub command: String,
    /// What the clients ran against (files without it: a single server).
    #[serde(default = "single")]
    pub topology: Topology,
    /// How many clients ran.
    pub clients: usize,
    /// How many cycles each ran.
    pub cycles: u32,
    /// The TTL they were told.
    pub ttl_ms: u64,
    /// The shrunk schedule.
    pub steps: Vec<Step>,
    /// What it broke: the violation's kind and sentence.
    pub violation: String,
}

fn single() -> Topology {
    Topology::Single
}

/// A replay file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WireReplayError {
    /// It could not be read or written.
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// It is not a replay file of this format.
    #[error("{path} is not an nxlock explore --exec replay file ({WIRE_REPLAY_FORMAT}): {why}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
}

impl WireReplay {
    /// Writes it as JSON.
    pub fn save(&self, path: &Path) -> Result<(), WireReplayError> {
        let text = serde_json::to_string_pretty(self).expect("a replay serializes");
        std::fs::write(path, text + "\n").map_err(|error| WireReplayError::Io {
            path: path.display().to_string(),
            error,
        })
    }

    /// Reads one written by [`WireReplay::save`].
    pub fn load(path: &Path) -> Result<Self, WireReplayError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| WireReplayError::Io {
            path: shown.clone(),
            error,
        })?;
        let replay: WireReplay =
            serde_json::from_str(&text).map_err(|error| WireReplayError::Invalid {
                path: shown.clone(),
                why: error.to_string(),
            })?;
        if replay.format != WIRE_REPLAY_FORMAT {
            return Err(WireReplayError::Invalid {
                path: shown,
                why: format!("its format is {:?}", replay.format),
            });
        }
        Ok(replay)
    }
}

#[cfg(test)]
mod tests {
    use lock_explore::{Fault, When};

    use super::*;

    #[test]
    fn a_replay_file_round_trips_and_a_foreign_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("found.json");
        let replay = WireReplay {
            format: WIRE_REPLAY_FORMAT.to_owned(),
            command: "python3 lock.py".to_owned(),
            topology: Topology::Redlock { nodes: 3 },
            clients: 3,
            cycles: 4,
            ttl_ms: 200,
            steps: vec![Step {
                when: When::AfterNext {
                    client: 1,
                    kind: "GET".to_owned(),
                    from_us: 0,
                    nth: 2,
                },
                fault: Fault::LateReply { client: 1, ms: 200 },
            }],
            violation: "lost-ownership".to_owned(),
        };
        replay.save(&path).unwrap();
        assert_eq!(WireReplay::load(&path).unwrap(), replay);
        // A file written before topologies were saved is a single server's.
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        json.as_object_mut().unwrap().remove("topology");
        std::fs::write(&path, json.to_string()).unwrap();
        assert_eq!(WireReplay::load(&path).unwrap().topology, Topology::Single);

        std::fs::write(&path, "{\"format\": \"nxlock-replay/1\"}").unwrap();
        let refused = WireReplay::load(&path).unwrap_err().to_string();
        assert!(
            refused.contains("is not an nxlock explore --exec replay file"),
            "{refused}"
        );
        let missing = WireReplay::load(&dir.path().join("none.json")).unwrap_err();
        assert!(matches!(missing, WireReplayError::Io { .. }), "{missing}");
    }
}
