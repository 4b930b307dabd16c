//! memtier-like mixed workloads: SET and GET in a given ratio over a key
//! range chosen by a pattern (uniform, sequential, gaussian, zipf), values of
//! a fixed size or a size range, closed loop or open loop at a fixed rate.
//! Entered with `keel-bench mixed ...` or any option only this mode has.

use crate::classic::{parse_target, write_outputs, USAGE};
use crate::load::{self, LoadSpec, Mode, Until, Workload};
use crate::model::{Outcome, Run, Step, Target};
use crate::rng::Rng;
use anyhow::{bail, Context};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Options that only the mixed mode has; any of them selects it.
const OWN_FLAGS: &[&str] = &[
    "--ratio",
    "--key-pattern",
    "--key-prefix",
    "--key-min",
    "--key-max",
    "--data-size",
    "--data-size-range",
    "--test-time",
    "--pipeline",
    "--clients",
    "--rate",
    "--zipf-exp",
];

/// Whether the arguments ask for the mixed mode.
pub fn wants(args: &[String]) -> bool {
    args.iter().any(|a| OWN_FLAGS.contains(&a.as_str()))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pattern {
    Uniform,
    Sequential,
    Gaussian,
    Zipf(f64),
}

#[derive(Debug, Clone)]
pub struct Options {
    pub addr: String,
    pub password: Option<String>,
    pub set: u64,
    pub get: u64,
    pub pattern: Pattern,
    pub zipf_exp: f64,
    pub prefix: String,
    pub key_min: u64,
    pub key_max: u64,
    pub size_min: usize,
    pub size_max: usize,
    pub until: Until,
    pub pipeline: usize,
    pub clients: usize,
    pub threads: usize,
    pub rate: Option<f64>,
    pub seed: Option<u64>,
    pub targets: Vec<Target>,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    pub help: bool,
}

fn num<T: std::str::FromStr>(flag: &str, v: &str) -> anyhow::Result<T> {
    v.parse()
        .map_err(|_| anyhow::anyhow!("{flag} wants a number, got {v:?}"))
}

pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut host = "127.0.0.1".to_string();
    let mut port: u16 = 6379;
    let mut o = Options {
        addr: String::new(),
        password: None,
        set: 1,
        get: 10,
        pattern: Pattern::Uniform,
        zipf_exp: 0.99,
        prefix: "memtier-".into(),
        key_min: 0,
        key_max: 10_000_000,
        size_min: 32,
        size_max: 32,
        until: Until::Requests(100_000),
        pipeline: 1,
        clients: 50,
        threads: 1,
        rate: None,
        seed: None,
        targets: Vec::new(),
        json: None,
        html: None,
        help: false,
    };
    let mut pattern_name = "uniform".to_string();
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        if flag == "--help" {
            o.help = true;
            i += 1;
            continue;
        }
        let v = args
            .get(i + 1)
            .map(String::as_str)
            .with_context(|| format!("{flag} needs a value"))?;
        match flag {
            "-h" => host = v.to_string(),
            "-p" => port = num(flag, v)?,
            "-a" => o.password = Some(v.to_string()),
            "--ratio" => {
                let (s, g) = v
                    .split_once(':')
                    .with_context(|| format!("--ratio wants SET:GET, got {v:?}"))?;
                o.set = num(flag, s)?;
                o.get = num(flag, g)?;
                if o.set + o.get == 0 {
                    bail!("--ratio {v}: nothing to send");
                }
            }
            "--key-pattern" => pattern_name = v.to_ascii_lowercase(),
            "--zipf-exp" => o.zipf_exp = num(flag, v)?,
            "--key-prefix" => o.prefix = v.to_string(),
            "--key-min" => o.key_min = num(flag, v)?,
            "--key-max" => o.key_max = num(flag, v)?,
            "--data-size" => {
                o.size_min = num(flag, v)?;
                o.size_max = o.size_min;
            }
            "--data-size-range" => {
                let (a, b) = v
                    .split_once('-')
                    .with_context(|| format!("--data-size-range wants MIN-MAX, got {v:?}"))?;
                o.size_min = num(flag, a)?;
                o.size_max = num(flag, b)?;
                if o.size_min > o.size_max {
                    bail!("--data-size-range {v}: MIN is above MAX");
                }
            }
            "--test-time" => {
                o.until = Until::Time(Duration::from_secs_f64(num::<f64>(flag, v)?.max(0.0)))
            }
            "-n" | "--requests" => o.until = Until::Requests(num(flag, v)?),
            "--pipeline" | "-P" => o.pipeline = num::<usize>(flag, v)?.max(1),
            "-c" | "--clients" => o.clients = num::<usize>(flag, v)?.max(1),
            "--threads" => o.threads = num::<usize>(flag, v)?.max(1),
            "--rate" => {
                let r: f64 = num(flag, v)?;
                if !(r.is_finite() && r > 0.0) {
                    bail!("--rate wants a positive number of requests per second");
                }
                o.rate = Some(r);
            }
            "--seed" => o.seed = Some(num(flag, v)?),
            "--target" => o.targets.push(parse_target(v)?),
            "--json" => o.json = Some(v.into()),
            "--html" => o.html = Some(v.into()),
            _ => bail!("unknown option {flag:?} for the mixed mode (see keel-bench --help)"),
        }
        i += 2;
    }
    if o.key_max < o.key_min {
        bail!("--key-max {} is below --key-min {}", o.key_max, o.key_min);
    }
    o.pattern = match pattern_name.as_str() {
        "uniform" | "random" | "r" => Pattern::Uniform,
        "sequential" | "s" => Pattern::Sequential,
        "gaussian" | "g" => Pattern::Gaussian,
        "zipf" | "z" => Pattern::Zipf(o.zipf_exp),
        other => bail!("--key-pattern {other:?}: use uniform, sequential, gaussian or zipf"),
    };
    o.addr = format!("{host}:{port}");
    Ok(o)
}

