//! `kind = "cache-schemas"` (seed 002): records of a recommendation cache
//! (request id, product id, variant id, reason, four entity numbers) stored
//! as a delimited string per record, a JSON string per record, one hash with
//! a field per record, or one set with a member per record. Two methods:
//!
//! - `seed`, the study's own: a hash or a set is written with one command
//!   carrying every record (HSET / SADD), strings with one SET per record;
//!   every schema is read one record per command (GET, HGET, SISMEMBER).
//!   Each method runs `iterations` times and is reported the way the study's
//!   BenchmarkDotNet tables are: method, mean, standard deviation, rank. The
//!   study's "narrowing observation" is measured too: three ways to spread
//!   the records of one request over hash or set keys (`arrangements`).
//! - `keel`, this tool's variant: every schema written one command per
//!   record, read back `read_passes` times with one command per record for
//!   strings and one HGETALL / SMEMBERS for a hash or a set, with the
//!   server memory the records take (INFO used_memory less client buffers, after FLUSHALL).

use super::file::{one_of, positive, positive_list, CacheSpec, Resolver};
use super::workloads::{push_cmd, Build, Expect, Sequence};
use super::{Kind, TargetRun};
use crate::load::{Mode, Until};
use crate::model::{Measure, Outcome, Run};
use crate::rng::Rng;
use std::fmt::Write;
use std::sync::Arc;

pub const SCHEMAS: [&str; 4] = ["delimited", "json", "hash", "set"];
pub const METHODS: [&str; 2] = ["seed", "keel"];
pub const ARRANGEMENTS: [&str; 3] = [
    "RequestIdInKey",
    "RequestIdAndProductIdInKey",
    "AllFieldsInKey",
];

#[derive(Debug, Clone)]
pub struct Cache {
    pub methods: Vec<String>,
    pub records: Vec<u64>,
    pub schemas: Vec<String>,
    pub read_passes: u64,
    pub connections: usize,
    pub pipeline: usize,
    pub iterations: u64,
    pub arrangements: Vec<String>,
    pub arrangement_records: Vec<u64>,
    pub variants_per_product: u64,
    pub seed: u64,
}

/// One record, derived from its index so writes and reads agree.
pub struct Record {
    pub request_id: String,
    pub product_id: u64,
    pub variant_id: String,
    pub reason: &'static str,
    pub entities: [u64; 4],
}

const REASONS: [&str; 4] = ["similar", "bought-together", "trending", "recently-viewed"];

impl Record {
    pub fn new(seed: u64, i: u64) -> Record {
        let mut rng = Rng::seeded(seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut id = Vec::with_capacity(36);
        rng.uuid(&mut id);
        let mut variant = Vec::with_capacity(36);
        rng.uuid(&mut variant);
        Record {
            request_id: String::from_utf8_lossy(&id).into_owned(),
            product_id: rng.below(1_000_000),
            variant_id: String::from_utf8_lossy(&variant).into_owned(),
            reason: REASONS[rng.below(4) as usize],
            entities: [
                rng.below(100_000),
                rng.below(100_000),
                rng.below(100_000),
                rng.below(100_000),
            ],
        }
    }

    fn entities(&self) -> String {
        let e = self.entities;
        format!("{};{};{};{}", e[0], e[1], e[2], e[3])
    }

    pub fn delimited(&self) -> String {
        format!(
            "{}|{}|{}|{}",
            self.product_id,
            self.variant_id,
            self.reason,
            self.entities()
        )
    }

    pub fn json(&self) -> String {
        let e = self.entities;
        format!(
            "{{\"productId\":{},\"variantId\":\"{}\",\"reason\":\"{}\",\"entities\":[{},{},{},{}]}}",
            self.product_id, self.variant_id, self.reason, e[0], e[1], e[2], e[3]
        )
    }

    /// Hash field: what identifies the recommendation; the value holds the
    /// entities.
    pub fn field(&self) -> String {
        format!(
            "{}:{}:{}:{}",
            self.request_id, self.product_id, self.variant_id, self.reason
        )
    }

    pub fn member(&self) -> String {
        format!("{}:{}", self.field(), self.entities())
    }
}

fn commands(schema: &str) -> (&'static [&'static str], &'static [&'static str]) {
    match schema {
        "hash" => (&["HSET"], &["HGETALL"]),
        "set" => (&["SADD"], &["SMEMBERS"]),
        _ => (&["SET"], &["GET"]),
    }
}

