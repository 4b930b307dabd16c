//! A price-search HTTP service over three interchangeable back ends: a map of
//! prices scanned per request, Keel's bitmap index in this process, and the
//! same index inside keel-server. See README.md.
//!
//! Must not: be a dependency of anything; it uses `keel-store` and
//! `keel-client` as any application would.

pub mod data;
pub mod http;
pub mod search;

use data::{Price, Rng};
use search::{BitmapSearch, KeelSearch, MapSearch};
use std::fmt::Write as _;
use std::path::Path;

/// Resident set size of this process in bytes (0 where /proc is missing).
pub fn rss_bytes() -> usize {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<usize>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// Memory one step took: live heap bytes (from a counting allocator, when
/// the binary has one) and resident set growth.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemDelta {
    pub heap: usize,
    pub rss: usize,
}

/// Run `f`, measuring what it leaves allocated.
pub fn measure<T>(heap: fn() -> usize, f: impl FnOnce() -> T) -> (T, MemDelta) {
    let (h0, r0) = (heap(), rss_bytes());
    let out = f();
    let d = MemDelta {
        heap: heap().saturating_sub(h0),
        rss: rss_bytes().saturating_sub(r0),
    };
    (out, d)
}

/// keel-server's `used_memory` and `used_memory_rss`.
pub async fn keel_memory(k: &KeelSearch) -> Option<(u64, u64)> {
    let reply = k.client().cmd(&["INFO", "memory"]).await.ok()?;
    let text = match reply {
        keel_client::Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        _ => return None,
    };
    let field = |name: &str| -> Option<u64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
    };
    Some((field("used_memory")?, field("used_memory_rss")?))
}

/// `MEMORY USAGE key` as keel-server reports it for the index.
pub async fn keel_memory_usage(k: &KeelSearch) -> Option<i64> {
    match k.client().cmd(&["MEMORY", "USAGE", k.key.as_str()]).await {
        Ok(keel_client::Frame::Integer(n)) => Some(n),
        _ => None,
    }
}

/// Write request bodies drawn pseudo-randomly from `prices` into `dir`:
/// `samples.lua` (a Lua table `bodies` for wrk), `search-price-request.json`
/// (one request) and `search-price-bulk-request-5.json` (a bulk request).
pub fn write_samples(
    prices: &[&Price],
    dir: &Path,
    count: usize,
    seed: u64,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut rng = Rng::new(seed);
    let picked: Vec<&Price> = (0..count.max(5))
        .map(|_| prices[rng.below(prices.len())])
        .collect();
    let mut lua = String::from("bodies = {\n");
    for p in &picked[..count.max(1)] {
        // Long brackets: the JSON needs no escaping inside them.
        let _ = writeln!(lua, "[==[{}]==],", data::request_json(p, None));
    }
    lua.push_str("}\n");
    std::fs::write(dir.join("samples.lua"), lua)?;
    std::fs::write(
        dir.join("search-price-request.json"),
        data::request_json(picked[0], None),
    )?;
    let bulk: Vec<String> = picked[..5]
        .iter()
        .enumerate()
        .map(|(i, p)| data::request_json(p, Some(i as u16)))
        .collect();
    std::fs::write(
        dir.join("search-price-bulk-request-5.json"),
        format!("[{}]", bulk.join(",")),
    )
}

/// What loading took, for `/stats` and the benchmark report.
#[derive(Debug, Clone, Default)]
pub struct LoadReport {
    pub prices: usize,
    pub map: MemDelta,
    pub bitmap: MemDelta,
    pub bitmap_heap_estimate: usize,
    /// Of which payloads (response bodies) and entity ids.
    pub bitmap_payload_bytes: usize,
    pub bitmap_id_bytes: usize,
    /// keel-server: prices loaded, used_memory and RSS growth, MEMORY USAGE.
    pub keel: Option<(usize, u64, u64, Option<i64>)>,
    pub load_ms: (u128, u128, u128),
}

