//! Redis 7's append-only file formats: commands in RESP, the multi-part manifest and its file
//! names, and how to tell an RDB base from a command base.
//!
//! Building blocks only: nothing here opens the append-only directory, fsyncs, schedules a
//! rewrite or executes a command. The byte layouts and the rules a driver follows (load order,
//! crash-safe rewrite, upgrading an old single file) are written down in `crates/persist/AOF.md`.

mod command;
mod manifest;
mod rewrite;

pub use command::{
    encode_command, encode_timestamp_annotation, Annotation, AofCommand, AofError, AofErrorKind,
    AofItem, CommandReader, DEFAULT_MAX_BULK_LEN_BYTES,
};
pub use manifest::{
    base_name, files_to_load, incr_name, load_plan, manifest_name, needs_upgrade, temp_incr_name,
    temp_manifest_name, temp_rewrite_bg_name, temp_rewrite_name, AofFile, AofFileKind, LoadFile,
    Manifest, ManifestError, ManifestErrorKind, MANIFEST_SUFFIX, TEMP_PREFIX,
};

pub use rewrite::{commands_for, function_load_commands, ITEMS_PER_COMMAND};

use crate::rdb::{RdbError, RdbErrorKind};

/// The RDB magic an append-only file starts with when it holds an RDB snapshot (an RDB base,
/// or an old-style AOF written with `aof-use-rdb-preamble yes`).
pub const RDB_MAGIC: &[u8] = b"REDIS";

/// How a base (or old single-file AOF) begins, decided from its first bytes as Redis's loader
/// does: `REDIS` means an RDB snapshot, possibly followed by commands; anything else is commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BaseFormat {
    Rdb,
    Commands,
}

/// Detects the format from the first bytes of a file (five are enough).
pub fn detect_format(prefix: &[u8]) -> BaseFormat {
    if prefix.starts_with(RDB_MAGIC) {
        BaseFormat::Rdb
    } else {
        BaseFormat::Commands
    }
}

/// Detects the format of the file at `path` from its first five bytes (a shorter file is
/// commands, as for Redis's loader).
pub fn detect_file_format(path: &std::path::Path) -> std::io::Result<BaseFormat> {
    use std::io::Read;
    let mut prefix = Vec::with_capacity(RDB_MAGIC.len());
    std::fs::File::open(path)?
        .take(RDB_MAGIC.len() as u64)
        .read_to_end(&mut prefix)?;
    Ok(detect_format(&prefix))
}

/// For an error from [`crate::rdb::RdbReader`] on a file that starts with an RDB snapshot:
/// where the commands that follow the snapshot start, if the error only says that the snapshot
/// ended (checksum included) before the file did. Redis then reads the rest as commands
/// ([`CommandReader::starting_at`] that offset).
pub fn rdb_tail_start(err: &RdbError) -> Option<usize> {
    match err.kind {
        RdbErrorKind::Invalid("bytes after the end of the file") => Some(err.offset),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::RdbReader;

    #[test]
    fn detects_rdb_by_magic() {
        assert_eq!(detect_format(b"REDIS0010"), BaseFormat::Rdb);
        assert_eq!(detect_format(b"REDIS"), BaseFormat::Rdb);
        assert_eq!(detect_format(b"REDI"), BaseFormat::Commands);
        assert_eq!(detect_format(b"*1\r\n"), BaseFormat::Commands);
        assert_eq!(detect_format(b""), BaseFormat::Commands);
    }

    #[test]
    fn finds_the_tail_after_an_rdb_preamble() {
        // An empty version-10 RDB with its checksum disabled, then one command.
        let mut file = b"REDIS0010\xff".to_vec();
        file.extend_from_slice(&[0u8; 8]);
        let rdb_len = file.len();
        encode_command(&mut file, &["SET", "k", "v"]);
        let mut r = RdbReader::new(&file).expect("header");
        let err = r.next_entry().expect_err("trailing bytes");
        assert_eq!(rdb_tail_start(&err), Some(rdb_len));
        let tail = CommandReader::starting_at(&file[rdb_len..], rdb_len as u64);
        let cmds: Vec<_> = tail.map(|c| c.expect("ok")).collect();
        assert_eq!(cmds.len(), 1);
        assert_eq!(cmds[0].offset, rdb_len as u64);
        // Any other error is not a tail.
        let err = RdbReader::new(&file[..rdb_len - 1])
            .expect("header")
            .next_entry()
            .expect_err("short");
        assert_eq!(rdb_tail_start(&err), None);
    }
}