impl Cache {
    pub fn new(r: &Resolver, p: &CacheSpec, s: &CacheSpec, seed: u64) -> anyhow::Result<Cache> {
        let all = SCHEMAS.iter().map(|t| t.to_string()).collect();
        let strings = |v: &[&str]| v.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        Ok(Cache {
            methods: r.get(
                "methods",
                &p.methods,
                &s.methods,
                strings(&METHODS),
                one_of(&METHODS),
            )?,
            iterations: r.get("iterations", &p.iterations, &s.iterations, 5, positive)?,
            arrangements: r.get(
                "arrangements",
                &p.arrangements,
                &s.arrangements,
                strings(&ARRANGEMENTS),
                one_of(&ARRANGEMENTS),
            )?,
            arrangement_records: r.get(
                "arrangement_records",
                &p.arrangement_records,
                &s.arrangement_records,
                vec![5000],
                positive_list,
            )?,
            variants_per_product: r.get(
                "variants_per_product",
                &p.variants_per_product,
                &s.variants_per_product,
                10,
                positive,
            )?,
            records: r.get(
                "records",
                &p.records,
                &s.records,
                vec![1000, 5000],
                positive_list,
            )?,
            schemas: r.get("schemas", &p.schemas, &s.schemas, all, one_of(&SCHEMAS))?,
            read_passes: r.get("read_passes", &p.read_passes, &s.read_passes, 5, positive)?,
            connections: r.get("connections", &p.connections, &s.connections, 1, positive)?
                as usize,
            pipeline: r.get("pipeline", &p.pipeline, &s.pipeline, 1, positive)? as usize,
            seed,
        })
    }

    fn write_step(&self, t: &mut TargetRun, n: u64, schema: &str) -> Outcome {
        let seed = self.seed;
        let build: Build = match schema {
            "delimited" => Box::new(move |i, out| {
                let r = Record::new(seed, i);
                let key = format!("cache:delimited:{}", r.request_id);
                push_cmd(out, &[b"SET", key.as_bytes(), r.delimited().as_bytes()]);
            }),
            "json" => Box::new(move |i, out| {
                let r = Record::new(seed, i);
                let key = format!("cache:json:{}", r.request_id);
                push_cmd(out, &[b"SET", key.as_bytes(), r.json().as_bytes()]);
            }),
            "hash" => Box::new(move |i, out| {
                let r = Record::new(seed, i);
                let f = r.field();
                push_cmd(
                    out,
                    &[
                        b"HSET",
                        b"cache:hash",
                        f.as_bytes(),
                        r.entities().as_bytes(),
                    ],
                );
            }),
            _ => Box::new(move |i, out| {
                let r = Record::new(seed, i);
                push_cmd(out, &[b"SADD", b"cache:set", r.member().as_bytes()]);
            }),
        };
        let before = t.admin().and_then(|mut a| {
            a.ok(&["FLUSHALL"])?;
            a.used_memory()
        });
        let before = match before {
            Ok(b) => b,
            Err(e) => {
                return Outcome::Failed {
                    reason: format!("FLUSHALL / INFO memory failed: {e:#}"),
                }
            }
        };
        let w = Arc::new(Sequence::new(n, Expect::Any, build));
        let mode = Mode::Raw {
            connections: self.connections,
            pipeline: self.pipeline,
        };
        let label = format!("write {schema} x{n}");
        let spec = t.spec(mode, Until::Requests(n), &label);
        let mut o = t.measure_one(spec, w);
        if let Outcome::Done(m) = &mut o {
            m.metrics
                .push(("write all ms".into(), m.elapsed.as_secs_f64() * 1e3));
            let after = t.admin().and_then(|mut a| a.used_memory());
            if let (Some(b), Ok(Some(a))) = (before, after) {
                let delta = (a - b).max(0.0);
                m.metrics.push(("memory bytes".into(), delta));
                m.metrics
                    .push(("memory bytes/record".into(), delta / n as f64));
            }
        }
        o
    }

    fn read_step(&self, t: &mut TargetRun, n: u64, schema: &str) -> Outcome {
        let seed = self.seed;
        let passes = self.read_passes;
        let (w, total) = match schema {
            "hash" => (
                Sequence::new(
                    1,
                    Expect::Elements(2 * n as usize),
                    Box::new(|_, out| push_cmd(out, &[b"HGETALL", b"cache:hash"])),
                ),
                passes,
            ),
            "set" => (
                Sequence::new(
                    1,
                    Expect::Elements(n as usize),
                    Box::new(|_, out| push_cmd(out, &[b"SMEMBERS", b"cache:set"])),
                ),
                passes,
            ),
            s => {
                let prefix = format!("cache:{s}:");
                (
                    Sequence::new(
                        n,
                        Expect::Value,
                        Box::new(move |i, out| {
                            let key = format!("{prefix}{}", Record::new(seed, i).request_id);
                            push_cmd(out, &[b"GET", key.as_bytes()]);
                        }),
                    ),
                    n * passes,
                )
            }
        };
        let mode = Mode::Raw {
            connections: self.connections,
            pipeline: self.pipeline,
        };
        let label = format!("read {schema} x{n}");
        let spec = t.spec(mode, Until::Requests(total), &label);
        let mut o = t.measure_one(spec, Arc::new(w));
        if let Outcome::Done(m) = &mut o {
            m.metrics.push((
                "read all ms".into(),
                m.elapsed.as_secs_f64() * 1e3 / passes as f64,
            ));
        }
        o
    }
}

/// The study's method names, by schema: (write, read).
fn seed_names(schema: &str) -> (&'static str, &'static str) {
    match schema {
        "delimited" => ("O1_Set_Delimited", "O1_Get_Delimited"),
        "json" => ("O2_Set_JsonString", "O2_Get_JsonString"),
        "hash" => ("O3_Set_Hash", "O3_Get_Hash"),
        _ => ("O4_Set_Sets", "O4_Get_Sets"),
    }
}

