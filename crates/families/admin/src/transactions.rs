//! MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! Queueing happens in the executor (a session in MULTI gets `+QUEUED` for any
//! command without TX_CONTROL). EXEC declares `Keys::Queued`, so the executor
//! locks the shards of every queued command before EXEC runs; the queued
//! commands then run back to back under those locks, which is what makes the
//! transaction atomic to other clients.

use bytes::Bytes;
use keel_engine::args::Args;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[&MULTI, &EXEC, &DISCARD, &WATCH, &UNWATCH];

const TX: Flags = Flags::NOSCRIPT
    .union(Flags::LOADING)
    .union(Flags::STALE)
    .union(Flags::FAST)
    .union(Flags::ALLOW_BUSY);

pub(crate) const MULTI: CommandSpec = CommandSpec {
    name: "MULTI",
    group: Group::Transactions,
    arity: 1,
    flags: TX.union(Flags::TX_CONTROL),
    keys: Keys::None,
    summary: "Starts a transaction.",
    since: "1.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: multi,
};

fn multi(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if ctx.session.multi.is_some() {
        return Err(CmdError::err("MULTI calls can not be nested"));
    }
    ctx.session.multi = Some(Vec::new());
    ctx.session.multi_error = false;
    ctx.session.handle.in_multi.store(true, Ordering::Relaxed);
    Ok(Frame::ok())
}

/// Leave the transaction state and forget watched keys.
pub(crate) fn end_transaction(ctx: &mut Ctx<'_>) {
    keel_engine::transaction::end(ctx.engine, ctx.session);
}

pub(crate) const EXEC: CommandSpec = CommandSpec {
    name: "EXEC",
    group: Group::Transactions,
    arity: 1,
    flags: Flags::NOSCRIPT
        .union(Flags::LOADING)
        .union(Flags::STALE)
        .union(Flags::SKIP_SLOWLOG)
        .union(Flags::TX_CONTROL),
    keys: Keys::Queued,
    summary: "Executes all commands in a transaction.",
    since: "1.2.0",
    complexity: "Depends on commands in the transaction",
    subcommands: &[],
    run: exec,
};

fn exec(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let Some(queue) = ctx.session.multi.take() else {
        return Err(CmdError::err("EXEC without MULTI"));
    };
    if ctx.session.multi_error {
        end_transaction(ctx);
        return Err(CmdError::msg(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    // A watched key that was live and is now gone expired unread (a deletion
    // would have marked the session dirty already).
    let now = ctx.now_ms();
    let watched_live = std::mem::take(&mut ctx.session.watched_live);
    let mut expired = false;
    for (db, key) in &watched_live {
        expired |= !ctx.table_in(*db, key)?.contains(key, now);
    }
    if expired || ctx.session.watch_dirty.load(Ordering::SeqCst) {
        end_transaction(ctx);
        return Ok(Frame::NullArray);
    }
    end_transaction(ctx);
    let db_at_start = ctx.db();
    let effects_before = ctx.effects.len();
    ctx.log_effect(db_at_start, vec![Bytes::from_static(b"MULTI")]);
    let hidden = keel_engine::session::replies_hidden(ctx.session);
    let replies: Vec<Frame> = queue
        .iter()
        .map(|argv| {
            let reply = ctx.call(argv);
            keel_engine::session::queued_reply(ctx.session, reply)
        })
        .collect();
    if ctx.effects.len() > effects_before + 1 {
        let db = ctx.db();
        ctx.log_effect(db, vec![Bytes::from_static(b"EXEC")]);
    } else {
        ctx.effects.truncate(effects_before);
    }
    Ok(keel_engine::session::exec_reply(
        ctx.session,
        hidden,
        replies,
    ))
}

pub(crate) const DISCARD: CommandSpec = CommandSpec {
    name: "DISCARD",
    group: Group::Transactions,
    arity: 1,
    flags: TX.union(Flags::TX_CONTROL),
    keys: Keys::None,
    summary: "Discards a transaction.",
    since: "2.0.0",
    complexity: "O(N), when N is the number of queued commands",
    subcommands: &[],
    run: discard,
};

fn discard(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if ctx.session.multi.is_none() {
        return Err(CmdError::err("DISCARD without MULTI"));
    }
    end_transaction(ctx);
    Ok(Frame::ok())
}

pub(crate) const WATCH: CommandSpec = CommandSpec {
    name: "WATCH",
    group: Group::Transactions,
    arity: -2,
    flags: TX.union(Flags::TX_CONTROL),
    keys: Keys::range(1, -1, 1),
    summary: "Monitors changes to keys to determine the execution of a transaction.",
    since: "2.2.0",
    complexity: "O(1) for every key.",
    subcommands: &[],
    run: watch,
};

fn watch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if ctx.session.multi.is_some() {
        return Err(CmdError::err("WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db();
    let now = ctx.now_ms();
    for key in args.rest() {
        let live = ctx.table(key)?.contains(key, now);
        let engine = ctx.engine;
        engine.watches.watch(ctx.session, db, key, live);
    }
    Ok(Frame::ok())
}

pub(crate) const UNWATCH: CommandSpec = CommandSpec {
    name: "UNWATCH",
    group: Group::Transactions,
    arity: 1,
    flags: TX,
    keys: Keys::None,
    summary: "Forgets about watched keys of a transaction.",
    since: "2.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: unwatch,
};

fn unwatch(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let engine = ctx.engine;
    engine.watches.unwatch_all(ctx.session);
    Ok(Frame::ok())
}
