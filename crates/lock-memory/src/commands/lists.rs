//! LPUSH, RPUSH, LPOP, LLEN: enough list for WRONGTYPE paths and BLPOP-based locks.

use std::collections::VecDeque;

use lock_core::Result;

use crate::store::{Data, Entry, Store};

/// Which end of the list a push writes to.
#[derive(Clone, Copy)]
pub(crate) enum End {
    Head,
    Tail,
}

impl Store {
    /// The live list at `key` (`None` when absent), or WRONGTYPE.
    fn list(&mut self, key: &[u8]) -> Result<Option<&mut VecDeque<Vec<u8>>>> {
        match self.live(key).map(|entry| &mut entry.value) {
            None => Ok(None),
            Some(Data::List(list)) => Ok(Some(list)),
            Some(Data::String(_)) => Err(lock_core::Error::wrong_type()),
        }
    }

    pub(crate) fn push(&mut self, key: &[u8], values: &[&[u8]], end: End) -> Result<i64> {
        let length = match self.list(key)? {
            Some(list) => {
                extend(list, values, end);
                list.len()
            }
            None => {
                let mut list = VecDeque::with_capacity(values.len());
                extend(&mut list, values, end);
                let length = list.len();
                self.insert(
                    key,
                    Entry {
                        value: Data::List(list),
                        expires_at: None,
                    },
                );
                return Ok(length as i64);
            }
        };
        self.touch(key);
        Ok(length as i64)
    }

    pub(crate) fn lpop(&mut self, key: &[u8], count: usize) -> Result<Option<Vec<Vec<u8>>>> {
        let Some(list) = self.list(key)? else {
            return Ok(None);
        };
        let popped: Vec<Vec<u8>> = list.drain(..count.min(list.len())).collect();
        let emptied = list.is_empty();
        if emptied {
            self.remove(key);
        } else if !popped.is_empty() {
            self.touch(key);
        }
        Ok(Some(popped))
    }

    pub(crate) fn llen(&mut self, key: &[u8]) -> Result<i64> {
        Ok(self.list(key)?.map_or(0, |list| list.len() as i64))
    }
}

fn extend(list: &mut VecDeque<Vec<u8>>, values: &[&[u8]], end: End) {
    for value in values {
        match end {
            End::Head => list.push_front(value.to_vec()),
            End::Tail => list.push_back(value.to_vec()),
        }
    }
}