/// One step of the study's method.
#[derive(Debug, Clone, PartialEq)]
enum SeedLoad {
    /// Strings: one SET per record; a hash or a set: one command with all.
    Write { n: u64, schema: String },
    /// One record per command: GET, HGET, SISMEMBER.
    Read { n: u64, schema: String },
    /// One HSET / SADD per key of the arrangement, pipelined.
    ArrangedWrite {
        n: u64,
        hash: bool,
        arrangement: String,
    },
    /// One HGET / SISMEMBER per record.
    ArrangedRead {
        n: u64,
        hash: bool,
        arrangement: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum Planned {
    KeelWrite(u64, String),
    KeelRead(u64, String),
    Seed {
        method: String,
        /// The study's table this method belongs to.
        group: String,
        load: SeedLoad,
    },
}

/// The requests of one iteration and how to judge and send them.
struct SeedRequests {
    commands: Vec<Vec<u8>>,
    expect: Expect,
    pipeline: usize,
    flush_first: bool,
    needs: Vec<&'static str>,
}

/// Most requests a pipelined arrangement write keeps in flight.
const MAX_PIPELINE: usize = 1000;

/// A record of one recommendation request, for the arrangements: every
/// record shares the request id, `variants_per_product` records share a
/// product.
struct Arranged {
    request_id: String,
    product_id: u64,
    variant_id: String,
    reason: &'static str,
    entities: String,
}

impl Arranged {
    fn new(seed: u64, i: u64, variants_per_product: u64) -> Arranged {
        let r = Record::new(seed, i);
        Arranged {
            request_id: Record::new(seed ^ 0x5eed_0002, u64::MAX).request_id,
            product_id: 1000 + i / variants_per_product.max(1),
            variant_id: r.variant_id.clone(),
            reason: r.reason,
            entities: r.entities(),
        }
    }

    /// (key, hash field, set member) under `arrangement`; a hash field's
    /// value is the entities.
    fn place(&self, arrangement: &str) -> (String, String, String) {
        let (req, p, v, why, e) = (
            &self.request_id,
            self.product_id,
            &self.variant_id,
            self.reason,
            &self.entities,
        );
        match arrangement {
            "RequestIdInKey" => (
                format!("narrow:{req}"),
                format!("{p}_{v}_{why}"),
                format!("{p}|{v}|{why}:{e}"),
            ),
            "RequestIdAndProductIdInKey" => (
                format!("narrow:{req}:{p}"),
                format!("{v}_{why}"),
                format!("{v}|{why}:{e}"),
            ),
            _ => (
                format!("narrow:{req}:{p}:{v}"),
                why.to_string(),
                format!("{why}:{e}"),
            ),
        }
    }
}

fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    push_cmd(&mut out, args);
    out
}

/// Mean and sample standard deviation.
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// The samples without upper outliers (above the third quartile by more
/// than 1.5 interquartile ranges), as BenchmarkDotNet drops them by
/// default: a scheduler stall lengthens an iteration, nothing shortens one.
pub fn without_upper_outliers(xs: &[f64]) -> Vec<f64> {
    if xs.len() < 4 {
        return xs.to_vec();
    }
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let pos = p * (sorted.len() - 1) as f64;
        let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
        sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
    };
    let (q1, q3) = (q(0.25), q(0.75));
    let fence = q3 + 1.5 * (q3 - q1);
    xs.iter().copied().filter(|&x| x <= fence).collect()
}

/// Two-sided 95% critical value of Student's t with `df` degrees of freedom.
fn t_crit(df: f64) -> f64 {
    const T: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    match df {
        d if d < 1.0 => T[0],
        d if d <= 10.0 => T[(d.floor() as usize).clamp(1, 10) - 1],
        d if d <= 15.0 => 2.131,
        d if d <= 20.0 => 2.086,
        d if d <= 30.0 => 2.042,
        _ => 1.96,
    }
}

/// Ranks as BenchmarkDotNet gives them: by mean, fastest first; a method
/// shares the rank of the one before it unless Welch's t-test finds the
/// difference significant at 95%. `stats` holds (mean, sd, iterations).
pub fn ranks(stats: &[(f64, f64, u64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..stats.len()).collect();
    order.sort_by(|&a, &b| stats[a].0.total_cmp(&stats[b].0));
    let mut out = vec![0; stats.len()];
    let mut rank = 0;
    for (k, &i) in order.iter().enumerate() {
        if k == 0 {
            rank = 1;
        } else {
            let (m1, s1, n1) = stats[order[k - 1]];
            let (m2, s2, n2) = stats[i];
            let (n1, n2) = (n1.max(1) as f64, n2.max(1) as f64);
            let (v1, v2) = (s1 * s1 / n1, s2 * s2 / n2);
            let se = (v1 + v2).sqrt();
            let differs = if se <= 0.0 {
                m2 > m1
            } else {
                let df = (v1 + v2).powi(2)
                    / (v1 * v1 / (n1 - 1.0).max(1.0) + v2 * v2 / (n2 - 1.0).max(1.0)).max(1e-300);
                (m2 - m1) / se > t_crit(df)
            };
            if differs {
                rank += 1;
            }
        }
        out[i] = rank;
    }
    out
}

/// A time in milliseconds with three significant figures or so.
pub fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1} ms")
    } else if v >= 1.0 {
        format!("{v:.2} ms")
    } else {
        format!("{v:.3} ms")
    }
}

