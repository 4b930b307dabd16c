//! keel-bench command line: `keel-bench [redis-benchmark options] [command]`,
//! `keel-bench mixed [options]` (or any memtier-like option),
//! `keel-bench pubsub [options]` and
//! `keel-bench run scenarios/X.toml`. Errors end the process with status 1
//! and one line on stderr.

use keel_bench::{classic, mixed, pubsub, scenario};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("run") => scenario::run_cli(&args[1..]),
        Some("mixed") => mixed::run_cli(&args[1..]),
        Some("pubsub") => pubsub::run_cli(&args[1..]),
        _ if mixed::wants(&args) => mixed::run_cli(&args),
        _ => classic::run_cli(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("keel-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}
