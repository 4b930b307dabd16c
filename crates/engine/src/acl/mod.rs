//! Access control: users, their rules, the permission check and the ACL log.
//!
//! A user is a root selector plus optional extra selectors; each selector holds
//! a bitset over command ids, key patterns and channel patterns. Sessions hold
//! an `Arc<User>`; a user whose root selector allows everything is marked
//! `free`, so the executor pays one atomic load per command for it.
//! Changing a user takes effect at once for its connected clients (they share
//! the `Arc`); deleting one disconnects them, as Redis does.

pub mod file;
pub mod info;
pub mod rules;
pub mod state;

use crate::kernel::CommandTable;
use crate::kernel::Engine;
use bytes::Bytes;

pub use self::info::{CommandIndex, CommandInfo, Denied};
pub use self::state::{Acl, Context, LogEntry, User};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Acl {
    /// The ACL of an engine serving `table`, with the default user alone:
    /// `on nopass ~* &* +@all`, or a password when `requirepass` is set.
    pub fn new(requirepass: &str, table: CommandTable) -> Acl {
        Acl::with_info(requirepass, command_info(&table))
    }
}

/// What the ACL needs to know of the commands in `table`.
pub fn command_info(table: &CommandTable) -> CommandInfo {
    let mut categories: Vec<&'static str> = crate::declare::CATEGORY_ORDER
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
    let top = (0..table.top_level).map(|id| table.full_name(id)).collect();
    let subs = (table.top_level..table.len())
        .map(|id| (table.full_name(id), table.parent[id]))
        .collect();
    let no_auth = table
        .specs
        .iter()
        .map(|s| s.flags.contains(crate::declare::Flags::NO_AUTH))
        .collect();
    let finders = table
        .specs
        .iter()
        .map(|s| match s.keys {
            crate::declare::Keys::Find(crate::declare::KeyFinder(f)) => Some(f),
            _ => None,
        })
        .collect();
    CommandInfo {
        table: CommandIndex::new(top, subs),
        no_auth,
        finders,
        categories,
        cats,
        key_specs,
        key_needs,
        set_id,
        channels,
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
    ctx: &crate::kernel::Ctx<'_>,
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