impl Cache {
    fn plan(&self) -> Vec<Planned> {
        let seed = self.methods.iter().any(|m| m == "seed");
        let keel = self.methods.iter().any(|m| m == "keel");
        let mut v = Vec::new();
        for &n in &self.records {
            for s in &self.schemas {
                if seed {
                    let (w, r) = seed_names(s);
                    v.push(Planned::Seed {
                        method: w.to_string(),
                        group: format!("{n} records, writes"),
                        load: SeedLoad::Write {
                            n,
                            schema: s.clone(),
                        },
                    });
                    v.push(Planned::Seed {
                        method: r.to_string(),
                        group: format!("{n} records, reads"),
                        load: SeedLoad::Read {
                            n,
                            schema: s.clone(),
                        },
                    });
                }
                if keel {
                    v.push(Planned::KeelWrite(n, s.clone()));
                    v.push(Planned::KeelRead(n, s.clone()));
                }
            }
        }
        if seed {
            for &n in &self.arrangement_records {
                for hash in [true, false] {
                    let (kind, w, r) = if hash {
                        ("hash", "SetHash", "ReadHash")
                    } else {
                        ("set", "SetAddAll", "ReadSet")
                    };
                    for a in &self.arrangements {
                        let k = ARRANGEMENTS.iter().position(|x| x == a).unwrap_or(0) + 1;
                        v.push(Planned::Seed {
                            method: format!("O{k}_{w}_{a}"),
                            group: format!("{n} records, {kind} arrangements, writes"),
                            load: SeedLoad::ArrangedWrite {
                                n,
                                hash,
                                arrangement: a.clone(),
                            },
                        });
                        v.push(Planned::Seed {
                            method: format!("O{k}_{r}_{a}"),
                            group: format!("{n} records, {kind} arrangements, reads"),
                            load: SeedLoad::ArrangedRead {
                                n,
                                hash,
                                arrangement: a.clone(),
                            },
                        });
                    }
                }
            }
        }
        v
    }

    fn step_name(p: &Planned) -> String {
        match p {
            Planned::KeelWrite(n, s) => format!("write {s} x{n}"),
            Planned::KeelRead(n, s) => format!("read {s} x{n}"),
            Planned::Seed { method, load, .. } => {
                let n = match load {
                    SeedLoad::Write { n, .. }
                    | SeedLoad::Read { n, .. }
                    | SeedLoad::ArrangedWrite { n, .. }
                    | SeedLoad::ArrangedRead { n, .. } => n,
                };
                format!("seed {method} x{n}")
            }
        }
    }

    fn seed_requests(&self, load: &SeedLoad) -> SeedRequests {
        let seed = self.seed;
        let single = |commands, expect, needs| SeedRequests {
            commands,
            expect,
            pipeline: 1,
            flush_first: false,
            needs,
        };
        match load {
            SeedLoad::Write { n, schema } => {
                let records = (0..*n).map(|i| Record::new(seed, i));
                let (commands, needs): (Vec<Vec<u8>>, _) = match schema.as_str() {
                    "hash" => {
                        let pairs: Vec<(String, String)> =
                            records.map(|r| (r.field(), r.entities())).collect();
                        let mut args: Vec<&[u8]> = vec![b"HSET", b"cache:hash"];
                        for (f, v) in &pairs {
                            args.push(f.as_bytes());
                            args.push(v.as_bytes());
                        }
                        (vec![encode(&args)], vec!["HSET"])
                    }
                    "set" => {
                        let members: Vec<String> = records.map(|r| r.member()).collect();
                        let mut args: Vec<&[u8]> = vec![b"SADD", b"cache:set"];
                        args.extend(members.iter().map(|m| m.as_bytes()));
                        (vec![encode(&args)], vec!["SADD"])
                    }
                    s => (
                        records
                            .map(|r| {
                                let key = format!("cache:{s}:{}", r.request_id);
                                let value = if s == "json" { r.json() } else { r.delimited() };
                                encode(&[b"SET", key.as_bytes(), value.as_bytes()])
                            })
                            .collect(),
                        vec!["SET"],
                    ),
                };
                let mut r = single(commands, Expect::Any, needs);
                r.flush_first = true;
                r.needs.push("FLUSHALL");
                r
            }
            SeedLoad::Read { n, schema } => {
                let records = (0..*n).map(|i| Record::new(seed, i));
                match schema.as_str() {
                    "hash" => single(
                        records
                            .map(|r| encode(&[b"HGET", b"cache:hash", r.field().as_bytes()]))
                            .collect(),
                        Expect::Value,
                        vec!["HGET"],
                    ),
                    "set" => single(
                        records
                            .map(|r| encode(&[b"SISMEMBER", b"cache:set", r.member().as_bytes()]))
                            .collect(),
                        Expect::One,
                        vec!["SISMEMBER"],
                    ),
                    s => single(
                        records
                            .map(|r| {
                                let key = format!("cache:{s}:{}", r.request_id);
                                encode(&[b"GET", key.as_bytes()])
                            })
                            .collect(),
                        Expect::Value,
                        vec!["GET"],
                    ),
                }
            }
            SeedLoad::ArrangedWrite {
                n,
                hash,
                arrangement,
            } => {
                // Records of one key are adjacent: group them in order.
                let mut groups: Vec<(String, Vec<String>)> = Vec::new();
                for i in 0..*n {
                    let a = Arranged::new(seed, i, self.variants_per_product);
                    let (key, field, member) = a.place(arrangement);
                    let items = if *hash {
                        vec![field, a.entities.clone()]
                    } else {
                        vec![member]
                    };
                    match groups.last_mut() {
                        Some((k, v)) if *k == key => v.extend(items),
                        _ => groups.push((key, items)),
                    }
                }
                let name: &[u8] = if *hash { b"HSET" } else { b"SADD" };
                let commands: Vec<Vec<u8>> = groups
                    .iter()
                    .map(|(k, items)| {
                        let mut args: Vec<&[u8]> = vec![name, k.as_bytes()];
                        args.extend(items.iter().map(|s| s.as_bytes()));
                        encode(&args)
                    })
                    .collect();
                SeedRequests {
                    pipeline: commands.len().clamp(1, MAX_PIPELINE),
                    commands,
                    expect: Expect::Any,
                    flush_first: true,
                    needs: vec![if *hash { "HSET" } else { "SADD" }, "FLUSHALL"],
                }
            }
            SeedLoad::ArrangedRead {
                n,
                hash,
                arrangement,
            } => {
                let commands = (0..*n)
                    .map(|i| {
                        let a = Arranged::new(seed, i, self.variants_per_product);
                        let (key, field, member) = a.place(arrangement);
                        if *hash {
                            encode(&[b"HGET", key.as_bytes(), field.as_bytes()])
                        } else {
                            encode(&[b"SISMEMBER", key.as_bytes(), member.as_bytes()])
                        }
                    })
                    .collect();
                if *hash {
                    single(commands, Expect::Value, vec!["HGET"])
                } else {
                    single(commands, Expect::One, vec!["SISMEMBER"])
                }
            }
        }
    }

