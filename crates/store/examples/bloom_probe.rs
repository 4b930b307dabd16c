//! Add and lookup cost of the two Bloom filter layouts.
//!
//! Builds a fixed-size filter for `--items` items at `--error` in each
//! layout, adds the items in batches of 1000, then looks up as many unseen
//! items, and prints nanoseconds per item for both, with the filter's size
//! and the false-positive rate it showed.
//!
//! ```sh
//! cargo run --release -p keel-store --example bloom_probe -- --items 60000000
//! ```

use std::time::{Duration, Instant};

use keel_store::bloom::{Chain, Layout};

const BATCH: u64 = 1000;

struct Args {
    items: u64,
    error: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        items: 1_000_000,
        error: 1e-4,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--items" => args.items = value.parse().map_err(|e| format!("--items: {e}"))?,
            "--error" => args.error = value.parse().map_err(|e| format!("--error: {e}"))?,
            _ => return Err(format!("unknown option {flag} (--items N, --error E)")),
        }
    }
    Ok(args)
}

/// Item `i` of a stream: a fixed prefix and the index, like a short key.
fn item(stream: u8, i: u64, out: &mut [u8; 16]) -> &[u8] {
    out[..7].copy_from_slice(b"object:");
    out[7] = stream;
    out[8..].copy_from_slice(&i.to_le_bytes());
    &out[..]
}

fn ns_per(d: Duration, n: u64) -> f64 {
    d.as_nanos() as f64 / n.max(1) as f64
}

fn run(layout: Layout, args: &Args) -> Result<(), String> {
    let started = Instant::now();
    let mut chain = match layout {
        Layout::Classic => Chain::new(args.items, args.error, 0, true),
        Layout::Blocked => Chain::new_blocked(args.items, args.error, None),
    }
    .map_err(|e| format!("{layout:?}: {e}"))?;
    let created = started.elapsed();
    let mut buf = [0u8; 16];

    let mut add_time = Duration::ZERO;
    let mut i = 0;
    while i < args.items {
        let end = (i + BATCH).min(args.items);
        let t = Instant::now();
        for j in i..end {
            // A false positive is "already present"; only a full filter errs.
            chain
                .add(item(b'a', j, &mut buf))
                .map_err(|e| format!("{layout:?}: add {j}: {e}"))?;
        }
        add_time += t.elapsed();
        i = end;
    }

    let mut exists_time = Duration::ZERO;
    let mut hits = 0u64;
    let mut i = 0;
    while i < args.items {
        let end = (i + BATCH).min(args.items);
        let t = Instant::now();
        for j in i..end {
            hits += u64::from(chain.exists(item(b'q', j, &mut buf)));
        }
        exists_time += t.elapsed();
        i = end;
    }

    let link = chain.links().first().ok_or("no link")?;
    println!(
        "{:<8} bits/item {:>6.2}  k {:>2}  size {:>9.1} MiB  created {:>8.2?}  add {:>7.1} ns/item  exists {:>7.1} ns/item  false positives {:.3e}",
        format!("{layout:?}"),
        link.bits() as f64 / args.items as f64,
        link.hashes(),
        chain.size_bytes() as f64 / (1024.0 * 1024.0),
        created,
        ns_per(add_time, args.items),
        ns_per(exists_time, args.items),
        hits as f64 / args.items as f64,
    );
    Ok(())
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("bloom_probe: {e}");
            std::process::exit(2);
        }
    };
    println!(
        "{} items at error rate {}, batches of {BATCH}",
        args.items, args.error
    );
    for layout in [Layout::Classic, Layout::Blocked] {
        if let Err(e) = run(layout, &args) {
            eprintln!("bloom_probe: {e}");
            std::process::exit(1);
        }
    }
}
