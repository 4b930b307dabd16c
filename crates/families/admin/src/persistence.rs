//! SAVE, BGSAVE, BGREWRITEAOF: the snapshot commands. Each locks every shard
//! (`ALL_SHARDS`) for its flip; SAVE also writes the whole image under those
//! locks, as Redis's SAVE blocks the server. See `keel_engine::persistence`.

use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::persistence::snapshot::{self, JobKind, Locks};
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use std::sync::atomic::Ordering;

pub static COMMANDS: &[&CommandSpec] = &[&SAVE, &BGSAVE, &BGREWRITEAOF];

const FLAGS: Flags = Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::ALL_SHARDS);

pub(crate) const SAVE: CommandSpec = CommandSpec {
    name: "SAVE",
    group: Group::Server,
    arity: 1,
    flags: FLAGS.union(Flags::NO_MULTI),
    keys: Keys::None,
    summary: "Synchronously saves the database(s) to disk.",
    since: "1.0.0",
    complexity: "O(N) where N is the total number of keys in all databases",
    subcommands: &[],
    run: save,
};

fn save(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if ctx.engine.persist.job_running(JobKind::Bgsave) {
        return Err(CmdError::err("Background save already in progress"));
    }
    if ctx.engine.persist.any_job() {
        // A rewrite's snapshot holds the tables' copy-on-write state; SAVE
        // waits for nothing and Redis would save beside its child, so the
        // closest is to ask again.
        return Err(CmdError::err(
            "Background append only file rewriting in progress, SAVE can't run now",
        ));
    }
    match snapshot::save_foreground(ctx) {
        Ok(()) => Ok(Frame::ok()),
        Err(_) => Err(CmdError::Other("ERR".into())),
    }
}

pub(crate) const BGSAVE: CommandSpec = CommandSpec {
    name: "BGSAVE",
    group: Group::Server,
    arity: -1,
    flags: FLAGS,
    keys: Keys::None,
    summary: "Asynchronously saves the database(s) to disk.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: bgsave,
};

fn bgsave(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let mut schedule = false;
    match args.rest() {
        [] => {}
        [a] if is(a, "SCHEDULE") => schedule = true,
        _ => return Err(CmdError::Syntax),
    }
    let p = &ctx.engine.persist;
    if p.job_running(JobKind::Bgsave) {
        return Err(CmdError::err("Background save already in progress"));
    }
    if p.any_job() {
        if schedule {
            p.bgsave_scheduled.store(true, Ordering::Relaxed);
            return Ok(Frame::simple("Background saving scheduled"));
        }
        return Err(CmdError::err(
            "Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE \
             in order to schedule a BGSAVE whenever possible.",
        ));
    }
    match snapshot::start_bgsave(ctx.engine, Locks::Held(ctx)) {
        Ok(()) => Ok(Frame::simple("Background saving started")),
        Err(_) => Err(CmdError::Other("ERR".into())),
    }
}

pub(crate) const BGREWRITEAOF: CommandSpec = CommandSpec {
    name: "BGREWRITEAOF",
    group: Group::Server,
    arity: 1,
    flags: FLAGS,
    keys: Keys::None,
    summary: "Asynchronously rewrites the append-only file to disk.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: bgrewriteaof,
};

fn bgrewriteaof(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let p = &ctx.engine.persist;
    if p.job_running(JobKind::Rewrite) {
        return Err(CmdError::err(
            "Background append only file rewriting already in progress",
        ));
    }
    if p.any_job() {
        p.rewrite_scheduled.store(true, Ordering::Relaxed);
        return Ok(Frame::simple(
            "Background append only file rewriting scheduled",
        ));
    }
    match snapshot::start_rewrite(ctx.engine, Locks::Held(ctx)) {
        Ok(()) => Ok(Frame::simple(
            "Background append only file rewriting started",
        )),
        Err(_) => Err(CmdError::err(
            "Can't execute an AOF background rewriting. Please check the server logs for more \
             information.",
        )),
    }
}
