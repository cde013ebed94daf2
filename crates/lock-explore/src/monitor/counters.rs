//! The counter checker: every increment a client was told succeeded must show in the
//! counter, and no more than those that may have run. A counter lives in the explorer
//! (`read_counter`, `write_counter`), or in a Redis key the checker reads at the end.

use std::collections::HashMap;

use super::Finding;
use crate::violation::ViolationKind;

#[derive(Debug, Default)]
struct Counter {
    value: i64,
    sure: u64,
    unsure: u64,
}

/// The run's counters.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    counters: HashMap<String, Counter>,
}

impl Counters {
    /// The explorer's value of `counter` (0 before any write).
    pub(crate) fn read(&self, counter: &str) -> i64 {
        self.counters.get(counter).map_or(0, |c| c.value)
    }

    pub(crate) fn write(&mut self, counter: &str, value: i64) {
        self.counters.entry(counter.to_owned()).or_default().value = value;
    }

    /// One increment ended: applied (`Some(true)`), not applied, or unknown (`None`).
    pub(crate) fn counted(&mut self, counter: &str, applied: Option<bool>) {
        let entry = self.counters.entry(counter.to_owned()).or_default();
        match applied {
            Some(true) => entry.sure += 1,
            Some(false) => {}
            None => entry.unsure += 1,
        }
    }

    /// The end of the run: each counter's value (`stored` reads one kept in a key, by
    /// name) against the increments.
    pub(crate) fn check(&self, stored: impl Fn(&str) -> Option<i64>) -> Option<Finding> {
        let mut names: Vec<&String> = self.counters.keys().collect();
        names.sort();
        for name in names {
            let c = &self.counters[name];
            let value = stored(name).unwrap_or(c.value);
            let (sure, unsure) = (c.sure as i64, c.unsure as i64);
            if value < sure {
                return Some(Finding {
                    kind: ViolationKind::LostUpdate,
                    detail: format!(
                        "{name:?} ends at {value}, but {sure} increments were acknowledged"
                    ),
                    clients: Vec::new(),
                    margin_us: None,
                });
            }
            if value > sure + unsure {
                return Some(Finding {
                    kind: ViolationKind::AppliedTwice,
                    detail: format!(
                        "{name:?} ends at {value}, but only {sure} increments were acknowledged and {unsure} were of unknown outcome"
                    ),
                    clients: Vec::new(),
                    margin_us: None,
                });
            }
        }
        None
    }
}
