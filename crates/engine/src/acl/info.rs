//! What the ACL knows of the commands it rules over ([`CommandInfo`]: names,
//! ids, categories, key specs), and why it refuses one ([`Denied`]). Built from
//! the engine's command table by the parent module; names nothing above it.

use crate::declare::CATEGORY_ORDER;
use crate::keyspec::KeySpec;
use bytes::Bytes;
use hashbrown::HashMap;

/// A command's own key search (`Keys::Find`).
pub type KeySearch = fn(&[Bytes], &mut Vec<usize>);

/// Why a command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    Command,
    /// The argv index of the first key refused.
    Key(usize),
    /// The argv index of the first channel refused.
    Channel(usize),
}

impl Denied {
    pub(crate) fn rank(self) -> (u8, usize) {
        match self {
            Denied::Command => (1, 0),
            Denied::Key(i) => (2, i),
            Denied::Channel(i) => (4, i),
        }
    }
}

/// ACL categories (without `@`) and, for every command id, the categories it
/// is in and its key specs.
pub struct CommandInfo {
    pub(crate) table: CommandIndex,
    pub categories: Vec<&'static str>,
    pub cats: Vec<u64>,
    pub key_specs: Vec<Option<&'static [KeySpec]>>,
    /// For each command, the permission each of its key specs needs
    /// (`rules::READ` / `rules::WRITE`), worked out once from their flags.
    pub key_needs: Vec<Vec<u8>>,
    /// The id of SET, whose key is only read when GET is given.
    pub set_id: usize,
    /// Channel arguments: 0 none, 1 first argument publishes, 2 every
    /// argument subscribes, 3 every argument is a pattern.
    pub channels: Vec<u8>,
    /// For each command, whether every user may run it (`no-auth`).
    pub(crate) no_auth: Vec<bool>,
    /// For each command, its own key search (`Keys::Find`), if it has one.
    pub(crate) finders: Vec<Option<KeySearch>>,
}

impl CommandInfo {
    /// The commands' names and ids.
    pub fn table(&self) -> &CommandIndex {
        &self.table
    }

    /// Whether command `id` is open to every user (AUTH, HELLO, ...).
    pub fn no_auth(&self, id: usize) -> bool {
        self.no_auth.get(id).copied().unwrap_or(false)
    }

    /// Command `id`'s own key search, when its key specs cannot be followed.
    pub fn finder(&self, id: usize) -> Option<KeySearch> {
        self.finders.get(id).copied().flatten()
    }

    /// What an ACL serving no command knows: the category names alone.
    pub fn empty() -> CommandInfo {
        CommandInfo {
            table: CommandIndex::default(),
            categories: CATEGORY_ORDER.iter().map(|c| &c[1..]).collect(),
            cats: Vec::new(),
            key_specs: Vec::new(),
            key_needs: Vec::new(),
            set_id: usize::MAX,
            channels: Vec::new(),
            no_auth: Vec::new(),
            finders: Vec::new(),
        }
    }

    pub fn category(&self, name: &[u8]) -> Option<usize> {
        self.categories
            .iter()
            .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
    }
}

/// The names of the commands an ACL rules over, and their ids as in the
/// engine's command table: what rules like `+config|get` resolve against,
/// without the handlers.
#[derive(Default)]
pub struct CommandIndex {
    /// Lowercase top-level names to ids.
    by_name: HashMap<String, usize>,
    /// Each id's full lowercase name (`get`, `client|list`).
    names: Vec<String>,
    /// For each id, the id of its parent container (or itself).
    pub parent: Vec<usize>,
    /// For each top-level id, its subcommands' last names (lowercase) and ids.
    subs: Vec<Vec<(String, usize)>>,
    /// Number of top-level commands.
    pub top_level: usize,
}

impl CommandIndex {
    /// Index commands given in table order: each top-level name, then each
    /// subcommand's full name and the id of its parent.
    pub fn new(top: Vec<String>, subs: Vec<(String, usize)>) -> CommandIndex {
        let top_level = top.len();
        let mut index = CommandIndex {
            by_name: top
                .iter()
                .enumerate()
                .map(|(id, n)| (n.clone(), id))
                .collect(),
            parent: (0..top_level).collect(),
            subs: vec![Vec::new(); top_level],
            names: top,
            top_level,
        };
        for (name, parent) in subs {
            let id = index.names.len();
            let last = name.rsplit('|').next().unwrap_or_default().to_string();
            index.subs[parent].push((last, id));
            index.parent.push(parent);
            index.names.push(name);
        }
        index
    }

    /// A top-level command by name, ignoring ASCII case.
    pub fn lookup(&self, name: &[u8]) -> Option<usize> {
        let name = std::str::from_utf8(name).ok()?.to_ascii_lowercase();
        self.by_name.get(&name).copied()
    }

    /// Subcommand `sub` of the container `id`, ignoring ASCII case.
    pub fn lookup_sub(&self, id: usize, sub: &[u8]) -> Option<usize> {
        self.subs
            .get(id)?
            .iter()
            .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(sub))
            .map(|&(_, sid)| sid)
    }

    /// Whether command `id` is a container of subcommands.
    pub fn has_subcommands(&self, id: usize) -> bool {
        self.subs.get(id).is_some_and(|s| !s.is_empty())
    }

    /// The full lowercase name Redis reports (`get`, `client|list`).
    pub fn full_name(&self, id: usize) -> String {
        self.names[id].clone()
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
