//! The ACL command: users (SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI),
//! categories (CAT), passwords (GENPASS), the ACL log (LOG), the ACL file
//! (SAVE, LOAD) and DRYRUN. The rules themselves live in `keel_engine::acl`.

use bytes::Bytes;
use keel_engine::args::Args;
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;

const ADMIN: Flags = Flags::ADMIN
    .union(Flags::NOSCRIPT)
    .union(Flags::LOADING)
    .union(Flags::STALE);
const PLAIN: Flags = Flags::NOSCRIPT.union(Flags::LOADING).union(Flags::STALE);

pub(crate) const ACL: CommandSpec = CommandSpec {
    name: "ACL",
    group: Group::Server,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for Access List Control commands ",
    since: "6.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &ACL_CAT,
        &ACL_DELUSER,
        &ACL_DRYRUN,
        &ACL_GETUSER,
        &ACL_GENPASS,
        &ACL_LIST,
        &ACL_LOAD,
        &ACL_LOG,
        &ACL_SAVE,
        &ACL_SETUSER,
        &ACL_USERS,
        &ACL_WHOAMI,
        &ACL_HELP,
    ],
    run: keel_engine::subcommands::container,
};

pub(crate) const ACL_CAT: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|CAT",
    -2,
    PLAIN,
    "List the ACL categories or the commands inside a category",
    "6.0.0",
    acl_cat,
);
pub(crate) const ACL_DELUSER: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|DELUSER",
    -3,
    ADMIN,
    "Remove the specified ACL users and the associated rules",
    "6.0.0",
    acl_deluser,
);
pub(crate) const ACL_DRYRUN: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|DRYRUN",
    -4,
    ADMIN,
    "Returns whether the user can execute the given command without executing the command.",
    "7.0.0",
    acl_dryrun,
);
pub(crate) const ACL_GETUSER: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|GETUSER",
    3,
    ADMIN,
    "Get the rules for a specific ACL user",
    "6.0.0",
    acl_getuser,
);
pub(crate) const ACL_GENPASS: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|GENPASS",
    -2,
    PLAIN,
    "Generate a pseudorandom secure password to use for ACL users",
    "6.0.0",
    acl_genpass,
);
pub(crate) const ACL_LIST: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|LIST",
    2,
    ADMIN,
    "List the current ACL rules in ACL config file format",
    "6.0.0",
    acl_list,
);
pub(crate) const ACL_LOAD: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|LOAD",
    2,
    ADMIN,
    "Reload the ACLs from the configured ACL file",
    "6.0.0",
    acl_load,
);
pub(crate) const ACL_LOG: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|LOG",
    -2,
    ADMIN,
    "List latest events denied because of ACLs in place",
    "6.0.0",
    acl_log,
);
pub(crate) const ACL_SAVE: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|SAVE",
    2,
    ADMIN,
    "Save the current ACL rules in the configured ACL file",
    "6.0.0",
    acl_save,
);
pub(crate) const ACL_SETUSER: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|SETUSER",
    -3,
    ADMIN,
    "Modify or create the rules for a specific ACL user",
    "6.0.0",
    acl_setuser,
);
pub(crate) const ACL_USERS: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|USERS",
    2,
    ADMIN,
    "List the username of all the configured ACL rules",
    "6.0.0",
    acl_users,
);
pub(crate) const ACL_WHOAMI: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|WHOAMI",
    2,
    PLAIN,
    "Return the name of the user associated to the current connection",
    "6.0.0",
    acl_whoami,
);
pub(crate) const ACL_HELP: CommandSpec = CommandSpec::admin_subcommand(
    "ACL|HELP",
    2,
    Flags::LOADING.union(Flags::STALE),
    "Show helpful text about the different subcommands",
    "6.0.0",
    acl_help,
);

pub static COMMANDS: &[&CommandSpec] = &[&ACL];

fn bulk(s: impl Into<String>) -> Frame {
    Frame::Bulk(Bytes::from(s.into()))
}

fn pubsub_all(ctx: &Ctx<'_>) -> bool {
    ctx.engine.config.get("acl-pubsub-default") == "allchannels"
}

