//! COMMAND and its subcommands: the command table as clients see it.

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
