//! Function libraries (FUNCTION LOAD ... FCALL): the registry every thread
//! shares, script flags, and the `#!` header of libraries and EVAL bodies.

use bytes::Bytes;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The flags a script or function declares (`#!lua flags=...`,
/// `register_function{flags=...}`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScriptFlags(u8);

impl ScriptFlags {
    pub const NO_WRITES: ScriptFlags = ScriptFlags(1);
    pub const ALLOW_OOM: ScriptFlags = ScriptFlags(2);
    pub const ALLOW_STALE: ScriptFlags = ScriptFlags(4);
    pub const NO_CLUSTER: ScriptFlags = ScriptFlags(8);
    pub const ALLOW_CROSS_SLOT: ScriptFlags = ScriptFlags(16);

    /// Names in the order Redis lists them.
    pub const NAMES: &'static [(ScriptFlags, &'static str)] = &[
        (ScriptFlags::NO_WRITES, "no-writes"),
        (ScriptFlags::ALLOW_OOM, "allow-oom"),
        (ScriptFlags::ALLOW_STALE, "allow-stale"),
        (ScriptFlags::NO_CLUSTER, "no-cluster"),
        (ScriptFlags::ALLOW_CROSS_SLOT, "allow-cross-slot-keys"),
    ];

    pub fn parse(name: &[u8]) -> Option<ScriptFlags> {
        Self::NAMES
            .iter()
            .find(|(_, n)| n.as_bytes() == name)
            .map(|(f, _)| *f)
    }

    pub fn contains(self, f: ScriptFlags) -> bool {
        self.0 & f.0 == f.0
    }

    pub fn insert(&mut self, f: ScriptFlags) {
        self.0 |= f.0;
    }

    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(f, _)| self.contains(*f))
            .map(|(_, n)| *n)
            .collect()
    }
}

/// One function a library registered.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionInfo {
    pub name: String,
    pub description: Option<String>,
    pub flags: ScriptFlags,
}

/// What a library's header says.
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryMeta {
    pub engine: String,
    pub name: String,
}

pub struct Library {
    pub name: String,
    /// The engine as Redis reports it (`LUA`).
    pub engine: String,
    pub code: Bytes,
    pub functions: Vec<FunctionInfo>,
    /// Unique per load, so each VM knows whether its compiled copy is current.
    pub id: u64,
}

static NEXT_LIBRARY: AtomicU64 = AtomicU64::new(1);

