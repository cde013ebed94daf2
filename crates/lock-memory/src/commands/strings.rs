//! SET, SETNX, GET, GETSET, GETDEL.

use lock_core::{Error, Result, SetCondition, SetExpiry, SetOptions, SetReply};

use crate::store::{Entry, Store};

/// Redis 7.0's `getExpireMillisecondsOrReply`: the absolute expiry of an EX/PX/EXAT/PXAT
/// argument, or the exact error Redis gives (zero, negative, or overflowing values).
fn absolute_expiry(expiry: SetExpiry, now: i64) -> Result<Option<i64>> {
    let invalid = || Error::invalid_expire("set");
    let (amount, seconds, relative) = match expiry {
        SetExpiry::Clear | SetExpiry::KeepTtl => return Ok(None),
        SetExpiry::Ex(s) => (s, true, true),
        SetExpiry::Px(ms) => (ms, false, true),
        SetExpiry::ExAt(s) => (s, true, false),
        SetExpiry::PxAt(ms) => (ms, false, false),
    };
    if amount <= 0 || (seconds && amount > i64::MAX / 1000) {
        return Err(invalid());
    }
    let ms = if seconds { amount * 1000 } else { amount };
    if relative {
        return ms.checked_add(now).map(Some).ok_or_else(invalid);
    }
    Ok(Some(ms))
}

impl Store {
    pub(crate) fn set(
        &mut self,
        key: &[u8],
        value: &[u8],
        options: SetOptions,
    ) -> Result<SetReply> {
        let expires_at = absolute_expiry(options.expiry, self.now())?;
        let old = self.live(key).map(|e| (e.value.clone(), e.expires_at));
        let condition_holds = match options.condition {
            SetCondition::Always => true,
            SetCondition::IfNotExists => old.is_none(),
            SetCondition::IfExists => old.is_some(),
        };
        if condition_holds {
            let expires_at = match options.expiry {
                SetExpiry::KeepTtl => old.as_ref().and_then(|(_, at)| *at),
                _ => expires_at,
            };
            self.insert(
                key,
                Entry {
                    value: value.to_vec(),
                    expires_at,
                },
            );
        }
        Ok(match (options.get, condition_holds) {
            (true, _) => SetReply::OldValue(old.map(|(v, _)| v)),
            (false, true) => SetReply::Applied,
            (false, false) => SetReply::NotApplied,
        })
    }

    pub(crate) fn setnx(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        let reply = self.set(key, value, SetOptions::new().nx())?;
        Ok(reply == SetReply::Applied)
    }

    pub(crate) fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.live(key).map(|e| e.value.clone()))
    }

    pub(crate) fn getset(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let old = self.get(key)?;
        // Like a plain SET, GETSET discards the old TTL.
        self.insert(
            key,
            Entry {
                value: value.to_vec(),
                expires_at: None,
            },
        );
        Ok(old)
    }

    pub(crate) fn getdel(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.remove(key).map(|e| e.value))
    }
}
