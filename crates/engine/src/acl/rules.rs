//! ACL rules: parsing SETUSER's words into a user's state, checking a command
//! against a selector, and describing a user back in ACL LIST's words.
//!
//! The command part of a description is rebuilt from the bitset the way Redis
//! 7.0 does: start from `+@all` or `-@all`, add each category that more than
//! half matches, then list single commands that still differ.

use super::info::{CommandInfo, Denied};
use bytes::Bytes;
use keel_store::glob::glob_match;
use sha2::{Digest, Sha256};

pub const READ: u8 = 1;
pub const WRITE: u8 = 2;

/// A key pattern and whether it grants reads, writes or both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPattern {
    pub pattern: Bytes,
    pub flags: u8,
}

/// One set of permissions: the root selector of a user or one in `( ... )`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// How many commands there are.
    pub n: usize,
    /// One bit per command id.
    pub allowed: Vec<u64>,
    /// Commands added later (none in Keel, but `+@all` says so) are allowed.
    pub future: bool,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Bytes>,
    /// First-argument rules (`+select|0`): a command whose bit is off is
    /// still allowed when its first argument is one of these (compared
    /// without case), in the order given.
    pub first_args: Vec<(usize, Vec<Bytes>)>,
}

impl Selector {
    pub fn empty(ncmds: usize, all_channels: bool) -> Selector {
        Selector {
            n: ncmds,
            allowed: vec![0; ncmds.div_ceil(64)],
            future: false,
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
            first_args: Vec::new(),
        }
    }

    pub fn everything(ncmds: usize) -> Selector {
        let mut s = Selector::empty(ncmds, true);
        s.all_keys = true;
        s.set_all(ncmds, true);
        s
    }

    fn set_all(&mut self, ncmds: usize, on: bool) {
        for id in 0..ncmds {
            self.set(id, on);
        }
        self.future = on;
    }

