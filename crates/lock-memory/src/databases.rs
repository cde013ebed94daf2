//! [`Databases`]: several doubles locked together, for what a server runs across its
//! databases in one atomic step (a script that SELECTs, `COPY … DB`).

use crate::keyspace::Keyspace;
use crate::store::Store;

/// Every keyspace of a server's databases, each locked, as
/// [`MemoryBackend::atomically_across`](crate::MemoryBackend::atomically_across) hands
/// them over.
pub struct Databases<'a> {
    stores: Vec<&'a mut Store>,
}

impl<'a> Databases<'a> {
    pub(crate) fn new(stores: Vec<&'a mut Store>) -> Self {
        Self { stores }
    }

    /// How many databases there are.
    pub fn len(&self) -> usize {
        self.stores.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.stores.is_empty()
    }

    /// Database `index`'s keyspace.
    pub fn get(&mut self, index: usize) -> Option<&mut dyn Keyspace> {
        self.stores
            .get_mut(index)
            .map(|store| &mut **store as &mut dyn Keyspace)
    }

    /// Two different databases' keyspaces at once (`None` if they are the same or either
    /// does not exist).
    pub fn pair(
        &mut self,
        first: usize,
        second: usize,
    ) -> Option<(&mut dyn Keyspace, &mut dyn Keyspace)> {
        if first == second || first.max(second) >= self.stores.len() {
            return None;
        }
        let (low, high) = (first.min(second), first.max(second));
        let (before, after) = self.stores.split_at_mut(high);
        let (low, high): (&mut dyn Keyspace, &mut dyn Keyspace) =
            (&mut *before[low], &mut *after[0]);
        Some(if first < second {
            (low, high)
        } else {
            (high, low)
        })
    }
}