fn acl_setuser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = String::from_utf8_lossy(args.next_arg()?).into_owned();
    let ops = args.rest();
    let all = pubsub_all(ctx);
    ctx.engine
        .acl
        .set_user(&name, ops, all)
        .map_err(CmdError::Other)?;
    if keel_engine::acl::kill_unpermitted_subscribers(ctx.engine, &name, ctx.session.id()) {
        ctx.session.close_after_reply = true;
    }
    Ok(Frame::ok())
}

fn acl_getuser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let Some(user) = ctx.engine.acl.get(args.next_arg()?) else {
        return Ok(Frame::Null);
    };
    let s = user.state();
    let info = ctx.engine.acl.info();
    let selector = |sel: &keel_engine::acl::rules::Selector| {
        Frame::Map(vec![
            (bulk("commands"), bulk(sel.describe_commands(info))),
            (bulk("keys"), bulk(sel.describe_keys())),
            (bulk("channels"), bulk(sel.describe_channels())),
        ])
    };
    let mut fields = vec![
        (
            bulk("flags"),
            Frame::Set(s.flags().into_iter().map(bulk).collect()),
        ),
        (
            bulk("passwords"),
            Frame::Array(s.passwords.iter().map(|p| bulk(p.clone())).collect()),
        ),
    ];
    if let Frame::Map(root) = selector(&s.root) {
        fields.extend(root);
    }
    fields.push((
        bulk("selectors"),
        Frame::Array(s.selectors.iter().map(selector).collect()),
    ));
    Ok(Frame::Map(fields))
}

fn acl_deluser(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let names: Vec<String> = args
        .rest()
        .iter()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .collect();
    if names.iter().any(|n| n == "default") {
        return Err(CmdError::err("The 'default' user cannot be removed"));
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let deleted = ctx.engine.acl.delete(&refs);
    if keel_engine::acl::kill_clients_of(ctx.engine, &refs, Some(ctx.session.id())) {
        ctx.session.close_after_reply = true;
    }
    Ok(Frame::Integer(deleted as i64))
}

pub(crate) fn list_lines(ctx: &Ctx<'_>) -> Vec<String> {
    let info = ctx.engine.acl.info();
    ctx.engine
        .acl
        .users()
        .iter()
        .map(|u| format!("user {} {}", u.name, u.state().describe(info)))
        .collect()
}

fn acl_list(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Array(
        list_lines(ctx).into_iter().map(bulk).collect(),
    ))
}

fn acl_users(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Array(
        ctx.engine.acl.names().into_iter().map(bulk).collect(),
    ))
}

fn acl_whoami(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = match &ctx.session.user {
        Some(u) => u.name.clone(),
        None => "default".into(),
    };
    Ok(bulk(name))
}

fn acl_cat(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let info = ctx.engine.acl.info();
    let Some(cat) = args.next_opt() else {
        return Ok(Frame::Array(
            info.categories.iter().map(|c| bulk(*c)).collect(),
        ));
    };
    if args.remaining() > 0 {
        return Err(CmdError::WrongArity("acl|cat".into()));
    }
    let Some(c) = info.category(cat) else {
        return Err(CmdError::err(format!(
            "Unknown category '{}'",
            String::from_utf8_lossy(cat)
        )));
    };
    let table = &ctx.engine.commands;
    let names = (0..table.len())
        .filter(|&id| info.cats.get(id).is_some_and(|m| m & (1 << c) != 0))
        .map(|id| bulk(table.full_name(id)))
        .collect();
    Ok(Frame::Array(names))
}

fn acl_genpass(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let bits = match args.next_opt() {
        None => 256,
        Some(a) => keel_store::num::parse_i64(a).ok_or(CmdError::NotInteger)?,
    };
    if args.remaining() > 0 {
        return Err(CmdError::WrongArity("acl|genpass".into()));
    }
    if !(1..=4096).contains(&bits) {
        return Err(CmdError::err(
            "ACL GENPASS argument must be the number of bits for the output password, a \
             positive number up to 4096",
        ));
    }
    let chars = (bits as usize).div_ceil(4);
    let mut raw = vec![0u8; chars.div_ceil(2)];
    random_bytes(&mut raw);
    let mut hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
    hex.truncate(chars);
    Ok(bulk(hex))
}

