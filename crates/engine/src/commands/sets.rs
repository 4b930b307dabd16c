//! Sets: SADD, SINTER and the rest of the set commands.

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
