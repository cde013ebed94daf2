//! # lock-conformance
//!
//! One conformance suite for every [`KvBackend`](lock_core::KvBackend): Redis 7 semantics
//! of the lock command set, nxlock's scripts, every lock algorithm's guarantees, and the
//! seed documents' races replayed step by step.
//!
//! ## For backend authors
//!
//! Implement [`Harness`] (a fresh backend, and a way to let time pass), then either get a
//! [`Report`] without panicking:
//!
//! ```no_run
//! # use lock_conformance::Harness;
//! # async fn demo(my_harness: impl Harness) {
//! let report = lock_conformance::run_all(&my_harness).await;
//! println!("{report}");
//! assert_eq!(report.failed(), 0);
//! # }
//! ```
//!
//! or one named `#[test]` per case, in a test file:
//!
//! ```ignore
//! lock_conformance::conformance_tests!(MyHarness::new());
//! ```
//!
//! ## Capabilities
//!
//! A [`Harness`] declares what its backend can do beyond the commands every backend has
//! ([`Harness::capabilities`]: pub/sub, time control). A case that needs a capability the
//! harness does not declare is reported as [`Outcome::Skipped`] with the reason, never as
//! a pass; a declared capability the backend then lacks fails its cases.
//!
//! ## Expected failures
//!
//! Some cases exist to show that an algorithm from the seeds is broken (the naive
//! DEL-then-SETNX recovery, the unchecked late DEL). They pass by reproducing the failure
//! and are reported as `xfail` with what was seen, never hidden.

mod capabilities;
mod causes;
mod check;
mod detector;
mod fenced_resource;
mod harness;
mod judged;
mod report;
pub mod runner;

pub mod cases;

pub use capabilities::{Capabilities, Capability};
pub use causes::Cause;
pub use check::{AsResp, CaseResult, Failure, Verdict};
pub use detector::{Inside, OverlapDetector};
pub use fenced_resource::{FencedResource, StaleFence};
pub use harness::{
    Answer, Cluster, Ctx, Deployment, Failover, Harness, Instances, Step, check_instance_count,
};
pub use judged::JudgedAs;
pub use report::{CaseReport, Outcome, Report};

