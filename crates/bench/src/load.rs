//! The load engine. A `Workload` says what to send and how to judge replies;
//! a `LoadSpec` says where, how many connections or callers, how deep the
//! pipeline, for how long, and whether to pace requests (open loop).
//! `run` drives it and returns one `Measure`; `run_together` drives several
//! at once (a scenario's concurrent steps) and returns one each.
//!
//! Raw mode runs `threads` event loops (one current-thread runtime each) with
//! the connections dealt over them; replies are delimited by `keel_resp::frame_len`,
//! which finds where a reply ends without building it, and only parsed when
//! the workload judges them. Batched mode runs callers on a multi-threaded
//! runtime sharing one keel-client `Client`. Helpers around a load: `query`
//! (one command, blocking), `cpu_time` and `server_cpu`.

use crate::hist::Latency;
use crate::model::{CpuTime, Measure};
use crate::report::progress::Progress;
use crate::rng::Rng;
use crate::timeline::Timeline;
use bytes::{Buf, Bytes, BytesMut};
use keel_resp::{frame_len, parse_frame, Frame};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// What a reply means for the step.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Ok,
    /// Counted as a failure under this reason (e.g. "false positive").
    Fail(Cow<'static, str>),
}

/// What one step sends, request by request.
pub trait Workload: Send + Sync + 'static {
    /// Append the next request, RESP-encoded, to `out`; the returned tag is
    /// handed back to `judge` with its reply.
    fn next(&self, rng: &mut Rng, out: &mut Vec<u8>) -> u32;

    /// Whether `judge` needs parsed replies. When false the engine only looks
    /// at each reply's first byte (an error reply fails with its text) and
    /// skips the rest unparsed, as redis-benchmark does.
    fn parses_replies(&self) -> bool {
        false
    }

    /// Judge one reply. The default fails error replies and accepts the rest.
    fn judge(&self, _tag: u32, reply: &Frame) -> Verdict {
        match reply {
            Frame::Error(e) => Verdict::Fail(String::from_utf8_lossy(e).into_owned().into()),
            _ => Verdict::Ok,
        }
    }
}

/// When a load stops.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Until {
    /// After this many requests in total (redis-benchmark's -n).
    Requests(u64),
    /// After this long (--test-time, scenario durations).
    Time(Duration),
}

/// How requests reach the server.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// `connections` plain connections, each keeping up to `pipeline`
    /// requests in flight and waiting for all their replies before sending
    /// more (redis-benchmark's -c and -P). `pipeline` 1 is request/response.
    Raw { connections: usize, pipeline: usize },
    /// `workers` closed-loop callers, each sending one request and awaiting
    /// its reply, all sharing keel-client's multiplexed connections
    /// (`connections` of them): automatic pipelining.
    Batched { workers: usize, connections: usize },
}

#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// `host:port`.
    pub addr: String,
    /// Sent with AUTH on every new connection (-a).
    pub password: Option<String>,
    pub mode: Mode,
    /// Event-loop threads driving the connections (--threads); 1 by default.
    pub threads: usize,
    pub until: Until,
    /// Open loop: requests per second in total, sent on schedule whether or
    /// not replies have come back; latency is measured from each request's
    /// intended send time, so a stalled server cannot hide its stall
    /// (no coordinated omission). `None` is closed loop.
    pub rate: Option<f64>,
    /// Widest throughput-over-time bucket; shorter loads get narrower ones
    /// (see `timeline`).
    pub interval: Duration,
    /// Label of the live progress line; `None` prints nothing.
    pub progress: Option<String>,
    /// Seed for the workers' generators (each worker derives its own).
    pub seed: u64,
}

impl LoadSpec {
    pub fn new(addr: &str, mode: Mode, until: Until) -> LoadSpec {
        LoadSpec {
            addr: addr.to_string(),
            password: None,
            mode,
            threads: 1,
            until,
            rate: None,
            interval: Duration::from_secs(1),
            progress: None,
            seed: 0x6b65_656c,
        }
    }
}

/// Drive one workload to completion.
pub fn run(spec: &LoadSpec, workload: Arc<dyn Workload>) -> anyhow::Result<Measure> {
    run_together(vec![(spec.clone(), workload)])
        .into_iter()
        .next()
        .unwrap_or_else(|| Err(anyhow::anyhow!("no load was run")))
}

