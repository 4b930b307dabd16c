//! `keel-bench run FILE`: scenario files (TOML, see `scenarios/README.md`),
//! the servers they start, and the four seed scenarios. Each target is run
//! in turn (started, measured step by step, stopped), so one server's load
//! never disturbs another's numbers; the results form one `Run` with an
//! outcome per step and target.
//!
//! - `file`: the format, `--short` overrides, messages naming line and key.
//! - `server`: starting, probing and stopping servers; admin commands.
//! - `workloads`: what each step sends.
//! - `bloom`, `persistence`, `cache`, `batching`: the scenario kinds.
//! - `nbomber`: the per-step ok/fail tables of the Bloom study.

pub mod batching;
pub mod bloom;
pub mod cache;
pub mod file;
pub mod nbomber;
pub mod persistence;
pub mod server;
pub mod workloads;

use crate::load::{LoadSpec, Mode, Until, Workload};
use crate::model::{Measure, Outcome, Run, Step, Target};
use file::{Params, Resolver, ScenarioFile};
use server::{Admin, Bins, Server};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// What a scenario kind does, for any target.
pub trait Kind {
    /// Step names, the same for every target.
    fn steps(&self) -> Vec<String>;
    /// Run every step on one target: one outcome per step, in order.
    fn run(&self, t: &mut TargetRun) -> Vec<Outcome>;
    /// Lines describing the configuration, shown under the tables.
    fn notes(&self) -> Vec<String>;
    /// Extra text printed before the final table (per-step tables).
    fn extra_report(&self, _run: &Run) -> String {
        String::new()
    }
}

/// A target after `variants` are expanded.
#[derive(Debug, Clone)]
pub struct TargetPlan {
    pub name: String,
    pub command: Option<String>,
    pub addr: Option<String>,
}

/// One target while it is measured: its address, its process when this run
/// started it, and the run-wide settings steps need.
pub struct TargetRun<'a> {
    pub name: String,
    pub addr: String,
    pub server: Option<&'a mut Server>,
    pub seed: u64,
    pub interval: Duration,
    /// Step-specific lines gathered while running (shown as notes).
    pub notes: Vec<String>,
}

impl TargetRun<'_> {
    pub fn admin(&self) -> anyhow::Result<Admin> {
        Admin::connect(&self.addr, Duration::from_secs(2))
    }

    /// `Some(Unsupported)` when the server lacks one of `commands`.
    pub fn lacks(&self, commands: &[&str]) -> Option<Outcome> {
        let mut a = match self.admin() {
            Ok(a) => a,
            Err(e) => {
                return Some(Outcome::Failed {
                    reason: format!("{e:#}"),
                })
            }
        };
        match a.missing_command(commands) {
            Ok(Some(name)) => Some(unsupported(&name)),
            Ok(None) => None,
            Err(e) => Some(Outcome::Failed {
                reason: format!("{e:#}"),
            }),
        }
    }

    pub fn spec(&self, mode: Mode, until: Until, label: &str) -> LoadSpec {
        let mut s = LoadSpec::new(&self.addr, mode, until);
        s.interval = self.interval;
        // Each step draws its own stream: steps that run together (Bloom
        // inserts and checks) or one after another (warm-up, then inserts)
        // must not generate the same items.
        s.seed = label
            .bytes()
            .fold(self.seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        s.progress = Some(format!("{} {label}", self.name));
        s
    }

    /// Run loads together and turn each into an outcome, with the server's
    /// CPU time (shared out by requests) for servers this run started.
    pub fn measure(&mut self, parts: Vec<(LoadSpec, Arc<dyn Workload>)>) -> Vec<Outcome> {
        let cpu_before = self.server.as_ref().and_then(|s| s.cpu());
        let results = crate::load::run_together(parts);
        let cpu_after = self.server.as_ref().and_then(|s| s.cpu());
        let died = self.server.as_mut().and_then(|s| s.died());
        let server_cpu = match (cpu_before, cpu_after) {
            (Some(b), Some(a)) if a.source == b.source => {
                Some((a.total.saturating_sub(b.total), a.source))
            }
            _ => None,
        };
        let total: u64 = results
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|m| m.ok + m.failed)
            .sum();
        results
            .into_iter()
            .map(|r| match r {
                Ok(mut m) => {
                    if let (Some((cpu, source)), true) = (server_cpu, total > 0) {
                        let share = (m.ok + m.failed) as f64 / total as f64;
                        m.server_cpu = Some(cpu.mul_f64(share));
                        m.server_cpu_source = Some(source);
                    }
                    outcome_of(m, died.as_deref())
                }
                Err(e) => Outcome::Failed {
                    reason: match &died {
                        Some(d) => d.clone(),
                        None => format!("{e:#}"),
                    },
                },
            })
            .collect()
    }

    pub fn measure_one(&mut self, spec: LoadSpec, w: Arc<dyn Workload>) -> Outcome {
        self.measure(vec![(spec, w)])
            .pop()
            .unwrap_or_else(|| Outcome::Failed {
                reason: "no result".into(),
            })
    }
}