/// Chooses key numbers in `min..=max` by a pattern.
#[derive(Debug)]
pub struct Keys {
    min: u64,
    /// Keys in the range.
    span: u64,
    pattern: Pattern,
    next: AtomicU64,
    zipf: Option<Zipf>,
}

impl Keys {
    pub fn new(min: u64, max: u64, pattern: Pattern) -> Keys {
        let span = max.saturating_sub(min).saturating_add(1);
        let zipf = match pattern {
            Pattern::Zipf(s) => Some(Zipf::new(span, s)),
            _ => None,
        };
        Keys {
            min,
            span,
            pattern,
            next: AtomicU64::new(0),
            zipf,
        }
    }

    pub fn pick(&self, rng: &mut Rng) -> u64 {
        let offset = match self.pattern {
            Pattern::Uniform => rng.below(self.span),
            // Shared by every connection, so the range is walked once in order.
            Pattern::Sequential => self.next.fetch_add(1, Ordering::Relaxed) % self.span,
            Pattern::Gaussian => self.gaussian(rng),
            Pattern::Zipf(_) => match &self.zipf {
                Some(z) => z.sample(rng) - 1,
                None => rng.below(self.span),
            },
        };
        self.min + offset
    }

    /// Centred on the middle of the range with a standard deviation of a
    /// sixth of it (as memtier), redrawn when it falls outside.
    fn gaussian(&self, rng: &mut Rng) -> u64 {
        let mid = (self.span as f64 - 1.0) / 2.0;
        let sd = self.span as f64 / 6.0;
        for _ in 0..64 {
            // Box-Muller.
            let u1 = 1.0 - rng.unit();
            let u2 = rng.unit();
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            let x = (mid + z * sd).round();
            if x >= 0.0 && x < self.span as f64 {
                return x as u64;
            }
        }
        mid as u64
    }
}

