//! Hashes: HSET, HGET and the rest of the hash commands.

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