pub fn unsupported(command: &str) -> Outcome {
    Outcome::Unsupported {
        reason: format!("server does not know {command}"),
    }
}

/// A measure whose every request failed with "unknown command" means the
/// server lacks the command (for servers COMMAND INFO could not tell about).
fn outcome_of(m: Measure, died: Option<&str>) -> Outcome {
    if let Some(d) = died {
        if m.ok == 0 {
            return Outcome::Failed {
                reason: d.to_string(),
            };
        }
    }
    if m.ok == 0 && m.failed > 0 {
        if let Some((k, _)) = m
            .failure_kinds
            .iter()
            .find(|(k, _)| k.contains("unknown command"))
        {
            let name = k
                .split('\'')
                .nth(1)
                .map(|s| s.to_ascii_uppercase())
                .unwrap_or_else(|| k.clone());
            return unsupported(&name);
        }
    }
    Outcome::Done(Box::new(m))
}

/// Parsed command line of `keel-bench run`.
#[derive(Debug, Default)]
struct Cli {
    file: Option<PathBuf>,
    short: bool,
    targets: Vec<(String, String)>,
    json: Option<PathBuf>,
    html: Option<PathBuf>,
    bins: Bins,
}

const USAGE: &str = "usage: keel-bench run FILE [--short] [--target NAME=HOST:PORT ...] \
[--json FILE] [--html FILE] [--bin PROGRAM=PATH ...]";

fn parse_cli(args: &[String]) -> anyhow::Result<Cli> {
    let mut cli = Cli::default();
    let mut it = args.iter();
    if args.first().map(String::as_str) == Some("run") {
        it.next();
    }
    while let Some(a) = it.next() {
        let mut value = |what: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| anyhow::anyhow!("{a} needs {what}\n{USAGE}"))
        };
        match a.as_str() {
            "--short" => cli.short = true,
            "--target" => {
                let v = value("NAME=HOST:PORT")?;
                let (name, addr) = v.split_once('=').ok_or_else(|| {
                    anyhow::anyhow!(
                        "--target {v}: expected NAME=HOST:PORT, e.g. redis=127.0.0.1:6379"
                    )
                })?;
                if !file::valid_addr(addr) {
                    anyhow::bail!("--target {v}: `{addr}` is not HOST:PORT");
                }
                cli.targets.push((name.to_string(), addr.to_string()));
            }
            "--json" => cli.json = Some(PathBuf::from(value("a file name")?)),
            "--html" => cli.html = Some(PathBuf::from(value("a file name")?)),
            "--bin" => {
                let v = value("PROGRAM=PATH")?;
                let (name, path) = v.split_once('=').ok_or_else(|| {
                    anyhow::anyhow!("--bin {v}: expected PROGRAM=PATH, e.g. keel-server=target/release/keel-server")
                })?;
                // Servers start in their own directory: a relative path
                // must be made absolute while it still means what was typed.
                let path =
                    std::path::absolute(path).map_err(|e| anyhow::anyhow!("--bin {v}: {e}"))?;
                cli.bins.overrides.insert(name.to_string(), path);
            }
            "-h" | "--help" => anyhow::bail!("{USAGE}"),
            s if s.starts_with('-') => anyhow::bail!("unknown option {s}\n{USAGE}"),
            s => {
                if cli.file.is_some() {
                    anyhow::bail!("one scenario file at a time (got another: {s})\n{USAGE}");
                }
                cli.file = Some(PathBuf::from(s));
            }
        }
    }
    if cli.file.is_none() {
        anyhow::bail!("no scenario file given\n{USAGE}");
    }
    Ok(cli)
}

/// Expand `variants` and apply `--target` (which replaces the file's).
fn plan_targets(f: &ScenarioFile, cli_targets: &[(String, String)]) -> Vec<TargetPlan> {
    if !cli_targets.is_empty() {
        return cli_targets
            .iter()
            .map(|(n, a)| TargetPlan {
                name: n.clone(),
                command: None,
                addr: Some(a.clone()),
            })
            .collect();
    }
    let mut out = Vec::new();
    for t in &f.targets {
        let name = t.name.get_ref();
        let command = t.command.as_ref().map(|c| c.get_ref().clone());
        let addr = t.addr.as_ref().map(|a| a.get_ref().clone());
        match &t.variants {
            None => out.push(TargetPlan {
                name: name.clone(),
                command,
                addr,
            }),
            Some(vs) => {
                for v in vs.get_ref() {
                    let n = if name.contains("{variant}") {
                        name.replace("{variant}", v)
                    } else {
                        format!("{name}-{v}")
                    };
                    let sub = |s: &Option<String>| s.as_ref().map(|s| s.replace("{variant}", v));
                    out.push(TargetPlan {
                        name: n,
                        command: sub(&command),
                        addr: sub(&addr),
                    });
                }
            }
        }
    }
    out
}