impl LoadReport {
    pub fn to_json(&self, threads: usize) -> String {
        let keel = match self.keel {
            Some((n, used, rss, usage)) => format!(
                "{{\"prices\":{n},\"used_memory_delta\":{used},\"rss_delta\":{rss},\"memory_usage\":{}}}",
                usage.map_or("null".to_string(), |u| u.to_string())
            ),
            None => "null".into(),
        };
        format!(
            "{{\"prices\":{},\"service_threads\":{threads},\
             \"map\":{{\"heap_bytes\":{},\"rss_bytes\":{},\"load_ms\":{}}},\
             \"bitmap\":{{\"heap_bytes\":{},\"rss_bytes\":{},\"index_heap_bytes\":{},\"payload_bytes\":{},\"id_bytes\":{},\"load_ms\":{}}},\
             \"keel\":{keel},\"keel_load_ms\":{}}}",
            self.prices,
            self.map.heap,
            self.map.rss,
            self.load_ms.0,
            self.bitmap.heap,
            self.bitmap.rss,
            self.bitmap_heap_estimate,
            self.bitmap_payload_bytes,
            self.bitmap_id_bytes,
            self.load_ms.1,
            self.load_ms.2,
        )
    }
}

/// Build the map from the prices `make` returns, the in-process index from
/// the map, and load keel-server's index when `keel` is given; measure each
/// step.
pub async fn load(
    make: impl FnOnce() -> Vec<Price>,
    keel: Option<&KeelSearch>,
    heap: fn() -> usize,
) -> Result<(MapSearch, BitmapSearch, LoadReport), search::KeelError> {
    let mut report = LoadReport::default();
    let t = std::time::Instant::now();
    // The prices are made inside the measurement and move into the map, so
    // the map's figure is what holding the catalogue as a map costs.
    let (map, d) = measure(heap, || MapSearch::new(make()));
    report.map = d;
    report.prices = map.len();
    report.load_ms.0 = t.elapsed().as_millis();
    let t = std::time::Instant::now();
    let (bitmap, d) = measure(heap, || {
        let b = BitmapSearch::new();
        for p in map.prices() {
            b.add(p);
        }
        b
    });
    report.bitmap = d;
    report.bitmap_heap_estimate = bitmap.heap_bytes();
    report.bitmap_payload_bytes = bitmap.payload_bytes();
    report.bitmap_id_bytes = map.prices().map(|p| p.id.len()).sum();
    report.load_ms.1 = t.elapsed().as_millis();
    if let Some(k) = keel {
        let t = std::time::Instant::now();
        let before = keel_memory(k).await.unwrap_or((0, 0));
        let n = k.load(map.prices(), 1000).await?;
        let after = keel_memory(k).await.unwrap_or((0, 0));
        report.keel = Some((
            n,
            after.0.saturating_sub(before.0),
            after.1.saturating_sub(before.1),
            keel_memory_usage(k).await,
        ));
        report.load_ms.2 = t.elapsed().as_millis();
    }
    Ok((map, bitmap, report))
}

/// Mean microseconds per search for each back end, without HTTP: every
/// request in `reqs` asked in turn (keel: one round trip at a time).
pub async fn time_searches(
    map: &MapSearch,
    bitmap: &BitmapSearch,
    keel: Option<&KeelSearch>,
    reqs: &[search::FindPriceRequest],
) -> (f64, f64, Option<f64>) {
    use std::hint::black_box;
    use std::time::Instant;
    let per = |t: Instant| t.elapsed().as_secs_f64() * 1e6 / reqs.len().max(1) as f64;
    let t = Instant::now();
    for r in reqs {
        black_box(map.find(r));
    }
    let m = per(t);
    let t = Instant::now();
    for r in reqs {
        black_box(bitmap.find(r));
    }
    let b = per(t);
    let k = match keel {
        Some(k) => {
            let t = Instant::now();
            for r in reqs {
                let _ = black_box(k.find(r).await);
            }
            Some(per(t))
        }
        None => None,
    };
    (m, b, k)
}