/// Drive several workloads at the same time; one result each, in order.
///
/// Every connection of every part is opened (and authenticated) before the
/// clock starts; if any cannot be, nothing runs and every part reports why.
/// Client CPU is measured for the whole process, so with several parts it is
/// shared out in proportion to the requests each completed.
pub fn run_together(parts: Vec<(LoadSpec, Arc<dyn Workload>)>) -> Vec<anyhow::Result<Measure>> {
    if parts.is_empty() {
        return Vec::new();
    }
    let drivers: usize = parts.iter().map(|(s, _)| drivers_of(s)).sum();
    let gate = Arc::new(Gate {
        barrier: Barrier::new(drivers + 1),
        abort: AtomicBool::new(false),
        first_error: Mutex::new(None),
    });
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut shared_parts = Vec::new();
    let mut handles: Vec<(usize, std::thread::JoinHandle<anyhow::Result<Tally>>)> = Vec::new();
    for (index, (spec, workload)) in parts.into_iter().enumerate() {
        let part = Arc::new(Part::new(spec, workload));
        let n = drivers_of(&part.spec);
        let connections = match part.spec.mode {
            Mode::Raw { connections, .. } => connections.max(1),
            Mode::Batched { .. } => 1,
        };
        for d in 0..n {
            let part = part.clone();
            let gate_t = gate.clone();
            let done = done_tx.clone();
            // Connections dealt round robin: thread d gets d, d+n, d+2n...
            let mine: Vec<usize> = (d..connections).step_by(n).collect();
            let spawned = std::thread::Builder::new()
                .name(format!("load-{index}-{d}"))
                .spawn(move || {
                    let r = drive(&part, &gate_t, mine);
                    let _ = done.send(());
                    r
                });
            match spawned {
                Ok(h) => handles.push((index, h)),
                Err(e) => {
                    gate.fail(format!("cannot start a load thread: {e}"));
                    // Stand in for the thread at the barrier.
                    let g = gate.clone();
                    handles.push((
                        index,
                        std::thread::spawn(move || {
                            g.barrier.wait();
                            Err(anyhow::anyhow!("no thread"))
                        }),
                    ));
                }
            }
        }
        shared_parts.push(part);
    }
    drop(done_tx);

    gate.barrier.wait();
    let cpu_before = cpu_time();
    let start = Instant::now();
    let aborted = gate.abort.load(Ordering::SeqCst);

    let mut progress = if aborted {
        None
    } else {
        shared_parts.iter().find_map(|p| {
            p.spec.progress.as_ref().map(|label| {
                let (total, length) = match p.spec.until {
                    Until::Requests(n) => (Some(n), None),
                    Until::Time(d) => (None, Some(d)),
                };
                (p.clone(), Progress::new(label, total, length))
            })
        })
    };
    let mut finished = 0;
    while finished < handles.len() {
        match done_rx.recv_timeout(Duration::from_millis(250)) {
            Ok(()) => finished += 1,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if let Some((p, line)) = progress.as_mut() {
            line.update(p.completed.load(Ordering::Relaxed), start.elapsed());
        }
    }
    if let Some((_, line)) = progress.as_mut() {
        line.finish();
    }
    let cpu = cpu_time().saturating_sub(cpu_before);

    let mut tallies: Vec<anyhow::Result<Tally>> =
        shared_parts.iter().map(|_| Ok(Tally::default())).collect();
    for (index, h) in handles {
        let result = h
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("a load thread panicked")));
        let slot = &mut tallies[index];
        match (slot.as_mut(), result) {
            (Ok(acc), Ok(t)) => acc.absorb(t),
            (Ok(_), Err(e)) => *slot = Err(e),
            (Err(_), _) => {}
        }
    }
    if aborted {
        let why = gate
            .first_error
            .lock()
            .ok()
            .and_then(|e| e.clone())
            .unwrap_or_else(|| "the load could not start".to_string());
        return shared_parts
            .iter()
            .map(|_| Err(anyhow::anyhow!("{why}")))
            .collect();
    }
    let total: u64 = tallies
        .iter()
        .map(|t| t.as_ref().map(|t| t.ok + t.failed).unwrap_or(0))
        .sum();
    tallies
        .into_iter()
        .zip(shared_parts)
        .map(|(t, part)| {
            let t = t?;
            let n = t.ok + t.failed;
            let share = if total == 0 {
                0.0
            } else {
                n as f64 / total as f64
            };
            Ok(t.into_measure(start, part.spec.interval, cpu.mul_f64(share)))
        })
        .collect()
}

/// Threads a part runs on: one per event loop in raw mode, one driving a
/// multi-threaded runtime in batched mode.
fn drivers_of(spec: &LoadSpec) -> usize {
    match spec.mode {
        Mode::Raw { connections, .. } => spec.threads.max(1).min(connections.max(1)),
        Mode::Batched { .. } => 1,
    }
}

/// Start line shared by every load thread of a `run_together`.
struct Gate {
    barrier: Barrier,
    abort: AtomicBool,
    first_error: Mutex<Option<String>>,
}

impl Gate {
    fn fail(&self, why: String) {
        if let Ok(mut e) = self.first_error.lock() {
            e.get_or_insert(why);
        }
        self.abort.store(true, Ordering::SeqCst);
    }
}

/// What every thread of one part shares.
struct Part {
    spec: LoadSpec,
    workload: Arc<dyn Workload>,
    /// Requests handed out so far (may overshoot the limit; see `claim`).
    issued: AtomicU64,
    /// Replies received so far, for the progress line.
    completed: AtomicU64,
    /// Connections in the part, for pacing the open loop.
    connections: usize,
}

