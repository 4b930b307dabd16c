//! Fuzz the configuration reader with what a config file might hold: each line
//! is split as a redis.conf line is and applied to one configuration, in order,
//! as start-up does.
//!
//! Properties: nothing panics, however malformed the line or its values; and
//! every value a line sets reads back (CONFIG GET) as a value that, set again,
//! changes nothing, so CONFIG REWRITE and a restart keep the configuration.

#![no_main]

use keel_engine::config::{find, line_words, value_words, Config};
use libfuzzer_sys::fuzz_target;

/// Enough lines for directives to meet (save lines adding up, aliases).
const MAX_LINES: usize = 64;

fuzz_target!(|data: &[u8]| {
    let config = Config::default();
    for line in data.split(|&b| b == b'\n').take(MAX_LINES) {
        let Some(words) = line_words(line) else {
            continue;
        };
        let Some((name, values)) = words.split_first() else {
            continue;
        };
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        if config.apply_line(name, &values, true).is_err() {
            continue;
        }
        let Some(dir) = find(name) else {
            continue;
        };
        let shown = config.get(dir.name);
        let again = value_words(dir, &shown);
        if let Err(e) = config.set(dir.name, &again, true) {
            panic!("{}: '{shown}' is refused when set back: {e}", dir.name);
        }
        assert_eq!(config.get(dir.name), shown, "{}", dir.name);
    }
});
