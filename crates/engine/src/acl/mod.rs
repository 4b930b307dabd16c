//! Access control: users, their rules, the permission check and the ACL log.
//!
//! A user is a root selector plus optional extra selectors; each selector holds
//! a bitset over command ids, key patterns and channel patterns. Sessions hold
//! an `Arc<User>`; a user whose root selector allows everything is marked
//! `free`, so the executor pays one atomic load per command for it.
//! Changing a user takes effect at once for its connected clients (they share
//! the `Arc`); deleting one disconnects them, as Redis does.

pub mod file;
pub mod rules;

use crate::engine::Engine;
use crate::keyspec::KeySpec;
use crate::table::CommandTable;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use rules::{Selector, UserState};
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
    fn rank(self) -> (u8, usize) {
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
    table: CommandTable,
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
}

impl CommandInfo {
    fn build(table: CommandTable) -> CommandInfo {
        let mut categories: Vec<&'static str> = crate::spec::CATEGORY_ORDER
            .iter()
            .map(|c| &c[1..])
            .collect();
        let mut cats = Vec::with_capacity(table.len());
        let mut key_specs = Vec::with_capacity(table.len());
        let mut key_needs = Vec::with_capacity(table.len());
        let mut channels = Vec::with_capacity(table.len());
        for id in 0..table.len() {
            let spec = table.specs[id];
            let mut mask = 0u64;
            for c in crate::spec::acl_categories(spec) {
                let c = &c[1..];
                let i = match categories.iter().position(|x| *x == c) {
                    Some(i) => i,
                    None if categories.len() < 64 => {
                        categories.push(c);
                        categories.len() - 1
                    }
                    None => continue,
                };
                mask |= 1 << i;
            }
            cats.push(mask);
            let name = table.full_name(id);
            let specs = crate::keyspecs::for_command(&name);
            key_needs.push(specs.map_or_else(Vec::new, |specs| {
                specs.iter().map(|k| rules::need_of(k.flags)).collect()
            }));
            key_specs.push(specs);
            channels.push(match name.as_str() {
                "publish" | "spublish" => 1,
                "subscribe" | "ssubscribe" => 2,
                "psubscribe" => 3,
                _ => 0,
            });
        }
        let set_id = table.lookup(b"set").unwrap_or(usize::MAX);
        CommandInfo {
            table,
            categories,
            cats,
            key_specs,
            key_needs,
            set_id,
            channels,
        }
    }

    pub fn table(&self) -> &CommandTable {
        &self.table
    }

