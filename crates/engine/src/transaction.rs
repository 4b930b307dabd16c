//! A transaction as the kernel ends it or refuses a command in it: Redis's
//! rejectCommand. A refusal while MULTI queues makes EXEC abort later; a
//! refused EXEC discards the transaction with EXECABORT naming the reason.

use crate::error::CmdError;
use crate::kernel::{CommandSpec, Engine};
use crate::session::Session;
use std::sync::atomic::Ordering;

/// Leave MULTI and forget the watched keys (EXEC, DISCARD, a refused EXEC).
pub fn end(engine: &Engine, session: &mut Session) {
    session.multi = None;
    session.multi_error = false;
    session.handle.in_multi.store(false, Ordering::Relaxed);
    session.handle.multi_queued.store(0, Ordering::Relaxed);
    engine.watches.unwatch_all(session);
}

/// Whether running `spec` now writes: a write command, or an EXEC whose
/// queue holds one (what refusals of writes turn down).
pub(crate) fn writes(engine: &Engine, session: &Session, spec: &CommandSpec) -> bool {
    use crate::declare::Flags;
    spec.flags.contains(Flags::WRITE)
        || (spec.name == "EXEC"
            && session.multi.as_ref().is_some_and(|queue| {
                queue.iter().any(|argv| {
                    engine
                        .resolve(argv)
                        .is_ok_and(|id| engine.commands.specs[id].flags.contains(Flags::WRITE))
                })
            }))
}

/// The error for refusing `spec` with `text`, with what it does to the
/// session's transaction.
pub(crate) fn refuse(
    engine: &Engine,
    session: &mut Session,
    spec: &CommandSpec,
    text: &str,
) -> CmdError {
    if session.multi.is_none() {
        return CmdError::msg(text.to_string());
    }
    if spec.name != "EXEC" {
        session.multi_error = true;
        return CmdError::msg(text.to_string());
    }
    end(engine, session);
    CmdError::msg(format!(
        "EXECABORT Transaction discarded because of: {text}"
    ))
}
