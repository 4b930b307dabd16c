//! keel-bench command line: `keel-bench [redis-benchmark options] [command]`,
//! the memtier-like options, or `keel-bench run scenarios/X.toml`.

fn main() {
    eprintln!("keel-bench: not built yet");
    std::process::exit(2);
}
