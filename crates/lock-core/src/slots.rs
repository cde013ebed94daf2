//! Redis Cluster's key slots: which slot a key hashes to, the rule that one command's keys
//! share a slot, and how a cluster's primaries split the 16384 slots.

use std::ops::RangeInclusive;

use crate::{Error, Result};

/// How many slots a Redis Cluster has.
pub const SLOTS: u16 = 16384;

const CRC16_XMODEM: crc::Crc<u16> = crc::Crc::<u16>::new(&crc::CRC_16_XMODEM);

/// The Redis Cluster slot (0..16384) of `key`, honouring hash tags exactly as
/// `CLUSTER KEYSLOT` does: only the part between the first `{` and the next `}` is
/// hashed, when it is not empty.
pub fn hash_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            let close = rest.iter().position(|&b| b == b'}')?;
            (close > 0).then(|| &rest[..close])
        })
        .unwrap_or(key);
    CRC16_XMODEM.checksum(hashed) % SLOTS
}

/// The one slot all of `keys` hash to (`None` for no keys), or Redis Cluster's
/// `CROSSSLOT Keys in request don't hash to the same slot` ([`ErrorKind::CrossSlot`]).
///
/// [`ErrorKind::CrossSlot`]: crate::ErrorKind::CrossSlot
pub fn common_slot(keys: &[&[u8]]) -> Result<Option<u16>> {
    let mut slots = keys.iter().map(|key| hash_slot(key));
    let Some(first) = slots.next() else {
        return Ok(None);
    };
    if slots.all(|slot| slot == first) {
        Ok(Some(first))
    } else {
        Err(Error::cross_slot())
    }
}

/// Which primary serves which slots: the contiguous, even split `redis-cli --cluster
/// create` makes (3 primaries: 0-5460, 5461-10922, 10923-16383).
///
/// Single slots can then move to another primary ([`SlotLayout::move_slot`]), as
/// `CLUSTER SETSLOT … NODE` moves them after a migration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotLayout {
    ranges: Vec<RangeInclusive<u16>>,
    /// Slots served by another primary than their range's: (slot, primary).
    moved: Vec<(u16, usize)>,
}

impl SlotLayout {
    /// `primaries` primaries (at least 1, at most 16384: clamped), split as
    /// `redis-cli --cluster create` splits them.
    pub fn even(primaries: usize) -> Self {
        let primaries = primaries.clamp(1, usize::from(SLOTS));
        let per_node = f64::from(SLOTS) / primaries as f64;
        let mut ranges = Vec::with_capacity(primaries);
        let (mut first, mut cursor) = (0u16, 0f64);
        for index in 0..primaries {
            let mut last = (cursor + per_node - 1.0).round() as u16;
            if last >= SLOTS || index == primaries - 1 {
                last = SLOTS - 1;
            }
            ranges.push(first..=last);
            first = last + 1;
            cursor += per_node;
        }
        Self {
            ranges,
            moved: Vec::new(),
        }
    }

    /// Moves `slot` to primary `node` (clamped to the last primary).
    pub fn move_slot(&mut self, slot: u16, node: usize) {
        let node = node.min(self.ranges.len() - 1);
        self.moved.retain(|(moved, _)| *moved != slot);
        let home = self.ranges.iter().position(|range| range.contains(&slot));
        if home != Some(node) {
            self.moved.push((slot, node));
        }
    }

    /// How many primaries serve slots.
    pub fn primaries(&self) -> usize {
        self.ranges.len()
    }

    /// The range of slots primary `node` was given (`None` past the last primary);
    /// slots moved since ([`SlotLayout::move_slot`]) are not subtracted or added.
    pub fn slots_of(&self, node: usize) -> Option<RangeInclusive<u16>> {
        self.ranges.get(node).cloned()
    }

    /// The primary (0-based) that serves `slot`.
    pub fn node_of(&self, slot: u16) -> usize {
        if let Some((_, node)) = self.moved.iter().find(|(moved, _)| *moved == slot) {
            return *node;
        }
        self.ranges
            .iter()
            .position(|range| range.contains(&slot))
            .unwrap_or(self.ranges.len() - 1)
    }
}

impl Default for SlotLayout {
    /// One node serving every slot.
    fn default() -> Self {
        Self::even(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn a_moved_slot_is_served_by_its_new_primary_alone() {
        let mut layout = SlotLayout::even(3);
        layout.move_slot(100, 2);
        assert_eq!(layout.node_of(100), 2);
        assert_eq!(layout.node_of(101), 0);
        layout.move_slot(100, 0);
        assert_eq!(layout, SlotLayout::even(3), "back home: nothing recorded");
        layout.move_slot(5, 99);
        assert_eq!(layout.node_of(5), 2, "clamped to the last primary");
    }

    #[test]
    fn slots_match_cluster_keyslot() {
        // Values from Redis's cluster specification and CLUSTER KEYSLOT.
        assert_eq!(hash_slot(b"foo"), 12182);
        assert_eq!(hash_slot(b"bar"), 5061);
        assert_eq!(hash_slot(b"{foo}.x"), 12182);
        assert_eq!(
            hash_slot(b"{user1000}.following"),
            hash_slot(b"{user1000}.followers")
        );
        // An empty tag means the whole key is hashed.
        assert_ne!(hash_slot(b"{}foo"), hash_slot(b"{}bar"));
        assert_eq!(
            hash_slot(b"foo{}{bar}"),
            CRC16_XMODEM.checksum(b"foo{}{bar}") % SLOTS
        );
    }

    #[test]
    fn keys_of_two_slots_are_crossslot_with_redis_text() {
        assert_eq!(common_slot(&[]), Ok(None));
        assert_eq!(common_slot(&[b"foo", b"{foo}:x"]), Ok(Some(12182)));
        let error = common_slot(&[b"foo", b"bar"]).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::CrossSlot);
        assert_eq!(
            error.message(),
            "CROSSSLOT Keys in request don't hash to the same slot"
        );
    }

    #[test]
    fn the_even_split_matches_redis_cli() {
        let three = SlotLayout::even(3);
        assert_eq!(three.slots_of(0), Some(0..=5460));
        assert_eq!(three.slots_of(1), Some(5461..=10922));
        assert_eq!(three.slots_of(2), Some(10923..=16383));
        assert_eq!(three.slots_of(3), None);
        assert_eq!(three.node_of(12182), 2);
        assert_eq!(three.node_of(5061), 0);
        assert_eq!(SlotLayout::default().slots_of(0), Some(0..=16383));
        assert_eq!(SlotLayout::even(0).primaries(), 1);
        // Every slot is served exactly once, whatever the count.
        for primaries in [1, 2, 5, 7, 100] {
            let layout = SlotLayout::even(primaries);
            let total: usize = (0..primaries)
                .map(|node| layout.slots_of(node).unwrap().count())
                .sum();
            assert_eq!(total, usize::from(SLOTS), "{primaries} primaries");
        }
    }
}
