//! The suite can fail on a real socket: run it through RedisBackend against mini-redis, a
//! Redis-protocol server without SET NX, DEL or EVAL, and check that the report names the
//! cases that need them.

use crate::support;

use nxlock::conformance::{Outcome, run_all};
use nxlock::harness::RedisHarness;
use support::MiniRedis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incompatible_server_fails_the_cases_it_cannot_pass() {
    let server = MiniRedis::start().await;
    let report = run_all(&RedisHarness::at(server.url.clone())).await;
    println!("{report}");

    for name in [
        "strings::set_nx_sets_only_missing_keys",
        "keys::del_counts_only_live_keys",
        "scripts::compare_and_delete_only_deletes_the_matching_token",
        "token::mutual_exclusion",
        "legacy::mutual_exclusion",
        "races::naive_del_then_setnx_recovery_lets_two_clients_hold",
    ] {
        let case = report
            .case(name)
            .unwrap_or_else(|| panic!("no case {name}"));
        assert_eq!(
            case.outcome,
            Outcome::Failed,
            "{name} passed on mini-redis: {}",
            case.detail
        );
        assert!(!case.detail.is_empty(), "{name} failed without a reason");
    }
    assert!(
        report.failed() > report.cases.len() / 2,
        "only {} cases failed",
        report.failed()
    );
    // The scripts' failures are one cause, named once, with what it takes.
    let causes = report.causes();
    let scripting = causes
        .iter()
        .find(|cause| cause.what == "EVALSHA is an unknown command here")
        .unwrap_or_else(|| panic!("no EVALSHA cause in {causes:?}"));
    assert_eq!(scripting.needs, Some("scripting"));
    assert!(scripting.cases > 10, "{scripting}");
    assert!(
        report.to_string().contains(&format!("  {scripting}\n")),
        "printed once under the table"
    );
    // A lost connection is never written as if the server had replied it.
    assert!(
        report.cases.iter().all(
            |case| !case.detail.contains("answered `-") || !case.detail.contains("(Connection")
        ),
        "a connection error shown as a reply"
    );
    server.stop().await;
}
