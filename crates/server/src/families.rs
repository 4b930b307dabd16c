//! The command table assembled from every family crate, and what the kernel
//! asks of them ([`keel_engine::families::Families`]). This is the one place
//! that knows the full list.

use keel_engine::table::CommandTable;

/// What the kernel asks of these families (see [`keel_engine::families`]).
pub struct AllFamilies;

impl keel_engine::families::Families for AllFamilies {
    #[inline]
    fn prefetch(&self, table: &keel_store::Table, argv: &[bytes::Bytes]) {
        keel_probabilistic::bloom::prefetch(table, argv);
    }

    fn names_other_keys(&self, argv: &[bytes::Bytes]) -> bool {
        keel_collections::sort::names_other_keys(argv)
    }

    fn script_takes_every_shard(
        &self,
        scripting: &keel_engine::scripting::Scripting,
        argv: &[bytes::Bytes],
    ) -> bool {
        keel_admin::scripting::wants_every_shard(scripting, argv)
    }
}

/// The full command table, built once per engine.
pub fn table() -> CommandTable {
    CommandTable::new(&[
        keel_admin::connection::COMMANDS,
        keel_admin::server::COMMANDS,
        keel_admin::acl::COMMANDS,
        keel_admin::introspection::COMMANDS,
        keel_keyspace::keys::COMMANDS,
        keel_strings::strings::COMMANDS,
        keel_strings::bitmap::COMMANDS,
        keel_strings::hll::COMMANDS,
        keel_admin::transactions::COMMANDS,
        keel_collections::hashes::COMMANDS,
        keel_collections::sets::COMMANDS,
        keel_collections::lists::COMMANDS,
        keel_collections::zsets::COMMANDS,
        keel_geo::geo::COMMANDS,
        keel_collections::sort::COMMANDS,
        keel_streams::streams::COMMANDS,
        keel_collections::blocking::COMMANDS,
        keel_probabilistic::bloom::COMMANDS,
        keel_probabilistic::cuckoo::COMMANDS,
        keel_probabilistic::cms::COMMANDS,
        keel_probabilistic::topk::COMMANDS,
        keel_probabilistic::tdigest::COMMANDS,
        keel_roaring::roaring::COMMANDS,
        keel_roaring::index::COMMANDS,
        keel_keyspace::dump::COMMANDS,
        keel_admin::replication::COMMANDS,
        keel_admin::operator::COMMANDS,
        keel_admin::persistence::COMMANDS,
        keel_admin::scripting::COMMANDS,
        keel_admin::pubsub::COMMANDS,
        keel_streams::xgroups::COMMANDS,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::spec::{Flags, Keys};

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
        let mut words: std::collections::HashSet<&str> = text
            .split(|c: char| !is_word_char(c))
            .filter(|w| !w.is_empty())
            .collect();
        // Module-style names (`bf.add`) keep their dot.
        words.extend(
            text.split(|c: char| !is_word_char(c) && c != '.')
                .filter(|w| w.contains('.')),
        );
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

    /// Random command lines over every command in the table never reach a
    /// panic (which the executor would turn into an internal error): whatever
    /// a client sends, a handler answers with a reply or a Redis error.
    #[test]
    fn random_commands_never_panic() {
        use crate::testing::{Assembled, TestEngine};
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};

        let t = table();
        // Commands that sleep, stop the server or change its files are left out.
        let skip = [
            "DEBUG",
            "SHUTDOWN",
            "CONFIG|SET",
            "CONFIG|REWRITE",
            "SAVE",
            "BGSAVE",
            "BGREWRITEAOF",
        ];
        let names: Vec<String> = t
            .specs
            .iter()
            .map(|s| s.name.to_string())
            .filter(|n| !skip.contains(&n.as_str()))
            .collect();
        let word = prop_oneof![
            Just("k".to_string()),
            Just("k2".to_string()),
            Just("0".to_string()),
            Just("-1".to_string()),
            Just("1.5".to_string()),
            Just("9223372036854775807".to_string()),
            Just("-9223372036854775808".to_string()),
            Just("".to_string()),
            (-100i64..100).prop_map(|n| n.to_string()),
            "[A-Za-z#*?\\[\\]]{0,6}",
            prop::sample::select(vec![
                "EX",
                "PX",
                "EXAT",
                "PXAT",
                "NX",
                "XX",
                "GT",
                "LT",
                "KEEPTTL",
                "GET",
                "COUNT",
                "MATCH",
                "TYPE",
                "BYTE",
                "BIT",
                "AND",
                "OR",
                "XOR",
                "NOT",
                "OVERFLOW",
                "WRAP",
                "SAT",
                "FAIL",
                "INCRBY",
                "SET",
                "u8",
                "i64",
                "u63",
                "#1",
                "LEN",
                "IDX",
                "DB",
                "REPLACE",
                "PERSIST",
                "SAMPLES",
                "ID",
                "ADDR",
                "SKIPME",
                "yes",
                "ON",
                "OFF",
                "WITHMATCHLEN",
                "MINMATCHLEN",
                "ASYNC",
                "SYNC",
                "string",
                "3",
                "2",
                "AUTH",
                "SETNAME",
                "default",
            ])
            .prop_map(str::to_string),
        ];
        let line = (
            prop::sample::select(names),
            prop::collection::vec(word, 0..7),
        );
        let mut runner = TestRunner::new(Config {
            cases: 3000,
            ..Config::default()
        });
        let engine = std::cell::RefCell::new(TestEngine::new());
        runner
            .run(&line, |(name, args)| {
                let mut argv: Vec<&str> = name.split('|').collect();
                argv.extend(args.iter().map(String::as_str));
                let reply = engine.borrow_mut().run(&argv);
                if let keel_resp::Frame::Error(e) = &reply {
                    prop_assert!(
                        !e.starts_with(b"ERR internal error"),
                        "{argv:?} -> {}",
                        String::from_utf8_lossy(e)
                    );
                }
                Ok(())
            })
            .expect("no command panics");
    }
}
