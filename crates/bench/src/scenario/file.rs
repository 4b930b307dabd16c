//! The scenario file format: parsing, `--short` overrides, and error messages
//! that name the file, the line and the key. The format is documented in
//! `scenarios/README.md`.
//!
//! A file is read twice: once for its `kind` only, then in full against the
//! parameter struct of that kind, so unknown keys are rejected with toml's own
//! line-and-column messages. Semantic checks keep each value's span
//! (`toml::Spanned`) to point at the offending line the same way.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;
use toml::Spanned;

/// A duration written as `"300ms"`, `"1.5s"`, `"3m"`, `"1h"` or a number of
/// seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dur(pub Duration);

impl Dur {
    pub fn parse(s: &str) -> Result<Dur, String> {
        let s = s.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: f64 = num.parse().map_err(|_| {
            format!("`{s}` is not a duration (examples: \"300ms\", \"2s\", \"3m\")")
        })?;
        let scale = match unit.trim() {
            "ms" => 1e-3,
            "s" | "" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            other => {
                return Err(format!(
                    "unknown duration unit `{other}` in `{s}` (use ms, s, m or h)"
                ))
            }
        };
        let secs = n * scale;
        if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
            return Err(format!("`{s}` is out of range"));
        }
        Ok(Dur(Duration::from_secs_f64(secs)))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"300ms\", \"2s\", \"3m\" or a number of seconds")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Dur, E> {
                Dur::parse(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Dur, E> {
                u64::try_from(v)
                    .map(|s| Dur(Duration::from_secs(s)))
                    .map_err(|_| E::custom("a duration cannot be negative"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Dur, E> {
                Dur::parse(&v.to_string()).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

type P<T> = Option<Spanned<T>>;

/// `[[target]]`: a server to start (`command`) or to reach (`addr`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    pub name: Spanned<String>,
    /// Program and arguments; `{port}`, `{dir}` and `{variant}` are replaced.
    pub command: P<String>,
    /// `host:port` of a server already running.
    pub addr: P<String>,
    /// One target per entry, each with `{variant}` substituted.
    pub variants: P<Vec<String>>,
}

/// Parameters of `kind = "bloom-dedup"`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BloomSpec {
    pub key: P<String>,
    pub error_rate: P<f64>,
    pub capacity: P<u64>,
    pub workers: P<u64>,
    pub check_workers: P<u64>,
    pub connections: P<u64>,
    pub warmup: P<Dur>,
    pub duration: P<Dur>,
}

/// Parameters of `kind = "persistence"`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersistenceSpec {
    pub tests: P<Vec<String>>,
    pub sizes: P<Vec<u64>>,
    pub clients: P<Vec<u64>>,
    pub requests: P<u64>,
    pub keyspace: P<u64>,
}

/// Parameters of `kind = "cache-schemas"`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    pub methods: P<Vec<String>>,
    pub records: P<Vec<u64>>,
    pub schemas: P<Vec<String>>,
    pub read_passes: P<u64>,
    pub connections: P<u64>,
    pub pipeline: P<u64>,
    pub iterations: P<u64>,
    pub arrangements: P<Vec<String>>,
    pub arrangement_records: P<Vec<u64>>,
    pub variants_per_product: P<u64>,
}

/// Parameters of `kind = "batching"`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchingSpec {
    pub modes: P<Vec<String>>,
    pub callers: P<Vec<u64>>,
    pub pipelines: P<Vec<u64>>,
    pub keys: P<u64>,
    pub key_size: P<u64>,
    pub value_size: P<u64>,
    pub get_ratio: P<f64>,
    pub duration: P<Dur>,
    pub connections: P<u64>,
}

/// The whole file, with the parameter tables of one kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Doc<S> {
    title: String,
    /// Read by the first pass; accepted here so it is not an unknown key.
    #[serde(rename = "kind")]
    _kind: Spanned<String>,
    description: Option<String>,
    seed: Option<u64>,
    interval: P<Dur>,
    #[serde(default)]
    target: Vec<TargetSpec>,
    params: Option<S>,
    short: Option<S>,
}

#[derive(Deserialize)]
struct Head {
    kind: Option<Spanned<String>>,
}

pub const KINDS: [&str; 4] = ["bloom-dedup", "persistence", "cache-schemas", "batching"];

#[derive(Debug, Clone)]
pub enum Params {
    Bloom(Box<BloomSpec>, Box<BloomSpec>),
    Persistence(Box<PersistenceSpec>, Box<PersistenceSpec>),
    Cache(Box<CacheSpec>, Box<CacheSpec>),
    Batching(Box<BatchingSpec>, Box<BatchingSpec>),
}

