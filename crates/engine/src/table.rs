//! The command table: every group's specs gathered into one case-insensitive index.

use crate::spec::CommandSpec;
use hashbrown::HashMap;

pub struct CommandTable {
    by_name: HashMap<Vec<u8>, usize>,
    /// Every spec, top-level commands and subcommands; the index is the command id.
    pub specs: Vec<&'static CommandSpec>,
    /// For each id, the id of its parent container (or itself).
    pub parent: Vec<usize>,
    /// Number of top-level commands.
    pub top_level: usize,
}

impl CommandTable {
    pub fn new(groups: &[&'static [&'static CommandSpec]]) -> CommandTable {
        let mut specs: Vec<&'static CommandSpec> = Vec::new();
        let mut parent = Vec::new();
        let mut by_name = HashMap::new();
        for g in groups {
            for spec in g.iter() {
                by_name.insert(spec.name.to_ascii_lowercase().into_bytes(), specs.len());
                parent.push(specs.len());
                specs.push(spec);
            }
        }
        let top_level = specs.len();
        for pid in 0..top_level {
            for sub in specs[pid].subcommands {
                parent.push(pid);
                specs.push(sub);
            }
        }
        CommandTable {
            by_name,
            specs,
            parent,
            top_level,
        }
    }

    /// Look a command up by name, ignoring ASCII case, without allocating for
    /// names of ordinary length.
    #[inline]
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let mut buf = [0u8; 32];
        if name.len() <= buf.len() {
            let lower = &mut buf[..name.len()];
            lower.copy_from_slice(name);
            lower.make_ascii_lowercase();
            self.by_name.get(&lower[..]).copied()
        } else {
            self.by_name.get(&name.to_ascii_lowercase()).copied()
        }
    }

    /// Find subcommand `sub` of the container `id`.
    pub fn lookup_sub(&self, id: usize, sub: &[u8]) -> Option<usize> {
        let parent = self.specs[id];
        let i = parent.subcommands.iter().position(|s| {
            s.name
                .rsplit('|')
                .next()
                .is_some_and(|n| n.as_bytes().eq_ignore_ascii_case(sub))
        })?;
        // Subcommands are stored after the top-level block, in parent order.
        let mut base = self.top_level;
        for p in 0..id {
            base += self.specs[p].subcommands.len();
        }
        Some(base + i)
    }

    /// The full lowercase name Redis reports (`get`, `client|list`).
    pub fn full_name(&self, id: usize) -> String {
        self.specs[id].name.to_ascii_lowercase()
    }

    pub fn len(&self) -> usize {
        self.specs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }
}
