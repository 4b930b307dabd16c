//! The kernel's `acl::rules` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_engine::acl::rules::*;
use keel_engine::acl::{CommandInfo, Denied};
use keel_store::glob::glob_match;
use sha2::{Digest, Sha256};

#[cfg(test)]
mod tests {
    use super::*;
    use keel_engine::acl::Acl;

    fn acl() -> Acl {
        Acl::new("", keel_server::families::table())
    }

    fn list(acl: &Acl, name: &str) -> String {
        acl.get(name.as_bytes())
            .unwrap()
            .state()
            .describe(acl.info())
    }

    fn set(acl: &Acl, name: &str, ops: &[&str]) -> Result<(), String> {
        let ops: Vec<Bytes> = ops.iter().map(|o| Bytes::from(o.to_string())).collect();
        acl.set_user(name, &ops, false)
    }

    #[test]
    fn default_user_is_free_and_described_like_redis() {
        let a = acl();
        assert_eq!(list(&a, "default"), "on nopass ~* &* +@all");
        assert!(a.default_user().free());
    }

    #[test]
    fn rules_describe_like_redis() {
        let a = acl();
        let cases: &[(&[&str], &str)] = &[
            (&["on", ">p1", "~cache:*", "+@read"],
             "on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~cache:* resetchannels -@all +@read"),
            (&["reset", "+get", "+set", "-set"], "off sanitize-payload resetchannels -@all +get"),
            (&["reset", "+@read", "-get"], "off sanitize-payload resetchannels -@all +@read -get"),
            (&["reset", "+@all", "-get"], "off sanitize-payload resetchannels +@all -get"),
            (&["reset", "+get", "+@read"], "off sanitize-payload resetchannels -@all +@read"),
            (&["reset", "+@read", "+@write", "-@read"], "off sanitize-payload resetchannels -@all +@write"),
            (&["reset", "nocommands", "+@hash", "+@set"], "off sanitize-payload resetchannels -@all +@set +@hash"),
            (&["reset", "+client", "-client|kill"], "off sanitize-payload resetchannels -@all +client -client|kill"),
            (&["reset", "+select|0"], "off sanitize-payload resetchannels -@all +select|0"),
            (&["reset", "+@all", "-select", "+select|1", "+select|2"],
             "off sanitize-payload resetchannels +@all -select +select|1 +select|2"),
            (&["reset", "+select", "+select|0"], "off sanitize-payload resetchannels -@all +select"),
            (&["reset", "+select|0", "+select"], "off sanitize-payload resetchannels -@all +select"),
            (&["reset", "+get|X", "+get|y", "+@read"], "off sanitize-payload resetchannels -@all +@read"),
            (&["reset", "+get|a", "+get|A"], "off sanitize-payload resetchannels -@all +get|a"),
            (&["reset", "+select|0", "-@all"], "off sanitize-payload resetchannels -@all"),
            (&["reset", "+select|0", "-@keyspace"], "off sanitize-payload resetchannels -@all +select|0"),
            (&["reset", "nopass", "%R~r:*", "%W~w:*", "&ch*", "(+get ~x*)"],
             "off nopass sanitize-payload %R~r:* %W~w:* resetchannels &ch* -@all (~x* resetchannels -@all +get)"),
        ];
        for (ops, want) in cases {
            set(&a, "u", ops).unwrap();
            assert_eq!(list(&a, "u"), *want, "{ops:?}");
        }
    }

    #[test]
    fn bad_rules_are_refused_with_redis_texts_and_change_nothing() {
        let a = acl();
        set(&a, "u", &["on", "+get"]).unwrap();
        let before = list(&a, "u");
        assert_eq!(
            set(&a, "u", &["+set", "badrule"]).unwrap_err(),
            "ERR Error in ACL SETUSER modifier 'badrule': Syntax error"
        );
        assert_eq!(
            set(&a, "u", &["+nosuch"]).unwrap_err(),
            "ERR Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"
        );
        for (rule, why) in [
            ("-select|0", "Unknown command or category name in ACL"),
            ("+select|", "Syntax error"),
            ("+select|0|1", "Unknown command or category name in ACL"),
            (
                "+config|get|x",
                "Allowing first-arg of a subcommand is not supported",
            ),
            ("+config|nosuch", "Unknown command or category name in ACL"),
            ("-get|", "Unknown command or category name in ACL"),
            ("-config|", "Unknown command or category name in ACL"),
            ("+config|", "Syntax error"),
        ] {
            assert_eq!(
                set(&a, "u", &[rule]).unwrap_err(),
                format!("ERR Error in ACL SETUSER modifier '{rule}': {why}")
            );
        }
        assert!(set(&a, "u", &["%X~a"])
            .unwrap_err()
            .ends_with("Syntax error"));
        assert_eq!(
            set(&a, "u", &["(+@read", "~x)", "(+get", "~y"]).unwrap_err(),
            "ERR Unmatched parenthesis in acl selector starting at '(+get'."
        );
        assert_eq!(
            set(&a, "u", &["~a", "("]).unwrap_err(),
            "ERR Unmatched parenthesis in acl selector starting at '('."
        );
        assert!(set(&a, "u", &["allkeys", "~a"])
            .unwrap_err()
            .contains("'allkeys' flag"));
        assert!(set(&a, "u", &["#abc"]).unwrap_err().contains("exactly 64"));
        assert_eq!(list(&a, "u"), before);
        assert!(set(&a, "nobody", &["bad"]).is_err());
        assert!(a.get(b"nobody").is_none());
    }

