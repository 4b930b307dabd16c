//! `kind = "bloom-dedup"` (seed 000): a Bloom filter reserved with
//! BF.RESERVE, filled with fresh UUIDs by closed-loop workers sharing one
//! multiplexed connection (optionally insert-only first), then insert and
//! check-existence together; an EXISTS of a never-inserted UUID answering 1
//! is a false positive, counted as a failure. Reports desired vs actual
//! error rate, BF.DEBUG and used_memory at the end.

use super::file::{nonzero_dur, positive, BloomSpec, Dur, Resolver};
use super::server::frame_text;
use super::workloads::{BloomAdd, BloomCheck, FALSE_POSITIVE};
use super::{Kind, TargetRun};
use crate::load::{Mode, Until};
use crate::model::{Outcome, Run};
use std::sync::Arc;
use std::time::Duration;

pub const WARMUP: &str = "warm-up insert-guids";
pub const INSERT: &str = "insert-guids";
pub const CHECK: &str = "check-existence";

#[derive(Debug, Clone)]
pub struct Bloom {
    pub key: String,
    pub error_rate: f64,
    pub capacity: u64,
    pub workers: usize,
    pub check_workers: usize,
    pub connections: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

impl Bloom {
    pub fn new(r: &Resolver, p: &BloomSpec, s: &BloomSpec) -> anyhow::Result<Bloom> {
        let workers = r.get("workers", &p.workers, &s.workers, 20, positive)?;
        Ok(Bloom {
            key: r.get("key", &p.key, &s.key, "test".into(), |k: &String| {
                if k.is_empty() {
                    Err("must not be empty".into())
                } else {
                    Ok(())
                }
            })?,
            error_rate: r.get("error_rate", &p.error_rate, &s.error_rate, 0.0001, |v| {
                if *v > 0.0 && *v < 1.0 {
                    Ok(())
                } else {
                    Err("must be between 0 and 1 (exclusive), e.g. 0.0001".into())
                }
            })?,
            capacity: r.get("capacity", &p.capacity, &s.capacity, 1_000_000, positive)?,
            workers: workers as usize,
            check_workers: r.get(
                "check_workers",
                &p.check_workers,
                &s.check_workers,
                workers,
                positive,
            )? as usize,
            connections: r.get("connections", &p.connections, &s.connections, 1, positive)?
                as usize,
            warmup: r
                .get("warmup", &p.warmup, &s.warmup, Dur(Duration::ZERO), |_| {
                    Ok(())
                })?
                .0,
            duration: r
                .get(
                    "duration",
                    &p.duration,
                    &s.duration,
                    Dur(Duration::from_secs(180)),
                    nonzero_dur,
                )?
                .0,
        })
    }
}

/// The `size:` field of BF.DEBUG's first line: items inserted.
fn debug_size(text: &str) -> Option<f64> {
    text.split_whitespace()
        .find_map(|w| w.strip_prefix("size:"))
        .and_then(|v| v.parse().ok())
}

impl Kind for Bloom {
    fn steps(&self) -> Vec<String> {
        let mut s = Vec::new();
        if !self.warmup.is_zero() {
            s.push(WARMUP.to_string());
        }
        s.push(INSERT.to_string());
        s.push(CHECK.to_string());
        s
    }

    fn notes(&self) -> Vec<String> {
        vec![format!(
            "BF.RESERVE {} {} {}; {} insert and {} check workers sharing {} connection(s); warm-up {:?}, then both for {:?}",
            self.key,
            self.error_rate,
            self.capacity,
            self.workers,
            self.check_workers,
            self.connections,
            self.warmup,
            self.duration
        )]
    }

    fn run(&self, t: &mut TargetRun) -> Vec<Outcome> {
        let n = self.steps().len();
        if let Some(o) = t.lacks(&["BF.RESERVE", "BF.ADD", "BF.EXISTS"]) {
            return vec![o; n];
        }
        let setup = t.admin().and_then(|mut a| {
            a.ok(&["DEL", self.key.as_str()])?;
            a.ok(&[
                "BF.RESERVE",
                self.key.as_str(),
                &self.error_rate.to_string(),
                &self.capacity.to_string(),
            ])
        });
        if let Err(e) = setup {
            let reason = format!("BF.RESERVE failed: {e:#}");
            return vec![Outcome::Failed { reason }; n];
        }
        let key = self.key.as_bytes().to_vec();
        let add = || Arc::new(BloomAdd { key: key.clone() });
        let batched = |workers| Mode::Batched {
            workers,
            connections: self.connections,
        };
        let mut out = Vec::new();
        if !self.warmup.is_zero() {
            let spec = t.spec(batched(self.workers), Until::Time(self.warmup), WARMUP);
            out.push(t.measure_one(spec, add()));
        }
        let ins = t.spec(batched(self.workers), Until::Time(self.duration), INSERT);
        let chk = t.spec(
            batched(self.check_workers),
            Until::Time(self.duration),
            CHECK,
        );
        let check = Arc::new(BloomCheck { key: key.clone() });
        out.extend(t.measure(vec![(ins, add()), (chk, check)]));
        // Figures of the filter at the end go with the check step.
        if let Some(Outcome::Done(m)) = out.last_mut() {
            let fp = m
                .failure_kinds
                .iter()
                .find(|(k, _)| k == FALSE_POSITIVE)
                .map(|(_, c)| *c)
                .unwrap_or(0);
            let checks = m.ok + m.failed;
            m.metrics
                .push(("desired error rate %".into(), self.error_rate * 100.0));
            if checks > 0 {
                m.metrics.push((
                    "actual error rate %".into(),
                    fp as f64 * 100.0 / checks as f64,
                ));
            }
            m.metrics.push(("false positives".into(), fp as f64));
            if let Ok(mut a) = t.admin() {
                if let Ok(f) = a.ok(&["BF.DEBUG", self.key.as_str()]) {
                    let text = frame_text(&f);
                    if let Some(size) = debug_size(&text) {
                        m.metrics.push(("items in filter".into(), size));
                    }
                    m.info.push(("BF.DEBUG".into(), text));
                }
                if let Ok(Some(mem)) = a.used_memory() {
                    m.metrics.push(("used_memory bytes".into(), mem));
                }
            }
        }
        out
    }

    fn extra_report(&self, run: &Run) -> String {
        super::nbomber::render(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf_debug_size_is_read() {
        let t = "size:6944003\nbytes:2576608 bits:20612864 hashes:15 hashwidth:64 capacity:1000000 size:1000000 ratio:5e-05";
        assert_eq!(debug_size(t), Some(6_944_003.0));
        assert_eq!(debug_size("nothing"), None);
    }
}
