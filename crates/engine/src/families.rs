//! What the kernel asks of the command families, which it does not name.
//!
//! The executor needs a family's knowledge at a few points: a hint before a
//! command runs, and whether a call reaches keys it did not declare. Each is
//! a method here with a default that knows no family; whoever assembles the
//! engine (the server, from every family) installs an implementation through
//! [`crate::EngineBuilder::families`].

use crate::scripting::Scripting;
use bytes::Bytes;

pub trait Families: Send + Sync {
    /// A hint before `argv` runs: warm the cache lines it will touch in
    /// `table` beyond its key's entry (a Bloom filter's blocks). Changes
    /// nothing.
    fn prefetch(&self, table: &keel_store::Table, argv: &[Bytes]) {
        let _ = (table, argv);
    }

    /// Whether a call of a command flagged `KEY_PATTERNS` names keys beyond
    /// its declared ones (SORT's BY and GET patterns): it then holds every
    /// shard.
    fn names_other_keys(&self, argv: &[Bytes]) -> bool {
        let _ = argv;
        false
    }

    /// Whether a call of a command flagged `SCRIPT` must hold every shard
    /// (a script `scripting` has seen reaching keys it did not declare).
    fn script_takes_every_shard(&self, scripting: &Scripting, argv: &[Bytes]) -> bool {
        let _ = (scripting, argv);
        false
    }
}

/// The families of an engine that serves none.
pub struct NoFamilies;

impl Families for NoFamilies {}
