//! What CI reads: JUnit XML (`check --junit FILE`: a test case per conformance case;
//! `explore --junit FILE`: a test case per finding, or one for a clean search) and, inside
//! GitHub Actions, an `::error` annotation per failure.

use std::io;
use std::path::Path;

use quick_xml::Writer;
use quick_xml::events::BytesText;

/// One JUnit test suite: a check's target, or an explorer's subject.
pub struct Suite {
    /// The suite's name (`nxlock check memory (single)`).
    pub name: String,
    /// Its cases, in order.
    pub cases: Vec<Case>,
}

/// One JUnit test case.
pub struct Case {
    /// The group it belongs to (`token`, `explore`).
    pub classname: String,
    /// Its name within the group.
    pub name: String,
    /// How it ended.
    pub outcome: Outcome,
    /// What it printed, kept as `system-out` (empty: none).
    pub output: String,
}

/// How a JUnit test case ended.
pub enum Outcome {
    /// Passed.
    Passed,
    /// Failed: a one-line message and the whole story.
    Failed {
        /// One line.
        message: String,
        /// Everything: the counterexample, the case's detail.
        text: String,
    },
    /// Not run, and why.
    Skipped {
        /// Why.
        message: String,
    },
}

impl Suite {
    fn count(&self, failed: bool) -> usize {
        self.cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Failed { .. }) == failed)
            .count()
    }

    /// The suite as a JUnit XML document (`<testsuites>` around one `<testsuite>`).
    pub fn to_xml(&self) -> io::Result<String> {
        let mut writer = Writer::new_with_indent(Vec::new(), b' ', 2);
        writer.write_event(quick_xml::events::Event::Decl(
            quick_xml::events::BytesDecl::new("1.0", Some("UTF-8"), None),
        ))?;
        let tests = self.cases.len().to_string();
        let failures = self.count(true).to_string();
        let skipped = self
            .cases
            .iter()
            .filter(|c| matches!(c.outcome, Outcome::Skipped { .. }))
            .count()
            .to_string();
        let totals = [
            ("tests", tests.as_str()),
            ("failures", failures.as_str()),
            ("errors", "0"),
            ("skipped", skipped.as_str()),
        ];
        writer
            .create_element("testsuites")
            .with_attribute(("name", self.name.as_str()))
            .with_attributes(totals)
            .write_inner_content(|writer| {
                writer
                    .create_element("testsuite")
                    .with_attribute(("name", self.name.as_str()))
                    .with_attributes(totals)
                    .write_inner_content(|writer| {
                        for case in &self.cases {
                            write_case(writer, case)?;
                        }
                        Ok(())
                    })?;
                Ok(())
            })?;
        String::from_utf8(writer.into_inner()).map_err(io::Error::other)
    }

    /// Writes the suite's XML to `path`.
    pub fn write(&self, path: &Path) -> io::Result<()> {
        std::fs::write(path, self.to_xml()? + "\n")
    }

    /// In GitHub Actions (`GITHUB_ACTIONS=true`), an `::error` line per failed case,
    /// which the run's summary shows. On stderr, which the runner reads for workflow
    /// commands too, so that `--json` on stdout stays one document.
    pub fn annotate(&self) {
        if std::env::var("GITHUB_ACTIONS").as_deref() != Ok("true") {
            return;
        }
        for case in &self.cases {
            if let Outcome::Failed { message, .. } = &case.outcome {
                eprintln!("{}", annotation(&self.name, case, message));
            }
        }
    }
}

fn write_case(writer: &mut Writer<Vec<u8>>, case: &Case) -> io::Result<()> {
    let element = writer
        .create_element("testcase")
        .with_attribute(("classname", case.classname.as_str()))
        .with_attribute(("name", case.name.as_str()));
    if matches!(case.outcome, Outcome::Passed) && case.output.is_empty() {
        element.write_empty()?;
        return Ok(());
    }
    element.write_inner_content(|writer| {
        match &case.outcome {
            Outcome::Passed => {}
            Outcome::Failed { message, text } => {
                writer
                    .create_element("failure")
                    .with_attribute(("message", message.as_str()))
                    .write_text_content(BytesText::new(text))?;
            }
            Outcome::Skipped { message } => {
                writer
                    .create_element("skipped")
                    .with_attribute(("message", message.as_str()))
                    .write_empty()?;
            }
        }
        if !case.output.is_empty() {
            writer
                .create_element("system-out")
                .write_text_content(BytesText::new(&case.output))?;
        }
        Ok(())
    })?;
    Ok(())
}

/// `::error title=…::…`, escaped as GitHub's workflow commands want (`%`, CR and LF in
/// the message; also `:` and `,` in the title).
fn annotation(suite: &str, case: &Case, message: &str) -> String {
    let data = |s: &str| {
        s.replace('%', "%25")
            .replace('\r', "%0D")
            .replace('\n', "%0A")
    };
    let title = data(&format!("{suite}: {}::{}", case.classname, case.name))
        .replace(':', "%3A")
        .replace(',', "%2C");
    format!("::error title={title}::{}", data(message))
}