/// Zipf ranks 1..=n with P(k) proportional to 1/k^s, sampled in constant
/// time by rejection-inversion (Hörmann and Derflinger, 1996), so a range
/// of millions of keys needs no table.
#[derive(Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    pub fn new(n: u64, s: f64) -> Zipf {
        let n = n.max(1) as f64;
        let mut z = Zipf {
            n,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.big_h(1.5) - 1.0;
        z.h_n = z.big_h(n + 0.5);
        z.cut = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    /// Integral of h: (x^(1-s) - 1) / (1-s), written to stay exact near s = 1.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        let t = (1.0 - self.s) * lx;
        let f = if t.abs() > 1e-8 {
            t.exp_m1() / t
        } else {
            1.0 + t / 2.0
        };
        f * lx
    }

    fn big_h_inv(&self, x: f64) -> f64 {
        let t = ((1.0 - self.s) * x).max(-1.0);
        let f = if t.abs() > 1e-8 {
            t.ln_1p() / t
        } else {
            1.0 - t / 2.0
        };
        (f * x).exp()
    }

    /// A rank in 1..=n.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        loop {
            let u = self.h_n + rng.unit() * (self.h_x1 - self.h_n);
            let x = self.big_h_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.big_h(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// The mixed SET/GET workload.
#[derive(Debug)]
pub struct Mixed {
    keys: Keys,
    prefix: Vec<u8>,
    set: u64,
    total: u64,
    size_min: usize,
    size_max: usize,
    value: Vec<u8>,
}

impl Mixed {
    pub fn new(o: &Options) -> Mixed {
        Mixed {
            keys: Keys::new(o.key_min, o.key_max, o.pattern),
            prefix: o.prefix.clone().into_bytes(),
            set: o.set,
            total: o.set + o.get,
            size_min: o.size_min,
            size_max: o.size_max,
            value: (0..o.size_max).map(|i| b'a' + (i % 26) as u8).collect(),
        }
    }
}

fn push_decimal(mut n: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

fn push_bulk_header(len: usize, out: &mut Vec<u8>) {
    out.push(b'$');
    push_decimal(len as u64, out);
    out.extend_from_slice(b"\r\n");
}

/// Tags handed to `judge`: which command a reply answers.
pub const TAG_SET: u32 = 0;
pub const TAG_GET: u32 = 1;

impl Workload for Mixed {
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        let is_set = rng.below(self.total) < self.set;
        let key = self.keys.pick(rng);
        let key_len = self.prefix.len() + {
            let mut n = key;
            let mut d = 1;
            while n >= 10 {
                n /= 10;
                d += 1;
            }
            d
        };
        if is_set {
            out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
        } else {
            out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
        }
        push_bulk_header(key_len, out);
        out.extend_from_slice(&self.prefix);
        push_decimal(key, out);
        out.extend_from_slice(b"\r\n");
        if is_set {
            let size =
                self.size_min + rng.below((self.size_max - self.size_min + 1) as u64) as usize;
            push_bulk_header(size, out);
            out.extend_from_slice(&self.value[..size]);
            out.extend_from_slice(b"\r\n");
            TAG_SET
        } else {
            TAG_GET
        }
    }
}

/// Entry point of the mixed mode.
pub fn run_cli(args: &[String]) -> anyhow::Result<ExitCode> {
    let o = parse(args)?;
    if o.help {
        print!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    let targets = if o.targets.is_empty() {
        vec![Target::new(&o.addr, &o.addr)]
    } else {
        o.targets.clone()
    };
    let mut targets = targets;
    for t in &mut targets {
        load::describe(t, o.password.as_deref());
    }
    let seed = o.seed.unwrap_or_else(|| Rng::from_entropy(1).next_u64());
    let pattern = match o.pattern {
        Pattern::Uniform => "uniform".to_string(),
        Pattern::Sequential => "sequential".to_string(),
        Pattern::Gaussian => "gaussian".to_string(),
        Pattern::Zipf(s) => format!("zipf (exponent {s})"),
    };
    let sizes = if o.size_min == o.size_max {
        format!("{} bytes", o.size_min)
    } else {
        format!("{}-{} bytes", o.size_min, o.size_max)
    };
    let mut run = Run::new(
        &format!("mixed SET:GET {}:{}", o.set, o.get),
        targets.clone(),
    );
    run.notes = vec![format!(
        "{} clients, pipeline {}, {} threads, keys {}{}..{}{} {pattern}, values {sizes}, {}",
        o.clients,
        o.pipeline,
        o.threads,
        o.prefix,
        o.key_min,
        o.prefix,
        o.key_max,
        match o.rate {
            Some(r) => format!("open loop at {r} requests/s (latency from the intended send time)"),
            None => "closed loop".to_string(),
        }
    )];
    let mut outcomes = Vec::new();
    let mut any_failed = false;
    for target in &targets {
        // A fresh workload per target: a sequential walk starts over.
        let workload: Arc<dyn Workload> = Arc::new(Mixed::new(&o));
        let mut spec = LoadSpec::new(
            &target.addr,
            Mode::Raw {
                connections: o.clients,
                pipeline: o.pipeline,
            },
            o.until,
        );
        spec.password = o.password.clone();
        spec.threads = o.threads;
        spec.rate = o.rate;
        spec.seed = seed;
        spec.progress = Some(format!("mixed on {}", target.name));
        let before = load::server_cpu(&target.addr, o.password.as_deref());
        match load::run(&spec, workload) {
            Ok(mut m) => {
                let after = load::server_cpu(&target.addr, o.password.as_deref());
                m.set_server_cpu(before, after);
                outcomes.push(Outcome::Done(Box::new(m)));
            }
            Err(e) if targets.len() == 1 => return Err(e),
            Err(e) => {
                any_failed = true;
                outcomes.push(Outcome::Failed {
                    reason: format!("{e:#}"),
                });
            }
        }
    }
    run.steps.push(Step {
        name: format!("SET:GET {}:{}", o.set, o.get),
        outcomes,
    });
    print!("{}", crate::report::table::render(&run));
    write_outputs(&run, o.json.as_deref(), o.html.as_deref())?;
    Ok(if any_failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_select_the_mode_and_parse() {
        assert!(wants(&args("--ratio 1:4 -c 5")));
        assert!(!wants(&args("-t set -n 10")));
        let o = parse(&args(
            "--ratio 1:4 --key-pattern zipf --zipf-exp 1.2 --key-prefix k: --key-min 5 --key-max 50 --data-size-range 10-20 --test-time 2 --pipeline 8 -c 3 --threads 2 --rate 1000 -p 7000",
        ))
        .unwrap();
        assert_eq!((o.set, o.get), (1, 4));
        assert_eq!(o.pattern, Pattern::Zipf(1.2));
        assert_eq!(
            (o.key_min, o.key_max, o.size_min, o.size_max),
            (5, 50, 10, 20)
        );
        assert_eq!(o.until, Until::Time(Duration::from_secs(2)));
        assert_eq!(
            (o.pipeline, o.clients, o.threads, o.rate),
            (8, 3, 2, Some(1000.0))
        );
        assert_eq!(o.addr, "127.0.0.1:7000");
        assert!(parse(&args("--ratio 1")).is_err());
        assert!(parse(&args("--key-pattern wobbly")).is_err());
        assert!(parse(&args("--data-size-range 9-3")).is_err());
        assert!(parse(&args("--rate 0")).is_err());
        assert!(parse(&args("--key-min 9 --key-max 3")).is_err());
    }

    #[test]
    fn sequential_walks_the_range_and_wraps() {
        let k = Keys::new(10, 14, Pattern::Sequential);
        let mut r = Rng::seeded(1);
        let got: Vec<u64> = (0..12).map(|_| k.pick(&mut r)).collect();
        assert_eq!(got, [10, 11, 12, 13, 14, 10, 11, 12, 13, 14, 10, 11]);
    }

    #[test]
    fn uniform_covers_the_range_evenly() {
        let k = Keys::new(100, 109, Pattern::Uniform);
        let mut r = Rng::seeded(2);
        let mut counts = [0u32; 10];
        for _ in 0..50_000 {
            let v = k.pick(&mut r);
            assert!((100..=109).contains(&v));
            counts[(v - 100) as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (4_500..5_500).contains(&c)),
            "{counts:?}"
        );
    }

    #[test]
    fn gaussian_is_centred_with_a_sixth_of_the_range_as_deviation() {
        let k = Keys::new(0, 60_000, Pattern::Gaussian);
        let mut r = Rng::seeded(3);
        let n = 100_000;
        let xs: Vec<f64> = (0..n).map(|_| k.pick(&mut r) as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
        assert!((mean - 30_000.0).abs() < 200.0, "mean {mean}");
        // Redrawing outside +-3 sd trims the tails a little.
        assert!((sd - 10_000.0).abs() < 300.0, "sd {sd}");
        let within_one = xs
            .iter()
            .filter(|x| (**x - 30_000.0).abs() <= 10_000.0)
            .count();
        let frac = within_one as f64 / n as f64;
        assert!((frac - 0.683).abs() < 0.01, "{frac}");
    }

    #[test]
    fn zipf_frequencies_fall_with_rank_as_the_exponent_says() {
        for s in [0.99, 1.2, 0.5] {
            let n = 1000u64;
            let z = Zipf::new(n, s);
            let mut r = Rng::seeded(4);
            let draws = 400_000;
            let mut counts = vec![0u64; n as usize + 1];
            for _ in 0..draws {
                let k = z.sample(&mut r);
                assert!((1..=n).contains(&k));
                counts[k as usize] += 1;
            }
            let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
            for k in [1u64, 2, 5, 10, 50] {
                let want = draws as f64 * (k as f64).powf(-s) / norm;
                let got = counts[k as usize] as f64;
                assert!(
                    (got - want).abs() < 5.0 * want.sqrt() + 0.01 * want,
                    "s={s} rank {k}: {got} vs {want}"
                );
            }
            // Least-squares slope of log frequency on log rank over the top 100.
            let pts: Vec<(f64, f64)> = (1..=100)
                .map(|k| ((k as f64).ln(), (counts[k] as f64).ln()))
                .collect();
            let mx = pts.iter().map(|p| p.0).sum::<f64>() / 100.0;
            let my = pts.iter().map(|p| p.1).sum::<f64>() / 100.0;
            let slope = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>()
                / pts.iter().map(|p| (p.0 - mx).powi(2)).sum::<f64>();
            assert!((slope + s).abs() < 0.05, "s={s} slope {slope}");
        }
    }

    #[test]
    fn requests_are_valid_resp_in_the_ratio_asked() {
        let o = parse(&args(
            "--ratio 1:3 --key-prefix k- --key-min 1 --key-max 100 --data-size-range 5-9",
        ))
        .unwrap();
        let w = Mixed::new(&o);
        let mut r = Rng::seeded(5);
        let (mut sets, mut gets) = (0, 0);
        for _ in 0..4000 {
            let mut out = Vec::new();
            let tag = w.next(&mut r, &mut out);
            let bytes = bytes::Bytes::from(out);
            let (frame, used) = keel_resp::parse_frame(&bytes).unwrap().unwrap();
            assert_eq!(used, bytes.len());
            let keel_resp::Frame::Array(items) = frame else {
                panic!("an array")
            };
            let args: Vec<Vec<u8>> = items
                .into_iter()
                .map(|f| match f {
                    keel_resp::Frame::Bulk(b) => b.to_vec(),
                    other => panic!("{other:?}"),
                })
                .collect();
            let key = String::from_utf8(args[1].to_vec()).unwrap();
            let n: u64 = key.strip_prefix("k-").unwrap().parse().unwrap();
            assert!((1..=100).contains(&n));
            if tag == TAG_SET {
                sets += 1;
                assert_eq!(&args[0][..], b"SET");
                assert!((5..=9).contains(&args[2].len()));
            } else {
                gets += 1;
                assert_eq!(&args[0][..], b"GET");
                assert_eq!(args.len(), 2);
            }
        }
        assert!(
            (800..1200).contains(&sets) && sets + gets == 4000,
            "{sets} sets"
        );
    }
}
