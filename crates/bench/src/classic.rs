//! redis-benchmark's flags, test names and output. The tests send what
//! redis-benchmark 7.0 sends (same keys, values and pre-fill for LRANGE), so
//! its numbers and ours can be read side by side; `--target` adds the
//! comparison redis-benchmark lacks. Also the pieces every mode shares:
//! `--target` parsing and the `--json`/`--html` outputs.

use crate::load::{self, LoadSpec, Mode, Until, Workload};
use crate::model::{Measure, Outcome, Run, Step, Target};
use crate::rng::Rng;
use anyhow::{bail, Context};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

pub const USAGE: &str = "\
Usage: keel-bench [OPTIONS] [COMMAND ARGS...]          redis-benchmark tests
       keel-bench mixed [OPTIONS]                      memtier-like mixed load
       keel-bench run SCENARIO.toml [OPTIONS]          a scenario file

redis-benchmark options (same meaning as redis-benchmark 7.0):
 -h <hostname>      Server hostname (default 127.0.0.1)
 -p <port>          Server port (default 6379)
 -a <password>      Password for AUTH on every connection
 -c <clients>       Number of parallel connections (default 50)
 -n <requests>      Total number of requests (default 100000)
 -d <size>          Data size of SET/GET value in bytes (default 3)
 -r <keyspacelen>   Replace __rand_int__ in arguments with a 12-digit random
                    number below keyspacelen, per request; without -r every
                    request uses the literal key (as redis-benchmark)
 -P <numreq>        Pipeline <numreq> requests (default 1)
 -t <tests>         Only run the comma separated list of tests (any case)
 --threads <num>    Event-loop threads (default 1)
 -q                 Quiet: one line per test
 --csv              CSV output
 -l                 Loop: run the tests forever
 --precision <n>    Decimal places of latencies (default 3)
 --seed <n>         Seed of the random numbers (default: from the clock)

Tests: PING_INLINE PING_MBULK SET GET INCR LPUSH RPUSH LPOP RPOP SADD HSET SPOP
       ZADD ZPOPMIN LRANGE_100 LRANGE_300 LRANGE_500 LRANGE_600 MSET
       (-t ping selects both PINGs, -t lrange all LRANGE tests)

Options of every mode:
 --target name=host:port   Run against this server; repeat to compare servers
                           in one run (ratios are to the first target)
 --json FILE               Write the run as JSON
 --html FILE               Write a self-contained HTML report
 --help                    This text

Mixed mode is entered with `mixed` or any of its options:
 --ratio SET:GET (default 1:10)   --key-pattern uniform|sequential|gaussian|zipf
 --key-prefix P (memtier-)        --key-min N (0)  --key-max N (10000000)
 --data-size N (32)               --data-size-range MIN-MAX
 --test-time SECS (or -n N)       --pipeline N  -c/--clients N  --threads N
 --rate N (open loop, requests/s in total; latency from the intended send time)
 --zipf-exp E (default 0.99)
";

/// `--target` value: `name=host:port`, or a bare `host:port` named by itself.
pub fn parse_target(s: &str) -> anyhow::Result<Target> {
    let (name, addr) = match s.split_once('=') {
        Some((n, a)) => (n.to_string(), a.to_string()),
        None => (s.to_string(), s.to_string()),
    };
    let port_ok = addr
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if name.is_empty() || !port_ok {
        bail!("--target wants name=host:port, got {s:?}");
    }
    Ok(Target::new(&name, &addr))
}

/// Write the files `--json` and `--html` asked for.
pub fn write_outputs(run: &Run, json: Option<&Path>, html: Option<&Path>) -> anyhow::Result<()> {
    if let Some(p) = json {
        crate::report::json::write(run, p)?;
    }
    if let Some(p) = html {
        let path: PathBuf = p.to_path_buf();
        crate::report::html::write(run, &path)?;
    }
    Ok(())
}