impl Part {
    fn new(spec: LoadSpec, workload: Arc<dyn Workload>) -> Part {
        let connections = match spec.mode {
            Mode::Raw { connections, .. } => connections.max(1),
            Mode::Batched { workers, .. } => workers.max(1),
        };
        Part {
            spec,
            workload,
            issued: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            connections,
        }
    }

    /// Take up to `want` requests to send; 0 when the load is over. With a
    /// request limit the total handed out stops exactly at the limit.
    fn claim(&self, want: usize, now: Instant, deadline: Option<Instant>) -> usize {
        match self.spec.until {
            Until::Requests(limit) => {
                let prev = self.issued.fetch_add(want as u64, Ordering::Relaxed);
                if prev >= limit {
                    0
                } else {
                    (limit - prev).min(want as u64) as usize
                }
            }
            Until::Time(_) => {
                if deadline.is_some_and(|d| now >= d) {
                    0
                } else {
                    want
                }
            }
        }
    }
}

/// One thread's counts, merged into the part's `Measure` at the end.
#[derive(Default)]
struct Tally {
    ok: u64,
    failed: u64,
    kinds: HashMap<String, u64>,
    latency: Latency,
    failed_latency: Latency,
    /// Completions over time from the common start.
    timeline: Timeline,
    end: Option<Instant>,
    /// When this thread's load started: the earliest of the part's is its
    /// start (the thread that called `run_together` may only wake after a
    /// short load is over).
    begin: Option<Instant>,
}

/// Distinct failure reasons kept per thread, so a server that echoes each
/// request's arguments in its error cannot make the table grow without end.
const MAX_KINDS: usize = 64;
/// Failure reasons a `Measure` lists.
const TOP_KINDS: usize = 5;

impl Tally {
    fn new(interval: Duration, begin: Instant) -> Tally {
        Tally {
            timeline: Timeline::new(interval),
            begin: Some(begin),
            ..Tally::default()
        }
    }

    /// Count `n` completions `since` the common start.
    fn completed(&mut self, since: Duration, n: u64) {
        self.timeline.add(since, n);
    }

    fn success(&mut self, latency: Duration) {
        self.ok += 1;
        self.latency.record(latency);
    }

    fn failure(&mut self, reason: &str, latency: Duration) {
        self.failed += 1;
        self.failed_latency.record(latency);
        let reason = failure_reason(reason);
        if let Some(n) = self.kinds.get_mut(reason) {
            *n += 1;
        } else if self.kinds.len() < MAX_KINDS {
            self.kinds.insert(reason.to_string(), 1);
        } else {
            *self.kinds.entry("(other reasons)".to_string()).or_insert(0) += 1;
        }
    }

    fn absorb(&mut self, other: Tally) {
        self.ok += other.ok;
        self.failed += other.failed;
        for (k, n) in other.kinds {
            *self.kinds.entry(k).or_insert(0) += n;
        }
        self.latency.merge(&other.latency);
        self.failed_latency.merge(&other.failed_latency);
        self.timeline.merge(&other.timeline);
        self.end = self.end.max(other.end);
        self.begin = match (self.begin, other.begin) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }

    fn into_measure(self, start: Instant, interval: Duration, cpu: Duration) -> Measure {
        let mut kinds: Vec<(String, u64)> = self.kinds.into_iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        kinds.truncate(TOP_KINDS);
        let mut m = Measure::empty();
        m.ok = self.ok;
        m.failed = self.failed;
        m.failure_kinds = kinds;
        let start = self.begin.unwrap_or(start);
        m.elapsed = self
            .end
            .map(|e| e.saturating_duration_since(start))
            .unwrap_or_default();
        m.latency = self.latency;
        m.failed_latency = self.failed_latency;
        m.interval = if self.timeline.counts.is_empty() {
            interval
        } else {
            self.timeline.width()
        };
        m.timeline = self.timeline.counts;
        m.client_cpu = Some(cpu);
        m
    }
}

/// The part of an error text that names the failure: Redis appends the
/// command's first arguments to some errors, which would make every request
/// a reason of its own.
fn failure_reason(text: &str) -> &str {
    let text = text
        .split(", with args beginning with")
        .next()
        .unwrap_or(text);
    let mut end = text.len().min(120);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// CPU time (user + system) this process has used so far.
#[allow(unsafe_code)]
pub fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into the pointer it is given, which
    // points to a zeroed value of that type owned by this frame.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return Duration::ZERO;
    }
    // SAFETY: getrusage succeeded, so it filled the value (zeroed before anyway).
    let u = unsafe { usage.assume_init() };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Clock ticks per second, the unit of /proc/<pid>/stat times.
#[allow(unsafe_code)]
fn clock_ticks() -> u64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

