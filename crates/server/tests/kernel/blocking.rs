//! The kernel's `blocking` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::Bytes;
use hashbrown::HashMap;
use keel_engine::blocking::*;
use keel_engine::ctx::{Ctx, Guards};
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::session::{ClientHandle, Session};
use keel_engine::spec::{Flags, Keys};
use keel_resp::{Frame, Protocol};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

#[cfg(test)]
mod tests {
    use super::parse_timeout;
    use bytes::Bytes;
    use keel_engine::args::Args;
    use keel_engine::ctx::Ctx;
    use keel_engine::error::CmdError;
    use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
    use keel_engine::table::CommandTable;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;
    use std::time::Duration;

    /// A blocking command over strings, so the machinery is tested on its own:
    /// `BTAKE key [key ...] timeout` waits for one of the keys to hold a
    /// string, deletes it and replies `[key, value]`.
    const BTAKE: CommandSpec = CommandSpec {
        name: "BTAKE",
        group: Group::String,
        arity: -3,
        flags: Flags::WRITE.union(Flags::BLOCKING),
        keys: Keys::range(1, -2, 1),
        summary: "Test command: blocking GETDEL.",
        since: "0.0.0",
        complexity: "O(1)",
        subcommands: &[],
        run: btake,
    };

    fn btake(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
        let argv = args.argv();
        let keys = &argv[1..argv.len() - 1];
        let timeout = parse_timeout(&argv[argv.len() - 1])?;
        ctx.block_or_run(argv, keys, timeout, Frame::NullArray, |ctx| {
            let now = ctx.now_ms();
            for k in keys {
                let table = ctx.table(k)?;
                let Some(e) = table.get(k, now) else { continue };
                let v =
                    Bytes::copy_from_slice(e.value.as_str().ok_or(CmdError::WrongType)?.as_slice());
                table.remove(k, now);
                ctx.dirty(1);
                let items = vec![Frame::Bulk(k.clone()), Frame::Bulk(v)];
                return Ok(Some(if ctx.resp3() {
                    Frame::Set(items)
                } else {
                    Frame::Array(items)
                }));
            }
            Ok(None)
        })
    }

    fn engine() -> TestEngine {
        let mut t = TestEngine::new();
        static EXTRA: &[&CommandSpec] = &[&BTAKE];
        t.engine.commands = CommandTable::new(&[
            EXTRA,
            keel_strings::strings::COMMANDS,
            keel_admin::transactions::COMMANDS,
            keel_keyspace::keys::COMMANDS,
            keel_admin::connection::COMMANDS,
        ]);
        t
    }

    fn pair(k: &str, v: &str) -> Frame {
        Frame::Array(vec![bulk(k), bulk(v)])
    }

    #[test]
    fn data_present_answers_at_once() {
        let mut t = engine();
        t.run(&["SET", "k", "v"]);
        assert_eq!(t.run(&["BTAKE", "k", "0"]), pair("k", "v"));
        assert!(t.session.blocked.is_none());
        assert_eq!(t.run(&["GET", "k"]), Frame::Null);
    }

    #[test]
    fn empty_key_registers_and_a_write_serves() {
        let mut t = engine();
        t.run(&["BTAKE", "a", "k", "0"]);
        assert!(t.session.blocked.is_some());
        assert_eq!(t.engine.blocking.blocked_clients(), 1);
        assert_eq!(t.engine.block_reply(&mut t.session), None);
        let mut other = t.other_session();
        // The writer's own reply is unaffected.
        assert_eq!(t.run_as(&mut other, &["SET", "k", "v"]), ok());
        assert_eq!(t.engine.block_reply(&mut t.session), Some(pair("k", "v")));
        assert!(t.session.blocked.is_none());
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
        assert_eq!(t.run_as(&mut other, &["EXISTS", "k"]), int(0));
    }

    #[test]
    fn waiters_are_served_first_blocked_first_served() {
        let mut t = engine();
        let mut s: Vec<_> = (0..3).map(|_| t.other_session()).collect();
        for sess in s.iter_mut() {
            t.run_as(sess, &["BTAKE", "k", "0"]);
            assert!(sess.blocked.is_some());
        }
        for (i, v) in ["one", "two", "three"].iter().enumerate() {
            t.run(&["SET", "k", v]);
            assert_eq!(t.engine.block_reply(&mut s[i]), Some(pair("k", v)));
            for later in s.iter_mut().skip(i + 1) {
                assert_eq!(t.engine.block_reply(later), None);
            }
        }
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
    }