fn build_kind(f: &ScenarioFile, short: bool) -> anyhow::Result<Box<dyn Kind>> {
    let r = Resolver { src: &f.src, short };
    Ok(match &f.params {
        Params::Bloom(p, s) => Box::new(bloom::Bloom::new(&r, p, s)?),
        Params::Persistence(p, s) => Box::new(persistence::Persistence::new(&r, p, s)?),
        Params::Cache(p, s) => Box::new(cache::Cache::new(&r, p, s, f.seed.unwrap_or(2))?),
        Params::Batching(p, s) => Box::new(batching::Batching::new(&r, p, s)?),
    })
}

/// Run every step on every target and gather the outcomes.
pub fn execute(
    title: &str,
    kind: &dyn Kind,
    plans: &[TargetPlan],
    bins: &Bins,
    seed: u64,
    interval: Duration,
) -> Run {
    let meta = crate::model::Meta::now();
    let names = kind.steps();
    let mut columns: Vec<Vec<Outcome>> = Vec::new();
    let mut targets = Vec::new();
    let mut notes = kind.notes();
    for plan in plans {
        let all = |o: Outcome| vec![o; names.len()];
        let mut server = None;
        let addr = match (&plan.command, &plan.addr) {
            (Some(cmd), _) => match Server::start(cmd, bins) {
                Ok(s) => {
                    let a = s.addr();
                    server = Some(s);
                    Ok(a)
                }
                Err(e) => {
                    eprintln!("keel-bench: target {}: {}", plan.name, e.message);
                    let first = e.message.lines().next().unwrap_or("").to_string();
                    let detail = e
                        .message
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim()
                        .to_string();
                    // The first line says what failed; the last line of a
                    // longer message is the server's own last word.
                    let reason = if detail == first {
                        first
                    } else {
                        format!("{first} {detail}")
                    };
                    // Told once, by the outcome of every step (the reports
                    // give a reason shared by several steps once).
                    Err(if e.refused_config {
                        Outcome::Unsupported {
                            reason: format!("server refused its configuration: {detail}"),
                        }
                    } else {
                        Outcome::Failed { reason }
                    })
                }
            },
            (None, Some(a)) => {
                match Admin::connect(a, Duration::from_secs(2)).and_then(|mut c| c.ok(&["PING"])) {
                    Ok(_) => Ok(a.clone()),
                    Err(e) => {
                        let reason = format!("cannot reach {a}: {e:#}");
                        eprintln!("keel-bench: target {}: {reason}", plan.name);
                        Err(Outcome::Failed { reason })
                    }
                }
            }
            (None, None) => Err(Outcome::Failed {
                reason: "no command and no address".into(),
            }),
        };
        let shown_addr = match &addr {
            Ok(a) => a.clone(),
            Err(_) => plan.addr.clone().unwrap_or_else(|| "-".into()),
        };
        let mut target = Target::new(&plan.name, &shown_addr);
        let outcomes = match addr {
            Err(o) => all(o),
            Ok(addr) => {
                crate::load::describe(&mut target, None);
                let mut t = TargetRun {
                    name: plan.name.clone(),
                    addr,
                    server: server.as_mut(),
                    seed,
                    interval,
                    notes: Vec::new(),
                };
                let mut o = kind.run(&mut t);
                notes.extend(t.notes.into_iter().map(|n| format!("{}: {n}", plan.name)));
                o.resize(
                    names.len(),
                    Outcome::Failed {
                        reason: "step not run".into(),
                    },
                );
                o
            }
        };
        if let Some(s) = server.as_mut() {
            // Counted last: a server may start threads as it works.
            target.threads = s.threads().or(target.threads);
            s.stop();
        }
        targets.push(target);
        columns.push(outcomes);
    }
    let steps = names
        .iter()
        .enumerate()
        .map(|(i, name)| Step {
            name: name.clone(),
            outcomes: columns
                .iter()
                .map(|c| {
                    c.get(i).cloned().unwrap_or(Outcome::Failed {
                        reason: "step not run".into(),
                    })
                })
                .collect(),
        })
        .collect();
    let mut run = Run::new(title, targets);
    run.meta = meta;
    run.steps = steps;
    run.notes = notes;
    run
}