/// A parsed scenario file, before `--short` is applied.
#[derive(Debug, Clone)]
pub struct ScenarioFile {
    pub src: Source,
    pub title: String,
    pub description: Option<String>,
    pub seed: Option<u64>,
    pub interval: P<Dur>,
    pub targets: Vec<TargetSpec>,
    /// `[params]` and `[short]` of the file's kind.
    pub params: Params,
}

/// The file's name and text, for messages that point into it.
#[derive(Debug, Clone)]
pub struct Source {
    pub path: String,
    pub text: String,
}

impl Source {
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset).unwrap_or(&self.text);
        let line = before.matches('\n').count() + 1;
        let col = before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1;
        (line, col)
    }

    /// An error about the value at `span`, naming the key.
    pub fn error_at(&self, span: Range<usize>, key: &str, msg: &str) -> anyhow::Error {
        let (line, col) = self.line_col(span.start);
        let shown = self
            .text
            .lines()
            .nth(line - 1)
            .map(|l| format!("\n  {line} | {}", l.trim_end()))
            .unwrap_or_default();
        anyhow::anyhow!(
            "{}: line {line}, column {col}: key `{key}`: {msg}{shown}",
            self.path
        )
    }

    /// Wrap toml's message (which already carries line and column) with the
    /// file name and the key written on the offending line.
    fn toml_error(&self, e: &toml::de::Error) -> anyhow::Error {
        let mut msg = format!("{}: {}", self.path, e.message());
        if let Some(span) = e.span() {
            let (line, col) = self.line_col(span.start);
            msg = format!("{}: line {line}, column {col}", self.path);
            if let Some(key) = self.key_on_line(line) {
                msg.push_str(&format!(": key `{key}`"));
            }
            msg.push_str(&format!(": {}", e.message().trim_end()));
            if let Some(l) = self.text.lines().nth(line - 1) {
                msg.push_str(&format!("\n  {line} | {}", l.trim_end()));
            }
        }
        anyhow::anyhow!(msg)
    }

    fn key_on_line(&self, line: usize) -> Option<String> {
        let l = self.text.lines().nth(line.checked_sub(1)?)?.trim();
        if l.starts_with('[') {
            return Some(l.trim_matches(|c| c == '[' || c == ']').trim().to_string());
        }
        let (k, _) = l.split_once('=')?;
        let k = k.trim().trim_matches('"');
        (!k.is_empty()).then(|| k.to_string())
    }
}

pub fn load(path: &Path) -> anyhow::Result<ScenarioFile> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("cannot read scenario file {}: {e}", path.display()))?;
    parse(&path.display().to_string(), &text)
}

pub fn parse(path: &str, text: &str) -> anyhow::Result<ScenarioFile> {
    let src = Source {
        path: path.to_string(),
        text: text.to_string(),
    };
    let head: Head = toml::from_str(text).map_err(|e| src.toml_error(&e))?;
    let Some(kind) = head.kind else {
        return Err(anyhow::anyhow!(
            "{path}: key `kind` is missing (one of: {})",
            KINDS.join(", ")
        ));
    };
    fn doc<S: serde::de::DeserializeOwned + Default>(
        src: &Source,
    ) -> anyhow::Result<(Doc<S>, Box<S>, Box<S>)> {
        let mut d: Doc<S> = toml::from_str(&src.text).map_err(|e| src.toml_error(&e))?;
        let p = Box::new(d.params.take().unwrap_or_default());
        let s = Box::new(d.short.take().unwrap_or_default());
        Ok((d, p, s))
    }
    macro_rules! build {
        ($variant:ident, $spec:ty) => {{
            let (d, p, s) = doc::<$spec>(&src)?;
            let params = Params::$variant(p, s);
            (d.title, d.description, d.seed, d.interval, d.target, params)
        }};
    }
    let (title, description, seed, interval, targets, params) = match kind.get_ref().as_str() {
        "bloom-dedup" => build!(Bloom, BloomSpec),
        "persistence" => build!(Persistence, PersistenceSpec),
        "cache-schemas" => build!(Cache, CacheSpec),
        "batching" => build!(Batching, BatchingSpec),
        other => {
            return Err(src.error_at(
                kind.span(),
                "kind",
                &format!("unknown kind `{other}` (one of: {})", KINDS.join(", ")),
            ))
        }
    };
    let file = ScenarioFile {
        src,
        title,
        description,
        seed,
        interval,
        targets,
        params,
    };
    file.check_targets()?;
    Ok(file)
}

