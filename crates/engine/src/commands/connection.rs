//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET, CLIENT ...

use crate::args::Args;
use crate::ctx::Ctx;
use crate::error::CmdError;
use crate::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;

pub(crate) static COMMANDS: &[&CommandSpec] = &[&PING, &ECHO];

pub(crate) const PING: CommandSpec = CommandSpec {
    name: "PING",
    group: Group::Connection,
    arity: -1,
    flags: Flags::FAST,
    keys: Keys::None,
    summary: "Returns the server's liveliness response.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: ping,
};

fn ping(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    match args.remaining() {
        0 => Ok(Frame::simple("PONG")),
        1 => Ok(Frame::Bulk(args.next_arg()?.clone())),
        _ => Err(CmdError::WrongArity("ping".into())),
    }
}

pub(crate) const ECHO: CommandSpec = CommandSpec {
    name: "ECHO",
    group: Group::Connection,
    arity: 2,
    flags: Flags::FAST,
    keys: Keys::None,
    summary: "Returns the given string.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: echo,
};

fn echo(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Bulk(args.next_arg()?.clone()))
}