impl Library {
    pub fn new(meta: LibraryMeta, code: Bytes, mut functions: Vec<FunctionInfo>) -> Library {
        functions.sort_by(|a, b| a.name.cmp(&b.name));
        Library {
            name: meta.name,
            engine: meta.engine.to_ascii_uppercase(),
            code,
            functions,
            id: NEXT_LIBRARY.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// A function by name, which ignores case as Redis's names do.
    pub fn function(&self, name: &str) -> Option<&FunctionInfo> {
        self.functions
            .iter()
            .find(|f| f.name.eq_ignore_ascii_case(name))
    }
}

/// Every library, and every function by name. Function names ignore case
/// (Redis keeps them in a case-insensitive table): `functions` is keyed by
/// the lowercase name; library names are exact.
#[derive(Default, Clone)]
pub struct Registry {
    pub libraries: BTreeMap<String, Arc<Library>>,
    pub functions: BTreeMap<String, Arc<Library>>,
}

impl Registry {
    /// Add `lib`; with `replace`, a library of the same name goes first.
    /// Errors are Redis's texts.
    pub fn add(&mut self, lib: Library, replace: bool) -> Result<(), String> {
        let old = self.libraries.get(&lib.name).cloned();
        if old.is_some() && !replace {
            return Err(format!("Library '{}' already exists", lib.name));
        }
        for f in &lib.functions {
            if let Some(owner) = self.functions.get(&f.name.to_ascii_lowercase()) {
                if owner.name != lib.name {
                    return Err(format!("Function {} already exists", f.name));
                }
            }
        }
        if let Some(old) = old {
            self.remove(&old.name);
        }
        let lib = Arc::new(lib);
        for f in &lib.functions {
            self.functions
                .insert(f.name.to_ascii_lowercase(), lib.clone());
        }
        self.libraries.insert(lib.name.clone(), lib);
        Ok(())
    }

    pub fn remove(&mut self, name: &str) -> Option<Arc<Library>> {
        let lib = self.libraries.remove(name)?;
        for f in &lib.functions {
            self.functions.remove(&f.name.to_ascii_lowercase());
        }
        Some(lib)
    }

    pub fn function_count(&self) -> usize {
        self.functions.len()
    }
}

/// Library and function names: letters, digits and underscores, at least one.
pub fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_')
}

/// The header of a library: `#!<engine> name=<name>`, ended by a newline.
/// Errors are Redis's, checked in its order: the values, the name, then the
/// engine.
pub fn parse_library_header(code: &[u8]) -> Result<LibraryMeta, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = code.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let line = String::from_utf8_lossy(&code[..end]);
    let mut parts = line.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("#!")[2..].to_string();
    let mut name = None;
    for p in parts {
        match p.strip_prefix("name=") {
            Some(_) if name.is_some() => {
                return Err("Invalid metadata value, name argument was given multiple times".into())
            }
            Some(n) => name = Some(n.to_string()),
            None => return Err(format!("Invalid metadata value given: {p}")),
        }
    }
    let name = name.ok_or("Library name was not given")?;
    if !valid_name(name.as_bytes()) {
        return Err("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into());
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(format!("Engine '{engine}' not found"));
    }
    Ok(LibraryMeta { engine, name })
}

/// The `#!lua [flags=a,b]` line an EVAL body may start with: its flags, or
/// `None` for a body without one. Errors are Redis's.
pub fn parse_eval_shebang(body: &[u8]) -> Result<Option<ScriptFlags>, String> {
    if !body.starts_with(b"#!") {
        return Ok(None);
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err("Invalid script shebang".into());
    };
    let text = String::from_utf8_lossy(&body[..end]);
    let mut parts = text.split_ascii_whitespace();
    let engine = parts.next().unwrap_or("#!");
    if engine != "#!lua" {
        return Err(format!("Unexpected engine in script shebang: {engine}"));
    }
    let mut flags = ScriptFlags::default();
    for p in parts {
        let Some(list) = p.strip_prefix("flags=") else {
            return Err(format!("Unknown lua shebang option: {p}"));
        };
        // `flags=` alone is no flags; an empty one between commas is an error.
        for f in list.split(',').filter(|_| !list.is_empty()) {
            match ScriptFlags::parse(f.as_bytes()) {
                Some(flag) => flags.insert(flag),
                None => return Err(format!("Unexpected flag in script shebang: {f}")),
            }
        }
    }
    Ok(Some(flags))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn library_headers() {
        let m = parse_library_header(b"#!lua name=mylib\nreturn 1").unwrap();
        assert_eq!(m.name, "mylib");
        let err = |code: &[u8]| parse_library_header(code).unwrap_err();
        assert_eq!(err(b"return 1"), "Missing library metadata");
        assert_eq!(err(b"#!lua name=a"), "Invalid library metadata");
        assert_eq!(err(b"#!lua\n"), "Library name was not given");
        assert_eq!(
            err(b"#!lua name=a-b\n"),
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
        );
        assert_eq!(
            err(b"#!lua name=a foo=bar\n"),
            "Invalid metadata value given: foo=bar"
        );
        assert_eq!(
            err(b"#!lua name=a name=b\n"),
            "Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(err(b"#!foo name=a\n"), "Engine 'foo' not found");
        assert_eq!(err(b"#! name=a\n"), "Engine '' not found");
        assert_eq!(parse_library_header(b"#!LUA  name=a \n").unwrap().name, "a");
    }

    #[test]
    fn eval_shebangs() {
        assert_eq!(parse_eval_shebang(b"return 1"), Ok(None));
        assert_eq!(
            parse_eval_shebang(b"#!lua\nreturn 1"),
            Ok(Some(ScriptFlags::default()))
        );
        let f = parse_eval_shebang(b"#!lua flags=no-writes,allow-oom\n")
            .unwrap()
            .unwrap();
        assert!(f.contains(ScriptFlags::NO_WRITES) && f.contains(ScriptFlags::ALLOW_OOM));
        assert_eq!(
            parse_eval_shebang(b"#!luax\nreturn 1"),
            Err("Unexpected engine in script shebang: #!luax".into())
        );
        assert_eq!(
            parse_eval_shebang(b"#!lua name=x\n"),
            Err("Unknown lua shebang option: name=x".into())
        );
        assert_eq!(
            parse_eval_shebang(b"#!lua flags=bogus\n"),
            Err("Unexpected flag in script shebang: bogus".into())
        );
        assert_eq!(
            parse_eval_shebang(b"#!lua"),
            Err("Invalid script shebang".into())
        );
        assert_eq!(
            parse_eval_shebang(b"#!lua flags=no-writes,,allow-oom\n"),
            Err("Unexpected flag in script shebang: ".into())
        );
        assert_eq!(
            parse_eval_shebang(b"#!lua flags=\r\n"),
            Ok(Some(ScriptFlags::default()))
        );
    }

    #[test]
    fn registry_names_are_unique() {
        let meta = |n: &str| LibraryMeta {
            engine: "lua".into(),
            name: n.into(),
        };
        let f = |n: &str| FunctionInfo {
            name: n.into(),
            description: None,
            flags: ScriptFlags::default(),
        };
        let mut r = Registry::default();
        r.add(Library::new(meta("a"), Bytes::new(), vec![f("f")]), false)
            .unwrap();
        assert_eq!(
            r.add(Library::new(meta("a"), Bytes::new(), vec![f("g")]), false),
            Err("Library 'a' already exists".into())
        );
        assert_eq!(
            r.add(Library::new(meta("b"), Bytes::new(), vec![f("f")]), false),
            Err("Function f already exists".into())
        );
        r.add(Library::new(meta("a"), Bytes::new(), vec![f("g")]), true)
            .unwrap();
        assert!(r.functions.contains_key("g") && !r.functions.contains_key("f"));
    }
}
