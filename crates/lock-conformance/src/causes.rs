//! [`Cause`]: what many failed cases have in common, named once. A server without
//! scripting fails every case that runs a script, each with the same `unknown command
//! 'evalsha'`; a report that lists 84 such rows hides the one fact that matters, so the
//! failures are grouped by the command the server did not know, or by the connection
//! that failed, and each group is printed once under the table.

use std::collections::BTreeMap;

use crate::report::{CaseReport, Outcome};

/// One cause shared by failed cases.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// What the cases met, in a sentence: `EVALSHA is an unknown command here`.
    pub what: String,
    /// What the cases needed, when it is known: `scripting`.
    pub needs: Option<&'static str>,
    /// How many failed cases it explains.
    pub cases: usize,
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let cases = match self.cases {
            1 => "1 case".to_owned(),
            n => format!("{n} cases"),
        };
        match self.needs {
            Some(needs) => write!(f, "{}: {cases} need {needs}", self.what),
            None => write!(f, "{}: {cases}", self.what),
        }
    }
}

/// The command a failure detail says the server did not know (`'evalsha'` in Redis's
/// `ERR unknown command 'evalsha', with args beginning with: …`).
fn unknown_command(detail: &str) -> Option<String> {
    let (_, after) = detail.split_once("unknown command '")?;
    let (name, _) = after.split_once('\'')?;
    (!name.is_empty()).then(|| name.to_ascii_uppercase())
}

/// What a command is for, when a server lacks it.
fn needed_for(command: &str) -> Option<&'static str> {
    match command {
        "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "SCRIPT" | "FCALL" | "FUNCTION" => {
            Some("scripting")
        }
        "SUBSCRIBE" | "PSUBSCRIBE" | "PUBLISH" | "UNSUBSCRIBE" => Some("pub/sub"),
        "WAIT" | "WAITAOF" => Some("replication"),
        "MULTI" | "EXEC" | "WATCH" => Some("transactions"),
        _ => None,
    }
}

/// The causes of `cases`' failures that explain more than one case, most cases first.
/// A case counts once, under the first cause its detail names.
pub(crate) fn shared_causes(cases: &[CaseReport]) -> Vec<Cause> {
    let mut counted: BTreeMap<String, (Option<&'static str>, usize)> = BTreeMap::new();
    for case in cases.iter().filter(|c| c.outcome == Outcome::Failed) {
        let (what, needs) = if let Some(command) = unknown_command(&case.detail) {
            let needs = needed_for(&command);
            (format!("{command} is an unknown command here"), needs)
        } else if case.detail.contains("(Connection)") {
            ("the connection failed".to_owned(), None)
        } else if case.detail.contains("(Timeout)") {
            ("the server did not answer in time".to_owned(), None)
        } else {
            continue;
        };
        counted.entry(what).or_insert((needs, 0)).1 += 1;
    }
    let mut causes: Vec<Cause> = counted
        .into_iter()
        .filter(|(_, (_, cases))| *cases > 1)
        .map(|(what, (needs, cases))| Cause { what, needs, cases })
        .collect();
    causes.sort_by(|a, b| b.cases.cmp(&a.cases).then(a.what.cmp(&b.what)));
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(detail: &str) -> CaseReport {
        CaseReport {
            name: "g::c".into(),
            outcome: Outcome::Failed,
            detail: detail.into(),
            missing: Vec::new(),
        }
    }

    #[test]
    fn failures_of_one_unknown_command_are_one_cause() {
        let evalsha =
            "backend error (Response): ERR unknown command 'evalsha', with args beginning with: ";
        let mut cases = vec![failed(evalsha), failed(evalsha), failed(evalsha)];
        cases.push(failed(
            "`PTTL k` answered `-ERR unknown command 'pttl'`; Redis answers `:-1`",
        ));
        cases.push(failed(
            "backend error (Response): ERR unknown command 'pttl'",
        ));
        cases.push(failed("SET PX 0 answered Applied instead of an error"));
        cases.push(failed("backend error (Connection): SET: broken pipe"));
        let mut passed = failed(evalsha);
        passed.outcome = Outcome::Passed;
        cases.push(passed);
        let causes = shared_causes(&cases);
        assert_eq!(
            causes.iter().map(ToString::to_string).collect::<Vec<_>>(),
            vec![
                "EVALSHA is an unknown command here: 3 cases need scripting",
                "PTTL is an unknown command here: 2 cases",
            ]
        );
    }
}