/// Parsed command line of the redis-benchmark mode.
#[derive(Debug, Clone)]
pub struct Options {
    pub host: String,
    pub port: u16,
    pub password: Option<String>,
    pub clients: usize,
    pub requests: u64,
    pub data_size: usize,
    pub keyspace: Option<u64>,
    pub pipeline: usize,
    /// Lowercased names given to -t.
    pub tests: Option<Vec<String>>,
    pub threads: usize,
    pub quiet: bool,
    pub csv: bool,
    pub forever: bool,
    pub precision: usize,
    pub seed: Option<u64>,
    pub targets: Vec<Target>,
    pub json: Option<PathBuf>,
    pub html: Option<PathBuf>,
    /// The command after the options, if any.
    pub command: Vec<String>,
    pub help: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            host: "127.0.0.1".into(),
            port: 6379,
            password: None,
            clients: 50,
            requests: 100_000,
            data_size: 3,
            keyspace: None,
            pipeline: 1,
            tests: None,
            threads: 1,
            quiet: false,
            csv: false,
            forever: false,
            precision: 3,
            seed: None,
            targets: Vec::new(),
            json: None,
            html: None,
            command: Vec::new(),
            help: false,
        }
    }
}

fn value<'a>(args: &'a [String], i: &mut usize, flag: &str) -> anyhow::Result<&'a str> {
    *i += 1;
    args.get(*i)
        .map(String::as_str)
        .with_context(|| format!("{flag} needs a value"))
}

fn number<T: std::str::FromStr>(args: &[String], i: &mut usize, flag: &str) -> anyhow::Result<T> {
    let v = value(args, i, flag)?;
    v.parse()
        .map_err(|_| anyhow::anyhow!("{flag} wants a number, got {v:?}"))
}

/// Parse redis-benchmark's options; the first argument that is not an
/// option starts the command.
pub fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        match a {
            "-h" => o.host = value(args, &mut i, a)?.to_string(),
            "-p" => o.port = number(args, &mut i, a)?,
            "-a" => o.password = Some(value(args, &mut i, a)?.to_string()),
            "-c" | "--clients" => o.clients = number::<usize>(args, &mut i, a)?.max(1),
            "-n" | "--requests" => o.requests = number(args, &mut i, a)?,
            "-d" => o.data_size = number(args, &mut i, a)?,
            "-r" => {
                let r: u64 = number(args, &mut i, a)?;
                o.keyspace = (r > 0).then_some(r);
            }
            "-P" => o.pipeline = number::<usize>(args, &mut i, a)?.max(1),
            "-t" => {
                o.tests = Some(
                    value(args, &mut i, a)?
                        .split(',')
                        .map(|t| t.trim().to_ascii_lowercase())
                        .filter(|t| !t.is_empty())
                        .collect(),
                )
            }
            "--threads" => o.threads = number::<usize>(args, &mut i, a)?.max(1),
            "-q" => o.quiet = true,
            "--csv" => o.csv = true,
            "-l" => o.forever = true,
            "--precision" => o.precision = number(args, &mut i, a)?,
            "--seed" => o.seed = Some(number(args, &mut i, a)?),
            "-k" => {
                if value(args, &mut i, a)? != "1" {
                    bail!("-k 0 (reconnect per request) is not supported");
                }
            }
            "--target" => o.targets.push(parse_target(value(args, &mut i, a)?)?),
            "--json" => o.json = Some(value(args, &mut i, a)?.into()),
            "--html" => o.html = Some(value(args, &mut i, a)?.into()),
            "--help" => o.help = true,
            _ if a.starts_with('-') && a.len() > 1 => {
                bail!("unknown option {a:?} (see keel-bench --help)")
            }
            _ => {
                o.command = args[i..].to_vec();
                break;
            }
        }
        i += 1;
    }
    Ok(o)
}

/// One redis-benchmark test: the title it prints and what it sends.
#[derive(Debug, Clone, PartialEq)]
pub struct Test {
    pub title: String,
    pub request: Vec<u8>,
}

/// The placeholder redis-benchmark replaces; 12 bytes, like its numbers.
pub const RAND_INT: &[u8] = b"__rand_int__";

fn resp<S: AsRef<[u8]>>(args: &[S]) -> Vec<u8> {
    let mut out = bytes::BytesMut::new();
    keel_resp::encode_command(args, &mut out);
    out.to_vec()
}

fn selected(o: &Options, names: &[&str]) -> bool {
    match &o.tests {
        None => true,
        Some(list) => names.iter().any(|n| list.iter().any(|t| t == n)),
    }
}

