//! `nxlock check --junit FILE` and `nxlock explore --junit FILE`: JUnit XML that a parser
//! reads, for a passing and a failing run of each, and GitHub Actions annotations.

use std::path::Path;
use std::process::{Command, Output};

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::support::MiniRedis;

fn nxlock(args: &[&str], github: bool) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_nxlock"));
    command.args(args).env_remove("GITHUB_ACTIONS");
    if github {
        command.env("GITHUB_ACTIONS", "true");
    }
    command.output().expect("run nxlock")
}

/// What a JUnit file says, read back by an XML parser.
#[derive(Debug, Default)]
struct Junit {
    /// The `<testsuite>`'s `tests`, `failures` and `skipped`.
    counted: [usize; 3],
    /// Each `<testcase>`: classname, name, and `pass`, `failure` or `skipped`.
    cases: Vec<(String, String, &'static str)>,
    /// Each `<failure>`'s message.
    failure_messages: Vec<String>,
}

impl Junit {
    fn count(&self, outcome: &str) -> usize {
        self.cases.iter().filter(|c| c.2 == outcome).count()
    }
}

/// Parses `path` as JUnit XML; panics on anything malformed.
fn read_junit(path: &Path) -> Junit {
    let xml = std::fs::read_to_string(path).expect("the JUnit file was written");
    let mut reader = Reader::from_str(&xml);
    let mut junit = Junit::default();
    let attribute = |e: &quick_xml::events::BytesStart, name: &str| -> String {
        e.try_get_attribute(name)
            .expect("well-formed attributes")
            .map(|a| {
                a.normalized_value(quick_xml::XmlVersion::Explicit1_0)
                    .expect("escaped value")
                    .into_owned()
            })
            .unwrap_or_default()
    };
    let mut depth = 0;
    loop {
        let event = reader.read_event().unwrap_or_else(|e| {
            panic!(
                "malformed JUnit XML at {}: {e}\n{xml}",
                reader.buffer_position()
            )
        });
        match &event {
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "testsuite" => {
                for (i, name) in ["tests", "failures", "skipped"].iter().enumerate() {
                    junit.counted[i] = attribute(e, name).parse().expect("a count");
                }
            }
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "testcase" => {
                let (classname, name) = (attribute(e, "classname"), attribute(e, "name"));
                junit.cases.push((classname, name, "pass"));
            }
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "failure" => {
                junit.cases.last_mut().expect("inside a testcase").2 = "failure";
                junit.failure_messages.push(attribute(e, "message"));
            }
            Event::Start(e) | Event::Empty(e) if e.name().as_ref() == "skipped" => {
                junit.cases.last_mut().expect("inside a testcase").2 = "skipped";
            }
            _ => {}
        }
        match event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth -= 1,
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(depth, 0, "every element is closed:\n{xml}");
    junit
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

#[test]
fn a_passing_check_writes_a_test_case_per_case_and_no_failure() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("check.xml");
    let out = nxlock(
        &["check", "--json", "--junit", file.to_str().unwrap()],
        true,
    );
    assert!(out.status.success(), "{out:?}");
    let report = json(&out);
    let junit = read_junit(&file);
    let cases = report["cases"].as_array().unwrap().len();
    assert_eq!(junit.cases.len(), cases);
    assert_eq!(junit.counted, [cases, 0, junit.count("skipped")]);
    assert_eq!(junit.count("failure"), 0);
    assert_eq!(
        junit.count("skipped"),
        report["skipped"].as_u64().unwrap() as usize
    );
    assert!(
        junit
            .cases
            .iter()
            .any(|(class, name, _)| class == "token" && !name.contains("::")),
        "{:?}",
        &junit.cases[..3]
    );
    // Nothing failed: no annotation.
    assert!(!String::from_utf8_lossy(&out.stderr).contains("::error"));
}

#[tokio::test]
async fn a_failing_check_writes_each_failure_and_annotates_it_for_github() {
    let server = MiniRedis::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("check.xml");
    let (url, path) = (server.url.clone(), file.to_str().unwrap().to_owned());
    let out = tokio::task::spawn_blocking(move || {
        nxlock(&["check", "--url", &url, "--json", "--junit", &path], true)
    })
    .await
    .unwrap();
    server.stop().await;
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let failed = json(&out)["failed"].as_u64().unwrap() as usize;
    assert!(failed > 0);
    let junit = read_junit(&file);
    assert_eq!(junit.count("failure"), failed);
    assert_eq!(junit.counted[1], failed);
    assert!(junit.failure_messages.iter().all(|m| !m.is_empty()));
    assert!(
        junit
            .cases
            .iter()
            .any(|(class, name, outcome)| class == "strings"
                && name == "set_nx_sets_only_missing_keys"
                && *outcome == "failure")
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let annotations = stderr
        .lines()
        .filter(|l| l.starts_with("::error title="))
        .count();
    assert_eq!(annotations, failed, "{stderr}");
}

#[test]
fn a_clean_search_is_one_passing_case_and_a_finding_is_a_failing_one() {
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.xml");
    let out = nxlock(
        &[
            "explore",
            "--algorithm",
            "fenced",
            "--runs",
            "200",
            "--threads",
            "1",
            "--junit",
            clean.to_str().unwrap(),
        ],
        true,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let junit = read_junit(&clean);
    assert_eq!(junit.count("failure"), 0);
    assert_eq!(junit.counted[1], 0);
    assert_eq!(
        (junit.cases[0].0.as_str(), junit.cases[0].1.as_str()),
        ("explore", "no violation of the lock's own")
    );

    let found = dir.path().join("found.xml");
    let out = nxlock(
        &[
            "explore",
            "--algorithm",
            "legacy",
            "--faults",
            "client-clock",
            "--runs",
            "500",
            "--seed",
            "1",
            "--threads",
            "1",
            "--junit",
            found.to_str().unwrap(),
        ],
        true,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let junit = read_junit(&found);
    assert_eq!(junit.count("failure"), 1, "{junit:?}");
    assert_eq!(
        junit.counted,
        [junit.cases.len(), 1, junit.count("skipped")]
    );
    assert!(
        junit.failure_messages[0].starts_with("mutual-exclusion")
            || junit.failure_messages[0].contains(':'),
        "{:?}",
        junit.failure_messages
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.starts_with("::error title=nxlock explore"))
            .count(),
        1,
        "{stderr}"
    );
}