/// `nxlock check`'s report: a test case per conformance case, named `group::case`.
pub fn of_check(report: &nxlock::conformance::Report) -> Suite {
    use nxlock::conformance::Outcome as Case_;
    let cases = report
        .cases
        .iter()
        .map(|case| {
            let (classname, name) = case
                .name
                .split_once("::")
                .unwrap_or(("check", case.name.as_str()));
            let first_line = || case.detail.lines().next().unwrap_or_default().to_owned();
            let (outcome, output) = match case.outcome {
                Case_::Passed => (Outcome::Passed, case.detail.clone()),
                Case_::ExpectedFailure => (
                    Outcome::Passed,
                    format!(
                        "expected failure (a known-broken algorithm): {}",
                        case.detail
                    ),
                ),
                Case_::Failed => (
                    Outcome::Failed {
                        message: first_line(),
                        text: case.detail.clone(),
                    },
                    String::new(),
                ),
                Case_::Skipped => (
                    Outcome::Skipped {
                        message: first_line(),
                    },
                    String::new(),
                ),
            };
            Case {
                classname: classname.to_owned(),
                name: name.to_owned(),
                outcome,
                output,
            }
        })
        .collect();
    Suite {
        name: format!("nxlock check {} ({})", report.target, report.topology),
        cases,
    }
}

/// `nxlock explore`'s report: a failing case for a violation of the lock's own, a
/// passing one for a clean search, one per inherent finding (passing, with the finding)
/// and a skipped one per unconfirmed finding. `subject` names what was explored.
pub fn of_explore(report: &nxlock::explore::Report, subject: &str) -> Suite {
    let mut cases = Vec::new();
    let case = |name: String, outcome, output| Case {
        classname: "explore".into(),
        name,
        outcome,
        output,
    };
    match &report.counterexample {
        Some(found) => cases.push(case(
            format!("{}", found.violation.kind),
            Outcome::Failed {
                message: format!("{}: {}", found.violation.kind, found.violation.detail),
                text: found.to_string(),
            },
            String::new(),
        )),
        None => cases.push(case(
            "no violation of the lock's own".into(),
            Outcome::Passed,
            format!("{} runs, seed {}", report.runs, report.seed),
        )),
    }
    for (kind, runs) in &report.inherent {
        let shown = report
            .inherent_finding
            .as_ref()
            .filter(|found| found.violation.kind == *kind)
            .map(ToString::to_string)
            .unwrap_or_default();
        cases.push(case(
            format!("inherent to TTL locks: {kind}"),
            Outcome::Passed,
            format!("{runs} runs; not the lock's bug\n{shown}"),
        ));
    }
    for unconfirmed in &report.unconfirmed {
        cases.push(case(
            format!("unconfirmed: {}", unconfirmed.kind),
            Outcome::Skipped {
                message: format!(
                    "reproduced in {} of {} replays: {}",
                    unconfirmed.reproduced, unconfirmed.replays, unconfirmed.detail
                ),
            },
            String::new(),
        ));
    }
    Suite {
        name: format!("nxlock explore {subject}"),
        cases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite() -> Suite {
        Suite {
            name: "nxlock check <memory>".into(),
            cases: vec![
                Case {
                    classname: "token".into(),
                    name: "mutual_exclusion".into(),
                    outcome: Outcome::Passed,
                    output: String::new(),
                },
                Case {
                    classname: "strings".into(),
                    name: "set_nx".into(),
                    outcome: Outcome::Failed {
                        message: "SET NX answered -ERR & \"more\"".into(),
                        text: "line 1\n<line 2>".into(),
                    },
                    output: String::new(),
                },
                Case {
                    classname: "pubsub".into(),
                    name: "wake".into(),
                    outcome: Outcome::Skipped {
                        message: "needs pubsub".into(),
                    },
                    output: "not run".into(),
                },
            ],
        }
    }

    #[test]
    fn the_xml_escapes_what_it_carries_and_counts_each_outcome() {
        let xml = suite().to_xml().unwrap();
        assert!(
            xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"),
            "{xml}"
        );
        assert!(
            xml.contains(r#"tests="3" failures="1" errors="0" skipped="1""#),
            "{xml}"
        );
        assert!(
            xml.contains(r#"message="SET NX answered -ERR &amp; &quot;more&quot;""#),
            "{xml}"
        );
        assert!(xml.contains("line 1\n&lt;line 2&gt;"), "{xml}");
        assert!(
            xml.contains(r#"<testcase classname="token" name="mutual_exclusion"/>"#),
            "{xml}"
        );
    }

    #[test]
    fn an_annotation_escapes_its_title_and_message() {
        let suite = suite();
        let line = annotation(&suite.name, &suite.cases[1], "50% off\nnext, line");
        assert_eq!(
            line,
            "::error title=nxlock check <memory>%3A strings%3A%3Aset_nx::50%25 off%0Anext, line"
        );
    }
}
