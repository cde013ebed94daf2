//! Every subcommand goes on quietly when the reader of its stdout has gone
//! (`nxlock check --list | head -5`): no panic, no backtrace, and the exit status its
//! verdict gives.

use std::process::{Command, Stdio};

/// Runs `nxlock ARGS` with its stdout a pipe whose reading end is closed before the
/// child writes: its exit code and its stderr.
fn with_stdout_closed(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nxlock"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run nxlock");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("nxlock ends");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_subcommand_goes_on_quietly_when_stdout_is_closed() {
    let runs: [&[&str]; 7] = [
        &["check", "--list"],
        &["check", "--list", "--json"],
        &["check", "--json"],
        &["check"],
        &["explore", "--runs", "50", "--quiet"],
        &["bench", "--duration", "0.2"],
        &["bench", "--duration", "0.2", "--json"],
    ];
    for args in runs {
        let (code, stderr) = with_stdout_closed(args);
        assert_eq!(
            code,
            Some(0),
            "nxlock {args:?} exited with {code:?}: {stderr}"
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "nxlock {args:?}: {stderr}"
        );
    }
}
