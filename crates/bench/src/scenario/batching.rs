//! `kind = "batching"` (seed 004): 80% GET / 20% SET of 100-byte values on
//! 20-byte keys (all keys written first), driven three ways at each number
//! of concurrent callers: request/response (one connection per caller,
//! pipeline 1), explicit pipelines of P requests per connection, and
//! automatic pipelining (callers awaiting one request each, sharing
//! keel-client's multiplexed connection).

use super::file::{nonzero_dur, one_of, positive, positive_list, BatchingSpec, Dur, Resolver};
use super::workloads::{key_into, push_cmd, Expect, Mix, Sequence};
use super::{Kind, TargetRun};
use crate::load::{Mode, Until};
use crate::model::Outcome;
use std::sync::Arc;
use std::time::Duration;

pub const MODES: [&str; 3] = ["request-response", "pipeline", "auto"];

#[derive(Debug, Clone)]
pub struct Batching {
    pub modes: Vec<String>,
    pub callers: Vec<u64>,
    pub pipelines: Vec<u64>,
    pub keys: u64,
    pub key_size: usize,
    pub value_size: usize,
    pub get_ratio: f64,
    pub duration: Duration,
    pub connections: usize,
}

impl Batching {
    pub fn new(r: &Resolver, p: &BatchingSpec, s: &BatchingSpec) -> anyhow::Result<Batching> {
        let all = MODES.iter().map(|t| t.to_string()).collect();
        Ok(Batching {
            modes: r.get("modes", &p.modes, &s.modes, all, one_of(&MODES))?,
            callers: r.get(
                "callers",
                &p.callers,
                &s.callers,
                vec![1, 16, 256, 1000],
                |v| {
                    positive_list(v)?;
                    if v.iter().any(|&c| c > 10_000) {
                        return Err("at most 10000 callers".into());
                    }
                    Ok(())
                },
            )?,
            pipelines: r.get(
                "pipelines",
                &p.pipelines,
                &s.pipelines,
                vec![2, 8, 32, 96],
                positive_list,
            )?,
            keys: r.get("keys", &p.keys, &s.keys, 100_000, positive)?,
            key_size: r.get("key_size", &p.key_size, &s.key_size, 20, positive)? as usize,
            value_size: r.get("value_size", &p.value_size, &s.value_size, 100, positive)? as usize,
            get_ratio: r.get("get_ratio", &p.get_ratio, &s.get_ratio, 0.8, |v| {
                if (0.0..=1.0).contains(v) {
                    Ok(())
                } else {
                    Err("must be between 0 and 1".into())
                }
            })?,
            duration: r
                .get(
                    "duration",
                    &p.duration,
                    &s.duration,
                    Dur(Duration::from_secs(5)),
                    nonzero_dur,
                )?
                .0,
            connections: r.get("connections", &p.connections, &s.connections, 1, positive)?
                as usize,
        })
    }

    fn points(&self) -> Vec<(String, Mode)> {
        let mut v = Vec::new();
        for &c in &self.callers {
            let c = c as usize;
            for m in &self.modes {
                match m.as_str() {
                    "request-response" => v.push((
                        format!("request-response c={c}"),
                        Mode::Raw {
                            connections: c,
                            pipeline: 1,
                        },
                    )),
                    "pipeline" => {
                        for &p in &self.pipelines {
                            v.push((
                                format!("pipeline {p} c={c}"),
                                Mode::Raw {
                                    connections: c,
                                    pipeline: p as usize,
                                },
                            ));
                        }
                    }
                    _ => v.push((
                        format!("auto-pipelining c={c}"),
                        Mode::Batched {
                            workers: c,
                            connections: self.connections,
                        },
                    )),
                }
            }
        }
        v
    }
}

impl Kind for Batching {
    fn steps(&self) -> Vec<String> {
        self.points().into_iter().map(|(n, _)| n).collect()
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "{:.0}% GET / {:.0}% SET, {}-byte values, {}-byte keys out of {} (written first), {:?} per point; c = concurrent callers; auto-pipelining shares {} keel-client connection(s)",
            self.get_ratio * 100.0,
            (1.0 - self.get_ratio) * 100.0,
            self.value_size,
            self.key_size,
            self.keys,
            self.duration,
            self.connections
        )]
    }

    fn run(&self, t: &mut TargetRun) -> Vec<Outcome> {
        let n = self.points().len();
        if let Some(o) = t.lacks(&["GET", "SET"]) {
            return vec![o; n];
        }
        // Every GET finds its key, as in the study.
        let (ks, vs) = (self.key_size, self.value_size);
        let fill = Sequence::new(
            self.keys,
            Expect::Any,
            Box::new(move |i, out| {
                let mut k = Vec::with_capacity(ks);
                key_into(&mut k, i, ks);
                push_cmd(out, &[b"SET", &k, &vec![b'v'; vs]]);
            }),
        );
        let mode = Mode::Raw {
            connections: 4,
            pipeline: 64,
        };
        let mut spec = t.spec(mode, Until::Requests(self.keys), "writing the keys");
        spec.progress = None;
        match crate::load::run(&spec, Arc::new(fill)) {
            Ok(m) if m.failed == 0 => {}
            Ok(m) => {
                let why = m
                    .failure_kinds
                    .first()
                    .map(|(k, _)| k.clone())
                    .unwrap_or_default();
                let reason = format!("writing the keys failed {} times: {why}", m.failed);
                return vec![Outcome::Failed { reason }; n];
            }
            Err(e) => {
                let reason = format!("writing the keys failed: {e:#}");
                return vec![Outcome::Failed { reason }; n];
            }
        }
        let mut out = Vec::new();
        for (name, mode) in self.points() {
            let w = Arc::new(Mix {
                get_ratio: self.get_ratio,
                keyspace: self.keys,
                key_size: self.key_size,
                value: vec![b'x'; self.value_size],
            });
            let spec = t.spec(mode, Until::Time(self.duration), &name);
            out.push(t.measure_one(spec, w));
        }
        out
    }
}
