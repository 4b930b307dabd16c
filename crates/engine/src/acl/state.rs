//! The ACL's data: its [`User`]s (which sessions hold), the [`Acl`] registry the
//! Engine holds, and the ACL log. Names no session or engine; the parent
//! module checks commands and clients against it.

use super::info::{CommandInfo, Denied};
use super::rules::{self, Selector, UserState};
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// A named user; its rules change in place, so every client logged in as it
/// sees the change.
pub struct User {
    pub name: String,
    state: RwLock<UserState>,
    /// Every command, key and channel is allowed: the executor skips the check.
    free: AtomicBool,
}

impl User {
    fn new(name: &str, state: UserState) -> Arc<User> {
        let free = state.is_free();
        Arc::new(User {
            name: name.to_string(),
            state: RwLock::new(state),
            free: AtomicBool::new(free),
        })
    }

    /// Whether this user may run anything on anything (one relaxed load).
    #[inline]
    pub fn free(&self) -> bool {
        self.free.load(Ordering::Relaxed)
    }

    /// Whether a client must AUTH before acting as this user (a password is
    /// needed, or the user is off).
    pub fn needs_auth(&self) -> bool {
        let s = self.state.read();
        !s.nopass || !s.enabled
    }

    /// Whether the user has the `nopass` flag (protected mode asks this of
    /// the default user).
    pub fn nopass(&self) -> bool {
        self.state.read().nopass
    }

    pub fn state(&self) -> UserState {
        self.state.read().clone()
    }

    fn replace(&self, state: UserState) {
        let free = state.is_free();
        *self.state.write() = state;
        self.free.store(free, Ordering::Relaxed);
    }
}

/// One ACL LOG entry.
#[derive(Clone, Debug)]
pub struct LogEntry {
    pub count: u64,
    pub reason: &'static str,
    pub context: &'static str,
    pub object: String,
    pub username: String,
    pub created_ms: u64,
    pub client_info: String,
}

/// Where a refused command came from, for ACL LOG `context`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// Entries that repeat one within this long are counted, not added (Redis's rule).
const LOG_GROUP_MS: u64 = 60_000;

#[derive(Default)]
pub struct Acl {
    users: RwLock<BTreeMap<String, Arc<User>>>,
    info: OnceLock<CommandInfo>,
    log: Mutex<VecDeque<LogEntry>>,
}

impl Acl {
    /// The registry with the `default` user: `on nopass ~* &* +@all`, or a
    /// password when `requirepass` is set, ruling over the commands `info`
    /// describes.
    pub fn with_info(requirepass: &str, info: CommandInfo) -> Acl {
        let acl = Acl::default();
        let _ = acl.info.set(info);
        let state = acl.default_state(requirepass);
        acl.users
            .write()
            .insert("default".into(), User::new("default", state));
        acl
    }

    fn default_state(&self, requirepass: &str) -> UserState {
        let mut s = UserState::new(self.info().cats.len(), true);
        s.enabled = true;
        s.root = Selector::everything(self.info().cats.len());
        if requirepass.is_empty() {
            s.nopass = true;
        } else {
            s.passwords
                .push(rules::hash_password(requirepass.as_bytes()));
        }
        s
    }

