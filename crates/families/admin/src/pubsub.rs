//! Pub/sub commands: SUBSCRIBE and friends, PUBLISH, SPUBLISH and PUBSUB's
//! introspection. The registry and delivery live in `keel_engine::pubsub`.

use keel_engine::args::Args;
use keel_engine::ctx::Ctx;
use keel_engine::engine::Engine;
use keel_engine::error::CmdError;
use keel_engine::pubsub::Kind;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;

const SUB_FLAGS: Flags = Flags::PUBSUB
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);
const PUB_FLAGS: Flags = Flags::PUBSUB
    .union(Flags::LOADING)
    .union(Flags::STALE)
    .union(Flags::FAST);
const INTRO_FLAGS: Flags = Flags::PUBSUB.union(Flags::LOADING).union(Flags::STALE);

const fn spec(
    name: &'static str,
    keys: Keys,
    arity: i32,
    flags: Flags,
    [summary, since, complexity]: [&'static str; 3],
    run: keel_engine::spec::Handler,
) -> CommandSpec {
    CommandSpec {
        name,
        group: Group::Pubsub,
        arity,
        flags,
        keys,
        summary,
        since,
        complexity,
        subcommands: &[],
        run,
    }
}

pub(crate) const SUBSCRIBE: CommandSpec = spec(
    "SUBSCRIBE",
    Keys::None,
    -2,
    SUB_FLAGS,
    [
        "Listens for messages published to channels.",
        "2.0.0",
        "O(N) where N is the number of channels to subscribe to.",
    ],
    subscribe,
);
pub(crate) const UNSUBSCRIBE: CommandSpec = spec(
    "UNSUBSCRIBE",
    Keys::None,
    -1,
    SUB_FLAGS,
    [
        "Stops listening to messages posted to channels.",
        "2.0.0",
        "O(N) where N is the number of channels to unsubscribe.",
    ],
    unsubscribe,
);
pub(crate) const PSUBSCRIBE: CommandSpec = spec(
    "PSUBSCRIBE",
    Keys::None,
    -2,
    SUB_FLAGS,
    [
        "Listens for messages published to channels that match one or more patterns.",
        "2.0.0",
        "O(N) where N is the number of patterns to subscribe to.",
    ],
    psubscribe,
);
pub(crate) const PUNSUBSCRIBE: CommandSpec = spec(
    "PUNSUBSCRIBE",
    Keys::None,
    -1,
    SUB_FLAGS,
    [
        "Stops listening to messages published to channels that match one or more patterns.",
        "2.0.0",
        "O(N) where N is the number of patterns to unsubscribe.",
    ],
    punsubscribe,
);
pub(crate) const SSUBSCRIBE: CommandSpec = spec(
    "SSUBSCRIBE",
    Keys::range(1, -1, 1),
    -2,
    SUB_FLAGS,
    [
        "Listens for messages published to shard channels.",
        "7.0.0",
        "O(N) where N is the number of shard channels to subscribe to.",
    ],
    ssubscribe,
);
pub(crate) const SUNSUBSCRIBE: CommandSpec = spec(
    "SUNSUBSCRIBE",
    Keys::range(1, -1, 1),
    -1,
    SUB_FLAGS,
    [
        "Stops listening to messages posted to shard channels.",
        "7.0.0",
        "O(N) where N is the number of shard channels to unsubscribe.",
    ],
    sunsubscribe,
);
pub(crate) const PUBLISH: CommandSpec = spec(
    "PUBLISH",
    Keys::None,
    3,
    PUB_FLAGS,
    [
        "Posts a message to a channel.",
        "2.0.0",
        "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
    ],
    publish,
);
pub(crate) const SPUBLISH: CommandSpec = spec(
    "SPUBLISH",
    Keys::single(1),
    3,
    PUB_FLAGS,
    [
        "Post a message to a shard channel",
        "7.0.0",
        "O(N) where N is the number of clients subscribed to the receiving shard channel.",
    ],
    spublish,
);

pub(crate) const PUBSUB: CommandSpec = CommandSpec {
    name: "PUBSUB",
    group: Group::Pubsub,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for Pub/Sub commands.",
    since: "2.8.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &PUBSUB_CHANNELS,
        &PUBSUB_NUMSUB,
        &PUBSUB_NUMPAT,
        &PUBSUB_SHARDCHANNELS,
        &PUBSUB_SHARDNUMSUB,
        &PUBSUB_HELP,
    ],
    run: keel_engine::subcommands::container,
};

