//! One stored value: the leaf type the store keeps and the replication stream ships.

use lock_core::{Error, Result};

use crate::data::Data;

/// One stored value and its absolute expiry (Unix ms), if any.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) value: Data,
    pub(crate) expires_at: Option<i64>,
    /// When a command last read or wrote it (Unix ms): `OBJECT IDLETIME`. Stamped when
    /// stored.
    pub(crate) accessed: i64,
}

impl Entry {
    /// A string value.
    pub(crate) fn string(value: &[u8], expires_at: Option<i64>) -> Self {
        Self {
            value: Data::String(value.to_vec()),
            expires_at,
            accessed: 0,
        }
    }

    /// The string this entry holds, if it is one.
    pub(crate) fn into_string(self) -> Option<Vec<u8>> {
        match self.value {
            Data::String(bytes) => Some(bytes),
            _ => None,
        }
    }

    /// The string this entry holds, or Redis's WRONGTYPE error.
    pub(crate) fn as_string(&self) -> Result<&[u8]> {
        match &self.value {
            Data::String(bytes) => Ok(bytes),
            _ => Err(Error::wrong_type()),
        }
    }

    /// Redis's `keyIsExpired`: strictly after the expiry time.
    pub(crate) fn is_expired(&self, now: i64) -> bool {
        self.expires_at.is_some_and(|at| now > at)
    }
}