impl ScenarioFile {
    fn check_targets(&self) -> anyhow::Result<()> {
        let mut names: Vec<&str> = Vec::new();
        for t in &self.targets {
            let name = t.name.get_ref();
            if name.trim().is_empty() {
                return Err(self.src.error_at(t.name.span(), "target.name", "is empty"));
            }
            if names.contains(&name.as_str()) {
                return Err(self.src.error_at(
                    t.name.span(),
                    "target.name",
                    &format!("`{name}` names two targets"),
                ));
            }
            names.push(name);
            match (&t.command, &t.addr) {
                (Some(_), Some(a)) => {
                    return Err(self.src.error_at(
                        a.span(),
                        "target.addr",
                        "a target has either `command` or `addr`, not both",
                    ))
                }
                (None, None) => {
                    return Err(self.src.error_at(
                        t.name.span(),
                        "target",
                        &format!(
                        "target `{name}` needs `command` (a server to start) or `addr` (host:port)"
                    ),
                    ))
                }
                (Some(c), None) => {
                    if !c.get_ref().contains("{port}") {
                        return Err(self.src.error_at(
                            c.span(),
                            "target.command",
                            "must contain {port}, where the tool puts the port it picked",
                        ));
                    }
                    if crate::scenario::server::split_command(c.get_ref()).is_err() {
                        return Err(self.src.error_at(
                            c.span(),
                            "target.command",
                            "has an unterminated quote",
                        ));
                    }
                }
                (None, Some(a)) => {
                    if !valid_addr(a.get_ref()) {
                        return Err(self.src.error_at(
                            a.span(),
                            "target.addr",
                            &format!("`{}` is not host:port", a.get_ref()),
                        ));
                    }
                }
            }
            if let Some(v) = &t.variants {
                if v.get_ref().is_empty() {
                    return Err(self.src.error_at(v.span(), "target.variants", "is empty"));
                }
            }
        }
        Ok(())
    }
}

pub fn valid_addr(a: &str) -> bool {
    match a.rsplit_once(':') {
        Some((host, port)) => !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0),
        None => false,
    }
}

/// Picks each parameter from `[short]` (under `--short`), else `[params]`,
/// else its default, and checks it, naming the key and line on failure.
pub struct Resolver<'a> {
    pub src: &'a Source,
    pub short: bool,
}

impl Resolver<'_> {
    pub fn get<T: Clone>(
        &self,
        key: &str,
        base: &P<T>,
        short: &P<T>,
        default: T,
        check: impl Fn(&T) -> Result<(), String>,
    ) -> anyhow::Result<T> {
        let (section, chosen) = match (self.short, short, base) {
            (true, Some(s), _) => ("short", Some(s)),
            (_, _, Some(b)) => ("params", Some(b)),
            _ => ("params", None),
        };
        match chosen {
            Some(v) => {
                check(v.get_ref())
                    .map_err(|m| self.src.error_at(v.span(), &format!("{section}.{key}"), &m))?;
                Ok(v.get_ref().clone())
            }
            None => Ok(default),
        }
    }
}

/// Common checks for `Resolver::get`.
pub fn positive(v: &u64) -> Result<(), String> {
    if *v == 0 {
        Err("must be at least 1".into())
    } else {
        Ok(())
    }
}

// `&Vec` because checks receive `&T` with `T` the parameter's own type.
#[allow(clippy::ptr_arg)]
pub fn positive_list(v: &Vec<u64>) -> Result<(), String> {
    if v.is_empty() {
        return Err("must list at least one value".into());
    }
    if v.contains(&0) {
        return Err("values must be at least 1".into());
    }
    Ok(())
}

