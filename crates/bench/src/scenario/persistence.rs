//! `kind = "persistence"` (seed 001): redis-benchmark's PING, SET and GET on
//! random keys with small and large values, plus SET through EVAL, by one
//! client and by fifty, request/response. The fsync policies are targets
//! (a `variants` list in the file), so every step is compared across them.

use super::file::{one_of, positive, positive_list, PersistenceSpec, Resolver};
use super::workloads::{Fixed, KeyValue, Op};
use super::{Kind, TargetRun};
use crate::load::{Mode, Until, Workload};
use crate::model::Outcome;
use std::sync::Arc;

pub const TESTS: [&str; 4] = ["PING", "SET", "GET", "EVAL_SET"];

#[derive(Debug, Clone)]
pub struct Persistence {
    pub tests: Vec<String>,
    pub sizes: Vec<u64>,
    pub clients: Vec<u64>,
    pub requests: u64,
    pub keyspace: u64,
}

/// One step: a test, a value size (none for PING), a client count.
#[derive(Debug, Clone)]
struct Point {
    name: String,
    test: String,
    size: u64,
    clients: u64,
}

impl Persistence {
    pub fn new(r: &Resolver, p: &PersistenceSpec, s: &PersistenceSpec) -> anyhow::Result<Self> {
        let all = TESTS.iter().map(|t| t.to_string()).collect();
        Ok(Persistence {
            tests: r.get("tests", &p.tests, &s.tests, all, one_of(&TESTS))?,
            sizes: r.get("sizes", &p.sizes, &s.sizes, vec![3, 3000], positive_list)?,
            clients: r.get(
                "clients",
                &p.clients,
                &s.clients,
                vec![1, 50],
                positive_list,
            )?,
            requests: r.get("requests", &p.requests, &s.requests, 100_000, positive)?,
            keyspace: r.get("keyspace", &p.keyspace, &s.keyspace, 100_000, positive)?,
        })
    }

    fn points(&self) -> Vec<Point> {
        let mut v = Vec::new();
        for &c in &self.clients {
            for t in &self.tests {
                let sizes: Vec<u64> = if t == "PING" {
                    vec![0]
                } else {
                    self.sizes.clone()
                };
                for size in sizes {
                    let name = if t == "PING" {
                        format!("PING -c {c}")
                    } else {
                        format!("{t} {size}B -c {c}")
                    };
                    v.push(Point {
                        name,
                        test: t.clone(),
                        size,
                        clients: c,
                    });
                }
            }
        }
        v
    }
}

impl Kind for Persistence {
    fn steps(&self) -> Vec<String> {
        self.points().into_iter().map(|p| p.name).collect()
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "{} requests per step, random keys out of {}, request/response (pipeline 1); EVAL_SET is SET through EVAL \"return redis.call('SET', KEYS[1], ARGV[1])\"",
            self.requests, self.keyspace
        )]
    }

    fn run(&self, t: &mut TargetRun) -> Vec<Outcome> {
        if let Ok(mut a) = t.admin() {
            let aof = a.ok(&["CONFIG", "GET", "appendfsync"]).ok();
            if let Some(f) = aof {
                let text = super::server::frame_text(&f).replace('\n', " ");
                t.notes.push(format!("CONFIG GET appendfsync: {text}"));
            }
        }
        let mut out = Vec::new();
        for p in self.points() {
            let needs: &[&str] = match p.test.as_str() {
                "SET" => &["SET"],
                "GET" => &["GET"],
                "EVAL_SET" => &["EVAL"],
                _ => &[],
            };
            if let Some(o) = t.lacks(needs) {
                out.push(o);
                continue;
            }
            let value = vec![b'x'; p.size as usize];
            let w: Arc<dyn Workload> = match p.test.as_str() {
                "PING" => Arc::new(Fixed::new(&[b"PING"])),
                test => Arc::new(KeyValue {
                    op: match test {
                        "SET" => Op::Set,
                        "GET" => Op::Get,
                        _ => Op::EvalSet,
                    },
                    keyspace: self.keyspace,
                    key_size: 16,
                    value,
                }),
            };
            let mode = Mode::Raw {
                connections: p.clients as usize,
                pipeline: 1,
            };
            let spec = t.spec(mode, Until::Requests(self.requests), &p.name);
            out.push(t.measure_one(spec, w));
        }
        out
    }
}
