//! `keel-check-rdb FILE`: reads an RDB file the way Keel would load it and reports what it
//! finds, in the manner of `redis-check-rdb`: exit status 0 when the whole file reads, its
//! checksum matches and every value converts into a Keel value; 1 otherwise, with the offset,
//! the error and the last key read.

use std::process::ExitCode;

use keel_persist::rdb::{to_store_value, ConvertError, RdbErrorKind, RdbReader};
use keel_store::CompactLimits;

struct Counts {
    keys: u64,
    expires: u64,
    expired: u64,
    empty: u64,
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn report_counts(c: &Counts) {
    println!("[info] {} keys read", c.keys);
    println!("[info] {} expires", c.expires);
    println!("[info] {} already expired", c.expired);
    if c.empty > 0 {
        println!("[info] {} empty keys skipped", c.empty);
    }
}

fn fail(offset: usize, what: &str, last_key: Option<&[u8]>, c: &Counts) -> ExitCode {
    fail_doing(offset, what, None, last_key, c)
}

/// [`fail`], naming what was being read when that is not a key (`read-functions`).
fn fail_doing(
    offset: usize,
    what: &str,
    doing: Option<&str>,
    last_key: Option<&[u8]>,
    c: &Counts,
) -> ExitCode {
    println!("--- RDB ERROR DETECTED ---");
    println!("[offset {offset}] {what}");
    if let Some(doing) = doing {
        println!("[additional info] While doing: {doing}");
    }
    match last_key {
        Some(k) => println!("[additional info] Last key read: '{}'", show(k)),
        None => println!("[additional info] No key was read before the error"),
    }
    report_counts(c);
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, path] = args.as_slice() else {
        eprintln!("Usage: keel-check-rdb <rdb-file-name>");
        return ExitCode::FAILURE;
    };
    let data = match std::fs::read(path) {
        Ok(d) => d,
        Err(e) => {
            println!("Fatal error: can't open the RDB file {path} for reading: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("[offset 0] Checking RDB file {path}");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    let mut c = Counts {
        keys: 0,
        expires: 0,
        expired: 0,
        empty: 0,
    };
    let mut reader = match RdbReader::new(&data) {
        Ok(r) => r,
        Err(e) => {
            // redis-check-rdb reads the whole 9-byte header before it
            // judges the signature, and reports where it then stands.
            let at = if e.kind == keel_persist::rdb::RdbErrorKind::BadMagic {
                data.len().min(9)
            } else {
                e.offset
            };
            return fail(at, &e.kind.to_string(), None, &c);
        }
    };
    let limits = CompactLimits::default();
    let mut aux_shown = 0;
    let mut db = None;
    let mut last_key: Option<Vec<u8>> = None;
    loop {
        let next = reader.next_entry();
        for ((k, v), at) in reader.aux().iter().zip(reader.aux_ends()).skip(aux_shown) {
            println!("[offset {at}] AUX FIELD {} = '{}'", show(k), show(v));
        }
        aux_shown = reader.aux().len();
        let entry = match next {
            Ok(Some(e)) => e,
            Ok(None) => break,
            Err(e) => {
                // Libraries are read, not compiled, as redis-check-rdb does.
                let doing = matches!(e.kind, RdbErrorKind::Library(_)).then_some("read-functions");
                let what = e.kind.to_string();
                return fail_doing(e.offset, &what, doing, last_key.as_deref(), &c);
            }
        };
        if db != Some(entry.db) {
            println!(
                "[offset {}] Selecting DB ID {}",
                reader.db_selected_at(),
                entry.db
            );
            db = Some(entry.db);
        }
        c.keys += 1;
        if let Some(at) = entry.expire_at_ms {
            c.expires += 1;
            if at < now_ms {
                c.expired += 1;
            }
        }
        match to_store_value(entry.value, &limits) {
            Ok(_) => {}
            Err(ConvertError::Empty) => c.empty += 1,
            Err(e) => {
                let what = format!("Key '{}' cannot be loaded by Keel: {e}", show(&entry.key));
                return fail(reader.offset(), &what, last_key.as_deref(), &c);
            }
        }
        last_key = Some(entry.key);
    }
    let end = data.len();
    let stored = data
        .get(end.saturating_sub(8)..)
        .filter(|_| reader.version() >= 5)
        .map(|b| b.iter().all(|&x| x == 0));
    match stored {
        Some(false) => println!("[offset {end}] Checksum OK"),
        Some(true) => {
            println!(
                "[offset {end}] RDB file was saved with checksum disabled: no check performed."
            )
        }
        None => {}
    }
    println!("[offset {end}] \\o/ RDB looks OK! \\o/");
    report_counts(&c);
    ExitCode::SUCCESS
}