pub(crate) const PUBSUB_CHANNELS: CommandSpec = spec(
    "PUBSUB|CHANNELS",
    Keys::None,
    -2,
    INTRO_FLAGS,
    [
        "Returns the active channels.",
        "2.8.0",
        "O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
    ],
    pubsub_channels,
);
pub(crate) const PUBSUB_NUMSUB: CommandSpec = spec(
    "PUBSUB|NUMSUB",
    Keys::None,
    -2,
    INTRO_FLAGS,
    [
        "Returns a count of subscribers to channels.",
        "2.8.0",
        "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
    ],
    pubsub_numsub,
);
pub(crate) const PUBSUB_NUMPAT: CommandSpec = spec(
    "PUBSUB|NUMPAT",
    Keys::None,
    2,
    INTRO_FLAGS,
    [
        "Returns a count of unique pattern subscriptions.",
        "2.8.0",
        "O(1)",
    ],
    pubsub_numpat,
);
pub(crate) const PUBSUB_SHARDCHANNELS: CommandSpec = spec(
    "PUBSUB|SHARDCHANNELS",
    Keys::None,
    -2,
    INTRO_FLAGS,
    [
        "Returns the active shard channels.",
        "7.0.0",
        "O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
    ],
    pubsub_shardchannels,
);
pub(crate) const PUBSUB_SHARDNUMSUB: CommandSpec = spec(
    "PUBSUB|SHARDNUMSUB",
    Keys::None,
    -2,
    INTRO_FLAGS,
    [
        "Returns the count of subscribers of shard channels.",
        "7.0.0",
        "O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
    ],
    pubsub_shardnumsub,
);
pub(crate) const PUBSUB_HELP: CommandSpec = spec(
    "PUBSUB|HELP",
    Keys::None,
    2,
    Flags::LOADING.union(Flags::STALE),
    [
        "Returns helpful text about the different subcommands.",
        "6.2.0",
        "O(1)",
    ],
    pubsub_help,
);

pub static COMMANDS: &[&CommandSpec] = &[
    &SUBSCRIBE,
    &UNSUBSCRIBE,
    &PSUBSCRIBE,
    &PUNSUBSCRIBE,
    &SSUBSCRIBE,
    &SUNSUBSCRIBE,
    &PUBLISH,
    &SPUBLISH,
    &PUBSUB,
];

/// (Un)subscribe confirmations are sent even under CLIENT REPLY OFF or SKIP,
/// as Redis sends them.
fn confirmations_always_sent(ctx: &mut Ctx<'_>) {
    if ctx.session.reply_flags != 0 {
        ctx.session.reply_flags |= keel_engine::session::REPLY_PUSHED;
    }
}

fn subscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names = args.rest();
    confirmations_always_sent(ctx);
    Ok(ctx
        .engine
        .pubsub
        .subscribe(ctx.session, Kind::Channel, names))
}

fn psubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names = args.rest();
    confirmations_always_sent(ctx);
    Ok(ctx
        .engine
        .pubsub
        .subscribe(ctx.session, Kind::Pattern, names))
}

fn ssubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names = args.rest();
    confirmations_always_sent(ctx);
    Ok(ctx.engine.pubsub.subscribe(ctx.session, Kind::Shard, names))
}

fn unsubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names = args.rest();
    confirmations_always_sent(ctx);
    Ok(ctx
        .engine
        .pubsub
        .unsubscribe(ctx.session, Kind::Channel, names))
}

fn punsubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names = args.rest();
    confirmations_always_sent(ctx);
    Ok(ctx
        .engine
        .pubsub
        .unsubscribe(ctx.session, Kind::Pattern, names))
}

fn sunsubscribe(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names = args.rest();
    confirmations_always_sent(ctx);
    Ok(ctx
        .engine
        .pubsub
        .unsubscribe(ctx.session, Kind::Shard, names))
}

fn publish(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let channel = args.next_arg()?;
    let message = args.next_arg()?;
    let n = ctx.engine.pubsub.publish(Kind::Channel, channel, message);
    Ok(Frame::Integer(n))
}

fn spublish(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let channel = args.next_arg()?;
    let message = args.next_arg()?;
    let n = ctx.engine.pubsub.publish(Kind::Shard, channel, message);
    Ok(Frame::Integer(n))
}

/// CHANNELS and SHARDCHANNELS take at most one pattern.
fn channels(ctx: &mut Ctx<'_>, args: &mut Args<'_>, kind: Kind) -> Result<Frame, CmdError> {
    if args.remaining() > 1 {
        let sub = String::from_utf8_lossy(&args.argv()[1]).into_owned();
        return Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{sub}'. Try PUBSUB HELP."
        )));
    }
    let pattern = args.next_opt().map(|p| &p[..]);
    let names = ctx.engine.pubsub.channels(kind, pattern);
    Ok(Frame::Array(names.into_iter().map(Frame::Bulk).collect()))
}

fn pubsub_channels(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    channels(ctx, args, Kind::Channel)
}

fn pubsub_shardchannels(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    channels(ctx, args, Kind::Shard)
}

fn numsub(ctx: &mut Ctx<'_>, args: &mut Args<'_>, kind: Kind) -> Result<Frame, CmdError> {
    let mut out = Vec::new();
    for ch in args.rest() {
        out.push(Frame::Bulk(ch.clone()));
        out.push(Frame::Integer(ctx.engine.pubsub.numsub(kind, ch) as i64));
    }
    Ok(Frame::Array(out))
}

fn pubsub_numsub(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    numsub(ctx, args, Kind::Channel)
}

fn pubsub_shardnumsub(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    numsub(ctx, args, Kind::Shard)
}

fn pubsub_numpat(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Integer(
        ctx.engine.pubsub.active(Kind::Pattern) as i64
    ))
}

fn pubsub_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ]))
}

/// INFO stats' pub/sub lines.
pub(crate) fn info_fields(e: &Engine, out: &mut String) {
    use std::fmt::Write;
    let p = &e.pubsub;
    let _ = write!(
        out,
        "pubsub_channels:{}\r\npubsub_patterns:{}\r\npubsubshard_channels:{}\r\n",
        p.active(Kind::Channel),
        p.active(Kind::Pattern),
        p.active(Kind::Shard)
    );
}
