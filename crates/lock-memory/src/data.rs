//! [`Data`]: what a key holds, one variant per Redis type. A server built on the double
//! reads and changes these through [`Keyspace`](crate::Keyspace).

use std::cmp::Ordering;
use std::collections::{HashMap, VecDeque};

use indexmap::{IndexMap, IndexSet};

/// A list: head first.
pub type List = VecDeque<Vec<u8>>;

/// A hash, in insertion order: the order Redis answers HGETALL in for the small hashes it
/// keeps in a listpack.
pub type Hash = IndexMap<Vec<u8>, Vec<u8>>;

/// A set, in insertion order. (Redis answers a small all-integer set in numeric order and
/// any other in hash-table order, which no client may rely on.)
pub type Set = IndexSet<Vec<u8>>;

/// A key's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// A string (also what INCR counts in).
    String(Vec<u8>),
    /// A list.
    List(List),
    /// A hash.
    Hash(Hash),
    /// A set.
    Set(Set),
    /// A sorted set.
    SortedSet(SortedSet),
}

impl Data {
    /// The name `TYPE` answers: `string`, `list`, `hash`, `set` or `zset`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Data::String(_) => "string",
            Data::List(_) => "list",
            Data::Hash(_) => "hash",
            Data::Set(_) => "set",
            Data::SortedSet(_) => "zset",
        }
    }

    /// Whether this is a collection with no element left: Redis deletes such keys.
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Data::String(_) => false,
            Data::List(list) => list.is_empty(),
            Data::Hash(hash) => hash.is_empty(),
            Data::Set(set) => set.is_empty(),
            Data::SortedSet(zset) => zset.is_empty(),
        }
    }
}

/// A score, ordered as Redis orders them (never NaN: callers refuse NaN first).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// A sorted set: members ordered by score, then by member bytes, as in Redis.
///
/// The order is an order-statistic B-tree (`indexset`), so that, as with Redis's skip
/// list, a member's rank, the member at a rank and the first member at or past a score
/// cost O(log n), and a range of m members O(log n + m).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SortedSet {
    scores: HashMap<Vec<u8>, f64>,
    order: indexset::BTreeSet<(Score, Vec<u8>)>,
}

impl SortedSet {
    /// An empty sorted set.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether it has no member.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The score of `member`.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets `member`'s score (`score` must not be NaN): true if it is a new member.
    pub fn insert(&mut self, member: &[u8], score: f64) -> bool {
        let score = if score == 0.0 { 0.0 } else { score }; // -0 sorts as 0, as in Redis
        match self.scores.insert(member.to_vec(), score) {
            Some(old) => {
                self.order.remove(&(Score(old), member.to_vec()));
                self.order.insert((Score(score), member.to_vec()));
                false
            }
            None => {
                self.order.insert((Score(score), member.to_vec()));
                true
            }
        }
    }

    /// Removes `member`: true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self.scores.remove(member) {
            Some(score) => {
                self.order.remove(&(Score(score), member.to_vec()));
                true
            }
            None => false,
        }
    }

    /// `member`'s 0-based rank in ascending order. O(log n).
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(self.order.rank(&(Score(score), member.to_vec())))
    }

    /// Members with their scores, lowest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        self.order
            .iter()
            .map(|(score, member)| (member.as_slice(), score.0))
    }

    /// The members whose ranks (ascending, 0-based) are in `ranks`, lowest first.
    /// O(log n + m).
    pub fn by_rank(
        &self,
        ranks: std::ops::Range<usize>,
    ) -> impl DoubleEndedIterator<Item = (&[u8], f64)> + '_ {
        let end = ranks.end.min(self.len());
        let start = ranks.start.min(end);
        self.order
            .range_idx(start..end)
            .map(|(score, member)| (member.as_slice(), score.0))
    }

    /// How many members score below `score`, or, with `inclusive`, at or below it: the
    /// rank where a range starting past (or at) `score` begins. O(log n).
    pub fn count_below(&self, score: f64, inclusive: bool) -> usize {
        let score = if score == 0.0 { 0.0 } else { score };
        if inclusive {
            if score == f64::INFINITY {
                return self.len();
            }
            self.order.rank(&(Score(score.next_up()), Vec::new()))
        } else {
            self.order.rank(&(Score(score), Vec::new()))
        }
    }

    /// How many members sort before `member` (or, with `inclusive`, at or before it):
    /// where a lex range starts or ends. Redis defines lex ranges only when every member
    /// has the same score; it finds the bound by a search in score order that compares
    /// members only, and so does this, so that the answer is Redis's whenever members
    /// sort the same by score as by bytes. O(log² n).
    pub fn count_before_member(&self, member: &[u8], inclusive: bool) -> usize {
        let before = |other: &[u8]| {
            if inclusive {
                other <= member
            } else {
                other < member
            }
        };
        let (mut low, mut high) = (0, self.len());
        while low < high {
            let middle = low + (high - low) / 2;
            match self.order.get_index(middle) {
                Some((_, other)) if before(other) => low = middle + 1,
                _ => high = middle,
            }
        }
        low
    }

    /// Removes and returns the lowest member (or, with `highest`, the highest).
    /// O(log n).
    pub fn pop(&mut self, highest: bool) -> Option<(Vec<u8>, f64)> {
        let (score, member) = if highest {
            self.order.pop_last()?
        } else {
            self.order.pop_first()?
        };
        self.scores.remove(&member);
        Some((member, score.0))
    }

    /// Removes the members whose ranks are in `ranks`: how many. O(log n) each.
    pub fn remove_ranks(&mut self, ranks: std::ops::Range<usize>) -> usize {
        let end = ranks.end.min(self.len());
        let start = ranks.start.min(end);
        for _ in start..end {
            let (_, member) = self.order.pop_index(start);
            self.scores.remove(&member);
        }
        end - start
    }
}