/// The tests to run, in redis-benchmark's order.
pub fn tests(o: &Options) -> Vec<Test> {
    if !o.command.is_empty() {
        return vec![Test {
            title: o.command.join(" "),
            request: resp(&o.command),
        }];
    }
    let data = "x".repeat(o.data_size);
    let score = if o.keyspace.is_some() {
        "__rand_int__"
    } else {
        "0"
    };
    let mut t = Vec::new();
    let mut add = |names: &[&str], title: &str, req: Vec<u8>| {
        if selected(o, names) {
            t.push(Test {
                title: title.to_string(),
                request: req,
            });
        }
    };
    add(
        &["ping_inline", "ping"],
        "PING_INLINE",
        b"PING\r\n".to_vec(),
    );
    add(&["ping_mbulk", "ping"], "PING_MBULK", resp(&["PING"]));
    add(&["set"], "SET", resp(&["SET", "key:__rand_int__", &data]));
    add(&["get"], "GET", resp(&["GET", "key:__rand_int__"]));
    add(&["incr"], "INCR", resp(&["INCR", "counter:__rand_int__"]));
    add(&["lpush"], "LPUSH", resp(&["LPUSH", "mylist", &data]));
    add(&["rpush"], "RPUSH", resp(&["RPUSH", "mylist", &data]));
    add(&["lpop"], "LPOP", resp(&["LPOP", "mylist"]));
    add(&["rpop"], "RPOP", resp(&["RPOP", "mylist"]));
    add(
        &["sadd"],
        "SADD",
        resp(&["SADD", "myset", "element:__rand_int__"]),
    );
    add(
        &["hset"],
        "HSET",
        resp(&["HSET", "myhash", "element:__rand_int__", &data]),
    );
    add(&["spop"], "SPOP", resp(&["SPOP", "myset"]));
    add(
        &["zadd"],
        "ZADD",
        resp(&["ZADD", "myzset", score, "element:__rand_int__"]),
    );
    add(&["zpopmin"], "ZPOPMIN", resp(&["ZPOPMIN", "myzset"]));
    let lranges: [(&str, &str, &str); 4] = [
        ("lrange_100", "LRANGE_100 (first 100 elements)", "99"),
        ("lrange_300", "LRANGE_300 (first 300 elements)", "299"),
        // redis-benchmark's LRANGE_500 reads 450 elements; kept comparable.
        ("lrange_500", "LRANGE_500 (first 500 elements)", "449"),
        ("lrange_600", "LRANGE_600 (first 600 elements)", "599"),
    ];
    let any_lrange = lranges.iter().any(|(n, _, _)| selected(o, &[n, "lrange"]));
    if any_lrange {
        add(
            &[
                "lpush",
                "lrange",
                "lrange_100",
                "lrange_300",
                "lrange_500",
                "lrange_600",
            ],
            "LPUSH (needed to benchmark LRANGE)",
            resp(&["LPUSH", "mylist", &data]),
        );
    }
    for (name, title, last) in lranges {
        add(
            &[name, "lrange"],
            title,
            resp(&["LRANGE", "mylist", "0", last]),
        );
    }
    let mut mset: Vec<&str> = vec!["MSET"];
    for _ in 0..10 {
        mset.push("key:__rand_int__");
        mset.push(&data);
    }
    add(&["mset"], "MSET (10 keys)", resp(&mset));
    t
}

/// A request template: the same bytes every time, with each `__rand_int__`
/// overwritten in place by a fresh 12-digit number below the keyspace.
#[derive(Debug, Clone)]
pub struct Template {
    bytes: Vec<u8>,
    slots: Vec<usize>,
    keyspace: Option<u64>,
}

impl Template {
    pub fn new(request: Vec<u8>, keyspace: Option<u64>) -> Template {
        let mut slots = Vec::new();
        if keyspace.is_some() {
            let mut i = 0;
            while i + RAND_INT.len() <= request.len() {
                if &request[i..i + RAND_INT.len()] == RAND_INT {
                    slots.push(i);
                    i += RAND_INT.len();
                } else {
                    i += 1;
                }
            }
        }
        Template {
            bytes: request,
            slots,
            keyspace,
        }
    }
}

/// Write `n` as 12 zero-padded digits (the low 12 digits if larger).
pub fn write_digits(mut n: u64, out: &mut [u8]) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