    pub fn info(&self) -> &CommandInfo {
        // Set by `new`; an ACL made otherwise serves no command.
        self.info.get_or_init(CommandInfo::empty)
    }

    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        let name = std::str::from_utf8(name).ok()?;
        self.users.read().get(name).cloned()
    }

    pub fn default_user(&self) -> Arc<User> {
        self.get(b"default")
            .expect("the default user always exists")
    }

    pub fn names(&self) -> Vec<String> {
        self.users.read().keys().cloned().collect()
    }

    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// Apply SETUSER rules to `name`, creating it if needed. All or nothing.
    pub fn set_user(&self, name: &str, ops: &[Bytes], pubsub_all: bool) -> Result<(), String> {
        let info = self.info();
        let mut users = self.users.write();
        let mut state = match users.get(name) {
            Some(u) => u.state(),
            None => UserState::new(info.cats.len(), pubsub_all),
        };
        rules::apply_all(&mut state, ops, info, pubsub_all)?;
        match users.get(name) {
            Some(u) => u.replace(state),
            None => {
                users.insert(name.to_string(), User::new(name, state));
            }
        }
        Ok(())
    }

    /// Remove users; returns how many existed. The caller disconnects their clients.
    pub fn delete(&self, names: &[&str]) -> usize {
        let mut users = self.users.write();
        names.iter().filter(|n| users.remove(**n).is_some()).count()
    }

    /// Replace every user at once (ACL LOAD, `aclfile` at start).
    pub fn replace_all(&self, new: BTreeMap<String, UserState>) {
        let mut users = self.users.write();
        // `default` changes in place: the clients logged in as it stay and
        // see its new rules, as in Redis; every other user is new.
        let default = users.remove("default");
        users.clear();
        for (name, state) in new {
            match default.as_ref().filter(|_| name == "default") {
                Some(d) => {
                    d.replace(state);
                    users.insert(name, d.clone());
                }
                None => {
                    let user = User::new(&name, state);
                    users.insert(name, user);
                }
            }
        }
    }

    /// Keep `default`'s password in step with `requirepass`.
    pub fn set_requirepass(&self, pass: &str) {
        let user = self.default_user();
        let mut s = user.state();
        s.passwords.clear();
        if pass.is_empty() {
            s.nopass = true;
        } else {
            s.nopass = false;
            s.passwords.push(rules::hash_password(pass.as_bytes()));
        }
        user.replace(s);
    }

    /// The user `name` if it is enabled and `pass` is one of its passwords.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let user = self.get(name)?;
        let ok = {
            let s = user.state.read();
            s.enabled && (s.nopass || s.passwords.iter().any(|h| rules::check_password(h, pass)))
        };
        ok.then_some(user)
    }

    /// Whether some selector of `user` allows `channel` (a pattern must be
    /// listed as is).
    pub fn channel_allowed(&self, user: &User, channel: &[u8], pattern: bool) -> bool {
        let s = user.state.read();
        std::iter::once(&s.root)
            .chain(s.selectors.iter())
            .any(|sel| {
                sel.all_channels
                    || sel.channels.iter().any(|p| {
                        if pattern {
                            p == channel
                        } else {
                            keel_store::glob::glob_match(p, channel, false)
                        }
                    })
            })
    }

    /// Check `argv` (command `id`) against `user`'s selectors.
    pub fn check(&self, user: &User, id: usize, argv: &[Bytes]) -> Result<(), Denied> {
        let info = self.info();
        // AUTH, HELLO, RESET and QUIT are open to every user, as in Redis.
        if info.no_auth(id) {
            return Ok(());
        }
        let s = user.state.read();
        let mut worst: Option<Denied> = None;
        for sel in std::iter::once(&s.root).chain(s.selectors.iter()) {
            match sel.check(info, id, argv) {
                Ok(()) => return Ok(()),
                Err(d) => {
                    if worst.is_none_or(|w| d.rank() > w.rank()) {
                        worst = Some(d);
                    }
                }
            }
        }
        Err(worst.unwrap_or(Denied::Command))
    }

    pub fn log_push(&self, mut entry: LogEntry, max_len: usize) {
        let mut log = self.log.lock();
        if let Some(at) = log.iter().position(|e| {
            e.reason == entry.reason
                && e.context == entry.context
                && e.object == entry.object
                && e.username == entry.username
                && entry.created_ms.saturating_sub(e.created_ms) < LOG_GROUP_MS
        }) {
            // A repeat moves to the top with its count raised.
            if let Some(mut e) = log.remove(at) {
                e.count += 1;
                e.created_ms = entry.created_ms;
                e.client_info = std::mem::take(&mut entry.client_info);
                log.push_front(e);
            }
            return;
        }
        log.push_front(entry);
        log.truncate(max_len);
    }

    pub fn log_entries(&self, count: usize) -> Vec<LogEntry> {
        self.log.lock().iter().take(count).cloned().collect()
    }

    pub fn log_reset(&self) {
        self.log.lock().clear();
    }
}