    /// `iterations` runs of one method; their measures added up, with the
    /// mean and standard deviation of an iteration's time.
    fn seed_step(&self, t: &mut TargetRun, name: &str, load: &SeedLoad) -> Outcome {
        let req = self.seed_requests(load);
        if let Some(o) = t.lacks(&req.needs) {
            return o;
        }
        let commands = Arc::new(req.commands);
        let mut total: Option<Measure> = None;
        let mut samples = Vec::new();
        for _ in 0..self.iterations {
            if req.flush_first {
                if let Err(e) = t.admin().and_then(|mut a| a.ok(&["FLUSHALL"])) {
                    return Outcome::Failed {
                        reason: format!("FLUSHALL failed: {e:#}"),
                    };
                }
            }
            let c = commands.clone();
            let build: Build = Box::new(move |i, out| {
                if let Some(cmd) = c.get(i as usize) {
                    out.extend_from_slice(cmd);
                }
            });
            let w = Arc::new(Sequence::new(commands.len() as u64, req.expect, build));
            let mode = Mode::Raw {
                connections: 1,
                pipeline: req.pipeline,
            };
            let spec = t.spec(mode, Until::Requests(commands.len() as u64), name);
            match t.measure_one(spec, w) {
                Outcome::Done(m) => {
                    samples.push(m.elapsed.as_secs_f64() * 1e3);
                    match total.as_mut() {
                        Some(all) => all.absorb(&m),
                        None => total = Some(*m),
                    }
                }
                other => return other,
            }
        }
        let Some(mut m) = total else {
            return Outcome::Failed {
                reason: "no iteration ran".into(),
            };
        };
        let kept = without_upper_outliers(&samples);
        let (mean, sd) = mean_sd(&kept);
        m.metrics.push(("mean ms".into(), mean));
        m.metrics.push(("stddev ms".into(), sd));
        m.metrics.push(("iterations".into(), kept.len() as f64));
        m.metrics
            .push(("outliers".into(), (samples.len() - kept.len()) as f64));
        Outcome::Done(Box::new(m))
    }