    #[inline]
    pub fn allows(&self, id: usize) -> bool {
        self.allowed
            .get(id / 64)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// Set or clear a command's bit; either way its first-argument rules go,
    /// as Redis drops them on any rule that names the whole command.
    fn set(&mut self, id: usize, on: bool) {
        if !self.first_args.is_empty() {
            self.first_args.retain(|(c, _)| *c != id);
        }
        if let Some(w) = self.allowed.get_mut(id / 64) {
            if on {
                *w |= 1 << (id % 64);
            } else {
                *w &= !(1 << (id % 64));
            }
        }
    }

    fn first_arg_allows(&self, id: usize, argv: &[Bytes]) -> bool {
        let Some(first) = argv.get(1) else {
            return false;
        };
        self.first_args
            .iter()
            .any(|(c, args)| *c == id && args.iter().any(|a| a.eq_ignore_ascii_case(first)))
    }

    fn is_free(&self) -> bool {
        self.all_keys && self.all_channels && (0..self.n).all(|id| self.allows(id))
    }

    /// Check one command: the command bit, then its keys, then its channels.
    pub fn check(&self, info: &CommandInfo, id: usize, argv: &[Bytes]) -> Result<(), Denied> {
        if !self.allows(id) && !self.first_arg_allows(id, argv) {
            return Err(Denied::Command);
        }
        if !self.all_keys {
            if let Some(Some(specs)) = info.key_specs.get(id) {
                self.check_keys(info, id, specs, argv)?;
            }
        }
        if !self.all_channels {
            let kind = info.channels.get(id).copied().unwrap_or(0);
            let positions = match kind {
                1 => 1..argv.len().min(2),
                2 | 3 => 1..argv.len(),
                _ => 0..0,
            };
            for pos in positions {
                let ch = &argv[pos];
                let ok = if kind == 3 {
                    self.channels.iter().any(|p| p == ch)
                } else {
                    self.channels.iter().any(|p| glob_match(p, ch, false))
                };
                if !ok {
                    return Err(Denied::Channel(pos));
                }
            }
        }
        Ok(())
    }

    fn check_keys(
        &self,
        info: &CommandInfo,
        id: usize,
        specs: &'static [crate::keyspec::KeySpec],
        argv: &[Bytes],
    ) -> Result<(), Denied> {
        let needs = &info.key_needs[id];
        // SET reads its key only with GET (Redis resolves its variable flags so).
        let only_write =
            id == info.set_id && !argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"GET"));
        let adjust = |need: u8| if only_write { need & !READ } else { need };
        // The common shape, one key at a fixed index, without allocating.
        if let [spec] = specs {
            if let (
                crate::keyspec::Begin::Index(i),
                crate::keyspec::Find::Range { lastkey: 0, .. },
            ) = (spec.begin, spec.find)
            {
                let i = i as usize;
                if let Some(key) = argv.get(i).filter(|_| i > 0) {
                    if !self.key_allowed(key, adjust(needs[0])) {
                        return Err(Denied::Key(i));
                    }
                }
                return Ok(());
            }
        }
        for (pos, flags) in crate::keyspec::positions(specs, argv) {
            if !self.key_allowed(&argv[pos], adjust(need_of(flags))) {
                return Err(Denied::Key(pos));
            }
        }
        // SORT's STORE destination has a key spec nobody can follow; Redis
        // finds it with SORT's own key search, which Keel's spec uses too.
        let finder = info.finder(id);
        if let Some(find) = finder.filter(|_| {
            specs
                .iter()
                .any(|s| s.begin == crate::keyspec::Begin::Unknown)
        }) {
            let mut pos = Vec::new();
            find(argv, &mut pos);
            if let Some(&dst) = pos.get(1) {
                if !self.key_allowed(&argv[dst], WRITE) {
                    return Err(Denied::Key(dst));
                }
            }
        }
        Ok(())
    }

    pub fn key_allowed(&self, key: &[u8], need: u8) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|p| p.flags & need == need && glob_match(&p.pattern, key, false))
    }

    /// Apply one selector rule. `Err` holds Redis's reason text.
    fn apply(&mut self, op: &[u8], info: &CommandInfo) -> Result<(), &'static str> {
        let ncmds = info.cats.len();
        if op.eq_ignore_ascii_case(b"allkeys") || op == b"~*" {
            self.all_keys = true;
            self.keys.clear();
        } else if op.eq_ignore_ascii_case(b"resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if op.eq_ignore_ascii_case(b"allchannels") || op == b"&*" {
            self.all_channels = true;
            self.channels.clear();
        } else if op.eq_ignore_ascii_case(b"resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if op.eq_ignore_ascii_case(b"allcommands") {
            self.set_all(ncmds, true);
        } else if op.eq_ignore_ascii_case(b"nocommands") {
            self.set_all(ncmds, false);
        } else if op.first() == Some(&b'~') || op.first() == Some(&b'%') {
            // Redis refuses any pattern after allkeys before reading it.
            if self.all_keys {
                return Err(AFTER_ALLKEYS);
            }
            let (flags, pattern) = if op[0] == b'~' {
                (READ | WRITE, &op[1..])
            } else {
                let tilde = op.iter().position(|&c| c == b'~').ok_or(SYNTAX)?;
                let mut flags = 0;
                for &c in &op[1..tilde] {
                    match c {
                        b'R' => flags |= READ,
                        b'W' => flags |= WRITE,
                        _ => return Err(SYNTAX),
                    }
                }
                if flags == 0 {
                    return Err(SYNTAX);
                }
                (flags, &op[tilde + 1..])
            };
            let pattern = Bytes::copy_from_slice(pattern);
            match self.keys.iter_mut().find(|p| p.pattern == pattern) {
                Some(p) => p.flags |= flags,
                None => self.keys.push(KeyPattern { pattern, flags }),
            }
        } else if op.first() == Some(&b'&') {
            if self.all_channels {
                return Err(AFTER_ALLCHANNELS);
            }
            let pattern = Bytes::copy_from_slice(&op[1..]);
            if !self.channels.contains(&pattern) {
                self.channels.push(pattern);
            }
        } else if op.first() == Some(&b'+') || op.first() == Some(&b'-') {
            let on = op[0] == b'+';
            let name = &op[1..];
            if let Some(cat) = name.strip_prefix(b"@") {
                if cat.eq_ignore_ascii_case(b"all") {
                    self.set_all(ncmds, on);
                    return Ok(());
                }
                let c = info.category(cat).ok_or(UNKNOWN)?;
                for id in 0..ncmds {
                    if info.cats[id] & (1 << c) != 0 {
                        self.set(id, on);
                    }
                }
            } else {
                let table = info.table();
                let mut parts = name.splitn(2, |&c| c == b'|');
                let top = parts.next().unwrap_or_default();
                let id = table
                    .lookup(top)
                    .filter(|&id| id < table.top_level)
                    .ok_or(UNKNOWN)?;
                match parts.next() {
                    None => {
                        self.set(id, on);
                        for sub in (table.top_level..table.len()).filter(|&s| table.parent[s] == id)
                        {
                            self.set(sub, on);
                        }
                    }
                    // `+get|` is malformed, `-get|` names nothing (Redis's texts).
                    Some([]) => return Err(if on { SYNTAX } else { UNKNOWN }),
                    Some(sub) => {
                        if !table.has_subcommands(id) {
                            self.allow_first_arg(id, sub, on)?;
                        } else {
                            let Some(sid) = table.lookup_sub(id, sub) else {
                                // `+config|get|x`: a known subcommand with more.
                                let mut parts = sub.splitn(2, |&c| c == b'|');
                                let head = parts.next().unwrap_or_default();
                                return Err(
                                    if on
                                        && parts.next().is_some()
                                        && table.lookup_sub(id, head).is_some()
                                    {
                                        FIRST_ARG_OF_SUB
                                    } else {
                                        UNKNOWN
                                    },
                                );
                            };
                            self.set(sid, on);
                        }
                    }
                }
            }
        } else {
            return Err(SYNTAX);
        }
        Ok(())
    }

    /// `+cmd|arg` on a command without subcommands, as Redis 7.0 takes it:
    /// nothing to add when the whole command is allowed, one argument once
    /// (without case); `-cmd|arg` is not a rule.
    fn allow_first_arg(&mut self, id: usize, arg: &[u8], on: bool) -> Result<(), &'static str> {
        if !on || arg.contains(&b'|') {
            return Err(UNKNOWN);
        }
        if self.allows(id) {
            return Ok(());
        }
        let arg = Bytes::copy_from_slice(arg);
        match self.first_args.iter_mut().find(|(c, _)| *c == id) {
            Some((_, args)) => {
                if !args.iter().any(|a| a.eq_ignore_ascii_case(&arg)) {
                    args.push(arg);
                }
            }
            None => self.first_args.push((id, vec![arg])),
        }
        Ok(())
    }

    /// ACL LIST's words for the keys, channels and commands of this selector.
    pub fn describe(&self, info: &CommandInfo) -> String {
        let mut parts = Vec::new();
        let keys = self.describe_keys();
        if !keys.is_empty() {
            parts.push(keys);
        }
        parts.push(self.describe_channels_list());
        parts.push(self.describe_commands(info));
        parts.join(" ")
    }

    pub fn describe_keys(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        self.keys
            .iter()
            .map(|p| {
                let prefix = match p.flags {
                    READ => "%R~",
                    WRITE => "%W~",
                    _ => "~",
                };
                format!("{prefix}{}", String::from_utf8_lossy(&p.pattern))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Channels as GETUSER shows them (no `resetchannels`).
    pub fn describe_channels(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        self.channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn describe_channels_list(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let mut s = String::from("resetchannels");
        let rest = self.describe_channels();
        if !rest.is_empty() {
            s.push(' ');
            s.push_str(&rest);
        }
        s
    }

    /// `+@all`/`-@all`, then categories, then single commands.
    pub fn describe_commands(&self, info: &CommandInfo) -> String {
        let ncmds = info.cats.len();
        let table = info.table();
        let additive = !self.future;
        let mut rules = vec![if additive { "-@all" } else { "+@all" }.to_string()];
        let mut fake = Selector::empty(ncmds, false);
        fake.set_all(ncmds, !additive);
        // Redis's best fit: repeatedly take the category with the fewest
        // commands that disagree (more agreeing than not; ties go to the one
        // agreeing on more, then to the earlier). A copy of the selector has
        // each chosen category undone, so later ones are judged on what is
        // left. Only top-level commands are counted, as in Redis.
        let mut temp = self.clone();
        let mut applied = vec![false; info.categories.len()];
        loop {
            let mut best: Option<(usize, usize, usize)> = None;
            for (c, done) in applied.iter().enumerate() {
                if *done {
                    continue;
                }
                let (mut on, mut off) = (0usize, 0usize);
                for id in 0..table.top_level {
                    if info.cats[id] & (1 << c) != 0 {
                        if temp.allows(id) {
                            on += 1;
                        } else {
                            off += 1;
                        }
                    }
                }
                let (diff, same) = if additive { (off, on) } else { (on, off) };
                let better = match best {
                    None => true,
                    Some((_, d, s)) => diff < d || (diff == d && same > s),
                };
                if same > diff && better {
                    best = Some((c, diff, same));
                }
            }
            let Some((c, _, _)) = best else {
                break;
            };
            rules.push(format!(
                "{}@{}",
                if additive { '+' } else { '-' },
                info.categories[c]
            ));
            for id in 0..ncmds {
                if info.cats[id] & (1 << c) != 0 {
                    fake.set(id, additive);
                    temp.set(id, !additive);
                }
            }
            applied[c] = true;
        }
        for id in 0..table.top_level {
            let subs: Vec<usize> = (table.top_level..table.len())
                .filter(|&s| table.parent[s] == id)
                .collect();
            let name = table.full_name(id);
            if self.allows(id) != fake.allows(id) {
                let on = self.allows(id);
                rules.push(format!("{}{name}", if on { '+' } else { '-' }));
                fake.set(id, on);
                for &s in &subs {
                    fake.set(s, on);
                }
            }
            for (_, args) in self.first_args.iter().filter(|(c, _)| *c == id) {
                for a in args {
                    rules.push(format!("+{name}|{}", String::from_utf8_lossy(a)));
                }
            }
            for s in subs {
                if self.allows(s) != fake.allows(s) {
                    let on = self.allows(s);
                    rules.push(format!(
                        "{}{}",
                        if on { '+' } else { '-' },
                        table.full_name(s)
                    ));
                }
            }
        }
        rules.join(" ")
    }
}

/// The permission a key spec's flags ask for: `access` reads, `insert`,
/// `delete` and `update` write; a key with none (EXISTS, TYPE) needs only to
/// match some pattern.
pub fn need_of(flags: &[&str]) -> u8 {
    let mut need = 0;
    for f in flags {
        match *f {
            "access" => need |= READ,
            "insert" | "delete" | "update" => need |= WRITE,
            _ => {}
        }
    }
    need
}

const SYNTAX: &str = "Syntax error";
const UNKNOWN: &str = "Unknown command or category name in ACL";
const FIRST_ARG_OF_SUB: &str = "Allowing first-arg of a subcommand is not supported";
const AFTER_ALLKEYS: &str = "Adding a pattern after the * pattern (or the 'allkeys' flag) is not \
     valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
const AFTER_ALLCHANNELS: &str = "Adding a pattern after the * pattern (or the 'allchannels' flag) \
     is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of \
     channels";
const BAD_HASH: &str = "The password hash must be exactly 64 characters and contain only \
     lowercase hexadecimal characters";
const NO_SUCH_PASSWORD: &str = "The password you are trying to remove from the user does not exist";

/// Everything about a user but its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserState {
    pub enabled: bool,
    pub nopass: bool,
    /// `Some(true)`: sanitize-payload, `Some(false)`: skip-sanitize-payload.
    pub sanitize: Option<bool>,
    /// SHA-256 hex digests, in the order added.
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
}

impl UserState {
    /// A new user: off, no passwords, no keys, no commands; channels per
    /// `acl-pubsub-default`.
    pub fn new(ncmds: usize, all_channels: bool) -> UserState {
        UserState {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::empty(ncmds, all_channels),
            selectors: Vec::new(),
        }
    }

    pub fn is_free(&self) -> bool {
        self.root.is_free()
    }

    /// The flags GETUSER lists, in Redis's order.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut f = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            f.push("nopass");
        }
        match self.sanitize {
            Some(false) => f.push("skip-sanitize-payload"),
            Some(true) => f.push("sanitize-payload"),
            None => {}
        }
        f
    }

    /// The rule line after `user <name> ` in ACL LIST and the ACL file.
    pub fn describe(&self, info: &CommandInfo) -> String {
        let mut parts: Vec<String> = self.flags().iter().map(|s| s.to_string()).collect();
        parts.extend(self.passwords.iter().map(|h| format!("#{h}")));
        parts.push(self.root.describe(info));
        for s in &self.selectors {
            parts.push(format!("({})", s.describe(info)));
        }
        parts.join(" ")
    }
}