impl Workload for Template {
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32 {
        let base = out.len();
        out.extend_from_slice(&self.bytes);
        if let Some(space) = self.keyspace {
            for &s in &self.slots {
                let at = base + s;
                write_digits(rng.below(space), &mut out[at..at + RAND_INT.len()]);
            }
        }
        0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// What redis-benchmark prints after each test (without -q or --csv).
fn full_report(o: &Options, title: &str, m: &Measure) -> String {
    let p = o.precision;
    let mut s = format!(
        "====== {title} ======\n  {} requests completed in {:.2} seconds\n  {} parallel clients\n  {} bytes payload\n  keep alive: 1\n  multi-thread: {}\n\nLatency by percentile distribution:\n",
        m.ok + m.failed,
        m.elapsed.as_secs_f64(),
        o.clients,
        o.data_size,
        if o.threads > 1 { "yes" } else { "no" },
    );
    let total = m.latency.count();
    for (pct, d) in m.latency.spectrum() {
        let count = ((pct / 100.0) * total as f64).ceil().max(1.0) as u64;
        s += &format!(
            "{pct:.3}% <= {:.p$} milliseconds (cumulative count {})\n",
            ms(d),
            count.min(total)
        );
    }
    let l = &m.latency;
    s += &format!(
        "\nSummary:\n  throughput summary: {:.2} requests per second\n  latency summary (msec):\n  {:>11}{:>10}{:>10}{:>10}{:>10}{:>10}\n  {:>11.p$}{:>10.p$}{:>10.p$}{:>10.p$}{:>10.p$}{:>10.p$}\n",
        m.rps(),
        "avg", "min", "p50", "p95", "p99", "max",
        ms(l.mean()),
        ms(l.min()),
        ms(l.percentile(50.0)),
        ms(l.percentile(95.0)),
        ms(l.percentile(99.0)),
        ms(l.max()),
    );
    if m.failed > 0 {
        s += &format!(
            "  errors: {} of {} requests failed\n",
            m.failed,
            m.ok + m.failed
        );
        for (why, n) in &m.failure_kinds {
            s += &format!("    {n} x {why}\n");
        }
    }
    s
}

/// `-q`: `SET: 123456.78 requests per second, p50=0.191 msec`.
pub fn quiet_line(o: &Options, title: &str, m: &Measure) -> String {
    let mut s = format!(
        "{title}: {:.2} requests per second, p50={:.p$} msec",
        m.rps(),
        ms(m.latency.percentile(50.0)),
        p = o.precision
    );
    if m.failed > 0 {
        s += &format!(", {} failed", m.failed);
        if let Some((why, _)) = m.failure_kinds.first() {
            s += &format!(" ({why})");
        }
    }
    s
}

pub const CSV_HEADER: &str = "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"";

pub fn csv_line(o: &Options, title: &str, m: &Measure) -> String {
    let l = &m.latency;
    let p = o.precision;
    let title = title.replace('"', "\"\"");
    format!(
        "\"{title}\",\"{:.2}\",\"{:.p$}\",\"{:.p$}\",\"{:.p$}\",\"{:.p$}\",\"{:.p$}\",\"{:.p$}\"",
        m.rps(),
        ms(l.mean()),
        ms(l.min()),
        ms(l.percentile(50.0)),
        ms(l.percentile(95.0)),
        ms(l.percentile(99.0)),
        ms(l.max()),
    )
}

/// Entry point of the redis-benchmark mode.
pub fn run_cli(args: &[String]) -> anyhow::Result<ExitCode> {
    let o = parse(args)?;
    if o.help {
        print!("{USAGE}");
        return Ok(ExitCode::SUCCESS);
    }
    let targets = if o.targets.is_empty() {
        let addr = format!("{}:{}", o.host, o.port);
        vec![Target::new(&addr, &addr)]
    } else {
        o.targets.clone()
    };
    let mut targets = targets;
    for t in &mut targets {
        load::describe(t, o.password.as_deref());
    }
    let compare = targets.len() > 1;
    let tests = tests(&o);
    if tests.is_empty() {
        bail!("-t selected no test (see keel-bench --help for the names)");
    }
    let seed = o.seed.unwrap_or_else(|| Rng::from_entropy(0).next_u64());
    if o.csv {
        println!("{CSV_HEADER}");
    }
    let mut any_failed = false;
    let mut told = std::collections::HashSet::new();
    loop {
        let title = format!(
            "redis-benchmark tests: {} clients, {} requests, {} bytes payload, pipeline {}{}",
            o.clients,
            o.requests,
            o.data_size,
            o.pipeline,
            o.keyspace
                .map(|r| format!(", keyspace {r}"))
                .unwrap_or_default()
        );
        let mut run = Run::new(&title, targets.clone());
        for test in &tests {
            let workload: Arc<dyn Workload> =
                Arc::new(Template::new(test.request.clone(), o.keyspace));
            let mut outcomes = Vec::new();
            for target in &targets {
                let title = if compare {
                    format!("{} on {}", test.title, target.name)
                } else {
                    test.title.clone()
                };
                let mut spec = LoadSpec::new(
                    &target.addr,
                    Mode::Raw {
                        connections: o.clients,
                        pipeline: o.pipeline,
                    },
                    Until::Requests(o.requests),
                );
                spec.password = o.password.clone();
                spec.threads = o.threads;
                spec.seed = seed;
                spec.progress = Some(title.clone());
                let before = load::server_cpu(&target.addr, o.password.as_deref());
                match load::run(&spec, workload.clone()) {
                    Ok(mut m) => {
                        let after = load::server_cpu(&target.addr, o.password.as_deref());
                        m.set_server_cpu(before, after);
                        if o.csv {
                            println!("{}", csv_line(&o, &title, &m));
                        } else if o.quiet {
                            println!("{}", quiet_line(&o, &title, &m));
                        } else {
                            println!("{}", full_report(&o, &title, &m));
                        }
                        outcomes.push(Outcome::Done(Box::new(m)));
                    }
                    Err(e) if !compare => return Err(e),
                    Err(e) => {
                        any_failed = true;
                        // A target that is down refuses every test the same
                        // way: say so once.
                        if told.insert((target.name.clone(), format!("{e:#}"))) {
                            eprintln!("{title}: {e:#}");
                        }
                        outcomes.push(Outcome::Failed {
                            reason: format!("{e:#}"),
                        });
                    }
                }
            }
            run.steps.push(Step {
                name: test.title.clone(),
                outcomes,
            });
        }
        if compare && !o.csv {
            println!("\n{}", crate::report::table::render(&run));
        }
        if !o.forever {
            write_outputs(&run, o.json.as_deref(), o.html.as_deref())?;
            break;
        }
    }
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
    fn flags_parse_as_redis_benchmark_reads_them() {
        let o = parse(&args(
            "-h 10.0.0.1 -p 7000 -a pw -c 8 -n 500 -d 100 -r 1000 -P 16 -t SET,Get --threads 2 -q --csv -l --precision 2 --seed 9",
        ))
        .unwrap();
        assert_eq!(o.host, "10.0.0.1");
        assert_eq!(o.port, 7000);
        assert_eq!(o.password.as_deref(), Some("pw"));
        assert_eq!((o.clients, o.requests, o.data_size), (8, 500, 100));
        assert_eq!((o.keyspace, o.pipeline, o.threads), (Some(1000), 16, 2));
        assert_eq!(o.tests, Some(vec!["set".to_string(), "get".to_string()]));
        assert!(o.quiet && o.csv && o.forever);
        assert_eq!((o.precision, o.seed), (2, Some(9)));
        assert!(o.command.is_empty());
    }

    #[test]
    fn the_command_starts_at_the_first_non_option() {
        let o = parse(&args("-n 10 lpush mylist __rand_int__ -q")).unwrap();
        assert_eq!(o.command, ["lpush", "mylist", "__rand_int__", "-q"]);
        assert!(!o.quiet);
        let t = tests(&o);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].title, "lpush mylist __rand_int__ -q");
    }