    #[test]
    fn several_keys_in_one_database_only() {
        let mut t = engine();
        t.run(&["BTAKE", "a", "b", "0"]);
        let mut other = t.other_session();
        t.run_as(&mut other, &["SELECT", "1"]);
        t.run_as(&mut other, &["SET", "b", "elsewhere"]);
        assert_eq!(t.engine.block_reply(&mut t.session), None);
        assert_eq!(t.run_as(&mut other, &["GET", "b"]), bulk("elsewhere"));
        t.run_as(&mut other, &["SELECT", "0"]);
        t.run_as(&mut other, &["SET", "b", "here"]);
        assert_eq!(
            t.engine.block_reply(&mut t.session),
            Some(pair("b", "here"))
        );
    }

    #[test]
    fn inside_multi_never_blocks() {
        let mut t = engine();
        t.run(&["MULTI"]);
        assert_eq!(t.run(&["BTAKE", "k", "0"]), Frame::simple("QUEUED"));
        assert_eq!(t.run(&["EXEC"]), Frame::Array(vec![Frame::NullArray]));
        assert!(t.session.blocked.is_none());
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
    }

    #[test]
    fn a_write_inside_exec_serves_after_it() {
        let mut t = engine();
        t.run(&["BTAKE", "k", "0"]);
        let mut other = t.other_session();
        t.run_as(&mut other, &["MULTI"]);
        t.run_as(&mut other, &["SET", "k", "v"]);
        assert_eq!(t.run_as(&mut other, &["EXEC"]), Frame::Array(vec![ok()]));
        assert_eq!(t.engine.block_reply(&mut t.session), Some(pair("k", "v")));
    }

    #[test]
    fn giving_up_removes_the_waiter_and_leaves_the_data() {
        let mut t = engine();
        t.run(&["BTAKE", "k", "0.5"]);
        let timeout = t.session.blocked.as_ref().and_then(|b| b.timeout);
        assert_eq!(timeout, Some(Duration::from_millis(500)));
        t.engine.cancel_block(&t.session);
        assert_eq!(t.engine.block_reply(&mut t.session), Some(Frame::NullArray));
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
        t.run(&["SET", "k", "v"]);
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
    }

    #[test]
    fn a_served_reply_wins_over_a_late_timeout() {
        let mut t = engine();
        t.run(&["BTAKE", "k", "1"]);
        let mut other = t.other_session();
        t.run_as(&mut other, &["SET", "k", "v"]);
        t.engine.cancel_block(&t.session);
        assert_eq!(t.engine.block_reply(&mut t.session), Some(pair("k", "v")));
    }

    #[test]
    fn disconnect_while_blocked_forgets_the_client() {
        let mut t = engine();
        let mut gone = t.other_session();
        t.run_as(&mut gone, &["BTAKE", "k", "0"]);
        t.engine.disconnect(&mut gone);
        assert_eq!(t.engine.blocking.blocked_clients(), 0);
        t.run(&["SET", "k", "v"]);
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
    }

    #[test]
    fn the_reply_uses_the_blocked_clients_protocol() {
        let mut t = engine();
        t.session.set_proto(keel_resp::Protocol::Resp3);
        t.run(&["BTAKE", "k", "0"]);
        let mut other = t.other_session();
        t.run_as(&mut other, &["SET", "k", "v"]);
        assert_eq!(
            t.engine.block_reply(&mut t.session),
            Some(Frame::Set(vec![bulk("k"), bulk("v")]))
        );
    }

    #[test]
    fn timeouts_parse_like_redis() {
        assert_eq!(parse_timeout(b"0"), Ok(None));
        assert_eq!(parse_timeout(b"0.1"), Ok(Some(Duration::from_millis(100))));
        assert_eq!(parse_timeout(b"0.0001"), Ok(Some(Duration::from_millis(1))));
        assert_eq!(parse_timeout(b"2"), Ok(Some(Duration::from_secs(2))));
        assert_eq!(parse_timeout(b"1e3"), Ok(Some(Duration::from_secs(1000))));
        // Rounded up to whole milliseconds before the sign check, as Redis does.
        assert_eq!(parse_timeout(b"-0.0001"), Ok(None));
        let neg = Err(CmdError::err("timeout is negative"));
        assert_eq!(parse_timeout(b"-1"), neg);
        assert_eq!(parse_timeout(b"-inf"), neg);
        // Too large for a 64-bit count of milliseconds: Redis's conversion
        // wraps to a negative number.
        assert_eq!(parse_timeout(b"inf"), neg);
        assert_eq!(parse_timeout(b"1e300"), neg);
        assert_eq!(parse_timeout(b"1e16"), neg);
        assert!(matches!(parse_timeout(b"9e15"), Ok(Some(_))));
        let nan = Err(CmdError::err("timeout is not a float or out of range"));
        assert_eq!(parse_timeout(b"abc"), nan);
        assert_eq!(parse_timeout(b"nan"), nan);
        assert_eq!(parse_timeout(b""), nan);
        assert_eq!(parse_timeout(b" 1"), nan);
    }
}
