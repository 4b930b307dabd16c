//! Command handlers, one file per command group. Each file declares its commands'
//! specs next to their handlers and lists them in its `COMMANDS` table.

use crate::table::CommandTable;

pub mod bitmap;
pub mod connection;
pub mod introspection;
pub mod keys;
pub mod server;
pub mod strings;
pub mod transactions;

/// The full command table, built once per engine.
pub fn table() -> CommandTable {
    CommandTable::new(&[
        connection::COMMANDS,
        server::COMMANDS,
        introspection::COMMANDS,
        keys::COMMANDS,
        strings::COMMANDS,
        bitmap::COMMANDS,
        transactions::COMMANDS,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Flags, Keys};

    /// The table's own laws: unique names, WRITE xor READONLY where either is set,
    /// key positions within the arity.
    #[test]
    fn table_is_consistent() {
        let t = table();
        let mut names = std::collections::HashSet::new();
        for spec in &t.specs {
            assert!(
                names.insert(spec.name.to_ascii_lowercase()),
                "duplicate {}",
                spec.name
            );
            assert!(
                !(spec.flags.contains(Flags::WRITE) && spec.flags.contains(Flags::READONLY)),
                "{} is both write and readonly",
                spec.name
            );
            if let Keys::Range { first, last, .. } = spec.keys {
                let min_args = spec.arity.unsigned_abs() as i32;
                assert!(
                    first >= 1 && first < min_args.max(2),
                    "{} first key outside arity",
                    spec.name
                );
                assert!(
                    last < 0 || last >= first,
                    "{} last key before first",
                    spec.name
                );
            }
            assert!(!spec.summary.is_empty(), "{} has no summary", spec.name);
        }
    }

    /// Every command and subcommand is exercised by the Python suite, which runs
    /// against the real server: its name (or the subcommand's own name) appears
    /// as a word in some test file.
    #[test]
    fn every_command_has_a_python_test() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python");
        let mut text = String::new();
        for entry in std::fs::read_dir(&dir).expect("tests/python exists") {
            let path = entry.expect("readable dir").path();
            if path.extension().is_some_and(|e| e == "py") {
                text.push_str(&std::fs::read_to_string(&path).expect("readable test file"));
                text.push('\n');
            }
        }
        let text = text.to_ascii_lowercase();
        let is_word_char = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        let words: std::collections::HashSet<&str> = text
            .split(|c: char| !is_word_char(c))
            .filter(|w| !w.is_empty())
            .collect();
        let t = table();
        let missing: Vec<String> = t
            .specs
            .iter()
            .map(|s| s.name.to_ascii_lowercase())
            .filter(|name| {
                let own = name.rsplit('|').next().unwrap_or(name);
                !words.contains(own) && !words.contains(own.replace('-', "_").as_str())
            })
            .collect();
        assert!(
            missing.is_empty(),
            "commands without a Python test: {missing:?}"
        );
    }
}
