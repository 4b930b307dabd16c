//! Commands that only group subcommands (CLIENT, CONFIG, SLOWLOG, ...): the
//! container's own handler and the reply of their HELP subcommands.

use crate::args::Args;
use crate::error::CmdError;
use crate::kernel::Ctx;
use keel_resp::Frame;

/// The handler of a command that only groups subcommands (CLIENT, CONFIG,
/// SLOWLOG, ...). Never reached with a subcommand: the executor dispatches to it.
pub fn container(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = args
        .argv()
        .first()
        .map(|a| String::from_utf8_lossy(a).to_ascii_lowercase())
        .unwrap_or_default();
    Err(CmdError::WrongArity(name))
}

/// Help lines as simple strings, the way Redis's HELP subcommands reply.
pub fn help(lines: &[&'static str]) -> Frame {
    Frame::Array(lines.iter().map(|l| Frame::simple(l)).collect())
}
