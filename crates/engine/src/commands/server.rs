//! Server commands: INFO, DBSIZE, FLUSHDB, FLUSHALL, CONFIG, TIME, LASTSAVE, DEBUG,
//! MEMORY, SHUTDOWN, SWAPDB.

use crate::args::{is, Args};
use crate::ctx::Ctx;
use crate::error::CmdError;
use crate::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;

pub(crate) static COMMANDS: &[&CommandSpec] = &[&DBSIZE, &FLUSHDB, &FLUSHALL];

pub(crate) const DBSIZE: CommandSpec = CommandSpec {
    name: "DBSIZE",
    group: Group::Server,
    arity: 1,
    flags: Flags::READONLY.union(Flags::FAST).union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Returns the number of keys in the database.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: dbsize,
};

fn dbsize(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let db = ctx.db();
    let mut n = 0usize;
    ctx.for_each_shard(|s| n += s.db_ref(db).len());
    Ok(Frame::Integer(n as i64))
}

/// Parse the optional ASYNC|SYNC of FLUSHDB/FLUSHALL. Both free memory before
/// replying in Keel, which satisfies either promise.
fn flush_mode(args: &mut Args<'_>) -> Result<(), CmdError> {
    match args.next_opt() {
        None => Ok(()),
        Some(a) if is(a, "ASYNC") || is(a, "SYNC") => args.finish(),
        Some(_) => Err(CmdError::Syntax),
    }
}

pub(crate) const FLUSHDB: CommandSpec = CommandSpec {
    name: "FLUSHDB",
    group: Group::Server,
    arity: -1,
    flags: Flags::WRITE.union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Remove all keys from the current database.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of keys in the selected database",
    subcommands: &[],
    run: flushdb,
};

fn flushdb(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    flush_mode(args)?;
    let db = ctx.db();
    let mut n = 0;
    ctx.for_each_shard(|s| n += s.db(db).clear());
    ctx.engine.watches.touch_db(Some(db));
    ctx.dirty(n as u64 + 1);
    Ok(Frame::ok())
}

pub(crate) const FLUSHALL: CommandSpec = CommandSpec {
    name: "FLUSHALL",
    group: Group::Server,
    arity: -1,
    flags: Flags::WRITE.union(Flags::ALL_SHARDS),
    keys: Keys::None,
    summary: "Removes all keys from all databases.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of keys in all databases",
    subcommands: &[],
    run: flushall,
};

fn flushall(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    flush_mode(args)?;
    let mut n = 0;
    ctx.for_each_shard(|s| {
        for db in 0..s.databases() {
            n += s.db(db).clear();
        }
    });
    ctx.engine.watches.touch_db(None);
    ctx.dirty(n as u64 + 1);
    Ok(Frame::ok())
}
