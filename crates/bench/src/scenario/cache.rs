//! `kind = "cache-schemas"` (seed 002): records of a recommendation cache
//! (request id, product id, variant id, reason, four entity numbers) stored
//! four ways: a delimited string per record, a JSON string per record, one
//! hash with a field per record (HSET / HGETALL), one set with a member per
//! record (SADD / SMEMBERS). For each record count and schema: the time to
//! write them all, the time to read them all back, and the server memory
//! they take (INFO used_memory after FLUSHALL and the writes).

use super::file::{one_of, positive, positive_list, CacheSpec, Resolver};
use super::workloads::{push_cmd, Build, Expect, Sequence};
use super::{Kind, TargetRun};
use crate::load::{Mode, Until};
use crate::model::Outcome;
use crate::rng::Rng;
use std::sync::Arc;

pub const SCHEMAS: [&str; 4] = ["delimited", "json", "hash", "set"];

#[derive(Debug, Clone)]
pub struct Cache {
    pub records: Vec<u64>,
    pub schemas: Vec<String>,
    pub read_passes: u64,
    pub connections: usize,
    pub pipeline: usize,
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
        Ok(Cache {
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

    fn points(&self) -> Vec<(u64, String)> {
        let mut v = Vec::new();
        for &n in &self.records {
            for s in &self.schemas {
                v.push((n, s.clone()));
            }
        }
        v
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

impl Kind for Cache {
    fn steps(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (n, s) in self.points() {
            v.push(format!("write {s} x{n}"));
            v.push(format!("read {s} x{n}"));
        }
        v
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "records written one command each over {} connection(s), pipeline {}; reads fetch every record {} time(s) (GET per record, or one HGETALL / SMEMBERS); memory is the used_memory growth after FLUSHALL",
            self.connections, self.pipeline, self.read_passes
        )]
    }

    fn run(&self, t: &mut TargetRun) -> Vec<Outcome> {
        let mut out = Vec::new();
        for (n, schema) in self.points() {
            let (write, read) = commands(&schema);
            let mut needs: Vec<&str> = write.to_vec();
            needs.extend_from_slice(read);
            needs.push("FLUSHALL");
            if let Some(o) = t.lacks(&needs) {
                out.push(o.clone());
                out.push(o);
                continue;
            }
            let w = self.write_step(t, n, &schema);
            let r = if matches!(w, Outcome::Done(_)) {
                self.read_step(t, n, &schema)
            } else {
                Outcome::Failed {
                    reason: "not run: the records could not be written".into(),
                }
            };
            out.push(w);
            out.push(r);
        }
        out
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
}
