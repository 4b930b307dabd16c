//! `keel-admin`'s `introspection` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_admin::introspection::*;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::keyspec::{self, Begin, Find, KeySpec};
use keel_engine::spec::{acl_categories, CommandSpec, Flags, Group, Keys};
use keel_engine::table::CommandTable;
use keel_resp::Frame;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    fn names(f: Frame) -> Vec<String> {
        let Frame::Array(items) = f else {
            panic!("not an array: {f:?}")
        };
        items
            .into_iter()
            .map(|i| match i {
                Frame::Bulk(b) | Frame::Simple(b) => String::from_utf8_lossy(&b).into_owned(),
                other => panic!("not a name: {other:?}"),
            })
            .collect()
    }

    fn set_names(f: &Frame) -> Vec<String> {
        let Frame::Set(items) = f else {
            panic!("not a set: {f:?}")
        };
        names(Frame::Array(items.clone()))
    }

    #[test]
    fn info_shape() {
        let mut t = TestEngine::new();
        let Frame::Array(entries) = t.run(&["COMMAND", "INFO", "get", "nosuch", "CLIENT|LIST"])
        else {
            panic!("array expected")
        };
        let Frame::Array(get) = &entries[0] else {
            panic!("entry expected")
        };
        assert_eq!(get.len(), 10);
        assert_eq!(get[0], bulk("get"));
        assert_eq!(get[1], int(2));
        assert_eq!(set_names(&get[2]), ["readonly", "fast"]);
        assert_eq!(&get[3..6], &[int(1), int(1), int(1)]);
        assert_eq!(set_names(&get[6]), ["@read", "@string", "@fast"]);
        assert_eq!(get[7], Frame::Set(vec![]));
        let Frame::Set(specs) = &get[8] else {
            panic!("key specs")
        };
        assert_eq!(specs.len(), 1);
        assert_eq!(entries[1], Frame::Null);
        let Frame::Array(list) = &entries[2] else {
            panic!("entry expected")
        };
        assert_eq!(list[0], bulk("client|list"));
        assert_eq!(
            set_names(&list[6]),
            ["@admin", "@slow", "@dangerous", "@connection"]
        );
    }

    #[test]
    fn every_command_has_an_entry() {
        let mut t = TestEngine::new();
        let top = t.engine.commands.top_level;
        let Frame::Array(all) = t.run(&["COMMAND"]) else {
            panic!("array expected")
        };
        assert_eq!(all.len(), top);
        assert_eq!(t.run(&["COMMAND", "COUNT"]), int(top as i64));
        let Frame::Array(client) = t.run(&["COMMAND", "INFO", "client"]) else {
            panic!()
        };
        let Frame::Array(entry) = &client[0] else {
            panic!()
        };
        let Frame::Array(subs) = &entry[9] else {
            panic!("subcommands are an array")
        };
        assert_eq!(subs.len(), keel_admin::connection::CLIENT.subcommands.len());
        let listed = names(t.run(&["COMMAND", "LIST"]));
        assert_eq!(listed.len(), t.engine.commands.len());
        assert!(listed.contains(&"client|kill".to_string()));
        let Frame::Map(docs) = t.run(&["COMMAND", "DOCS"]) else {
            panic!("map expected")
        };
        assert_eq!(docs.len(), top);
    }

    #[test]
    fn docs_entries() {
        let mut t = TestEngine::new();
        let Frame::Map(docs) = t.run(&["COMMAND", "DOCS", "GET", "nosuch", "client"]) else {
            panic!("map expected")
        };
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].0, bulk("get"));
        let Frame::Map(get) = &docs[0].1 else {
            panic!()
        };
        let keys: Vec<Frame> = get.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(
            keys,
            [
                bulk("summary"),
                bulk("since"),
                bulk("group"),
                bulk("complexity")
            ]
        );
        assert_eq!(get[2].1, bulk("string"));
        let Frame::Map(client) = &docs[1].1 else {
            panic!()
        };
        assert_eq!(client[4].0, bulk("subcommands"));
    }

    #[test]
    fn list_filters() {
        let mut t = TestEngine::new();
        let conn = names(t.run(&["COMMAND", "LIST", "FILTERBY", "ACLCAT", "CONNECTION"]));
        assert!(conn.contains(&"ping".to_string()) && conn.contains(&"client|id".to_string()));
        assert!(!conn.contains(&"get".to_string()));
        assert_eq!(
            names(t.run(&["COMMAND", "LIST", "FILTERBY", "PATTERN", "CLIENT|L*"])),
            ["client|list"]
        );
        assert!(names(t.run(&["COMMAND", "LIST", "FILTERBY", "MODULE", "x"])).is_empty());
        let bf = names(t.run(&["COMMAND", "LIST", "FILTERBY", "MODULE", "bf"]));
        assert!(bf.contains(&"bf.add".to_string()) && bf.contains(&"cf.add".to_string()));
        assert!(bf.contains(&"topk.add".to_string()) && bf.contains(&"tdigest.add".to_string()));
        let families = ["bf.", "cf.", "cms.", "topk.", "tdigest."];
        assert!(bf.iter().all(|n| families.iter().any(|f| n.starts_with(f))));
        assert_eq!(
            t.run(&["COMMAND", "LIST", "FILTERBY", "NAME", "x"]),
            error("ERR syntax error")
        );
        assert_eq!(t.run(&["COMMAND", "LIST", "x"]), error("ERR syntax error"));
    }

    #[test]
    fn getkeys() {
        let mut t = TestEngine::new();
        assert_eq!(
            names(t.run(&["COMMAND", "GETKEYS", "SET", "k", "v"])),
            ["k"]
        );
        assert_eq!(
            t.run(&["COMMAND", "GETKEYS", "nosuch", "x"]),
            error("ERR Invalid command specified")
        );
        assert_eq!(
            t.run(&["COMMAND", "GETKEYS", "ping", "x"]),
            error("ERR The command has no key arguments")
        );
        assert_eq!(
            t.run(&["COMMAND", "GETKEYS", "client", "kill", "x"]),
            error("ERR The command has no key arguments")
        );
        assert_eq!(
            t.run(&["COMMAND", "GETKEYS", "get", "a", "b"]),
            error("ERR Invalid number of arguments specified for command")
        );
        assert_eq!(
            t.run(&["COMMAND", "GETKEYS", "get"]),
            error("ERR wrong number of arguments for 'command|getkeys' command")
        );
        let Frame::Array(kf) = t.run(&["COMMAND", "GETKEYSANDFLAGS", "GET", "k"]) else {
            panic!()
        };
        assert_eq!(
            kf,
            [Frame::Array(vec![
                bulk("k"),
                Frame::Set(vec![Frame::simple("RO"), Frame::simple("access")])
            ])]
        );
    }

    #[test]
    fn numkeys_specs() {
        use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
        static SPEC: CommandSpec = CommandSpec {
            name: "ZUNIONSTORE",
            group: Group::String,
            arity: -4,
            flags: Flags::WRITE,
            keys: Keys::NumKeys {
                numkeys: 2,
                extra: 1,
            },
            summary: "s",
            since: "1",
            complexity: "c",
            subcommands: &[],
            run: super::command_count,
        };
        static GROUP: &[&CommandSpec] = &[&SPEC];
        let spec = &SPEC;
        assert_eq!(super::legacy_keys(spec), (1, 1, 1));
        assert!(super::flag_names(spec).contains(&"movablekeys"));
        assert_eq!(super::key_specs(spec).len(), 2);
        let table = keel_engine::table::CommandTable::new(&[GROUP]);
        let argv = |a: &[&str]| -> Vec<bytes::Bytes> {
            a.iter()
                .map(|s| bytes::Bytes::copy_from_slice(s.as_bytes()))
                .collect()
        };
        let (_, pos) =
            super::keys_of(&table, &argv(&["zunionstore", "d", "2", "a", "b"])).expect("keys");
        assert_eq!(pos, [1, 3, 4]);
        for bad in [
            ["zunionstore", "d", "5", "a", "b"],
            ["zunionstore", "d", "x", "a", "b"],
        ] {
            assert_eq!(
                super::keys_of(&table, &argv(&bad)).err(),
                Some(keel_engine::error::CmdError::err(
                    "Invalid arguments specified for command"
                ))
            );
        }
    }

    #[test]
    fn command_help_and_unknown() {
        let mut t = TestEngine::new();
        assert!(matches!(t.run(&["COMMAND", "HELP"]), Frame::Array(l) if l.len() > 5));
        assert_eq!(
            t.run(&["COMMAND", "NOPE"]),
            error("ERR unknown subcommand 'NOPE'. Try COMMAND HELP.")
        );
        assert_eq!(
            t.run(&["COMMAND", "COUNT", "x"]),
            error("ERR wrong number of arguments for 'command|count' command")
        );
    }
}