pub fn hash_password(pass: &[u8]) -> String {
    hex(&Sha256::digest(pass))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compare the digest of `pass` with `hash` without stopping at the first
/// difference.
pub fn check_password(hash: &str, pass: &[u8]) -> bool {
    let got = hash_password(pass);
    let (a, b) = (got.as_bytes(), hash.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

fn valid_hash(h: &[u8]) -> bool {
    h.len() == 64 && h.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Join SETUSER words so a selector written across several words (`(~x*`,
/// `+get)`) becomes one; `Err` is Redis's unmatched-parenthesis message.
pub fn merge_selectors(ops: &[Bytes]) -> Result<Vec<Bytes>, String> {
    let mut out = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    // The word an unclosed selector started with, which Redis's error names.
    let mut started = &Bytes::new();
    for op in ops {
        match open.as_mut() {
            Some(buf) => {
                buf.push(b' ');
                buf.extend_from_slice(op);
                if op.last() == Some(&b')') {
                    out.push(Bytes::from(open.take().unwrap_or_default()));
                }
            }
            None if op.first() == Some(&b'(') && op.last() != Some(&b')') => {
                open = Some(op.to_vec());
                started = op;
            }
            None => out.push(op.clone()),
        }
    }
    if open.is_some() {
        return Err(format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(started)
        ));
    }
    Ok(out)
}

/// Apply SETUSER's words to `state`; on error `state` may be half changed,
/// so callers work on a copy. The error is the full reply text.
pub fn apply_all(
    state: &mut UserState,
    ops: &[Bytes],
    info: &CommandInfo,
    pubsub_all: bool,
) -> Result<(), String> {
    let ops = merge_selectors(ops).map_err(|e| format!("ERR {e}"))?;
    for op in &ops {
        apply_one(state, op, info, pubsub_all).map_err(|why| {
            format!(
                "ERR Error in ACL SETUSER modifier '{}': {why}",
                String::from_utf8_lossy(op)
            )
        })?;
    }
    Ok(())
}

fn apply_one(
    s: &mut UserState,
    op: &[u8],
    info: &CommandInfo,
    pubsub_all: bool,
) -> Result<(), &'static str> {
    let ncmds = info.cats.len();
    let word = |w: &str| op.eq_ignore_ascii_case(w.as_bytes());
    if word("on") {
        s.enabled = true;
    } else if word("off") {
        s.enabled = false;
    } else if word("nopass") {
        s.nopass = true;
        s.passwords.clear();
    } else if word("resetpass") {
        s.nopass = false;
        s.passwords.clear();
    } else if word("sanitize-payload") {
        s.sanitize = Some(true);
    } else if word("skip-sanitize-payload") {
        s.sanitize = Some(false);
    } else if word("clearselectors") {
        s.selectors.clear();
    } else if word("reset") {
        *s = UserState::new(ncmds, pubsub_all);
        s.sanitize = Some(true);
    } else if let Some(pass) = op.strip_prefix(b">") {
        let h = hash_password(pass);
        if !s.passwords.contains(&h) {
            s.passwords.push(h);
        }
        s.nopass = false;
    } else if let Some(hash) = op.strip_prefix(b"#") {
        if !valid_hash(hash) {
            return Err(BAD_HASH);
        }
        let h = String::from_utf8_lossy(hash).into_owned();
        if !s.passwords.contains(&h) {
            s.passwords.push(h);
        }
        s.nopass = false;
    } else if let Some(pass) = op.strip_prefix(b"<") {
        let h = hash_password(pass);
        let before = s.passwords.len();
        s.passwords.retain(|p| *p != h);
        if s.passwords.len() == before {
            return Err(NO_SUCH_PASSWORD);
        }
    } else if let Some(hash) = op.strip_prefix(b"!") {
        if !valid_hash(hash) {
            return Err(BAD_HASH);
        }
        let before = s.passwords.len();
        s.passwords.retain(|p| p.as_bytes() != hash);
        if s.passwords.len() == before {
            return Err(NO_SUCH_PASSWORD);
        }
    } else if op.first() == Some(&b'(') && op.last() == Some(&b')') && op.len() >= 2 {
        let mut sel = Selector::empty(ncmds, pubsub_all);
        for part in op[1..op.len() - 1]
            .split(|&c| c == b' ')
            .filter(|p| !p.is_empty())
        {
            sel.apply(part, info)?;
        }
        s.selectors.push(sel);
    } else {
        s.root.apply(op, info)?;
    }
    Ok(())
}