    #[test]
    fn passwords_and_authentication() {
        let a = acl();
        set(&a, "u", &[">one", ">two"]).unwrap();
        assert!(
            a.authenticate(b"u", b"one").is_none(),
            "off users cannot log in"
        );
        set(&a, "u", &["on"]).unwrap();
        assert!(a.authenticate(b"u", b"one").is_some());
        assert!(a.authenticate(b"u", b"two").is_some());
        assert!(a.authenticate(b"u", b"three").is_none());
        set(&a, "u", &["<one"]).unwrap();
        assert!(a.authenticate(b"u", b"one").is_none());
        assert!(set(&a, "u", &["<one"])
            .unwrap_err()
            .contains("does not exist"));
        set(&a, "u", &["nopass"]).unwrap();
        assert!(a.authenticate(b"u", b"anything").is_some());
        assert!(a.authenticate(b"ghost", b"x").is_none());
    }

    #[test]
    fn key_read_write_patterns() {
        let a = acl();
        set(&a, "u", &["on", "nopass", "%W~w:*", "%R~r:*", "+@all"]).unwrap();
        let u = a.get(b"u").unwrap();
        let table = a.info().table();
        let run = |words: &[&str]| {
            let argv: Vec<Bytes> = words.iter().map(|w| Bytes::from(w.to_string())).collect();
            let id = table.lookup(&argv[0]).unwrap();
            a.check(&u, id, &argv)
        };
        assert_eq!(run(&["set", "w:1", "v"]), Ok(()));
        assert_eq!(run(&["set", "r:1", "v"]), Err(Denied::Key(1)));
        assert_eq!(run(&["get", "w:1"]), Err(Denied::Key(1)));
        assert_eq!(run(&["get", "r:1"]), Ok(()));
        assert_eq!(run(&["set", "w:1", "v", "get"]), Err(Denied::Key(1)));
        assert_eq!(run(&["copy", "r:1", "w:2"]), Ok(()));
        assert_eq!(run(&["exists", "w:1"]), Ok(()));
        assert_eq!(run(&["publish", "c", "m"]), Err(Denied::Channel(1)));
        set(&a, "u", &["resetchannels", "&c*"]).unwrap();
        assert_eq!(run(&["publish", "x", "m"]), Err(Denied::Channel(1)));
        assert_eq!(run(&["subscribe", "c1", "x"]), Err(Denied::Channel(2)));
        assert_eq!(run(&["psubscribe", "c*"]), Ok(()));
        assert_eq!(run(&["psubscribe", "c1*"]), Err(Denied::Channel(1)));
        assert!(!u.free());
    }

    /// A model law: the rules ACL LIST prints, applied to a fresh user, give
    /// back the same user (what ACL SAVE and LOAD rely on), for any sequence
    /// of rules; and a refused sequence leaves the user as it was.
    mod model {
        use super::*;
        use proptest::prelude::*;

        const OPS: &[&str] = &[
            "on",
            "off",
            "nopass",
            "resetpass",
            ">a",
            ">b",
            "<a",
            "#0000000000000000000000000000000000000000000000000000000000000000",
            "~k*",
            "%R~r*",
            "%W~w*",
            "%RW~rw*",
            "allkeys",
            "resetkeys",
            "&c*",
            "&d",
            "allchannels",
            "resetchannels",
            "+get",
            "-get",
            "+set",
            "+@read",
            "-@read",
            "+@write",
            "+@all",
            "-@all",
            "+@dangerous",
            "-@admin",
            "+client",
            "-client|kill",
            "+client|list",
            "+config|get",
            "nocommands",
            "allcommands",
            "(+get ~s*)",
            "clearselectors",
            "reset",
            "sanitize-payload",
            "skip-sanitize-payload",
            "bad",
        ];

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(200))]
            #[test]
            fn list_round_trips(ops in proptest::collection::vec(0..OPS.len(), 0..12)) {
                let a = Acl::new("", keel_server::families::table());
                let words: Vec<&str> = ops.iter().map(|&i| OPS[i]).collect();
                let before = a.get(b"default").map(|u| u.state());
                set(&a, "u", &["on"]).unwrap();
                let prior = a.get(b"u").unwrap().state();
                match set(&a, "u", &words) {
                    Err(_) => prop_assert_eq!(a.get(b"u").unwrap().state(), prior),
                    Ok(()) => {
                        let listed = list(&a, "u");
                        let again: Vec<&str> = listed.split(' ').collect();
                        set(&a, "v", &again).unwrap();
                        let (u, v) = (a.get(b"u").unwrap().state(), a.get(b"v").unwrap().state());
                        prop_assert_eq!(&u, &v, "listed as {}", listed);
                        prop_assert_eq!(list(&a, "v"), listed);
                    }
                }
                prop_assert_eq!(a.get(b"default").map(|u| u.state()), before);
            }
        }
    }
}
