//! Bitmap commands on strings: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD.

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