    /// The study's tables (method, mean, standard deviation, rank) with
    /// every target side by side, then this tool's variant.
    fn tables(&self, run: &Run) -> String {
        let plan = self.plan();
        let metric = |o: Option<&Outcome>, name: &str| match o {
            Some(Outcome::Done(m)) => m.metrics.iter().find(|(k, _)| k == name).map(|(_, v)| *v),
            _ => None,
        };
        let targets: Vec<&str> = run.targets.iter().map(|t| t.name.as_str()).collect();
        let mut out = String::new();
        let mut groups: Vec<&str> = Vec::new();
        for p in &plan {
            if let Planned::Seed { group, .. } = p {
                if !groups.contains(&group.as_str()) {
                    groups.push(group);
                }
            }
        }
        for g in groups {
            let rows: Vec<(usize, &str)> = plan
                .iter()
                .enumerate()
                .filter_map(|(i, p)| match p {
                    Planned::Seed { method, group, .. } if group == g => Some((i, method.as_str())),
                    _ => None,
                })
                .collect();
            // (mean, sd, rank) per row and target.
            let mut cells: Vec<Vec<Option<(f64, f64, usize)>>> = vec![Vec::new(); rows.len()];
            for ti in 0..targets.len() {
                let stats: Vec<Option<(f64, f64, u64)>> = rows
                    .iter()
                    .map(|(i, _)| {
                        let o = run.steps.get(*i).and_then(|s| s.outcomes.get(ti));
                        Some((
                            metric(o, "mean ms")?,
                            metric(o, "stddev ms")?,
                            metric(o, "iterations")? as u64,
                        ))
                    })
                    .collect();
                let known: Vec<(usize, (f64, f64, u64))> = stats
                    .iter()
                    .enumerate()
                    .filter_map(|(k, s)| s.map(|s| (k, s)))
                    .collect();
                let r = ranks(&known.iter().map(|(_, s)| *s).collect::<Vec<_>>());
                for (row, cell) in cells.iter_mut().enumerate() {
                    let rank = known.iter().position(|(k, _)| *k == row).map(|p| r[p]);
                    cell.push(stats[row].zip(rank).map(|((m, s, _), r)| (m, s, r)));
                }
            }
            let mut order: Vec<usize> = (0..rows.len()).collect();
            order.sort_by(|&a, &b| {
                let m = |k: usize| cells[k].first().copied().flatten().map(|c| c.0);
                m(a).unwrap_or(f64::MAX)
                    .total_cmp(&m(b).unwrap_or(f64::MAX))
            });
            let _ = writeln!(
                out,
                "Seed 002's method, {g} (mean and standard deviation of {} iterations, upper outliers dropped as BenchmarkDotNet does; rank 1 is fastest, equal where Welch's t-test finds no difference at 95%)\n",
                self.iterations
            );
            let mut head = String::from("| Method |");
            let mut rule = String::from("|---|");
            for t in &targets {
                let _ = write!(head, " {t} mean | {t} stddev | {t} rank |");
                rule.push_str("---:|---:|---:|");
            }
            for t in targets.iter().skip(1) {
                let _ = write!(head, " {t}/{} |", targets[0]);
                rule.push_str("---:|");
            }
            let _ = writeln!(out, "{head}\n{rule}");
            for k in order {
                let mut line = format!("| {} |", rows[k].1);
                for c in &cells[k] {
                    match c {
                        Some((m, s, r)) => {
                            let _ = write!(line, " {} | {} | {r} |", fmt_ms(*m), fmt_ms(*s));
                        }
                        None => line.push_str(" - | - | - |"),
                    }
                }
                let base = cells[k].first().copied().flatten();
                for c in cells[k].iter().skip(1) {
                    match (c, base) {
                        (Some((m, _, _)), Some((b, _, _))) if b > 0.0 => {
                            let _ = write!(line, " {:.2}x |", m / b);
                        }
                        _ => line.push_str(" - |"),
                    }
                }
                let _ = writeln!(out, "{line}");
            }
            out.push('\n');
        }
        let keel_rows: Vec<(usize, usize, u64, &str)> = plan
            .iter()
            .enumerate()
            .filter_map(|(i, p)| match p {
                Planned::KeelWrite(n, s) => Some((i, i + 1, *n, s.as_str())),
                _ => None,
            })
            .collect();
        if !keel_rows.is_empty() {
            let _ = writeln!(
                out,
                "Keel's variant: one command per record written, read back with one command per record (strings) or one HGETALL / SMEMBERS (hash, set); times are one full pass, memory the used_memory growth\n"
            );
            let mut head = String::from("| schema | records |");
            let mut rule = String::from("|---|---:|");
            for what in ["write", "read", "memory"] {
                for t in &targets {
                    let unit = if what == "memory" { "bytes" } else { "ms" };
                    let _ = write!(head, " {what} {unit} {t} |");
                    rule.push_str("---:|");
                }
                for t in targets.iter().skip(1) {
                    let _ = write!(head, " {t}/{} |", targets[0]);
                    rule.push_str("---:|");
                }
            }
            let _ = writeln!(out, "{head}\n{rule}");
            for (wi, ri, n, schema) in keel_rows {
                let mut line = format!("| {schema} | {n} |");
                for (step, name) in [
                    (wi, "write all ms"),
                    (ri, "read all ms"),
                    (wi, "memory bytes"),
                ] {
                    let vals: Vec<Option<f64>> = (0..targets.len())
                        .map(|ti| {
                            metric(run.steps.get(step).and_then(|s| s.outcomes.get(ti)), name)
                        })
                        .collect();
                    for v in &vals {
                        match v {
                            Some(v) if name == "memory bytes" => {
                                let _ = write!(line, " {v:.0} |");
                            }
                            Some(v) => {
                                let _ = write!(line, " {} |", fmt_ms(*v));
                            }
                            None => line.push_str(" - |"),
                        }
                    }
                    for v in vals.iter().skip(1) {
                        match (v, vals[0]) {
                            (Some(v), Some(b)) if b > 0.0 => {
                                let _ = write!(line, " {:.2}x |", v / b);
                            }
                            _ => line.push_str(" - |"),
                        }
                    }
                }
                let _ = writeln!(out, "{line}");
            }
        }
        out
    }
}

