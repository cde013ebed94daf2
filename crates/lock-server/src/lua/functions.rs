//! Redis 7 functions: `FUNCTION LOAD`'s library code, its metadata line
//! (`#!lua name=mylib`) read as Redis reads it, and the libraries and functions the
//! engine keeps. A library's code runs once, at load, in the sandbox's library
//! environment, where `redis.register_function` is all it can do.

use std::collections::{BTreeMap, HashMap};

use mlua::Function;

use super::shebang::ScriptFlags;
use crate::protocol::request::split_args;
use crate::state::scripts::{FunctionInfo, LibraryInfo};

/// A loaded library.
pub(crate) struct Library {
    /// The code as given, metadata line included (`FUNCTION LIST WITHCODE`).
    code: Vec<u8>,
    /// Its functions, in the order they were registered.
    functions: Vec<FunctionInfo>,
}

/// A function FCALL can run.
pub(crate) struct Callable {
    pub(crate) callback: Function,
    pub(crate) flags: ScriptFlags,
    /// Its name as registered (FCALL finds it whatever the case).
    pub(crate) name: String,
    library: String,
}

/// Every library, and every function by its name in lower case (Redis's functions
/// dictionary ignores case).
#[derive(Default)]
pub(crate) struct Libraries {
    libraries: BTreeMap<String, Library>,
    functions: HashMap<String, Callable>,
}

/// What a library's metadata line says: its name, and the code the engine compiles (the
/// rest, from the line's newline on, so that line numbers stay those of the code).
pub(crate) struct Metadata<'a> {
    pub(crate) name: String,
    pub(crate) source: &'a [u8],
}

/// Reads `code`'s metadata line as `functionExtractLibMetaData` does, with its errors.
pub(crate) fn metadata(code: &[u8]) -> Result<Metadata<'_>, String> {
    if !code.starts_with(b"#!") {
        return Err("ERR Missing library metadata".into());
    }
    let Some(end) = memchr::memchr(b'\n', code) else {
        return Err("ERR Invalid library metadata".into());
    };
    let parts = split_args(&code[..end])
        .filter(|parts| !parts.is_empty())
        .ok_or("ERR Invalid library metadata")?;
    let engine = String::from_utf8_lossy(parts[0].get(2..).unwrap_or_default()).into_owned();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err(
                    "ERR Invalid metadata value, name argument was given multiple times".into(),
                );
            }
            name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            continue;
        }
        return Err(format!(
            "ERR Invalid metadata value given: {}",
            String::from_utf8_lossy(part)
        ));
    }
    let name = name.ok_or("ERR Library name was not given")?;
    if !valid_name(&name) {
        return Err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("ERR Engine '{engine}' not found"));
    }
    Ok(Metadata {
        name,
        source: &code[end..],
    })
}

/// `[a-zA-Z0-9_]+`, as `functionsVerifyName` checks a library's name.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

impl Libraries {
    /// Whether library `name` is loaded.
    pub(crate) fn has_library(&self, name: &str) -> bool {
        self.libraries.contains_key(name)
    }

    /// The function `name` (any case).
    pub(crate) fn function(&self, name: &[u8]) -> Option<&Callable> {
        self.functions
            .get(&String::from_utf8_lossy(name).to_lowercase())
    }

    /// Adds library `name` with `functions` (replacing one of the same name): Redis's
    /// error when none was registered or one is already another library's.
    pub(crate) fn link(
        &mut self,
        name: &str,
        code: &[u8],
        functions: Vec<(FunctionInfo, Function)>,
    ) -> Result<(), String> {
        if functions.is_empty() {
            return Err("ERR No functions registered".into());
        }
        for (info, _) in &functions {
            if let Some(other) = self.functions.get(&info.name.to_lowercase())
                && other.library != name
            {
                return Err(format!("ERR Function {} already exists", info.name));
            }
        }
        self.unlink(name);
        let mut infos = Vec::new();
        for (info, callback) in functions {
            let flags = ScriptFlags {
                declared: true,
                no_writes: info.flags.iter().any(|f| f == "no-writes"),
                allow_cross_slot: info.flags.iter().any(|f| f == "allow-cross-slot-keys"),
            };
            self.functions.insert(
                info.name.to_lowercase(),
                Callable {
                    callback,
                    flags,
                    name: info.name.clone(),
                    library: name.to_string(),
                },
            );
            infos.push(info);
        }
        self.libraries.insert(
            name.to_string(),
            Library {
                code: code.to_vec(),
                functions: infos,
            },
        );
        Ok(())
    }

    /// Removes library `name` and its functions: false if there was none.
    pub(crate) fn unlink(&mut self, name: &str) -> bool {
        let Some(library) = self.libraries.remove(name) else {
            return false;
        };
        for function in &library.functions {
            self.functions.remove(&function.name.to_lowercase());
        }
        true
    }

    /// FUNCTION FLUSH.
    pub(crate) fn clear(&mut self) {
        self.libraries.clear();
        self.functions.clear();
    }

    /// FUNCTION LIST's view of every library, by name.
    pub(crate) fn list(&self) -> Vec<LibraryInfo> {
        self.libraries
            .iter()
            .map(|(name, library)| LibraryInfo {
                name: name.clone(),
                code: library.code.clone(),
                functions: library.functions.clone(),
            })
            .collect()
    }

    /// How many libraries and functions are loaded (FUNCTION STATS).
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.libraries.len(), self.functions.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_read_as_redis_reads_it() {
        let read = metadata(b"#!lua name=mylib\nreturn 1").unwrap();
        assert_eq!(read.name, "mylib");
        assert_eq!(read.source, b"\nreturn 1");
        assert_eq!(metadata(b"#!LUA NAME=x\n").unwrap().name, "x");
        for (code, error) in [
            (&b"return 1"[..], "ERR Missing library metadata"),
            (b"#!lua name=x", "ERR Invalid library metadata"),
            (b"#!lua\n", "ERR Library name was not given"),
            (
                b"#!lua name=a name=b\n",
                "ERR Invalid metadata value, name argument was given multiple times",
            ),
            (
                b"#!lua foo=bar\n",
                "ERR Invalid metadata value given: foo=bar",
            ),
            (
                b"#!lua name=a-b\n",
                "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long",
            ),
            (b"#!js name=a\n", "ERR Engine 'js' not found"),
        ] {
            assert_eq!(metadata(code).err().as_deref(), Some(error), "{code:?}");
        }
    }
}
