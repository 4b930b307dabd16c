//! Sorted sets: ZADD, ZRANGE and the rest of the sorted-set commands.

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
