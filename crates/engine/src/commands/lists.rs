//! Lists: LPUSH, LRANGE, the blocking pops and the rest of the list commands.

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
