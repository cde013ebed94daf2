//! SET, SETNX, GET, GETSET, GETDEL.

use std::borrow::Cow;

use lock_core::{Error, Result, SetCondition, SetExpiry, SetOptions, SetReply};

use crate::entry::Entry;
use crate::notifications::KeyspaceEvents;
use crate::store::Store;

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
        self.set_from(key, Cow::Borrowed(value), options)
    }

    /// SET of a value the caller hands over: stored without a copy.
    pub(crate) fn set_owned(
        &mut self,
        key: &[u8],
        value: Vec<u8>,
        options: SetOptions,
    ) -> Result<SetReply> {
        self.set_from(key, Cow::Owned(value), options)
    }

    /// SET, copying `value` only if it is borrowed and the write happens.
    fn set_from(
        &mut self,
        key: &[u8],
        value: Cow<'_, [u8]>,
        options: SetOptions,
    ) -> Result<SetReply> {
        let expires_at = absolute_expiry(options.expiry, self.now())?;
        let (exists, old_expiry, old_value) = match self.live(key) {
            None => (false, None, None),
            // SET … GET reads the old value first, so it refuses a non-string.
            Some(entry) if options.get => {
                (true, entry.expires_at, Some(entry.as_string()?.to_vec()))
            }
            Some(entry) => (true, entry.expires_at, None),
        };
        let condition_holds = match options.condition {
            SetCondition::Always => true,
            SetCondition::IfNotExists => !exists,
            SetCondition::IfExists => exists,
        };
        if condition_holds {
            let expires_at = match options.expiry {
                SetExpiry::KeepTtl => old_expiry,
                _ => expires_at,
            };
            let entry = Entry {
                value: crate::Data::String(value.into_owned()),
                expires_at,
                accessed: 0,
            };
            self.insert(key, entry);
            self.notify(KeyspaceEvents::STRING, "set", key);
            if !matches!(options.expiry, SetExpiry::Clear | SetExpiry::KeepTtl) {
                self.notify(KeyspaceEvents::GENERIC, "expire", key);
            }
        }
        Ok(match (options.get, condition_holds) {
            (true, _) => SetReply::OldValue(old_value),
            (false, true) => SetReply::Applied,
            (false, false) => SetReply::NotApplied,
        })
    }

    pub(crate) fn setnx(&mut self, key: &[u8], value: &[u8]) -> Result<bool> {
        let reply = self.set(key, value, SetOptions::new().nx())?;
        Ok(reply == SetReply::Applied)
    }

    pub(crate) fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        match self.live(key) {
            None => Ok(None),
            Some(entry) => Ok(Some(entry.as_string()?.to_vec())),
        }
    }

    pub(crate) fn getset(&mut self, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        let old = self.get(key)?;
        // Like a plain SET, GETSET discards the old TTL.
        self.insert(key, Entry::string(value, None));
        self.notify(KeyspaceEvents::STRING, "set", key);
        Ok(old)
    }

    pub(crate) fn getdel(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        // Checked before removing: GETDEL of a list leaves it in place.
        match self.live(key) {
            None => return Ok(None),
            Some(entry) => entry.as_string()?,
        };
        let value = self.remove(key).and_then(Entry::into_string);
        self.notify(KeyspaceEvents::GENERIC, "del", key);
        Ok(value)
    }
}