/// Calls `$callback! { ($args) group { case [needs(Capability, ...)], ... } ... }` with
/// the whole case list: the one place cases are registered, with what each needs.
#[doc(hidden)]
#[macro_export]
macro_rules! __with_cases {
    ([$($callback:tt)+] $args:tt) => {
        $($callback)+! { $args
            strings {
                set_nx_sets_only_missing_keys,
                setnx_never_sets_a_ttl,
                set_xx_sets_only_existing_keys,
                set_px_and_ex_set_the_ttl,
                set_without_expiry_clears_the_ttl,
                set_keepttl_keeps_the_ttl,
                set_get_replies_with_the_old_value,
                set_rejects_invalid_expire_times,
                values_and_keys_are_binary_safe,
                getset_returns_the_old_value_and_clears_the_ttl,
                getdel_returns_and_removes,
            }
            keys {
                del_counts_only_live_keys,
                exists_counts_repeated_keys,
                incr_counts_from_zero_and_keeps_the_ttl,
                incr_rejects_non_integers_and_overflow,
            }
            expiry {
                pttl_is_minus_two_when_missing_and_minus_one_without_ttl,
                ttl_rounds_to_the_nearest_second,
                expired_keys_are_absent_to_every_command,
                keys_expire_after_their_ttl,
                pexpire_non_positive_deletes_the_key,
                pexpire_nx_and_xx_look_at_the_current_ttl,
                pexpire_gt_and_lt_treat_no_ttl_as_infinite,
                pexpire_overflow_is_an_invalid_expire,
                pexpireat_sets_absolute_time_and_past_deletes,
                persist_removes_the_ttl,
                a_day_long_ttl_runs_out_on_time needs(TimeControl),
            }
            scripts {
                compare_and_delete_only_deletes_the_matching_token,
                compare_and_pexpire_only_extends_the_matching_token,
                acquire_or_pttl_recognises_its_own_token,
                fenced_acquire_recognises_its_own_token,
                legacy_acquire_reports_seed_001_codes,
                legacy_acquire_with_a_rejected_ttl_writes_nothing,
                legacy_release_and_extend_check_stamp_and_time,
                reentrant_scripts_count_holds,
            }
            token {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_keeps_the_lock_and_stale_extend_fails,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_cannot_take_a_live_lock,
            }
            notify {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_keeps_the_lock_and_stale_extend_fails,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_cannot_take_a_live_lock,
                release_publishes_a_wake_up needs(PubSub),
                waiter_wakes_on_release_not_at_the_holder_ttl needs(PubSub),
                lost_wake_up_is_bounded_by_the_holder_ttl needs(PubSub),
                a_waiter_past_the_barging_window_claims_the_next_turn,
                a_claimant_that_gives_up_withdraws_its_claim,
            }
            fair {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_keeps_the_lock_and_stale_extend_fails,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_cannot_take_a_live_lock,
                waiters_are_served_in_arrival_order,
                release_hands_the_lock_straight_to_the_next_waiter,
                dead_waiter_is_skipped_within_the_patience,
                lock_handed_to_a_dead_waiter_lapses_within_the_patience,
                cancelled_waiter_leaves_the_line,
                acquire_cancelled_at_any_point_leaves_the_line_clean,
                timed_out_waiter_is_never_handed_the_lock,
                impatient_acquire_takes_no_ticket,
                contended_cycles_cost_two_commands needs(PubSub),
                uncontended_cycles_cost_two_commands,
                tasks_sharing_one_lock_pass_the_hold_in_one_command,
            }
            legacy {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_is_unsupported_and_changes_nothing,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_takes_a_live_lock,
            }
            scripted {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_keeps_the_lock_and_stale_extend_fails,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_takes_a_live_lock,
            }
            reentrant {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_keeps_the_lock_and_stale_extend_fails,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_cannot_take_a_live_lock,
                holds_are_counted_per_owner,
                other_owner_cannot_release,
            }
            replication {
                failover_loses_an_unreplicated_lock needs(Replication),
                failover_keeps_a_replicated_lock needs(Replication),
                waiting_for_replicas_refuses_the_lock_a_failover_would_lose needs(Replication),
                fence_tokens_repeat_after_a_failover needs(Replication),
                a_resource_that_rejects_stale_fences_stays_safe_across_a_failover needs(Replication),
                a_lock_is_taken_once_the_failover_window_ends needs(Replication),
                the_watchdog_reports_a_lock_lost_in_a_failover needs(Replication),
            }
            optimistic {
                a_read_modify_write_without_protection_loses_updates,
                compare_and_set_loses_no_update_under_16_writers,
                a_write_from_a_stale_version_is_refused,
            }
            transactions {
                watch_loses_no_update_under_16_writers needs(Transactions),
                a_watched_key_written_by_another_client_aborts_exec needs(Transactions),
                a_watched_key_that_expires_aborts_exec needs(Transactions),
                a_dropped_transaction_writes_nothing needs(Transactions),
                a_transaction_cancelled_mid_exec_writes_all_or_nothing needs(Transactions),
            }
            cluster {
                keys_of_two_slots_in_one_command_are_crossslot needs(Cluster),
                a_transaction_writing_two_slots_writes_nothing needs(Cluster, Transactions),
                a_script_may_touch_only_keys_its_node_serves needs(Cluster),
                one_command_in_a_script_spanning_slots_is_refused needs(Cluster),
                every_lock_keeps_its_keys_in_one_slot needs(Cluster),
                a_lock_held_across_a_slot_migration_stays_exclusive needs(Cluster, ClusterOperations),
                a_lock_survives_a_manual_failover needs(Cluster, ClusterOperations),
            }
            redlock {
                mutual_exclusion needs(MultiInstance),
                second_client_is_refused_while_held needs(MultiInstance),
                release_frees_the_lock needs(MultiInstance),
                acquire_gives_up_with_a_timeout needs(MultiInstance),
                dropped_guard_is_released_in_the_background needs(MultiInstance),
                expiry_frees_a_crashed_holder needs(MultiInstance),
                a_dead_minority_leaves_a_quorum needs(MultiInstance),
                a_dead_majority_is_no_quorum needs(MultiInstance),
                a_partial_acquire_is_undone_on_every_node needs(MultiInstance),
                a_black_holed_node_is_bounded_by_the_node_timeout needs(MultiInstance),
                validity_shrinks_with_elapsed_time_and_refuses_when_gone needs(MultiInstance),
                extend_by_majority needs(MultiInstance),
                a_restart_without_persistence_grants_a_second_holder needs(MultiInstance),
                staying_down_longer_than_the_ttl_prevents_a_second_holder needs(MultiInstance),
                a_restart_with_fsynced_data_keeps_the_lock needs(MultiInstance),
                a_clock_jump_on_a_bare_majority_node_grants_a_second_holder needs(MultiInstance),
                a_clock_jump_on_one_of_all_holding_nodes_is_survived needs(MultiInstance),
                a_node_losing_a_bare_majority_lets_a_second_client_in needs(MultiInstance),
                a_paused_holder_overlaps_the_next needs(MultiInstance),
                a_token_checking_resource_refuses_the_paused_holder needs(MultiInstance),
            }
            fenced {
                mutual_exclusion,
                second_client_is_refused_while_held,
                expiry_frees_a_crashed_holder,
                release_frees_the_lock,
                stale_release_leaves_the_new_holder,
                extend_keeps_the_lock_and_stale_extend_fails,
                acquire_gives_up_with_a_timeout,
                dropped_guard_is_released_in_the_background,
                clock_running_ahead_cannot_take_a_live_lock,
                fence_tokens_strictly_increase,
                stale_holder_after_a_pause_is_rejected_by_fencing,
                unfenced_stale_write_corrupts_the_resource,
                reentry_keeps_the_fence,
            }
            lease {
                renews_the_lock_past_its_ttl,
                release_before_the_first_renewal_stops_renewing,
                dropping_the_lease_stops_renewing_and_releases,
                cancelling_the_owner_task_stops_renewing_and_releases,
                lost_resolves_when_the_lock_is_taken,
                hold_cap_stops_renewing,
                hold_cap_is_reported_once_the_lock_is_free,
            }
            cancellation {
                cancelled_acquires_never_leave_an_unbounded_lock,
                cancelled_releases_still_free_the_lock,
                each_outcome_is_reported_distinctly,
            }
            races {
                naive_del_then_setnx_recovery_lets_two_clients_hold,
                getset_recovery_keeps_exclusion,
                unchecked_late_del_removes_another_clients_lock,
                checked_release_leaves_the_new_holder,
            }
        }
    };
}

