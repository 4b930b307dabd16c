//! `keel-admin`'s `connection` module under every family's commands: the module's
//! own imports and public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use keel_admin::connection::*;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::pause::PauseMode;
use keel_engine::session::ClientHandle;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_engine::version::REDIS_VERSION;
use keel_resp::{Frame, Protocol};
use std::sync::Arc;

#[cfg(test)]
mod tests {
    use keel_engine::testing::*;
    use keel_resp::{Frame, Protocol};
    use keel_server::testing::Assembled;

    fn text(f: Frame) -> String {
        match f {
            Frame::Verbatim(_, b) | Frame::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("not text: {other:?}"),
        }
    }

    fn field(line: &str, name: &str) -> String {
        line.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {line}"))
            .to_string()
    }

    #[test]
    fn client_unblock_ends_a_wait_like_redis() {
        let mut t = TestEngine::new();
        let mut blocked = t.other_session();
        let id = blocked.id().to_string();
        t.run_as(&mut blocked, &["BLPOP", "q", "0"]);
        let line = text(t.run(&["CLIENT", "LIST", "ID", &id]));
        assert_eq!(field(&line, "flags"), "b");
        assert_eq!(
            t.run(&["CLIENT", "UNBLOCK", &id, "NOPE"]),
            error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
        );
        assert_eq!(
            t.run(&["CLIENT", "UNBLOCK", "abc"]),
            error("ERR value is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["CLIENT", "unblock", &id, "TIMEOUT", "x"]),
            error("ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.")
        );
        assert_eq!(t.run(&["CLIENT", "UNBLOCK", "-1"]), int(0));
        assert_eq!(t.run(&["CLIENT", "UNBLOCK", &id]), int(1));
        assert_eq!(t.engine.block_reply(&mut blocked), Some(Frame::NullArray));
        let line = text(t.run(&["CLIENT", "LIST", "ID", &id]));
        assert_eq!(field(&line, "flags"), "N");
        assert_eq!(t.run(&["CLIENT", "UNBLOCK", &id]), int(0));
        t.run_as(&mut blocked, &["BLMOVE", "q", "d", "LEFT", "LEFT", "0"]);
        assert_eq!(t.run(&["CLIENT", "UNBLOCK", &id, "error"]), int(1));
        assert_eq!(
            t.engine.block_reply(&mut blocked),
            Some(error("UNBLOCKED client unblocked via CLIENT UNBLOCK"))
        );
        // Nothing is left waiting: a push stays in the list.
        t.run(&["RPUSH", "q", "v"]);
        assert_eq!(t.run(&["LLEN", "q"]), int(1));
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
    }

    fn password_engine(pass: &str) -> TestEngine {
        let mut t = TestEngine::new();
        t.engine
            .config
            .set("requirepass", &[pass], false)
            .expect("valid");
        // What CONFIG SET does after setting it: the default user's password.
        t.engine.acl.set_requirepass(pass);
        t.session = t.other_session();
        t
    }

    #[test]
    fn ping_echo() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["PING"]), Frame::simple("PONG"));
        assert_eq!(t.run(&["PING", "x"]), bulk("x"));
        assert_eq!(
            t.run(&["PING", "x", "y"]),
            error("ERR wrong number of arguments for 'ping' command")
        );
        assert_eq!(t.run(&["ECHO", "hi"]), bulk("hi"));
    }

    #[test]
    fn hello_switches_protocol() {
        let mut t = TestEngine::new();
        let Frame::Map(fields) = t.run(&["HELLO", "3"]) else {
            panic!("HELLO replies a map")
        };
        let keys: Vec<Frame> = fields.iter().map(|(k, _)| k.clone()).collect();
        assert_eq!(
            keys,
            ["server", "version", "proto", "id", "mode", "role", "modules"]
                .iter()
                .map(|k| bulk(k))
                .collect::<Vec<_>>()
        );
        assert_eq!(fields[0].1, bulk("redis"));
        assert_eq!(fields[2].1, int(3));
        assert_eq!(t.session.proto, Protocol::Resp3);
        assert_eq!(
            t.run(&["HELLO", "4"]),
            error("NOPROTO unsupported protocol version")
        );
        assert_eq!(
            t.run(&["HELLO", "x"]),
            error("ERR Protocol version is not an integer or out of range")
        );
        assert_eq!(
            t.run(&["HELLO", "2", "AUTH", "default"]),
            error("ERR Syntax error in HELLO option 'AUTH'")
        );
        assert_eq!(
            t.run(&["HELLO", "2", "SETNAME", "a b"]),
            error("ERR Client names cannot contain spaces, newlines or special characters.")
        );
        // A failed HELLO leaves the protocol alone.
        assert_eq!(t.session.proto, Protocol::Resp3);
        t.run(&["HELLO", "2", "SETNAME", "me"]);
        assert_eq!(t.session.proto, Protocol::Resp2);
        assert_eq!(t.run(&["CLIENT", "GETNAME"]), bulk("me"));
    }

    #[test]
    fn auth_without_password() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["AUTH", "x"]),
            error(
                "ERR AUTH <password> called without any password configured for the default \
                 user. Are you sure your configuration is correct?"
            )
        );
        assert_eq!(t.run(&["AUTH", "default", "x"]), ok());
        assert_eq!(
            t.run(&["AUTH", "bob", "x"]),
            error("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(t.run(&["AUTH", "a", "b", "c"]), error("ERR syntax error"));
    }

    #[test]
    fn auth_with_password() {
        let mut t = password_engine("secret");
        assert_eq!(t.run(&["PING"]), error("NOAUTH Authentication required."));
        assert_eq!(
            t.run(&["CLIENT", "ID"]),
            error("NOAUTH Authentication required.")
        );
        assert!(
            matches!(t.run(&["HELLO", "3"]), Frame::Error(e) if e.starts_with(b"NOAUTH HELLO"))
        );
        assert_eq!(
            t.run(&["AUTH", "nope"]),
            error("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(
            t.run(&["AUTH", "bob", "secret"]),
            error("WRONGPASS invalid username-password pair or user is disabled.")
        );
        assert_eq!(t.run(&["AUTH", "secret"]), ok());
        assert_eq!(t.run(&["PING"]), Frame::simple("PONG"));
        // A wrong password later does not log the connection out.
        t.run(&["AUTH", "nope"]);
        assert_eq!(t.run(&["PING"]), Frame::simple("PONG"));
        assert_eq!(t.run(&["RESET"]), Frame::simple("RESET"));
        assert_eq!(t.run(&["PING"]), error("NOAUTH Authentication required."));
        assert!(matches!(
            t.run(&["HELLO", "3", "AUTH", "default", "secret"]),
            Frame::Map(_)
        ));
        assert_eq!(t.run(&["PING"]), Frame::simple("PONG"));
    }

    #[test]
    fn select_bounds() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["SELECT", "3"]), ok());
        assert_eq!(t.session.db, 3);
        assert_eq!(
            t.run(&["SELECT", "16"]),
            error("ERR DB index is out of range")
        );
        assert_eq!(
            t.run(&["SELECT", "-1"]),
            error("ERR DB index is out of range")
        );
        assert_eq!(
            t.run(&["SELECT", "4294967296"]),
            error("ERR value is out of range, value must between -2147483648 and 2147483647")
        );
        assert_eq!(
            t.run(&["SELECT", "x"]),
            error("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn quit_and_reset() {
        let mut t = TestEngine::new();
        t.run(&["MULTI"]);
        assert_eq!(t.run(&["QUIT"]), ok());
        assert!(t.session.close_after_reply);
        let mut t = TestEngine::new();
        t.run(&["SELECT", "2"]);
        t.run(&["HELLO", "3", "SETNAME", "n"]);
        t.run(&["CLIENT", "NO-TOUCH", "ON"]);
        t.run(&["CLIENT", "NO-EVICT", "ON"]);
        t.run(&["WATCH", "k"]);
        t.run(&["MULTI"]);
        assert_eq!(t.run(&["RESET"]), Frame::simple("RESET"));
        assert_eq!(t.session.db, 0);
        assert_eq!(t.session.proto, Protocol::Resp2);
        assert!(t.session.multi.is_none() && t.session.watched.is_empty());
        assert!(!t.session.no_touch && !t.session.no_evict);
        assert_eq!(t.run(&["CLIENT", "GETNAME"]), Frame::Null);
        assert_eq!(t.run(&["EXEC"]), error("ERR EXEC without MULTI"));
    }

    #[test]
    fn client_name_and_id() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CLIENT", "ID"]), int(t.session.id() as i64));
        assert_eq!(t.run(&["CLIENT", "GETNAME"]), Frame::Null);
        assert_eq!(t.run(&["CLIENT", "SETNAME", "conn-1"]), ok());
        assert_eq!(t.run(&["CLIENT", "GETNAME"]), bulk("conn-1"));
        assert_eq!(
            t.run(&["CLIENT", "SETNAME", "a\nb"]),
            error("ERR Client names cannot contain spaces, newlines or special characters.")
        );
        assert_eq!(t.run(&["CLIENT", "SETNAME", ""]), ok());
        assert_eq!(t.run(&["CLIENT", "GETNAME"]), Frame::Null);
        assert_eq!(
            t.run(&["CLIENT", "NOPE"]),
            error("ERR unknown subcommand 'NOPE'. Try CLIENT HELP.")
        );
        assert_eq!(
            t.run(&["CLIENT"]),
            error("ERR wrong number of arguments for 'client' command")
        );
        assert!(matches!(t.run(&["CLIENT", "HELP"]), Frame::Array(l) if l.len() > 10));
    }

    #[test]
    fn client_list_fields() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        t.run_as(&mut other, &["SELECT", "5"]);
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["SET", "a", "1"]);
        t.run_as(&mut other, &["GET", "a"]);
        t.run(&["CLIENT", "SETINFO", "LIB-NAME", "keel-test"]);
        t.clock.advance(3000);
        let list = text(t.run(&["CLIENT", "LIST"]));
        let lines: Vec<&str> = list.lines().collect();
        assert_eq!(lines.len(), 2);
        let me = lines[0];
        assert_eq!(field(me, "id"), t.session.id().to_string());
        assert_eq!(field(me, "cmd"), "client|list");
        assert_eq!(field(me, "lib-name"), "keel-test");
        assert_eq!(field(me, "flags"), "N");
        assert_eq!(field(me, "multi"), "-1");
        assert_eq!(field(me, "age"), "3");
        assert_eq!(field(me, "idle"), "0");
        let them = lines[1];
        assert_eq!(field(them, "db"), "5");
        assert_eq!(field(them, "flags"), "x");
        assert_eq!(field(them, "multi"), "2");
        assert_eq!(field(them, "idle"), "3");
        assert_eq!(field(them, "cmd"), "multi");
        let names: Vec<&str> = me
            .split(' ')
            .map(|kv| kv.split('=').next().unwrap_or(""))
            .collect();
        assert_eq!(names.first(), Some(&"id"));
        assert_eq!(names.last(), Some(&"lib-ver"));
        let only_other = text(t.run(&["CLIENT", "LIST", "ID", &other.id().to_string(), "999"]));
        assert_eq!(only_other.lines().count(), 1);
        assert_eq!(text(t.run(&["CLIENT", "LIST", "TYPE", "pubsub"])), "");
        assert_eq!(
            text(t.run(&["CLIENT", "LIST", "TYPE", "normal"]))
                .lines()
                .count(),
            2
        );
        assert_eq!(
            t.run(&["CLIENT", "LIST", "TYPE", "x"]),
            error("ERR Unknown client type 'x'")
        );
        // A subscribed client is of type pubsub, no longer normal.
        let mut sub = t.other_session();
        t.run_as(&mut sub, &["SUBSCRIBE", "ch"]);
        let pubsub = text(t.run(&["CLIENT", "LIST", "TYPE", "pubsub"]));
        assert_eq!(pubsub.lines().count(), 1);
        assert_eq!(field(&pubsub, "id"), sub.id().to_string());
        assert_eq!(
            text(t.run(&["CLIENT", "LIST", "TYPE", "normal"]))
                .lines()
                .count(),
            2
        );
        assert_eq!(text(t.run(&["CLIENT", "LIST", "TYPE", "replica"])), "");
        assert_eq!(
            t.run(&["CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "yes"]),
            int(1)
        );
        assert!(sub.handle.is_killed());
        t.engine.disconnect(&mut sub);
        assert_eq!(
            t.run(&["CLIENT", "LIST", "ID", "x"]),
            error("ERR Invalid client ID")
        );
        assert_eq!(t.run(&["CLIENT", "LIST", "ID"]), error("ERR syntax error"));
        t.run(&["CLIENT", "NO-EVICT", "on"]);
        t.run(&["CLIENT", "NO-TOUCH", "on"]);
        assert!(t.session.no_touch);
        let info = text(t.run(&["CLIENT", "INFO"]));
        assert_eq!(field(&info, "flags"), "eT");
        // The caller's own arguments; no socket, no buffers in a test engine.
        assert_eq!(field(&info, "argv-mem"), "10");
        assert_eq!(field(&info, "fd"), "-1");
        assert_eq!(field(&info, "qbuf"), "0");
        assert_eq!(field(them, "argv-mem"), "0");
        assert_eq!(field(&info, "cmd"), "client|info");
        assert_eq!(
            t.run(&["CLIENT", "NO-TOUCH", "maybe"]),
            error("ERR syntax error")
        );
    }

    #[test]
    fn client_info_is_verbatim() {
        let mut t = TestEngine::new();
        assert!(matches!(
            t.run(&["CLIENT", "INFO"]),
            Frame::Verbatim("txt", _)
        ));
    }

    #[test]
    fn client_kill_forms() {
        let mut t = TestEngine::new();
        let mut other = t.other_session();
        let other_id = other.id().to_string();
        assert_eq!(
            t.run(&["CLIENT", "KILL", "1.2.3.4:5"]),
            error("ERR No such client")
        );
        assert_eq!(t.run(&["CLIENT", "KILL", "ID", "999"]), int(0));
        assert_eq!(
            t.run(&["CLIENT", "KILL", "ID", "x"]),
            error("ERR client-id should be greater than 0")
        );
        assert_eq!(
            t.run(&["CLIENT", "KILL", "USER", "bob"]),
            error("ERR No such user 'bob'")
        );
        assert_eq!(
            t.run(&["CLIENT", "KILL", "SKIPME", "maybe"]),
            error("ERR syntax error")
        );
        assert_eq!(
            t.run(&["CLIENT", "KILL", "ID", "1", "X"]),
            error("ERR syntax error")
        );
        // SKIPME yes by default: only the other client goes.
        assert_eq!(
            t.run(&["CLIENT", "KILL", "TYPE", "normal", "USER", "default"]),
            int(1)
        );
        assert!(other.handle.is_killed());
        assert!(!t.session.close_after_reply);
        let mut third = t.other_session();
        assert_eq!(
            t.run_as(
                &mut third,
                &["CLIENT", "KILL", "ADDR", "127.0.0.1:2", "ID", &other_id]
            ),
            int(1)
        );
        let my_id = t.session.id().to_string();
        assert_eq!(t.run(&["CLIENT", "KILL", "ID", &my_id]), int(0));
        assert_eq!(
            t.run(&["CLIENT", "KILL", "ID", &my_id, "SKIPME", "no"]),
            int(1)
        );
        assert!(t.session.close_after_reply);
        assert!(!t.session.handle.is_killed());
        t.engine.disconnect(&mut other);
    }

    #[test]
    fn client_setinfo() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CLIENT", "SETINFO", "lib-ver", "1.2"]), ok());
        assert_eq!(
            t.run(&["CLIENT", "SETINFO", "lib-name", "a b"]),
            error("ERR lib-name cannot contain spaces, newlines or special characters.")
        );
        assert_eq!(
            t.run(&["CLIENT", "SETINFO", "color", "red"]),
            error("ERR Unrecognized option 'color'")
        );
        let info = text(t.run(&["CLIENT", "INFO"]));
        assert_eq!(field(&info, "lib-ver"), "1.2");
    }
}
