//! [`Coverage`]: what a search covered, and the guarantee its report states: every
//! schedule up to a bound (exhaustive), or a sample with the bound a clean sample
//! honestly carries.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a search covered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Coverage {
    /// Random schedules drawn from the seed: a sample.
    Sampled {
        /// Schedules run (voided ones not counted).
        runs: u64,
        /// At most this many steps per schedule.
        max_steps: usize,
    },
    /// Every schedule of at most `depth` steps over a finite set of steps.
    Exhaustive(Exhaustive),
    /// Schedules steered by coverage feedback: mutations of schedules that reached new
    /// abstract lock states, and fresh random draws.
    Guided(Guided),
}

/// What a guided search covered (see docs/EXPLORE.md, "Coverage feedback").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guided {
    /// Schedules run (voided ones not counted).
    pub runs: u64,
    /// At most this many steps per schedule.
    pub max_steps: usize,
    /// Of the runs the strategy observed, the fresh random draws: independent draws
    /// from one distribution, as a random search's runs are.
    pub fresh: u64,
    /// Of the runs the strategy observed, the sweep's: one single-step schedule for
    /// each fault and the abstract lock state it strikes.
    #[serde(default)]
    pub swept: u64,
    /// Distinct abstract lock states reached, the fault-free run's included.
    pub states: u64,
    /// Schedules kept for reaching a new state.
    pub corpus: u64,
    /// Runs observed since the last one that reached a new state.
    pub since_new: u64,
    /// Runs the strategy observed (a finding's own run included).
    pub observed: u64,
}

impl Guided {
    /// The coverage line: the states reached, and whether they stopped growing.
    pub fn saturation(&self) -> String {
        let states = format!("{} abstract lock states reached", grouped(self.states));
        if self.observed == 0 {
            return states;
        }
        let share = 100.0 * self.since_new as f64 / self.observed as f64;
        if self.since_new == self.observed {
            format!("{states}; no run reached a new one")
        } else if share >= 20.0 {
            format!(
                "{states}; none new in the last {share:.0}% of runs: more runs of this depth are unlikely to reach more"
            )
        } else {
            format!(
                "{states}; the last new one {} runs before the end: coverage is still growing",
                grouped(self.since_new)
            )
        }
    }
}

/// The count of an exhaustive search (see docs/EXPLORE.md, "Exhaustive search").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exhaustive {
    /// At most this many steps per schedule.
    pub depth: usize,
    /// The steps a schedule is made of: each anchor times each fault and length class.
    pub steps: u64,
    /// The steps levels 2 and deeper combine: all of `steps` but those anchored in the
    /// middle of a client's repeated operations in one lock state (a retry loop's passes
    /// between its first and its last). Equal to `steps` when nothing repeats.
    #[serde(default)]
    pub deep_steps: u64,
    /// Schedules of 1 to `depth` distinct steps, as sets: the space.
    pub schedules: u64,
    /// The same schedules counted as sequences (every order of their steps): the space
    /// before the first reduction (steps carry their own times, so order is no choice).
    pub ordered: u64,
    /// Schedules not run because their run is, step for step, that of a smaller one the
    /// search runs too: a step whose anchor that smaller schedule's run never reaches.
    pub pruned: u64,
    /// Schedules run.
    pub ran: u64,
    /// Runs that proved nothing either way (the machine disturbed them).
    pub voided: u64,
    /// The space's fingerprint: shards of one search must share it.
    pub space: u64,
}

impl Exhaustive {
    /// Whether every schedule of the space was run or pruned (and none voided).
    pub fn complete(&self) -> bool {
        self.voided == 0 && self.ran + self.pruned == self.schedules
    }
}