pub fn one_of<'a>(allowed: &'a [&'a str]) -> impl Fn(&Vec<String>) -> Result<(), String> + 'a {
    move |v: &Vec<String>| {
        if v.is_empty() {
            return Err("must list at least one value".into());
        }
        for s in v {
            if !allowed.contains(&s.as_str()) {
                return Err(format!(
                    "unknown value `{s}` (one of: {})",
                    allowed.join(", ")
                ));
            }
        }
        Ok(())
    }
}

pub fn nonzero_dur(v: &Dur) -> Result<(), String> {
    if v.0.is_zero() {
        Err("must be longer than zero".into())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
title = "bloom"
kind = "bloom-dedup"

[[target]]
name = "redis"
command = "redis-server --port {port} --save ''"

[[target]]
name = "other"
addr = "127.0.0.1:6379"

[params]
capacity = 1000
warmup = "1.5s"
duration = "3m"

[short]
capacity = 10
"#;

    fn err(text: &str) -> String {
        format!("{:#}", parse("s.toml", text).expect_err("should fail"))
    }

    #[test]
    fn good_file_parses_and_short_overrides() {
        let f = parse("s.toml", GOOD).unwrap();
        assert_eq!(f.title, "bloom");
        assert_eq!(f.targets.len(), 2);
        let Params::Bloom(p, s) = &f.params else {
            panic!("kind")
        };
        let full = Resolver {
            src: &f.src,
            short: false,
        };
        let short = Resolver {
            src: &f.src,
            short: true,
        };
        let cap = |r: &Resolver| r.get("capacity", &p.capacity, &s.capacity, 5, positive);
        assert_eq!(cap(&full).unwrap(), 1000);
        assert_eq!(cap(&short).unwrap(), 10);
        let warm = full.get("warmup", &p.warmup, &s.warmup, Dur(Duration::ZERO), |_| {
            Ok(())
        });
        assert_eq!(warm.unwrap().0, Duration::from_millis(1500));
        let dur = short.get(
            "duration",
            &p.duration,
            &s.duration,
            Dur(Duration::ZERO),
            |_| Ok(()),
        );
        assert_eq!(dur.unwrap().0, Duration::from_secs(180));
        let workers = full.get("workers", &p.workers, &s.workers, 20, positive);
        assert_eq!(workers.unwrap(), 20);
    }

    #[test]
    fn syntax_error_names_file_and_line() {
        let text = GOOD.replace("capacity = 10\n", "capacity = = 10\n");
        let m = err(&text);
        assert!(m.contains("s.toml"), "{m}");
        assert!(m.contains("line 19"), "{m}");
        assert!(m.contains("capacity"), "{m}");
    }

    #[test]
    fn unknown_key_names_line_and_key() {
        let text = GOOD.replace("duration = \"3m\"", "durration = \"3m\"");
        let m = err(&text);
        assert!(m.contains("line 16"), "{m}");
        assert!(m.contains("durration"), "{m}");
        let text = GOOD.replace("name = \"other\"", "name = \"other\"\nport = 5");
        let m = err(&text);
        assert!(m.contains("line 11"), "{m}");
        assert!(m.contains("`port`"), "{m}");
    }

    #[test]
    fn wrong_type_names_line_and_key() {
        let text = GOOD.replace("capacity = 1000", "capacity = \"lots\"");
        let m = err(&text);
        assert!(m.contains("line 14"), "{m}");
        assert!(m.contains("key `capacity`"), "{m}");
        let text = GOOD.replace("warmup = \"1.5s\"", "warmup = \"1.5 fortnights\"");
        let m = err(&text);
        assert!(m.contains("line 15"), "{m}");
        assert!(m.contains("key `warmup`"), "{m}");
        assert!(m.contains("unit"), "{m}");
    }

    #[test]
    fn bad_value_names_line_and_key() {
        let text = GOOD.replace("capacity = 10\n", "capacity = 0\n");
        let f = parse("s.toml", &text).unwrap();
        let Params::Bloom(p, s) = &f.params else {
            panic!("kind")
        };
        let r = Resolver {
            src: &f.src,
            short: true,
        };
        let m = format!(
            "{:#}",
            r.get("capacity", &p.capacity, &s.capacity, 5, positive)
                .unwrap_err()
        );
        assert!(m.contains("line 19"), "{m}");
        assert!(m.contains("`short.capacity`"), "{m}");
        assert!(m.contains("at least 1"), "{m}");
    }

    #[test]
    fn bad_kind_and_targets_are_named() {
        let m = err(&GOOD.replace("bloom-dedup", "bloom"));
        assert!(m.contains("line 3") && m.contains("`kind`"), "{m}");
        assert!(m.contains("batching"), "{m}");
        let m = err(&GOOD.replace("kind = \"bloom-dedup\"\n", ""));
        assert!(m.contains("`kind` is missing"), "{m}");
        let m = err(&GOOD.replace("--port {port}", "--port 7000"));
        assert!(m.contains("line 7") && m.contains("target.command"), "{m}");
        let m = err(&GOOD.replace("127.0.0.1:6379", "localhost"));
        assert!(m.contains("line 11") && m.contains("target.addr"), "{m}");
        let m = err(&GOOD.replace("\"other\"", "\"redis\""));
        assert!(
            m.contains("line 10") && m.contains("names two targets"),
            "{m}"
        );
        let m = err(&GOOD.replace("--save ''", "--save '"));
        assert!(m.contains("unterminated quote"), "{m}");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(Dur::parse("300ms").unwrap().0, Duration::from_millis(300));
        assert_eq!(Dur::parse("2").unwrap().0, Duration::from_secs(2));
        assert_eq!(Dur::parse("0.3s").unwrap().0, Duration::from_millis(300));
        assert_eq!(Dur::parse("1h").unwrap().0, Duration::from_secs(3600));
        assert!(Dur::parse("fast").is_err());
        assert!(Dur::parse("3y").is_err());
    }
}