impl Kind for Cache {
    fn steps(&self) -> Vec<String> {
        self.plan().iter().map(Cache::step_name).collect()
    }

    fn notes(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.methods.iter().any(|m| m == "seed") {
            v.push(format!(
                "seed method: {} iterations per method, one connection; strings written one SET per record, a hash or a set with one HSET / SADD carrying every record; every schema read one record per command (GET, HGET, SISMEMBER); arrangements: the records of one request, {} variants per product, one HSET / SADD per key, pipelined up to {MAX_PIPELINE} deep; FLUSHALL before each write iteration",
                self.iterations, self.variants_per_product
            ));
        }
        if self.methods.iter().any(|m| m == "keel") {
            v.push(format!(
                "keel variant: records written one command each over {} connection(s), pipeline {}; reads fetch every record {} time(s) (GET per record, or one HGETALL / SMEMBERS); memory is the used_memory growth after FLUSHALL",
                self.connections, self.pipeline, self.read_passes
            ));
        }
        v
    }

    fn extra_report(&self, run: &Run) -> String {
        self.tables(run)
    }

    fn run(&self, t: &mut TargetRun) -> Vec<Outcome> {
        let mut out = Vec::new();
        let plan = self.plan();
        let mut k = 0;
        while k < plan.len() {
            match &plan[k] {
                Planned::KeelWrite(n, schema) => {
                    let (write, read) = commands(schema);
                    let mut needs: Vec<&str> = write.to_vec();
                    needs.extend_from_slice(read);
                    needs.push("FLUSHALL");
                    if let Some(o) = t.lacks(&needs) {
                        out.push(o.clone());
                        out.push(o);
                    } else {
                        let w = self.write_step(t, *n, schema);
                        let r = if matches!(w, Outcome::Done(_)) {
                            self.read_step(t, *n, schema)
                        } else {
                            not_written()
                        };
                        out.push(w);
                        out.push(r);
                    }
                    k += 2;
                }
                Planned::KeelRead(..) => {
                    // Always follows its write (handled there).
                    out.push(not_written());
                    k += 1;
                }
                p @ Planned::Seed { load, .. } => {
                    let name = Cache::step_name(p);
                    let o = self.seed_step(t, &name, load);
                    let failed_write = !matches!(o, Outcome::Done(_))
                        && matches!(
                            load,
                            SeedLoad::Write { .. } | SeedLoad::ArrangedWrite { .. }
                        );
                    let instead = match &o {
                        Outcome::Unsupported { .. } => o.clone(),
                        _ => not_written(),
                    };
                    out.push(o);
                    k += 1;
                    // A read needs its write's records.
                    if failed_write {
                        if let Some(Planned::Seed { load, .. }) = plan.get(k) {
                            if matches!(load, SeedLoad::Read { .. } | SeedLoad::ArrangedRead { .. })
                            {
                                out.push(instead);
                                k += 1;
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

fn not_written() -> Outcome {
    Outcome::Failed {
        reason: "not run: the records could not be written".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_stable_and_shaped_like_the_study() {
        let a = Record::new(7, 3);
        let b = Record::new(7, 3);
        assert_eq!(a.request_id, b.request_id);
        assert_ne!(a.request_id, Record::new(7, 4).request_id);
        assert_eq!(a.delimited().split('|').count(), 4);
        assert_eq!(a.entities().split(';').count(), 4);
        let j = a.json();
        assert!(j.starts_with("{\"productId\":") && j.ends_with("]}"), "{j}");
        assert!(a.member().starts_with(&a.field()));
    }

    fn cache(short: bool) -> Cache {
        let f = crate::scenario::file::parse(
            "c.toml",
            "title = \"c\"\nkind = \"cache-schemas\"\n[short]\nrecords = [20]\niterations = 2\narrangement_records = [30]\n",
        )
        .unwrap();
        match &f.params {
            crate::scenario::file::Params::Cache(p, s) => {
                let r = Resolver { src: &f.src, short };
                Cache::new(&r, p, s, 2).unwrap()
            }
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_plan_holds_the_seed_method_and_keels_variant() {
        let c = cache(true);
        let steps = c.steps();
        for want in [
            "seed O1_Set_Delimited x20",
            "seed O1_Get_Delimited x20",
            "seed O3_Set_Hash x20",
            "seed O3_Get_Hash x20",
            "seed O4_Set_Sets x20",
            "seed O4_Get_Sets x20",
            "write hash x20",
            "read hash x20",
            "seed O1_SetHash_RequestIdInKey x30",
            "seed O2_ReadHash_RequestIdAndProductIdInKey x30",
            "seed O3_SetAddAll_AllFieldsInKey x30",
            "seed O3_ReadSet_AllFieldsInKey x30",
        ] {
            assert!(steps.iter().any(|s| s == want), "{want} in {steps:?}");
        }
        // 4 schemas x (2 seed + 2 keel) + 2 kinds x 3 arrangements x 2.
        assert_eq!(steps.len(), 16 + 12);
        assert_eq!(c.iterations, 2);
        assert_eq!(cache(false).iterations, 5);
    }

    #[test]
    fn the_seed_writes_a_hash_or_set_in_one_command_and_reads_one_record_each() {
        let c = cache(true);
        let w = c.seed_requests(&SeedLoad::Write {
            n: 20,
            schema: "hash".into(),
        });
        assert_eq!(w.commands.len(), 1);
        assert!(w.commands[0].starts_with(b"*42\r\n$4\r\nHSET"));
        assert!(w.flush_first);
        let w = c.seed_requests(&SeedLoad::Write {
            n: 20,
            schema: "set".into(),
        });
        assert_eq!(w.commands.len(), 1);
        assert!(w.commands[0].starts_with(b"*22\r\n$4\r\nSADD"));
        let w = c.seed_requests(&SeedLoad::Write {
            n: 20,
            schema: "json".into(),
        });
        assert_eq!((w.commands.len(), w.pipeline), (20, 1));
        for (schema, cmd) in [("delimited", "GET"), ("hash", "HGET"), ("set", "SISMEMBER")] {
            let r = c.seed_requests(&SeedLoad::Read {
                n: 20,
                schema: schema.into(),
            });
            assert_eq!(r.commands.len(), 20, "{schema}");
            assert!(
                String::from_utf8_lossy(&r.commands[0]).contains(&format!("\r\n{cmd}\r\n")),
                "{schema}"
            );
        }
    }

    #[test]
    fn arrangements_spread_one_request_over_one_some_or_all_keys() {
        let c = cache(true);
        let keys = |a: &str| {
            c.seed_requests(&SeedLoad::ArrangedWrite {
                n: 30,
                hash: true,
                arrangement: a.into(),
            })
            .commands
            .len()
        };
        assert_eq!(keys("RequestIdInKey"), 1);
        assert_eq!(keys("RequestIdAndProductIdInKey"), 3);
        assert_eq!(keys("AllFieldsInKey"), 30);
        let r = c.seed_requests(&SeedLoad::ArrangedRead {
            n: 30,
            hash: false,
            arrangement: "AllFieldsInKey".into(),
        });
        assert_eq!(r.commands.len(), 30);
        assert_eq!(r.expect, Expect::One);
    }

    #[test]
    fn ranks_group_what_cannot_be_told_apart() {
        assert_eq!(mean_sd(&[1.0, 2.0, 3.0]), (2.0, 1.0));
        // 25 ms and 31 ms apart well beyond their spread; three ~1 s close.
        let r = ranks(&[
            (1005.8, 12.0, 5),
            (25.3, 1.3, 5),
            (31.3, 1.7, 5),
            (1006.1, 10.1, 5),
            (1019.3, 10.9, 5),
        ]);
        assert_eq!(r, [3, 1, 2, 3, 3]);
        assert_eq!(
            ranks(&[(2.0, 0.0, 1), (1.0, 0.0, 1), (1.0, 0.0, 1)]),
            [2, 1, 1]
        );
        assert!(ranks(&[]).is_empty());
    }

    #[test]
    fn a_stalled_iteration_is_dropped_like_benchmarkdotnet_does() {
        let kept = without_upper_outliers(&[10.0, 11.0, 10.5, 95.0, 10.2, 9.9]);
        assert_eq!(kept, [10.0, 11.0, 10.5, 10.2, 9.9]);
        // Fast ones are kept: nothing makes an iteration faster than it is.
        let kept = without_upper_outliers(&[10.0, 11.0, 10.5, 1.0, 10.2, 9.9]);
        assert_eq!(kept.len(), 6);
        assert_eq!(without_upper_outliers(&[1.0, 100.0]), [1.0, 100.0]);
    }

    #[test]
    fn the_study_table_ranks_methods_per_target() {
        use crate::model::{Step, Target};
        let c = cache(true);
        let mut run = Run::new(
            "t",
            vec![Target::new("redis", "a"), Target::new("keel", "b")],
        );
        for (i, name) in c.steps().into_iter().enumerate() {
            let m = |scale: f64| {
                let mut m = Measure::empty();
                m.metrics = vec![
                    ("mean ms".into(), (i + 1) as f64 * scale),
                    ("stddev ms".into(), 0.01),
                    ("iterations".into(), 2.0),
                    ("write all ms".into(), 3.0 * scale),
                    ("read all ms".into(), 2.0 * scale),
                    ("memory bytes".into(), 1000.0 * scale),
                ];
                Outcome::Done(Box::new(m))
            };
            run.steps.push(Step {
                name,
                outcomes: vec![m(1.0), m(0.5)],
            });
        }
        let t = c.tables(&run);
        assert!(t.contains("Seed 002's method, 20 records, writes"), "{t}");
        assert!(
            t.contains("| Method | redis mean | redis stddev | redis rank | keel mean |"),
            "{t}"
        );
        assert!(
            t.contains(
                "| O1_Set_Delimited | 1.00 ms | 0.010 ms | 1 | 0.500 ms | 0.010 ms | 1 | 0.50x |"
            ),
            "{t}"
        );
        assert!(
            t.contains("Seed 002's method, 30 records, set arrangements, reads"),
            "{t}"
        );
        assert!(t.contains("Keel's variant"), "{t}");
        assert!(
            t.contains("| hash | 20 | 3.00 ms | 1.50 ms | 0.50x |"),
            "{t}"
        );
    }
}
