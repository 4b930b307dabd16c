//! `price-search`: generate the price catalogue, load it into the map, the
//! in-process index and (with `--keel`) keel-server, then serve the search API.
//!
//! ```text
//! price-search [--port N] [--keel redis://127.0.0.1:PORT] [--key prices]
//!              [--offerings 50] [--seed 3197] [--threads 2]
//!              [--samples DIR] [--sample-count 1000]
//! ```
//!
//! Prints `listening 127.0.0.1:PORT` and then the load report (JSON, also at
//! `GET /stats`) on stdout once it serves.

use keel_price_search::data::{self, generate};
use keel_price_search::http::{router, AppState};
use keel_price_search::search::{FindPriceRequest, KeelSearch};
use keel_price_search::{load, time_searches, write_samples};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The system allocator, counting the bytes currently allocated so that the
/// load report can say what each back end's data holds.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the counter only does arithmetic.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            LIVE.fetch_add(new_size, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live_heap() -> usize {
    LIVE.load(Ordering::Relaxed)
}

struct Args {
    port: u16,
    keel: Option<String>,
    key: String,
    offerings: usize,
    seed: u64,
    threads: usize,
    samples: Option<String>,
    sample_count: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        port: 8091,
        keel: None,
        key: "prices".into(),
        offerings: 50,
        seed: data::DEFAULT_SEED,
        threads: 2,
        samples: None,
        sample_count: 1000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        let num = |v: String| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--port" => a.port = u16::try_from(num(value()?)?).map_err(|_| "--port: too large")?,
            "--keel" => a.keel = Some(value()?),
            "--key" => a.key = value()?,
            "--offerings" => a.offerings = num(value()?)? as usize,
            "--seed" => a.seed = num(value()?)?,
            "--threads" => a.threads = (num(value()?)? as usize).max(1),
            "--samples" => a.samples = Some(value()?),
            "--sample-count" => a.sample_count = (num(value()?)? as usize).max(1),
            "-h" | "--help" => {
                return Err(
                    "usage: price-search [--port N] [--keel URL] [--key NAME] [--offerings N] \
                     [--seed N] [--threads N] [--samples DIR] [--sample-count N]"
                        .into(),
                )
            }
            other => return Err(format!("unknown argument {other} (--help lists them)")),
        }
    }
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = rt.block_on(run(args)) {
        eprintln!("price-search: {e}");
        std::process::exit(1);
    }
}

async fn run(args: Args) -> Result<(), String> {
    let keel = match &args.keel {
        // A connection per service thread.
        Some(url) => Some(
            KeelSearch::connect(url, &args.key, args.threads)
                .await
                .map_err(|e| format!("cannot reach keel-server at {url}: {}", e.0))?,
        ),
        None => None,
    };
    let (offerings, seed) = (args.offerings, args.seed);
    let (map, bitmap, report) = load(|| generate(offerings, seed), keel.as_ref(), live_heap)
        .await
        .map_err(|e| format!("loading keel-server: {}", e.0))?;
    let prices: Vec<_> = map.prices().collect();
    if let Some(dir) = &args.samples {
        write_samples(&prices, std::path::Path::new(dir), args.sample_count, 3389)
            .map_err(|e| format!("writing samples to {dir}: {e}"))?;
    }
    // The cost of a search alone, HTTP aside, over 1000 sampled requests.
    let mut rng = data::Rng::new(3389);
    let reqs: Vec<FindPriceRequest> = (0..1000)
        .filter_map(|_| {
            let p = prices.get(rng.below(prices.len().max(1)))?;
            serde_json::from_str(&data::request_json(p, None)).ok()
        })
        .collect();
    drop(prices);
    let (m, b, k) = time_searches(&map, &bitmap, keel.as_ref(), &reqs).await;
    let mut stats = report.to_json(args.threads);
    stats.pop();
    stats.push_str(&format!(
        ",\"search_us\":{{\"map\":{m:.2},\"bitmap\":{b:.2},\"keel\":{}}}}}",
        k.map_or("null".into(), |k| format!("{k:.2}"))
    ));
    let state = Arc::new(AppState {
        map,
        bitmap,
        keel,
        stats: stats.clone(),
    });
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", args.port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    println!("listening {addr}");
    println!("{stats}");
    axum::serve(listener, router(state))
        .await
        .map_err(|e| e.to_string())
}