    pub fn category(&self, name: &[u8]) -> Option<usize> {
        self.categories
            .iter()
            .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
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
    fn name(self) -> &'static str {
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
    /// password when `requirepass` is set.
    /// The ACL of an engine serving `table`, with the default user alone.
    pub fn new(requirepass: &str, table: CommandTable) -> Acl {
        let acl = Acl::default();
        let _ = acl.info.set(CommandInfo::build(table));
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
        self.info
            .get_or_init(|| CommandInfo::build(CommandTable::new(&[])))
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
        if info
            .table
            .specs
            .get(id)
            .is_some_and(|s| s.flags.contains(crate::spec::Flags::NO_AUTH))
        {
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

/// The error text a client sees for a denial; `script` for redis.call.
pub fn denial_text(d: Denied, cmd: &str, script: bool) -> String {
    match (d, script) {
        (Denied::Command, false) => {
            format!("NOPERM this user has no permissions to run the '{cmd}' command")
        }
        (Denied::Key(_), false) => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        (Denied::Channel(_), false) => {
            "NOPERM this user has no permissions to access one of the channels used as arguments"
                .into()
        }
        (Denied::Command, true) => {
            "ERR The user executing the script can't run this command or subcommand".into()
        }
        (Denied::Key(_), true) => "ERR The user executing the script can't access at least one \
                                   of the keys mentioned in the command arguments"
            .into(),
        (Denied::Channel(_), true) => {
            "ERR The user executing the script can't publish to the channel mentioned in the \
             command"
                .into()
        }
    }
}

/// ACL DRYRUN's text for a denial.
pub fn dryrun_text(d: Denied, cmd: &str, argv: &[Bytes]) -> String {
    let arg = |i: usize| String::from_utf8_lossy(argv.get(i).map_or(&b""[..], |a| a)).into_owned();
    match d {
        Denied::Command => format!("This user has no permissions to run the '{cmd}' command"),
        Denied::Key(i) => format!(
            "This user has no permissions to access the '{}' key",
            arg(i)
        ),
        Denied::Channel(i) => format!(
            "This user has no permissions to access the '{}' channel",
            arg(i)
        ),
    }
}

/// Check a command for a session's user and log a denial; the reply error.
pub(crate) fn admit(
    engine: &Engine,
    session: &crate::session::Session,
    user: &User,
    id: usize,
    argv: &[Bytes],
    context: Context,
) -> Result<(), crate::error::CmdError> {
    let Err(d) = engine.acl.check(user, id, argv) else {
        return Ok(());
    };
    let name = engine.commands.full_name(id);
    let (reason, object) = match d {
        Denied::Command => ("command", name.clone()),
        Denied::Key(i) => ("key", String::from_utf8_lossy(&argv[i]).into_owned()),
        Denied::Channel(i) => ("channel", String::from_utf8_lossy(&argv[i]).into_owned()),
    };
    log_denial(
        engine,
        session,
        reason,
        context,
        object,
        user.name.clone(),
        argv,
    );
    Err(crate::error::CmdError::Other(denial_text(
        d,
        &name,
        context == Context::Lua,
    )))
}

/// The check of a command sent by a client: in MULTI a refusal also dooms
/// the transaction, as in Redis.
pub(crate) fn admit_top(
    engine: &Engine,
    session: &mut crate::session::Session,
    id: usize,
    argv: &[Bytes],
) -> Result<(), crate::error::CmdError> {
    let Some(user) = session.user.as_deref() else {
        return Ok(());
    };
    if engine.acl.check(user, id, argv).is_ok() {
        return Ok(());
    }
    let context = if session.multi.is_some() {
        Context::Multi
    } else {
        Context::Toplevel
    };
    let user = session.user.clone().expect("checked above");
    let r = admit(engine, session, &user, id, argv, context);
    if r.is_err() && session.multi.is_some() {
        session.multi_error = true;
    }
    r
}

/// Add an ACL LOG entry for `session`.
pub fn log_denial(
    engine: &Engine,
    session: &crate::session::Session,
    reason: &'static str,
    context: Context,
    object: String,
    username: String,
    argv: &[Bytes],
) {
    let now = engine.now_ms();
    let client_info =
        crate::clients::client_line_for(engine, now, session.id(), &session.handle, argv);
    let max = engine.config.get_i64("acllog-max-len").max(0) as usize;
    engine.acl.log_push(
        LogEntry {
            count: 1,
            reason,
            context: context.name(),
            object,
            username,
            created_ms: now,
            client_info: client_info.trim_end().to_string(),
        },
        max,
    );
}

/// Disconnect the clients logged in as one of `names`.
pub fn kill_clients_of(engine: &Engine, names: &[&str], except: Option<u64>) -> bool {
    let mut killed_self = false;
    for h in engine.clients.lock().values() {
        let user = h.user.lock().clone();
        if names.iter().any(|n| **n == *user) {
            if Some(h.id) == except {
                killed_self = true;
            } else {
                h.kill();
            }
        }
    }
    killed_self
}

/// Called after CONFIG SET of directive `name`.
pub fn config_changed(engine: &Engine, name: &str) {
    if name == "requirepass" {
        engine
            .acl
            .set_requirepass(&engine.config.get("requirepass"));
    }
}

/// At start: the config file's `user` lines, or the users of `aclfile`
/// (never both, as in Redis). `Err` is the reason to stop.
pub fn load_at_start(engine: &Engine) -> Result<(), String> {
    let lines = std::mem::take(&mut *engine.config.acl_users.lock());
    let path = engine.config.get("aclfile");
    if !lines.is_empty() && !path.is_empty() {
        return Err(
            "Configuring Redis with users defined in redis.conf and at the same \
                    setting an ACL file path is invalid. This setup is very likely to lead to \
                    configuration errors and security holes, please define either an ACL file \
                    or declare users directly in your redis.conf, but not both."
                .into(),
        );
    }
    if !path.is_empty() {
        return file::load_file(engine, &path)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"));
    }
    let all = engine.config.get("acl-pubsub-default") == "allchannels";
    for words in lines {
        let Some((name, rules)) = words.split_first() else {
            continue;
        };
        // As Redis, a `user default` line starts from `reset` (which shows
        // as `sanitize-payload`); other users start new.
        let reset = (name == "default").then(|| Bytes::from_static(b"reset"));
        let ops: Vec<Bytes> = reset
            .into_iter()
            .chain(rules.iter().map(|r| Bytes::copy_from_slice(r.as_bytes())))
            .collect();
        engine.acl.set_user(name, &ops, all).map_err(|e| {
            format!(
                "Error in user declaration '{name}': {}",
                e.strip_prefix("ERR ").unwrap_or(&e)
            )
        })?;
    }
    Ok(())
}

/// The check of a command called from a script (`redis.call`): `Some` is
/// the error reply of a refusal, logged with context `lua`.
pub(crate) fn check_in_script(
    ctx: &crate::ctx::Ctx<'_>,
    id: usize,
    argv: &[Bytes],
) -> Option<keel_resp::Frame> {
    let user = ctx.session.user.as_ref().filter(|u| !u.free())?;
    admit(ctx.engine, ctx.session, user, id, argv, Context::Lua)
        .err()
        .map(|e| keel_resp::Frame::Error(Bytes::from(e.to_string())))
}

/// After `name`'s rules changed: disconnect its clients subscribed to a
/// channel or pattern it may no longer use, as Redis does.
pub fn kill_unpermitted_subscribers(engine: &Engine, name: &str, except: u64) -> bool {
    let Some(user) = engine.acl.get(name.as_bytes()) else {
        return false;
    };
    let handles: Vec<Arc<crate::session::ClientHandle>> = engine
        .clients
        .lock()
        .values()
        .filter(|h| *h.user.lock().as_ref() == *name)
        .filter(|h| h.subs.iter().any(|n| n.load(Ordering::Relaxed) > 0))
        .cloned()
        .collect();
    let mut killed_self = false;
    for h in handles {
        let [channels, patterns, shards] = engine.pubsub.names_of(h.id);
        let denied = channels
            .iter()
            .chain(shards.iter())
            .any(|c| !engine.acl.channel_allowed(&user, c, false))
            || patterns
                .iter()
                .any(|p| !engine.acl.channel_allowed(&user, p, true));
        if denied {
            if h.id == except {
                killed_self = true;
            } else {
                h.kill();
            }
        }
    }
    killed_self
}
