//! The kernel's `exec` with every family's commands: the module's own
//! imports, its public items, then its tests as they stood beside it.

#![allow(unused_imports)]

use bytes::{Bytes, BytesMut};
use keel_engine::args::Args;
use keel_engine::clock::Tick;
use keel_engine::ctx::{Ctx, Guards, Upgrade};
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::exec::*;
use keel_engine::session::Session;
use keel_engine::spec::{Flags, Keys};
use keel_engine::stats::bump;
use keel_resp::Frame;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

#[cfg(test)]
mod tests {
    use keel_engine::args::Args;
    use keel_engine::ctx::Ctx;
    use keel_engine::error::CmdError;
    use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
    use keel_engine::table::CommandTable;
    use keel_engine::testing::*;
    use keel_resp::Frame;
    use keel_server::testing::Assembled;

    const BOOM: CommandSpec = CommandSpec {
        name: "BOOM",
        group: Group::Server,
        arity: 2,
        flags: Flags::WRITE,
        keys: Keys::single(1),
        summary: "Panics while holding a shard lock.",
        since: "0.0.0",
        complexity: "O(1)",
        subcommands: &[],
        run: boom,
    };

    fn boom(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
        let key = args.next_key()?;
        let _table = ctx.table(key)?;
        let empty: &[u8] = &[];
        Ok(Frame::Integer(i64::from(empty[key.len()])))
    }

    /// A panicking handler costs one error reply; the lock it held is released
    /// and the engine keeps serving, including the same key.
    #[test]
    fn handler_panic_is_contained() {
        let mut t = TestEngine::new();
        static EXTRA: &[&CommandSpec] = &[&BOOM];
        let mut groups: Vec<&'static [&'static CommandSpec]> = vec![EXTRA];
        groups.extend([keel_strings::strings::COMMANDS]);
        t.engine.commands = CommandTable::new(&groups);
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let reply = t.run(&["BOOM", "k"]);
        std::panic::set_hook(prev);
        assert_eq!(
            reply,
            error("ERR internal error while running 'boom'; the command was aborted")
        );
        assert_eq!(t.run(&["SET", "k", "v"]), ok());
        assert_eq!(t.run(&["GET", "k"]), bulk("v"));
    }

    #[test]
    fn unknown_command_lists_args_like_redis() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&["NOPE", "a", "b"]),
            error("ERR unknown command 'NOPE', with args beginning with: 'a' 'b' ")
        );
        assert_eq!(
            t.run(&["NOPE"]),
            error("ERR unknown command 'NOPE', with args beginning with: ")
        );
    }

    /// Read-only commands of one key hold their shard shared: they run while
    /// another reader holds it, and a write waits for it.
    #[test]
    fn reads_share_a_shard_and_writes_wait() {
        let mut t = TestEngine::new();
        t.run(&["SET", "k", "v"]);
        t.run(&["HSET", "h", "f", "v"]);
        let ks = &t.engine.keyspace;
        let held =
            |key: &[u8], argv: &[&str]| t.finishes_while_held(ks.read(ks.shard_of(key)), argv);
        assert!(held(b"k", &["GET", "k"]), "GET runs beside another reader");
        assert!(held(b"h", &["HGETALL", "h"]), "HGETALL too");
        assert!(!held(b"k", &["SET", "k", "w"]), "SET waits for the readers");
        assert_eq!(t.run(&["GET", "k"]), bulk("w"));
    }

    /// A read that finds its key expired runs again holding the shard
    /// exclusively: the key is removed and counted once, the reply is the
    /// missing key's, and the command keeps holding its shard shared after.
    #[test]
    fn a_shared_read_of_an_expired_key_removes_it_once() {
        let (mut t, rec) = TestEngine::recording(1_000_000);
        t.run(&["SET", "k", "v", "PX", "10"]);
        t.clock.advance(20);
        assert_eq!(t.run(&["GET", "k"]), Frame::Null);
        let expired = &t.engine.stats.expired_keys;
        assert_eq!(expired.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(
            rec.commands().last(),
            Some(&vec!["DEL".to_string(), "k".to_string()])
        );
        let get = t.engine.commands.lookup(b"get").expect("GET");
        assert!(t.engine.commands.runs_shared(get));
        assert_eq!(t.run(&["DBSIZE"]), Frame::Integer(0));
    }

    /// The hot read commands stay on the shared path: none of their handlers
    /// asks for its table to change, which would send it back to the
    /// exclusive lock for good.
    #[test]
    fn hot_reads_stay_shared() {
        let mut t = TestEngine::new();
        let setup: &[&[&str]] = &[
            &["SET", "s", "12345"],
            &["HSET", "h", "a", "1", "b", "2"],
            &["RPUSH", "l", "a", "b", "c"],
            &["SADD", "set", "a", "b"],
            &["ZADD", "z", "1", "a", "2", "b"],
            &["IDX.CREATE", "ix"],
            &["IDX.ADD", "ix", "1", "color", "red"],
            &["BF.ADD", "bf", "a"],
            &["PFADD", "hll", "a"],
        ];
        for argv in setup {
            t.run(argv);
        }
        let reads: &[&[&str]] = &[
            &["GET", "s"],
            &["GET", "missing"],
            &["STRLEN", "s"],
            &["GETRANGE", "s", "0", "2"],
            &["HGET", "h", "a"],
            &["HGETALL", "h"],
            &["HMGET", "h", "a", "b"],
            &["HLEN", "h"],
            &["LRANGE", "l", "0", "9"],
            &["LINDEX", "l", "1"],
            &["LLEN", "l"],
            &["SMEMBERS", "set"],
            &["SISMEMBER", "set", "a"],
            &["SCARD", "set"],
            &["ZRANGEBYSCORE", "z", "0", "9"],
            &["ZRANGE", "z", "0", "-1"],
            &["ZSCORE", "z", "a"],
            &["ZCARD", "z"],
            &["IDX.SEARCH", "ix", "color", "red"],
            &["BF.EXISTS", "bf", "a"],
        ];
        let mut exclusive = Vec::new();
        for argv in reads {
            t.run(argv);
            let id = t.engine.resolve(
                &argv
                    .iter()
                    .map(|a| bytes::Bytes::copy_from_slice(a.as_bytes()))
                    .collect::<Vec<_>>(),
            );
            let id = id.expect("a known command");
            if !t.engine.commands.runs_shared(id) {
                exclusive.push(argv[0]);
            }
        }
        assert!(exclusive.is_empty(), "run exclusively: {exclusive:?}");
    }
}