/// The pid a server on this machine reports in `INFO server`; `None` when
/// it does not say or is not a process here.
pub fn server_pid(addr: &str, password: Option<&str>) -> Option<u32> {
    let text = info_server(addr, password)?;
    let pid: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))?
        .trim()
        .parse()
        .ok()?;
    std::path::Path::new(&format!("/proc/{pid}"))
        .exists()
        .then_some(pid)
}

fn info_server(addr: &str, password: Option<&str>) -> Option<String> {
    match query(addr, password, &[b"INFO".as_slice(), b"server".as_slice()]).ok()? {
        Frame::Bulk(b) | Frame::Verbatim(_, b) => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    }
}

/// What a server says it is, from `INFO server`: `keel 0.1.0 (redis_version
/// 7.0.15)` for Keel, `redis 7.0.15` for Redis.
pub fn server_version(addr: &str, password: Option<&str>) -> Option<String> {
    version_of_info(&info_server(addr, password)?)
}

pub fn version_of_info(text: &str) -> Option<String> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
    };
    match (field("keel_version"), field("redis_version")) {
        (Some(k), Some(r)) => Some(format!("keel {k} (redis_version {r})")),
        (Some(k), None) => Some(format!("keel {k}")),
        (None, Some(r)) => Some(format!("redis {r}")),
        (None, None) => None,
    }
}

/// Fill in a target's version and (for a local server) thread count.
pub fn describe(t: &mut crate::model::Target, password: Option<&str>) {
    if let Some(text) = info_server(&t.addr, password) {
        t.version = version_of_info(&text);
    }
    t.threads = server_pid(&t.addr, password).and_then(process_threads);
}

/// CPU time a server on this machine has used so far (see `process_cpu`);
/// its pid comes from `INFO server`. `None` when the server does not say,
/// or runs elsewhere. Take it before and after a step.
pub fn server_cpu(addr: &str, password: Option<&str>) -> Option<CpuTime> {
    process_cpu(server_pid(addr, password)?)
}

/// CPU time of a local process. From the scheduler's run time of each of
/// its threads (/proc/PID/task/*/schedstat, nanoseconds) where the kernel
/// keeps it, else from /proc/PID/stat (user + system in clock ticks, 10 ms
/// each). Threads that exit between two readings take their time with them
/// in the first; servers keep theirs for their lifetime. A thread's run
/// time is brought up to date when it leaves the CPU, which a server's
/// threads do whenever they wait for requests.
pub fn process_cpu(pid: u32) -> Option<CpuTime> {
    schedstat_cpu(pid)
        .map(|total| CpuTime {
            total,
            source: "schedstat",
        })
        .or_else(|| {
            stat_cpu(pid).map(|total| CpuTime {
                total,
                source: "stat",
            })
        })
}

/// Sum of the first field (time on a CPU, ns) of every thread's schedstat.
pub fn schedstat_cpu(pid: u32) -> Option<Duration> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0u64;
    let mut any = false;
    for entry in dir.flatten() {
        // A thread may exit between the listing and the read.
        let Ok(text) = std::fs::read_to_string(entry.path().join("schedstat")) else {
            continue;
        };
        if let Some(ns) = parse_schedstat(&text) {
            total = total.saturating_add(ns);
            any = true;
        }
    }
    any.then(|| Duration::from_nanos(total))
}

/// Nanoseconds on a CPU, the first of schedstat's three numbers.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// Threads of a local process.
pub fn process_threads(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))?
        .trim()
        .parse()
        .ok()
}

/// user + system time of a local process, from /proc/<pid>/stat.
pub fn stat_cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields are counted after its ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 here.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    let ticks = clock_ticks();
    Some(Duration::from_nanos(
        (utime + stime).saturating_mul(1_000_000_000 / ticks),
    ))
}