/// Runs one case by group and name on a harness, returning its report line (used by the
/// macros; the one runner is [`run_case`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __run_case {
    // `runner`: `run_case`, or inside this crate `run_erased_case` for a harness whose type
    // is erased.
    (@with $runner:ident, $harness:expr, $group:ident, $case:ident, [$($cap:ident),*]) => {
        $crate::$runner(
            $harness,
            concat!(stringify!($group), "::", stringify!($case)),
            &[$($crate::Capability::$cap),*],
            |ctx| ::std::boxed::Box::pin($crate::cases::$group::$case(ctx)),
        )
        .await
    };
    ($harness:expr, $group:ident, $case:ident, [$($cap:ident),*]) => {
        $crate::__run_case!(@with run_case, $harness, $group, $case, [$($cap),*])
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __push_cases {
    (($harness:expr, $report:ident, $wanted:ident)
     $($group:ident { $($case:ident $(needs($($cap:ident),+))?),* $(,)? })*) => {
        $($(
            if $wanted(concat!(stringify!($group), "::", stringify!($case))) {
                $report.push(::std::boxed::Box::pin(async move {
                    $crate::__run_case!(@with run_erased_case, $harness, $group, $case, [$($($cap),+)?])
                }));
            }
        )*)*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __emit_tests {
    (($harness:expr)
     $($group:ident { $($case:ident $(needs($($cap:ident),+))?),* $(,)? })*) => {
        $(
            #[allow(missing_docs)]
            mod $group {
                #[allow(unused_imports)]
                use super::*;
                $(
                    #[test]
                    fn $case() {
                        $crate::runner::block_on(async {
                            let harness = $harness;
                            if let Some(why) = $crate::Harness::skip_reason(&harness) {
                                $crate::runner::announce_skip(stringify!($group), stringify!($case), &why);
                                return;
                            }
                            let report = $crate::__run_case!(
                                &harness, $group, $case, [$($($cap),+)?]
                            );
                            $crate::runner::assert_case(&report);
                        });
                    }
                )*
            }
        )*
    };
}

/// Expands to one `#[test]` per case (in modules named after the groups, e.g.
/// `token::mutual_exclusion`), each running against the harness built by `$harness`.
#[macro_export]
macro_rules! conformance_tests {
    ($harness:expr) => {
        $crate::__with_cases! { [$crate::__emit_tests] ($harness) }
    };
}

/// Runs every case against `harness` and collects the results; never panics.
pub async fn run_all<H: Harness>(harness: &H) -> Report {
    run_matching(harness, &|_| true).await
}

/// Runs the cases whose full names (`group::case`, see [`case_names`]) `wanted` accepts,
/// in suite order, and collects their results; never panics. For a server author fixing
/// one behaviour: `nxlock check --case fair::` runs the fair lock's cases alone.
pub async fn run_matching<H: Harness>(harness: &H, wanted: &dyn Fn(&str) -> bool) -> Report {
    let mut report = Report {
        target: harness.name(),
        topology: harness.topology(),
        redis_version: harness.redis_version(),
        server: None,
        cases: Vec::new(),
    };
    for case in every_case(harness, wanted) {
        report.cases.push(case.await);
    }
    report
}

/// A case's future, borrowing its context.
#[doc(hidden)]
pub type CaseFuture<'c> = std::pin::Pin<Box<dyn std::future::Future<Output = CaseResult> + 'c>>;

/// Runs the case `name` (its body: `case`) on `harness`: skipped if a capability it
/// `needs` is missing, judged otherwise (used by the macros).
#[doc(hidden)]
pub async fn run_case<H: Harness>(
    harness: &H,
    name: &'static str,
    needs: &[Capability],
    case: impl for<'c, 'h> FnOnce(&'c Ctx<'h>) -> CaseFuture<'c>,
) -> CaseReport {
    run_erased_case(harness, name, needs, case).await
}

/// [`run_case`] on a harness whose type is erased: not generic, so the suite is compiled
/// once in this crate whatever harnesses a program runs it on.
async fn run_erased_case(
    harness: &dyn harness::AnyHarness,
    name: &'static str,
    needs: &[Capability],
    case: impl for<'c, 'h> FnOnce(&'c Ctx<'h>) -> CaseFuture<'c>,
) -> CaseReport {
    let missing = harness.capabilities().missing(needs);
    if !missing.is_empty() {
        return runner::skipped(name, &missing);
    }
    match Ctx::erased(harness, name).await {
        Ok(ctx) => runner::judge(name, runner::guarded(case(&ctx)).await),
        Err(setup) => runner::judge(name, Err(Failure(format!("setup failed: {setup}")))),
    }
}

/// A case of [`run_all`], not started yet.
type PendingCase<'h> = std::pin::Pin<Box<dyn std::future::Future<Output = CaseReport> + 'h>>;

/// Every case as a boxed future, so that [`run_all`] awaits them in a loop: awaited one
/// after another in its own body, their futures and temporaries make a poll frame that
/// overflows a test thread's stack in debug builds.
fn every_case<'h>(
    harness: &'h dyn harness::AnyHarness,
    wanted: &dyn Fn(&str) -> bool,
) -> Vec<PendingCase<'h>> {
    let mut cases: Vec<PendingCase<'h>> = Vec::new();
    __with_cases! { [__push_cases] (harness, cases, wanted) }
    cases
}

macro_rules! __names {
    (() $($group:ident { $($case:ident $(needs($($cap:ident),+))?),* $(,)? })*) => {
        &[$($(concat!(stringify!($group), "::", stringify!($case)),)*)*]
    };
}

/// The names of every case, in suite order.
pub fn case_names() -> &'static [&'static str] {
    __with_cases! { [__names] () }
}
