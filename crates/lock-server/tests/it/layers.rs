//! The server's modules are layers, each using only the layers below it (see the crate's
//! documentation). This reads every source file's code (not its comments) for paths into
//! the crate and fails on any that climbs; and it checks that the command table is looked
//! up by name only where a command arrives: once per client request, once per script
//! call, and where the server makes a command of its own.

use std::path::{Path, PathBuf};

/// The layers, bottom first, by top-level module.
const LAYERS: &[&[&str]] = &[
    &["protocol"],
    &["state"],
    &["lua"],
    &["commands"],
    &["table"],
    &["run"],
    &["connection", "server", "double"],
    &["lib"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|names| names.contains(&module))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// A file's code without its comments (doc links may point anywhere).
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .expect("a source file")
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level module of `file` (relative to `src`): `lib` for the crate root.
fn top_module(file: &Path) -> String {
    let first = file.components().next().expect("a path");
    let name = first.as_os_str().to_string_lossy();
    name.trim_end_matches(".rs").to_string()
}

/// The top-level modules `code` names through `crate::`, and through `super::` where
/// that is the crate root (in a layer's `mod.rs`).
fn named_modules(code: &str, super_is_root: bool) -> Vec<String> {
    let mut names = Vec::new();
    for (prefix, applies) in [("crate::", true), ("super::", super_is_root)] {
        if !applies {
            continue;
        }
        for (at, _) in code.match_indices(prefix) {
            let rest = &code[at + prefix.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.push(name);
            }
        }
        // `use crate::{a::x, b::y}`.
        for (at, _) in code.match_indices(&format!("{prefix}{{")) {
            let rest = &code[at + prefix.len() + 1..];
            let group = &rest[..rest.find('}').unwrap_or(rest.len())];
            for item in group.split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    names.push(name);
                }
            }
        }
    }
    names
}

#[test]
fn no_module_uses_a_layer_above_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 40, "found only {} files", files.len());
    let mut climbs = Vec::new();
    for path in &files {
        let file = path.strip_prefix(&src).expect("under src");
        let module = top_module(file);
        let Some(own) = layer_of(&module) else {
            panic!(
                "{} is in no layer: add its module to LAYERS",
                file.display()
            );
        };
        let depth = file.components().count();
        let super_is_root = depth == 2 && file.ends_with("mod.rs");
        for named in named_modules(&code(path), super_is_root) {
            // Names that are not modules of this crate (`crate::Server`, re-exports).
            let Some(theirs) = layer_of(&named) else {
                continue;
            };
            if theirs > own {
                climbs.push(format!(
                    "{} (layer {}) uses {named} (layer {})",
                    file.display(),
                    own + 1,
                    theirs + 1
                ));
            }
        }
    }
    climbs.sort();
    climbs.dedup();
    assert!(
        climbs.is_empty(),
        "imports that climb:\n{}",
        climbs.join("\n")
    );
}

#[test]
fn the_command_table_is_looked_up_by_name_only_where_commands_arrive() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut lookups = Vec::new();
    for path in &files {
        let file = path.strip_prefix(&src).expect("under src");
        if top_module(file) == "table" {
            continue;
        }
        let code = code(path);
        let count = [
            "table::lookup(",
            "table::lookup_in(",
            "table::named(",
            "table::named_in(",
        ]
        .iter()
        .map(|call| code.matches(call).count())
        .sum::<usize>();
        if count > 0 {
            lookups.push((file.to_string_lossy().replace('\\', "/"), count));
        }
    }
    lookups.sort();
    assert_eq!(
        lookups,
        [
            // A client's request, read off the socket.
            ("connection.rs".to_string(), 1),
            // The LPUSH that gives back what a client that left had popped.
            ("run/blocked.rs".to_string(), 1),
            // A script's `redis.call`.
            ("run/scripting.rs".to_string(), 1),
        ]
    );
}