/// Send one command on a fresh connection and return its reply (an error
/// reply comes back as `Frame::Error`). For set-up and inspection around a
/// load (FLUSHALL, INFO, CONFIG), not for measuring.
pub fn query<A: AsRef<[u8]>>(
    addr: &str,
    password: Option<&str>,
    args: &[A],
) -> anyhow::Result<Frame> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr)
        .map_err(|e| anyhow::anyhow!("cannot connect to {addr}: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut out = bytes::BytesMut::new();
    if let Some(p) = password {
        keel_resp::encode_command(&[b"AUTH".as_slice(), p.as_bytes()], &mut out);
    }
    keel_resp::encode_command(args, &mut out);
    s.write_all(&out)
        .map_err(|e| anyhow::anyhow!("{addr}: write failed: {e}"))?;
    let mut buf = bytes::BytesMut::with_capacity(4096);
    let mut skip_auth = password.is_some();
    loop {
        let data = buf.clone().freeze();
        match parse_frame(&data) {
            Ok(Some((frame, used))) => {
                if skip_auth {
                    if let Frame::Error(e) = &frame {
                        anyhow::bail!("{addr}: AUTH failed: {}", String::from_utf8_lossy(e));
                    }
                    skip_auth = false;
                    let _ = buf.split_to(used);
                    continue;
                }
                return Ok(frame);
            }
            Ok(None) => {}
            Err(e) => anyhow::bail!("{addr}: malformed reply: {e}"),
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = s
            .read(&mut chunk)
            .map_err(|e| anyhow::anyhow!("{addr}: read failed: {e}"))?;
        if n == 0 {
            anyhow::bail!("{addr}: connection closed before the reply");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// The text of an error reply (`-...` or `!len`), if `reply` is one.
fn error_text(reply: &[u8]) -> Option<&[u8]> {
    match reply.first()? {
        b'-' => reply.get(1..reply.len().saturating_sub(2)),
        b'!' => {
            // `!<len>\r\n<text>\r\n`: the text starts after the first LF.
            let lf = reply.iter().position(|&b| b == b'\n')?;
            reply.get(lf + 1..reply.len().saturating_sub(2))
        }
        _ => None,
    }
}

/// One thread of a part: connect, wait for the common start, run, tally.
fn drive(part: &Arc<Part>, gate: &Arc<Gate>, mine: Vec<usize>) -> anyhow::Result<Tally> {
    match part.spec.mode {
        Mode::Raw { pipeline, .. } => drive_raw(part, gate, mine, pipeline.max(1)),
        Mode::Batched {
            workers,
            connections,
        } => drive_batched(part, gate, workers.max(1), connections.max(1)),
    }
}

fn current_thread_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Wait at the start line; false when some thread failed to get ready.
fn ready(gate: &Gate, result: &anyhow::Result<()>) -> bool {
    if let Err(e) = result {
        gate.fail(format!("{e:#}"));
    }
    gate.barrier.wait();
    !gate.abort.load(Ordering::SeqCst)
}

fn drive_raw(
    part: &Arc<Part>,
    gate: &Arc<Gate>,
    mine: Vec<usize>,
    pipeline: usize,
) -> anyhow::Result<Tally> {
    let rt = match current_thread_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            let r: anyhow::Result<()> = Err(e);
            ready(gate, &r);
            return r.map(|_| Tally::default());
        }
    };
    let spec = &part.spec;
    let opened: anyhow::Result<Vec<(usize, TcpStream)>> = rt.block_on(async {
        let mut streams = Vec::with_capacity(mine.len());
        for &c in &mine {
            streams.push((c, connect(&spec.addr, spec.password.as_deref()).await?));
        }
        Ok(streams)
    });
    let go = ready(
        gate,
        &opened
            .as_ref()
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("{e:#}")),
    );
    let streams = opened?;
    if !go {
        return Ok(Tally::default());
    }
    let start = Instant::now();
    let deadline = match spec.until {
        Until::Time(d) => Some(start + d),
        Until::Requests(_) => None,
    };
    let local = tokio::task::LocalSet::new();
    let results = local.block_on(&rt, async {
        let mut tasks = Vec::new();
        for (c, stream) in streams {
            let part = part.clone();
            let rng = Rng::seeded(spec.seed ^ (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let conn = Conn {
                part: part.clone(),
                start,
                deadline,
                index: c,
            };
            tasks.push(tokio::task::spawn_local(async move {
                match part.spec.rate {
                    Some(rate) => conn.open_loop(stream, rng, pipeline, rate).await,
                    None => conn.closed_loop(stream, rng, pipeline).await,
                }
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(
                t.await
                    .unwrap_or_else(|e| Err(anyhow::anyhow!("connection task failed: {e}"))),
            );
        }
        out
    });
    let mut total = Tally::default();
    for r in results {
        total.absorb(r?);
    }
    Ok(total)
}

async fn connect(addr: &str, password: Option<&str>) -> anyhow::Result<TcpStream> {
    let mut s = TcpStream::connect(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot connect to {addr}: {e}"))?;
    s.set_nodelay(true)?;
    if let Some(p) = password {
        let mut out = bytes::BytesMut::new();
        keel_resp::encode_command(&[b"AUTH".as_slice(), p.as_bytes()], &mut out);
        s.write_all(&out).await?;
        let mut buf = BytesMut::with_capacity(256);
        loop {
            if let Some(n) =
                frame_len(&buf).map_err(|e| anyhow::anyhow!("{addr}: malformed reply: {e}"))?
            {
                if let Some(text) = error_text(&buf[..n]) {
                    anyhow::bail!("{addr}: AUTH failed: {}", String::from_utf8_lossy(text));
                }
                break;
            }
            if s.read_buf(&mut buf).await? == 0 {
                anyhow::bail!("{addr}: connection closed during AUTH");
            }
        }
    }
    Ok(s)
}

/// One raw connection's loop.
struct Conn {
    part: Arc<Part>,
    start: Instant,
    deadline: Option<Instant>,
    index: usize,
}

const READ_CHUNK: usize = 64 * 1024;

impl Conn {
    fn since_start(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.start)
    }

    /// Judge the reply at the front of `buf` (`len` bytes) and drop it.
    fn take_reply(
        &self,
        buf: &mut BytesMut,
        len: usize,
        tag: u32,
        latency: Duration,
        tally: &mut Tally,
    ) -> anyhow::Result<()> {
        let workload = &self.part.workload;
        if workload.parses_replies() {
            let bytes = buf.split_to(len).freeze();
            let frame = match parse_frame(&bytes) {
                Ok(Some((f, _))) => f,
                Ok(None) => anyhow::bail!("{}: reply cut short", self.part.spec.addr),
                Err(e) => anyhow::bail!("{}: malformed reply: {e}", self.part.spec.addr),
            };
            match workload.judge(tag, &frame) {
                Verdict::Ok => tally.success(latency),
                Verdict::Fail(why) => tally.failure(&why, latency),
            }
        } else {
            match error_text(&buf[..len]) {
                None => tally.success(latency),
                Some(text) => tally.failure(&String::from_utf8_lossy(text), latency),
            }
            buf.advance(len);
        }
        Ok(())
    }

    /// Closed loop: send up to `pipeline` requests in one write, wait for all
    /// their replies, repeat.
    async fn closed_loop(
        self,
        mut stream: TcpStream,
        mut rng: Rng,
        pipeline: usize,
    ) -> anyhow::Result<Tally> {
        let part = self.part.clone();
        let addr = &part.spec.addr;
        let mut tally = Tally::new(part.spec.interval, self.start);
        let mut out = Vec::with_capacity(4096);
        let mut tags = Vec::with_capacity(pipeline);
        let mut buf = BytesMut::with_capacity(READ_CHUNK);
        let mut now = Instant::now();
        loop {
            let k = part.claim(pipeline, now, self.deadline);
            if k == 0 {
                break;
            }
            out.clear();
            tags.clear();
            for _ in 0..k {
                tags.push(part.workload.next(&mut rng, &mut out));
            }
            let sent = Instant::now();
            stream
                .write_all(&out)
                .await
                .map_err(|e| anyhow::anyhow!("{addr}: write failed: {e}"))?;
            let mut got = 0;
            while got < k {
                if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                    buf.reserve(READ_CHUNK);
                }
                let n = stream
                    .read_buf(&mut buf)
                    .await
                    .map_err(|e| anyhow::anyhow!("{addr}: read failed: {e}"))?;
                if n == 0 {
                    anyhow::bail!("{addr}: the server closed the connection");
                }
                now = Instant::now();
                let before = got;
                while got < k {
                    match frame_len(&buf)
                        .map_err(|e| anyhow::anyhow!("{addr}: malformed reply: {e}"))?
                    {
                        Some(len) => {
                            self.take_reply(&mut buf, len, tags[got], now - sent, &mut tally)?;
                            got += 1;
                        }
                        None => break,
                    }
                }
                let done = (got - before) as u64;
                if done > 0 {
                    tally.completed(self.since_start(now), done);
                    part.completed.fetch_add(done, Ordering::Relaxed);
                }
            }
        }
        tally.end = Some(now);
        Ok(tally)
    }

    /// Open loop: requests are due at fixed intervals and sent when due,
    /// whatever is still outstanding; each reply's latency counts from its
    /// request's due time.
    async fn open_loop(
        self,
        mut stream: TcpStream,
        mut rng: Rng,
        pipeline: usize,
        rate: f64,
    ) -> anyhow::Result<Tally> {
        let part = self.part.clone();
        let addr = part.spec.addr.clone();
        let rate = if rate.is_finite() && rate > 0.0 {
            rate
        } else {
            anyhow::bail!("the request rate must be a positive number");
        };
        // Each connection sends `pipeline` requests per tick; ticks of all
        // connections interleave evenly.
        let tick = Duration::from_secs_f64(part.connections as f64 * pipeline as f64 / rate);
        let offset = Duration::from_secs_f64(self.index as f64 * pipeline as f64 / rate);
        let end_of_schedule = match part.spec.until {
            Until::Time(d) => Some(self.start + d),
            Until::Requests(_) => None,
        };
        let due: RefCell<VecDeque<(Instant, u32)>> = RefCell::new(VecDeque::new());
        let writer_done = Cell::new(false);
        let wake = Notify::new();
        let (mut rd, mut wr) = stream.split();

        let writer = async {
            let mut next = self.start + offset;
            let mut out = Vec::with_capacity(4096);
            loop {
                tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
                let now = Instant::now();
                out.clear();
                let mut stop = false;
                // Catch up on every tick already due, in one write.
                while next <= now && out.len() < 256 * 1024 {
                    if end_of_schedule.is_some_and(|e| next >= e) {
                        stop = true;
                        break;
                    }
                    let k = part.claim(pipeline, now, None);
                    if k == 0 {
                        stop = true;
                        break;
                    }
                    let mut q = due.borrow_mut();
                    for _ in 0..k {
                        q.push_back((next, part.workload.next(&mut rng, &mut out)));
                    }
                    next += tick;
                }
                if !out.is_empty() {
                    wake.notify_one();
                    if let Err(e) = wr.write_all(&out).await {
                        writer_done.set(true);
                        wake.notify_one();
                        anyhow::bail!("{addr}: write failed: {e}");
                    }
                }
                if stop {
                    break;
                }
            }
            writer_done.set(true);
            wake.notify_one();
            Ok::<(), anyhow::Error>(())
        };

        let reader = async {
            let mut tally = Tally::new(part.spec.interval, self.start);
            let mut buf = BytesMut::with_capacity(READ_CHUNK);
            let mut last = Instant::now();
            loop {
                if due.borrow().is_empty() {
                    if writer_done.get() {
                        break;
                    }
                    wake.notified().await;
                    continue;
                }
                if buf.capacity() - buf.len() < READ_CHUNK / 4 {
                    buf.reserve(READ_CHUNK);
                }
                let n = rd
                    .read_buf(&mut buf)
                    .await
                    .map_err(|e| anyhow::anyhow!("{addr}: read failed: {e}"))?;
                if n == 0 {
                    anyhow::bail!("{addr}: the server closed the connection");
                }
                let now = Instant::now();
                last = now;
                let mut done = 0u64;
                loop {
                    let Some(len) = frame_len(&buf)
                        .map_err(|e| anyhow::anyhow!("{addr}: malformed reply: {e}"))?
                    else {
                        break;
                    };
                    let Some((intended, tag)) = due.borrow_mut().pop_front() else {
                        anyhow::bail!("{addr}: a reply arrived with no request outstanding");
                    };
                    self.take_reply(
                        &mut buf,
                        len,
                        tag,
                        now.saturating_duration_since(intended),
                        &mut tally,
                    )?;
                    done += 1;
                }
                if done > 0 {
                    tally.completed(self.since_start(now), done);
                    part.completed.fetch_add(done, Ordering::Relaxed);
                }
            }
            tally.end = Some(last);
            Ok::<Tally, anyhow::Error>(tally)
        };
        let (w, r) = tokio::join!(writer, reader);
        w?;
        r
    }
}

fn drive_batched(
    part: &Arc<Part>,
    gate: &Arc<Gate>,
    workers: usize,
    connections: usize,
) -> anyhow::Result<Tally> {
    let spec = &part.spec;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(spec.threads.max(1))
        .enable_all()
        .build();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            let r: anyhow::Result<()> = Err(e.into());
            ready(gate, &r);
            return r.map(|_| Tally::default());
        }
    };
    let url = match &spec.password {
        Some(p) => format!("redis://:{p}@{}", spec.addr),
        None => format!("redis://{}", spec.addr),
    };
    let options = keel_client::Options {
        connections,
        ..keel_client::Options::default()
    };
    let client = rt
        .block_on(keel_client::Client::connect_with(&url, options))
        .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", spec.addr));
    let go = ready(
        gate,
        &client
            .as_ref()
            .map(|_| ())
            .map_err(|e| anyhow::anyhow!("{e:#}")),
    );
    let client = client?;
    if !go {
        return Ok(Tally::default());
    }
    let start = Instant::now();
    let deadline = match spec.until {
        Until::Time(d) => Some(start + d),
        Until::Requests(_) => None,
    };
    rt.block_on(async {
        let mut tasks = Vec::with_capacity(workers);
        for w in 0..workers {
            let part = part.clone();
            let client = client.clone();
            let mut rng =
                Rng::seeded(part.spec.seed ^ (w as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            tasks.push(tokio::spawn(async move {
                let mut tally = Tally::new(part.spec.interval, start);
                let mut out = Vec::with_capacity(256);
                // Open loop per caller: each has its own schedule and, when it
                // falls behind, latency still counts from the due time.
                let tick = part
                    .spec
                    .rate
                    .filter(|r| r.is_finite() && *r > 0.0)
                    .map(|r| Duration::from_secs_f64(part.connections as f64 / r));
                let mut next = start
                    + tick
                        .map(|t| t.mul_f64(w as f64 / part.connections as f64))
                        .unwrap_or_default();
                let mut now = Instant::now();
                loop {
                    if tick.is_some() {
                        if deadline.is_some_and(|d| next >= d) {
                            break;
                        }
                        tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
                    }
                    if part.claim(1, now, deadline) == 0 {
                        break;
                    }
                    out.clear();
                    let tag = part.workload.next(&mut rng, &mut out);
                    let sent = Instant::now();
                    let from = if tick.is_some() { next } else { sent };
                    let reply = client.send_encoded(Bytes::copy_from_slice(&out)).await;
                    now = Instant::now();
                    let latency = now.saturating_duration_since(from);
                    let frame = match reply {
                        Ok(f) => f,
                        Err(keel_client::Error::Server(text)) => Frame::Error(text.into()),
                        Err(e) => {
                            tally.failure(&e.to_string(), latency);
                            tally.completed(now.saturating_duration_since(start), 1);
                            part.completed.fetch_add(1, Ordering::Relaxed);
                            if let Some(t) = tick {
                                next += t;
                            }
                            continue;
                        }
                    };
                    match part.workload.judge(tag, &frame) {
                        Verdict::Ok => tally.success(latency),
                        Verdict::Fail(why) => tally.failure(&why, latency),
                    }
                    tally.completed(now.saturating_duration_since(start), 1);
                    part.completed.fetch_add(1, Ordering::Relaxed);
                    if let Some(t) = tick {
                        next += t;
                    }
                }
                tally.end = Some(now);
                tally
            }));
        }
        let mut total = Tally::default();
        for t in tasks {
            match t.await {
                Ok(t) => total.absorb(t),
                Err(e) => anyhow::bail!("a load task failed: {e}"),
            }
        }
        Ok(total)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_reads_simple_and_blob_errors() {
        assert_eq!(error_text(b"-ERR no\r\n"), Some(&b"ERR no"[..]));
        assert_eq!(error_text(b"!7\r\nERR bad\r\n"), Some(&b"ERR bad"[..]));
        assert_eq!(error_text(b"+OK\r\n"), None);
    }

    #[test]
    fn failure_reasons_drop_echoed_arguments() {
        assert_eq!(
            failure_reason(
                "ERR unknown command 'LPUSH', with args beginning with: 'mylist' 'xxx' "
            ),
            "ERR unknown command 'LPUSH'"
        );
        let long = "é".repeat(100);
        assert!(failure_reason(&long).len() <= 120);
    }

    #[test]
    fn a_request_limit_is_handed_out_exactly() {
        struct Nop;
        impl Workload for Nop {
            fn next(&self, _: &mut crate::rng::Rng, _: &mut Vec<u8>) -> u32 {
                0
            }
        }
        let spec = LoadSpec::new(
            "x:1",
            Mode::Raw {
                connections: 3,
                pipeline: 4,
            },
            Until::Requests(10),
        );
        let p = Part::new(spec, Arc::new(Nop));
        let now = Instant::now();
        let got: Vec<usize> = (0..5).map(|_| p.claim(4, now, None)).collect();
        assert_eq!(got, [4, 4, 2, 0, 0]);
    }

    #[test]
    fn an_unreachable_target_is_named() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        struct Ping;
        impl Workload for Ping {
            fn next(&self, _: &mut crate::rng::Rng, out: &mut Vec<u8>) -> u32 {
                out.extend_from_slice(b"PING\r\n");
                0
            }
        }
        for mode in [
            Mode::Raw {
                connections: 2,
                pipeline: 1,
            },
            Mode::Batched {
                workers: 2,
                connections: 1,
            },
        ] {
            let spec = LoadSpec::new(&addr, mode, Until::Requests(10));
            let err = run(&spec, Arc::new(Ping)).unwrap_err().to_string();
            assert!(err.contains(&addr), "{err}");
        }
    }

    #[test]
    fn process_cpu_reads_this_process_in_nanoseconds() {
        let pid = std::process::id();
        let t = process_cpu(pid).unwrap();
        assert!(t.total < Duration::from_secs(100_000));
        assert!(cpu_time() > Duration::ZERO);
        // This kernel keeps schedstat: the nanosecond source is chosen, and
        // it moves by less than a 10 ms tick for a little work.
        if std::path::Path::new(&format!("/proc/{pid}/schedstat")).exists() {
            assert_eq!(t.source, "schedstat");
            // Other tests' threads come and go; this thread's own run time
            // moves by far less than a 10 ms tick for a little work.
            let own = || {
                parse_schedstat(&std::fs::read_to_string("/proc/thread-self/schedstat").unwrap())
                    .unwrap()
            };
            let before = own();
            let mut x = 0u64;
            for i in 0..200_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
            std::hint::black_box(x);
            // The run time is brought up to date when the thread leaves the
            // CPU, as a server's threads do whenever they wait for input.
            std::thread::sleep(Duration::from_millis(1));
            let after = own();
            assert!(after > before, "{before} {after}");
        }
        assert!(process_threads(pid).unwrap() >= 1);
        assert!(stat_cpu(pid).is_some());
    }

    #[test]
    fn schedstat_and_info_are_read() {
        assert_eq!(parse_schedstat("3256260 255727 15\n"), Some(3_256_260));
        assert_eq!(parse_schedstat(""), None);
        let keel = "# Server\r\nredis_version:7.0.15\r\nkeel_version:0.1.0\r\n";
        assert_eq!(
            version_of_info(keel).as_deref(),
            Some("keel 0.1.0 (redis_version 7.0.15)")
        );
        assert_eq!(
            version_of_info("redis_version:7.0.15\r\n").as_deref(),
            Some("redis 7.0.15")
        );
        assert_eq!(version_of_info("nothing"), None);
    }
}