/// Fill `buf` from the system's random source; the clock mixed with a
/// counter stands in only if it cannot be read.
fn random_bytes(buf: &mut [u8]) {
    use std::io::Read;
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        if f.read_exact(buf).is_ok() {
            return;
        }
    }
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
        | 1;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

fn acl_log(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let count = match args.next_opt() {
        None => 10,
        Some(a) if keel_engine::args::is(a, "RESET") => {
            ctx.engine.acl.log_reset();
            return Ok(Frame::ok());
        }
        Some(a) => keel_store::num::parse_i64(a).ok_or(CmdError::NotInteger)?,
    };
    if args.remaining() > 0 {
        return Err(CmdError::WrongArity("acl|log".into()));
    }
    let count = usize::try_from(count).unwrap_or(0);
    let now = ctx.now_ms();
    let entries = ctx
        .engine
        .acl
        .log_entries(count)
        .into_iter()
        .map(|e| {
            Frame::Map(vec![
                (bulk("count"), Frame::Integer(e.count as i64)),
                (bulk("reason"), bulk(e.reason)),
                (bulk("context"), bulk(e.context)),
                (bulk("object"), bulk(e.object)),
                (bulk("username"), bulk(e.username)),
                (
                    bulk("age-seconds"),
                    Frame::Double(now.saturating_sub(e.created_ms) as f64 / 1000.0),
                ),
                (bulk("client-info"), bulk(e.client_info)),
            ])
        })
        .collect();
    Ok(Frame::Array(entries))
}

fn acl_dryrun(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = args.next_arg()?;
    let Some(user) = ctx.engine.acl.get(name) else {
        return Err(CmdError::err(format!(
            "User '{}' not found",
            String::from_utf8_lossy(name)
        )));
    };
    let argv = args.rest();
    let engine = ctx.engine;
    let id = match engine.resolve(argv) {
        Ok(id) => id,
        Err(CmdError::UnknownCommand { .. }) | Err(CmdError::UnknownSubcommand { .. }) => {
            return Err(CmdError::err(format!(
                "Command '{}' not found",
                String::from_utf8_lossy(&argv[0])
            )));
        }
        Err(e) => return Err(e),
    };
    match engine.acl.check(&user, id, argv) {
        Ok(()) => Ok(Frame::ok()),
        Err(d) => Ok(bulk(keel_engine::acl::dryrun_text(
            d,
            &engine.commands.full_name(id),
            argv,
        ))),
    }
}

const NO_ACLFILE: &str = "This Redis instance is not configured to use an ACL file. You may want \
     to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you \
     have a Redis configuration file set) in order to store users in the Redis configuration.";

fn acl_save(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let path = ctx.engine.config.get("aclfile");
    if path.is_empty() {
        return Err(CmdError::err(NO_ACLFILE));
    }
    let mut text = String::new();
    for line in list_lines(ctx) {
        text.push_str(&line);
        text.push('\n');
    }
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let written = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return Err(CmdError::err(
            "There was an error trying to save the ACLs. Please check the server logs for more \
             information",
        ));
    }
    Ok(Frame::ok())
}

fn acl_load(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let path = ctx.engine.config.get("aclfile");
    if path.is_empty() {
        return Err(CmdError::err(NO_ACLFILE));
    }
    keel_engine::acl::file::load_file(ctx.engine, &path).map_err(CmdError::err)?;
    // Like Redis, every client logged in as a user other than `default` is
    // disconnected (the caller too, after this reply): its user was loaded
    // again or is gone.
    let mut all: Vec<String> = ctx
        .engine
        .clients
        .lock()
        .values()
        .map(|h| h.user.lock().to_string())
        .filter(|u| u != "default")
        .collect();
    all.sort();
    all.dedup();
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    if keel_engine::acl::kill_clients_of(ctx.engine, &refs, Some(ctx.session.id())) {
        ctx.session.close_after_reply = true;
    }
    Ok(Frame::ok())
}

fn acl_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.",
    ]))
}
