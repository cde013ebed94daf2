//! Finds which of the other languages' clients the integration tests can run, so that a
//! test whose client is missing is reported by `cargo test` itself as ignored, with the
//! install command as its reason, rather than passing after a SKIPPED line only
//! `--nocapture` shows. Each missing client sets `missing = "<client>"`, which the tests
//! read through `#[cfg_attr(missing = "...", ignore = "...")]`.
//!
//! With `NXLOCK_REQUIRE_CLIENTS=1` (CI, once it has installed them) nothing is ignored:
//! a missing client then fails its tests. The probes run again when that variable
//! changes, or when something is installed under `tests/clients` (npm) or in Python's
//! site-packages; the tests' own probes at run time still skip, loudly, what went away
//! since.

use std::path::Path;
use std::process::Command;

/// Each client: its name in `missing = "..."`, and the program and arguments that run
/// only where it is installed.
const CLIENTS: &[(&str, &str, &[&str])] = &[
    ("redis_py", "python3", &["-c", "import redis"]),
    ("pottery", "python3", &["-c", "import pottery"]),
    ("fakeredis", "python3", &["-c", "import fakeredis"]),
    ("python_redis_lock", "python3", &["-c", "import redis_lock"]),
    ("pytest", "python3", &["-c", "import pytest"]),
    ("node", "node", &["--version"]),
    ("ioredis", "node", &["-e", "require('ioredis')"]),
    (
        "node_redlock",
        "node",
        &["-e", "require('redlock'); require('redlock5')"],
    ),
    (
        "redis_semaphore",
        "node",
        &["-e", "require('redis-semaphore')"],
    ),
];

fn main() {
    let names: Vec<String> = CLIENTS
        .iter()
        .map(|(name, _, _)| format!("\"{name}\""))
        .collect();
    println!(
        "cargo::rustc-check-cfg=cfg(missing, values({}))",
        names.join(", ")
    );
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=NXLOCK_REQUIRE_CLIENTS");
    // Only the integration tests use these; a build of the library alone (a dependent's
    // build) probes nothing. Where clients are required, nothing is ignored.
    if std::env::var("CARGO_FEATURE_CLI").is_err()
        || std::env::var("NXLOCK_REQUIRE_CLIENTS").is_ok_and(|v| v == "1")
    {
        return;
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let clients = Path::new(&manifest).join("tests/clients");
    // Installing a client changes one of these; `PATH` is not watched, so that a test
    // run with another server first on it (CI's Valkey step) rebuilds nothing.
    if clients.is_dir() {
        println!("cargo::rerun-if-changed={}", clients.display());
    }
    if let Some(site) = python_site_packages() {
        println!("cargo::rerun-if-changed={site}");
    }
    for (name, program, args) in CLIENTS {
        let runs = Command::new(program)
            .args(*args)
            .current_dir(&clients)
            .env("NODE_PATH", clients.join("node_modules"))
            .output()
            .is_ok_and(|out| out.status.success());
        if !runs {
            println!("cargo::rustc-cfg=missing=\"{name}\"");
        }
    }
}

/// Where `python3` installs packages, when there is a `python3`.
fn python_site_packages() -> Option<String> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    Path::new(&path).is_dir().then_some(path)
}
