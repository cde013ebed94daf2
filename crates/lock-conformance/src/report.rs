//! [`Report`]: per-case results, as a table for people and JSON for tools.

use std::fmt;

use lock_core::RedisVersion;
use serde::Serialize;

use crate::{Capability, Cause};

/// How one case ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed.
    Passed,
    /// Demonstrated a known-broken algorithm's failure, as intended (counts as passing).
    ExpectedFailure,
    /// Failed.
    Failed,
    /// Not run: the backend lacks a capability the case needs (the detail says which).
    Skipped,
}

impl Outcome {
    /// `pass`, `xfail`, `fail` or `skipped`, as the JSON report spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Outcome::Passed => "pass",
            Outcome::ExpectedFailure => "xfail",
            Outcome::Failed => "fail",
            Outcome::Skipped => "skipped",
        }
    }
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
    /// For a skipped case, the capabilities it needs that the harness does not declare.
    pub missing: Vec<Capability>,
}

impl CaseReport {
    /// Not failed: passed, an expected failure, or skipped.
    pub fn ok(&self) -> bool {
        self.outcome != Outcome::Failed
    }
}

/// The results of a suite run against one target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// What was checked (the harness's name).
    pub target: String,
    /// How it was deployed ([`Harness::topology`](crate::Harness::topology)).
    pub topology: String,
    /// The Redis version its answers were judged against
    /// ([`Harness::redis_version`](crate::Harness::redis_version)).
    pub redis_version: RedisVersion,
    /// The server it talked to, as the server names itself (`Redis 7.0.15`, `Valkey
    /// 8.0.1`, from `INFO server`), when the caller knows it; `None` for the double.
    pub server: Option<String>,
    /// Every case, in suite order.
    pub cases: Vec<CaseReport>,
}

#[derive(Serialize)]
struct JsonCase<'a> {
    name: &'a str,
    outcome: &'static str,
    ok: bool,
    detail: &'a str,
    /// A skipped case's missing capabilities (`pubsub`, `time control`, …); empty
    /// otherwise.
    missing: Vec<&'static str>,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    target: &'a str,
    topology: &'a str,
    /// The version judged against: `7.0`, `7.2` or `7.4`.
    redis_version: &'static str,
    /// The server talked to, as it names itself; null when unknown.
    server: Option<&'a str>,
    passed: usize,
    failed: usize,
    skipped: usize,
    xfail: usize,
    /// What several failed cases have in common, most cases first.
    causes: Vec<JsonCause>,
    cases: Vec<JsonCase<'a>>,
}

#[derive(Serialize)]
struct JsonCause {
    what: String,
    needs: Option<&'static str>,
    cases: usize,
}

impl Report {
    fn count(&self, outcome: Outcome) -> usize {
        self.cases.iter().filter(|c| c.outcome == outcome).count()
    }

    /// Cases that passed (expected failures included).
    pub fn passed(&self) -> usize {
        self.count(Outcome::Passed) + self.count(Outcome::ExpectedFailure)
    }

    /// Cases that failed.
    pub fn failed(&self) -> usize {
        self.count(Outcome::Failed)
    }

    /// Cases skipped for a missing capability.
    pub fn skipped(&self) -> usize {
        self.count(Outcome::Skipped)
    }

    /// Cases that passed by showing a known-broken algorithm's failure.
    pub fn expected_failures(&self) -> usize {
        self.count(Outcome::ExpectedFailure)
    }

    /// The failed cases.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| !c.ok())
    }

    /// What several failed cases have in common (a command the server does not know,
    /// a connection that failed), most cases first: each is printed once under the
    /// table, and listed in the JSON as `causes`.
    pub fn causes(&self) -> Vec<Cause> {
        crate::causes::shared_causes(&self.cases)
    }

    /// The case named `name`.
    pub fn case(&self, name: &str) -> Option<&CaseReport> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// `{"target", "topology", "redis_version", "server", "passed", "failed", "skipped",
    /// "xfail", "causes": [{"what", "needs", "cases"}], "cases": [{"name", "outcome", "ok",
    /// "detail", "missing"}]}`; `server` is null when unknown; `causes` groups the
    /// failures that share one ([`Report::causes`]); `outcome` is `pass`, `xfail`, `fail` or
    /// `skipped`, `passed` counts expected failures too, and `missing` names a skipped
    /// case's missing capabilities.
    pub fn to_json(&self) -> String {
        let report = JsonReport {
            target: &self.target,
            topology: &self.topology,
            redis_version: self.redis_version.name(),
            server: self.server.as_deref(),
            passed: self.passed(),
            failed: self.failed(),
            skipped: self.skipped(),
            xfail: self.expected_failures(),
            causes: self
                .causes()
                .into_iter()
                .map(|c| JsonCause {
                    what: c.what,
                    needs: c.needs,
                    cases: c.cases,
                })
                .collect(),
            cases: self
                .cases
                .iter()
                .map(|c| JsonCase {
                    name: &c.name,
                    outcome: c.outcome.name(),
                    ok: c.ok(),
                    detail: &c.detail,
                    missing: c.missing.iter().map(|c| c.name()).collect(),
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
        let server = self
            .server
            .as_ref()
            .map(|server| format!("server: {server}; "))
            .unwrap_or_default();
        writeln!(
            f,
            "conformance of {} (topology: {}; {server}judged as Redis {})",
            self.target, self.topology, self.redis_version
        )?;
        writeln!(f, "{:<width$}  {:<6}  detail", "case", "result")?;
        writeln!(f, "{:-<width$}  ------  ------", "")?;
        for case in &self.cases {
            let result = match &case.outcome {
                Outcome::Failed => "FAIL",
                other => other.name(),
            };
            writeln!(f, "{:<width$}  {result:<6}  {}", case.name, case.detail)?;
        }
        let causes = self.causes();
        if !causes.is_empty() {
            writeln!(f, "failures that share a cause:")?;
            for cause in causes {
                writeln!(f, "  {cause}")?;
            }
        }
        write!(
            f,
            "{} cases: {} passed ({} of them expected failures of broken algorithms), {} failed, \
             {} skipped",
            self.cases.len(),
            self.passed(),
            self.expected_failures(),
            self.failed(),
            self.skipped()
        )
    }
}
