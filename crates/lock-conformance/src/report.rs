//! [`Report`]: per-case results, as a table for people and JSON for tools.

use std::fmt;

use serde::Serialize;

/// How one case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Demonstrated a known-broken algorithm's failure, as intended (counts as passing).
    ExpectedFailure,
    /// Failed.
    Failed,
}

/// One case's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseReport {
    /// `group::case`, e.g. `token::mutual_exclusion`.
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What was seen (empty for a plain pass).
    pub detail: String,
}

impl CaseReport {
    /// Passed or expected failure.
    pub fn ok(&self) -> bool {
        self.outcome != Outcome::Failed
    }
}

/// The results of a suite run against one target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// What was checked (the harness's name).
    pub target: String,
    /// Every case, in suite order.
    pub cases: Vec<CaseReport>,
}

#[derive(Serialize)]
struct JsonCase<'a> {
    name: &'a str,
    ok: bool,
    detail: &'a str,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    target: &'a str,
    passed: usize,
    failed: usize,
    cases: Vec<JsonCase<'a>>,
}

impl Report {
    /// Cases that passed (expected failures included).
    pub fn passed(&self) -> usize {
        self.cases.iter().filter(|c| c.ok()).count()
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.cases.len() - self.passed()
    }

    /// The failed cases.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| !c.ok())
    }

    /// The case named `name`.
    pub fn case(&self, name: &str) -> Option<&CaseReport> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// `{"target", "passed", "failed", "cases": [{"name", "ok", "detail"}]}`.
    pub fn to_json(&self) -> String {
        let report = JsonReport {
            target: &self.target,
            passed: self.passed(),
            failed: self.failed(),
            cases: self
                .cases
                .iter()
                .map(|c| JsonCase {
                    name: &c.name,
                    ok: c.ok(),
                    detail: &c.detail,
                })
                .collect(),
        };
        serde_json::to_string_pretty(&report).unwrap_or_default()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        writeln!(f, "conformance of {}", self.target)?;
        writeln!(f, "{:<width$}  {:<6}  detail", "case", "result")?;
        writeln!(f, "{:-<width$}  ------  ------", "")?;
        for case in &self.cases {
            let result = match case.outcome {
                Outcome::Passed => "pass",
                Outcome::ExpectedFailure => "xfail",
                Outcome::Failed => "FAIL",
            };
            writeln!(f, "{:<width$}  {result:<6}  {}", case.name, case.detail)?;
        }
        let expected = self
            .cases
            .iter()
            .filter(|c| c.outcome == Outcome::ExpectedFailure)
            .count();
        write!(
            f,
            "{} cases: {} passed ({} of them expected failures of broken algorithms), {} failed",
            self.cases.len(),
            self.passed(),
            expected,
            self.failed()
        )
    }
}