    #[test]
    fn bad_flags_are_named() {
        assert!(parse(&args("-n lots"))
            .unwrap_err()
            .to_string()
            .contains("-n"));
        assert!(parse(&args("--bogus"))
            .unwrap_err()
            .to_string()
            .contains("--bogus"));
        assert!(parse(&args("-c"))
            .unwrap_err()
            .to_string()
            .contains("needs a value"));
        assert!(parse(&args("--target nope")).is_err());
        let o = parse(&args(
            "--target redis=127.0.0.1:6379 --target 127.0.0.1:7000",
        ))
        .unwrap();
        assert_eq!(o.targets[0].name, "redis");
        assert_eq!(o.targets[1].name, "127.0.0.1:7000");
    }

    #[test]
    fn test_selection_follows_redis_benchmark_names() {
        let all = tests(&Options::default());
        let titles: Vec<&str> = all.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles.len(), 20);
        assert_eq!(titles[0], "PING_INLINE");
        assert_eq!(titles[14], "LPUSH (needed to benchmark LRANGE)");
        assert_eq!(titles[19], "MSET (10 keys)");
        let pick = |t: &str| {
            let o = parse(&args(&format!("-t {t}"))).unwrap();
            tests(&o).into_iter().map(|t| t.title).collect::<Vec<_>>()
        };
        assert_eq!(pick("ping"), ["PING_INLINE", "PING_MBULK"]);
        assert_eq!(pick("SET,get"), ["SET", "GET"]);
        assert_eq!(
            pick("lrange_300"),
            [
                "LPUSH (needed to benchmark LRANGE)",
                "LRANGE_300 (first 300 elements)"
            ]
        );
        assert_eq!(pick("lrange").len(), 5);
        assert!(pick("nothing").is_empty());
    }

    #[test]
    fn requests_match_what_redis_benchmark_sends() {
        let o = parse(&args("-d 5")).unwrap();
        let t = tests(&o);
        let by = |name: &str| t.iter().find(|x| x.title == name).unwrap().request.clone();
        assert_eq!(by("PING_INLINE"), b"PING\r\n");
        assert_eq!(
            by("SET"),
            b"*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$5\r\nxxxxx\r\n"
        );
        assert_eq!(
            by("ZADD"),
            resp(&["ZADD", "myzset", "0", "element:__rand_int__"])
        );
        assert_eq!(
            by("LRANGE_500 (first 500 elements)"),
            resp(&["LRANGE", "mylist", "0", "449"])
        );
        let mset = by("MSET (10 keys)");
        assert_eq!(&mset[..4], b"*21\r");
        let o = parse(&args("-r 10")).unwrap();
        let t = tests(&o);
        assert_eq!(
            t.iter().find(|x| x.title == "ZADD").unwrap().request,
            resp(&["ZADD", "myzset", "__rand_int__", "element:__rand_int__"])
        );
    }

    #[test]
    fn rand_int_is_replaced_per_request_and_per_occurrence() {
        let req = resp(&["MSET", "k:__rand_int__", "v", "k:__rand_int__", "v"]);
        let t = Template::new(req.clone(), Some(1000));
        let mut rng = Rng::seeded(3);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..200 {
            let mut out = b"prefix".to_vec();
            t.next(&mut rng, &mut out);
            assert_eq!(out.len(), req.len() + 6);
            let text = String::from_utf8(out[6..].to_vec()).unwrap();
            let nums: Vec<&str> = text.split("k:").skip(1).map(|s| &s[..12]).collect();
            assert_eq!(nums.len(), 2);
            for n in &nums {
                assert!(n.bytes().all(|b| b.is_ascii_digit()), "{text}");
                assert!(n.parse::<u64>().unwrap() < 1000);
                assert!(n.starts_with("000000000"));
                seen.insert(n.to_string());
            }
        }
        assert!(seen.len() > 500 / 2, "numbers vary: {}", seen.len());
        // Without -r the placeholder is sent as is.
        let t = Template::new(req.clone(), None);
        let mut out = Vec::new();
        t.next(&mut rng, &mut out);
        assert_eq!(out, req);
        let mut d = [0u8; 12];
        write_digits(42, &mut d);
        assert_eq!(&d, b"000000000042");
    }

    #[test]
    fn output_lines_have_redis_benchmark_shapes() {
        let mut m = Measure::empty();
        m.ok = 1000;
        m.elapsed = Duration::from_millis(500);
        for _ in 0..1000 {
            m.latency.record(Duration::from_micros(191));
        }
        let o = Options::default();
        assert_eq!(
            quiet_line(&o, "SET", &m),
            "SET: 2000.00 requests per second, p50=0.191 msec"
        );
        let c = csv_line(&o, "SET", &m);
        assert!(
            c.starts_with("\"SET\",\"2000.00\",\"0.191\",\"0.191\",\"0.191\""),
            "{c}"
        );
        assert_eq!(c.split(',').count(), CSV_HEADER.split(',').count());
        m.failed = 3;
        m.failure_kinds
            .push(("ERR unknown command 'LPUSH'".into(), 3));
        let q = quiet_line(&o, "LPUSH", &m);
        assert!(
            q.ends_with(", 3 failed (ERR unknown command 'LPUSH')"),
            "{q}"
        );
        let full = full_report(&o, "SET", &m);
        assert!(full.starts_with("====== SET ======\n  1003 requests completed in 0.50 seconds\n"));
        assert!(
            full.contains("throughput summary: 2006.00 requests per second"),
            "{full}"
        );
        assert!(full.contains("3 x ERR unknown command 'LPUSH'"));
    }
}