/// `n` with thousands separated by commas.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl Coverage {
    /// The guarantee line: what was covered exhaustively, what was sampled, and the bound
    /// a sample honestly carries. `found` says whether the search found a violation.
    pub fn guarantee(&self, found: bool) -> String {
        match self {
            Coverage::Exhaustive(e) => {
                let deep = if e.depth >= 2 && e.deep_steps < e.steps {
                    format!(
                        " ({} of them combined in schedules of 2 steps or more: the middle passes of a client's repeated operations left out)",
                        grouped(e.deep_steps)
                    )
                } else {
                    String::new()
                };
                let space = format!(
                    "every schedule of at most {} step{} over {} steps{deep}: {} (from {} ordered before reduction), {} pruned as equal to a smaller one, {} run",
                    e.depth,
                    if e.depth == 1 { "" } else { "s" },
                    grouped(e.steps),
                    grouped(e.schedules),
                    grouped(e.ordered),
                    grouped(e.pruned),
                    grouped(e.ran),
                );
                if found {
                    format!("guarantee: exhaustive search stopped at a violation; {space}")
                } else if e.complete() {
                    format!("guarantee: {space}: clean")
                } else {
                    let left = e.schedules.saturating_sub(e.ran + e.pruned);
                    format!(
                        "guarantee: NOT exhaustive: {space}; {} not run{} (budget or time)",
                        grouped(left),
                        if e.voided > 0 {
                            format!(", {} voided", grouped(e.voided))
                        } else {
                            String::new()
                        }
                    )
                }
            }
            Coverage::Guided(g) => {
                let swept = if g.swept > 0 {
                    format!(
                        "{} one-step schedules of the sweep (one per fault and lock state it strikes), ",
                        grouped(g.swept)
                    )
                } else {
                    String::new()
                };
                let sample = format!(
                    "guarantee: sampled, not exhaustive: {} guided schedules of at most {} steps ({swept}{} fresh random draws)",
                    grouped(g.runs),
                    g.max_steps,
                    grouped(g.fresh)
                );
                if found || g.fresh == 0 {
                    return format!("{sample}; {}", g.saturation());
                }
                // Only the fresh draws are a uniform sample: the rule of three counts them.
                let share = 300.0 / g.fresh as f64;
                format!(
                    "{sample}, clean; a bug that {} of such fresh draws trigger would have shown with 95% likelihood; {}",
                    percent(share),
                    g.saturation()
                )
            }
            Coverage::Sampled { runs, max_steps } => {
                if found || *runs == 0 {
                    return format!(
                        "guarantee: sampled, not exhaustive: {} random schedules of at most {max_steps} steps",
                        grouped(*runs)
                    );
                }
                // The rule of three: n clean draws put a share of breaking draws above
                // 3/n at below 5% likelihood.
                let share = 300.0 / *runs as f64;
                format!(
                    "guarantee: sampled, not exhaustive: {} random schedules of at most {max_steps} steps, clean; a bug that {} of such schedules trigger would have shown with 95% likelihood (--exhaustive D covers every schedule of D steps)",
                    grouped(*runs),
                    percent(share)
                )
            }
        }
    }
}

fn percent(share: f64) -> String {
    if share >= 100.0 {
        "every one".to_owned()
    } else if share >= 1.0 {
        format!("{share:.0}%")
    } else if share >= 0.01 {
        format!("{share:.2}%")
    } else {
        format!("{share:.4}%")
    }
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.guarantee(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_900_000), "1,900,000");
    }

    #[test]
    fn a_clean_sample_states_the_rule_of_three() {
        let line = Coverage::Sampled {
            runs: 30_000,
            max_steps: 4,
        }
        .guarantee(false);
        assert!(line.contains("30,000 random schedules"), "{line}");
        assert!(line.contains("0.01%"), "{line}");
    }

    #[test]
    fn a_guided_search_bounds_by_its_fresh_draws_and_says_whether_coverage_grows() {
        let mut g = Guided {
            runs: 10_000,
            max_steps: 4,
            fresh: 3_000,
            swept: 0,
            states: 143,
            corpus: 40,
            since_new: 2_500,
            observed: 10_000,
        };
        let line = Coverage::Guided(g.clone()).guarantee(false);
        assert!(line.contains("10,000 guided schedules"), "{line}");
        assert!(line.contains("(3,000 fresh random draws), clean"), "{line}");
        assert!(
            line.contains("a bug that 0.10% of such fresh draws"),
            "{line}"
        );
        assert!(
            line.contains("143 abstract lock states reached; none new in the last 25% of runs"),
            "{line}"
        );
        g.since_new = 100;
        let line = Coverage::Guided(g.clone()).guarantee(true);
        assert!(!line.contains("clean") && !line.contains("95%"), "{line}");
        assert!(
            line.contains("the last new one 100 runs before the end"),
            "{line}"
        );
        g.swept = 312;
        let line = Coverage::Guided(g).guarantee(false);
        assert!(
            line.contains("(312 one-step schedules of the sweep (one per fault and lock state it strikes), 3,000 fresh random draws), clean"),
            "{line}"
        );
    }

    #[test]
    fn an_exhaustive_search_is_clean_only_when_complete() {
        let mut e = Exhaustive {
            depth: 2,
            steps: 10,
            deep_steps: 10,
            schedules: 55,
            ordered: 100,
            pruned: 5,
            ran: 50,
            voided: 0,
            space: 1,
        };
        assert!(
            Coverage::Exhaustive(e.clone())
                .guarantee(false)
                .ends_with(": clean")
        );
        e.ran = 40;
        let line = Coverage::Exhaustive(e).guarantee(false);
        assert!(
            line.contains("NOT exhaustive") && line.contains("10 not run"),
            "{line}"
        );
    }
}