/// `keel-bench run FILE [options]`.
pub fn run_cli(args: &[String]) -> anyhow::Result<ExitCode> {
    let cli = parse_cli(args)?;
    let path = cli.file.clone().unwrap_or_default();
    let f = file::load(&path)?;
    let kind = build_kind(&f, cli.short)?;
    let plans = plan_targets(&f, &cli.targets);
    if plans.is_empty() {
        anyhow::bail!(
            "{}: no targets: add [[target]] tables or pass --target NAME=HOST:PORT",
            path.display()
        );
    }
    let interval = f
        .interval
        .as_ref()
        .map(|d| d.get_ref().0)
        .filter(|d| !d.is_zero())
        .unwrap_or(if cli.short {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(1)
        });
    let seed = f.seed.unwrap_or(0x6b65_656c);
    let mut title = f.title.clone();
    if cli.short {
        title.push_str(" (short)");
    }
    let mut run = execute(&title, kind.as_ref(), &plans, &cli.bins, seed, interval);
    if let Some(d) = &f.description {
        run.notes.insert(0, d.trim().to_string());
    }
    run.extra = kind.extra_report(&run);
    if !run.extra.is_empty() {
        println!("{}", run.extra);
    }
    print!("{}", crate::report::table::render(&run));
    if let Some(p) = &cli.json {
        crate::report::json::write(&run, p)?;
    }
    if let Some(p) = &cli.html {
        crate::report::html::write(&run, p)?;
    }
    let failed = run.steps.iter().any(|s| {
        s.outcomes
            .iter()
            .any(|o| matches!(o, Outcome::Failed { .. }))
    });
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn command_line_options() {
        let c = parse_cli(&s(&[
            "run",
            "x.toml",
            "--short",
            "--target",
            "a=127.0.0.1:1",
            "--json",
            "o.json",
            "--bin",
            "keel-server=/tmp/k",
        ]))
        .unwrap();
        assert!(c.short);
        assert_eq!(c.targets, [("a".to_string(), "127.0.0.1:1".to_string())]);
        assert_eq!(c.json, Some(PathBuf::from("o.json")));
        assert!(c.bins.overrides.contains_key("keel-server"));
        let e = parse_cli(&s(&["x.toml", "--target", "nohost"])).unwrap_err();
        assert!(e.to_string().contains("NAME=HOST:PORT"), "{e}");
        assert!(parse_cli(&s(&["--short"])).is_err());
        assert!(parse_cli(&s(&["x", "--bogus"])).is_err());
    }

    #[test]
    fn variants_expand_and_cli_targets_replace() {
        let f = file::parse(
            "t.toml",
            r#"
title = "t"
kind = "persistence"
[[target]]
name = "redis"
command = "redis-server --port {port} --appendfsync {variant}"
variants = ["no", "always"]
[[target]]
name = "keel-{variant}-x"
command = "keel-server --port {port}"
variants = ["a"]
"#,
        )
        .unwrap();
        let p = plan_targets(&f, &[]);
        let names: Vec<&str> = p.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["redis-no", "redis-always", "keel-a-x"]);
        assert!(p[1]
            .command
            .as_deref()
            .unwrap()
            .ends_with("--appendfsync always"));
        let p = plan_targets(&f, &[("x".into(), "h:1".into())]);
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].addr.as_deref(), Some("h:1"));
    }

    #[test]
    fn unknown_command_failures_mean_unsupported() {
        let mut m = Measure::empty();
        m.failed = 10;
        m.failure_kinds = vec![("ERR unknown command 'eval'".into(), 10)];
        match outcome_of(m.clone(), None) {
            Outcome::Unsupported { reason } => assert_eq!(reason, "server does not know EVAL"),
            other => panic!("{other:?}"),
        }
        m.ok = 1;
        assert!(matches!(outcome_of(m, None), Outcome::Done(_)));
    }

    #[test]
    fn unreachable_target_fails_its_steps_and_the_run_goes_on() {
        struct One;
        impl Kind for One {
            fn steps(&self) -> Vec<String> {
                vec!["a".into(), "b".into()]
            }
            fn run(&self, _t: &mut TargetRun) -> Vec<Outcome> {
                vec![Outcome::Done(Box::new(Measure::empty()))]
            }
            fn notes(&self) -> Vec<String> {
                Vec::new()
            }
        }
        let port = server::free_port().unwrap();
        let plans = vec![TargetPlan {
            name: "gone".into(),
            command: None,
            addr: Some(format!("127.0.0.1:{port}")),
        }];
        let run = execute(
            "t",
            &One,
            &plans,
            &Bins::default(),
            1,
            Duration::from_secs(1),
        );
        assert_eq!(run.steps.len(), 2);
        for st in &run.steps {
            match &st.outcomes[0] {
                Outcome::Failed { reason } => assert!(reason.contains("cannot reach"), "{reason}"),
                other => panic!("{other:?}"),
            }
        }
        assert!(run.notes.is_empty(), "{:?}", run.notes);
        let table = crate::report::table::render(&run);
        assert_eq!(table.matches("cannot reach").count(), 1, "{table}");
    }
}
