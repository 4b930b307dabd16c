//! Generic key commands: DEL, EXISTS, EXPIRE and TTL families, KEYS, SCAN, RENAME, COPY, MOVE, OBJECT ...

use crate::spec::CommandSpec;

pub(crate) static COMMANDS: &[&CommandSpec] = &[];
