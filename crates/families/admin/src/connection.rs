//! Connection commands: PING, ECHO, HELLO, AUTH, SELECT, QUIT, RESET and the CLIENT
//! container (ID, SETNAME, GETNAME, LIST, INFO, KILL, SETINFO, NO-EVICT, NO-TOUCH,
//! HELP). Everything here acts on the calling session, or on other clients
//! through their shared `ClientHandle`.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::pause::PauseMode;
use keel_engine::session::ClientHandle;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::{Frame, Protocol};
use std::sync::Arc;

use keel_engine::version::REDIS_VERSION;

pub static COMMANDS: &[&CommandSpec] = &[
    &PING, &ECHO, &HELLO, &AUTH, &SELECT, &QUIT, &RESET, &CLIENT, &MONITOR,
];

/// Flags Redis gives the commands a client may send before authenticating.
const PRE_AUTH: Flags = Flags::NOSCRIPT
    .union(Flags::LOADING)
    .union(Flags::STALE)
    .union(Flags::FAST)
    .union(Flags::NO_AUTH)
    .union(Flags::ALLOW_BUSY);

const CLIENT_SUB: Flags = Flags::NOSCRIPT.union(Flags::LOADING).union(Flags::STALE);
const CLIENT_ADMIN: Flags = CLIENT_SUB.union(Flags::ADMIN);

pub(crate) const PING: CommandSpec = CommandSpec {
    name: "PING",
    group: Group::Connection,
    arity: -1,
    flags: Flags::FAST,
    keys: Keys::None,
    summary: "Returns the server's liveliness response.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: ping,
};

fn ping(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if ctx.session.pubsub.is_some()
        && ctx.session.proto == Protocol::Resp2
        && keel_engine::pubsub::subscribed(ctx.session)
        && args.remaining() <= 1
    {
        // Subscribed RESP2 clients get a message-shaped answer.
        let arg = args.next_opt().cloned().unwrap_or_default();
        return Ok(Frame::Array(vec![
            Frame::Bulk(Bytes::from_static(b"pong")),
            Frame::Bulk(arg),
        ]));
    }
    match args.remaining() {
        0 => Ok(Frame::simple("PONG")),
        1 => Ok(Frame::Bulk(args.next_arg()?.clone())),
        _ => Err(CmdError::WrongArity("ping".into())),
    }
}

pub(crate) const ECHO: CommandSpec = CommandSpec {
    name: "ECHO",
    group: Group::Connection,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::FAST),
    keys: Keys::None,
    summary: "Returns the given string.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: echo,
};

fn echo(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Bulk(args.next_arg()?.clone()))
}

/// Check credentials against the ACL users. `user` is `None` for the
/// one-argument AUTH form, which names `default`. A failure is logged in ACL
/// LOG under the command's name.
fn check_credentials(
    ctx: &Ctx<'_>,
    argv: &[Bytes],
    user: Option<&[u8]>,
    pass: &[u8],
) -> Result<std::sync::Arc<keel_engine::acl::User>, CmdError> {
    let acl = &ctx.engine.acl;
    if user.is_none() && acl.default_user().state().nopass {
        return Err(CmdError::err(
            "AUTH <password> called without any password configured for the default user. \
             Are you sure your configuration is correct?",
        ));
    }
    let name = user.unwrap_or(b"default");
    if let Some(u) = acl.authenticate(name, pass) {
        return Ok(u);
    }
    // The object is the command's name as the client sent it.
    let cmd = argv
        .first()
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_default();
    keel_engine::acl::log_denial(
        ctx.engine,
        ctx.session,
        "auth",
        keel_engine::acl::Context::Toplevel,
        cmd,
        String::from_utf8_lossy(name).into_owned(),
        argv,
    );
    Err(CmdError::WrongPass)
}

/// Log the session in as `user`.
fn login(ctx: &mut Ctx<'_>, user: std::sync::Arc<keel_engine::acl::User>) {
    *ctx.session.handle.user.lock() = std::sync::Arc::from(user.name.as_str());
    ctx.session.user = Some(user);
    ctx.session.authenticated = true;
}

/// Client names and library attributes must be printable ASCII without spaces,
/// so CLIENT LIST stays parseable.
fn valid_client_attr(v: &[u8]) -> bool {
    v.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

fn set_client_name(ctx: &mut Ctx<'_>, name: &Bytes) -> Result<(), CmdError> {
    if !valid_client_attr(name) {
        return Err(CmdError::err(
            "Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    ctx.session.set_name(Some(name.clone()));
    Ok(())
}

pub(crate) const HELLO: CommandSpec = CommandSpec {
    name: "HELLO",
    group: Group::Connection,
    arity: -1,
    flags: PRE_AUTH,
    keys: Keys::None,
    summary: "Handshakes with the Redis server.",
    since: "6.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: hello,
};

fn hello(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let proto = match args.next_opt() {
        None => ctx.proto(),
        Some(v) => match keel_store::num::parse_i64(v) {
            None => {
                return Err(CmdError::err(
                    "Protocol version is not an integer or out of range",
                ))
            }
            Some(2) => Protocol::Resp2,
            Some(3) => Protocol::Resp3,
            Some(_) => return Err(CmdError::msg("NOPROTO unsupported protocol version")),
        },
    };
    let mut auth: Option<(&Bytes, &Bytes)> = None;
    let mut name: Option<&Bytes> = None;
    while let Some(opt) = args.next_opt() {
        if is(opt, "AUTH") && args.remaining() >= 2 {
            let at = args.argv().len() - args.remaining();
            keel_engine::monitor::redact(ctx, at);
            keel_engine::monitor::redact(ctx, at + 1);
            let user = args.next_arg()?;
            auth = Some((user, args.next_arg()?));
        } else if is(opt, "SETNAME") && args.remaining() >= 1 {
            name = Some(args.next_arg()?);
        } else {
            return Err(CmdError::err(format!(
                "Syntax error in HELLO option '{}'",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    if let Some((user, pass)) = auth {
        let user = check_credentials(ctx, args.argv(), Some(user), pass)?;
        login(ctx, user);
    }
    if !ctx.session.authenticated {
        return Err(CmdError::msg(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise \
             the HELLO AUTH <user> <pass> option can be used to authenticate the client and \
             select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = name {
        set_client_name(ctx, name)?;
    }
    ctx.session.set_proto(proto);
    let proto_num = if proto == Protocol::Resp3 { 3 } else { 2 };
    let field = |k: &'static str| Frame::Bulk(Bytes::from_static(k.as_bytes()));
    Ok(Frame::Map(vec![
        (field("server"), field("redis")),
        (field("version"), field(REDIS_VERSION)),
        (field("proto"), Frame::Integer(proto_num)),
        (field("id"), Frame::Integer(ctx.session.id() as i64)),
        (field("mode"), field("standalone")),
        (field("role"), field("master")),
        (field("modules"), Frame::Array(Vec::new())),
    ]))
}

pub(crate) const AUTH: CommandSpec = CommandSpec {
    name: "AUTH",
    group: Group::Connection,
    arity: -2,
    flags: PRE_AUTH,
    keys: Keys::None,
    summary: "Authenticates the connection.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of passwords defined for the user",
    subcommands: &[],
    run: auth,
};

fn auth(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let (user, pass) = match args.remaining() {
        1 => (None, args.next_arg()?),
        2 => (Some(args.next_arg()?.as_ref()), args.next_arg()?),
        _ => return Err(CmdError::Syntax),
    };
    for pos in 1..args.argv().len() {
        keel_engine::monitor::redact(ctx, pos);
    }
    // A failed attempt leaves an already authenticated connection authenticated.
    let user = check_credentials(ctx, args.argv(), user, pass)?;
    login(ctx, user);
    Ok(Frame::ok())
}

pub(crate) const SELECT: CommandSpec = CommandSpec {
    name: "SELECT",
    group: Group::Connection,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::FAST),
    keys: Keys::None,
    summary: "Changes the selected database.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: select,
};

fn select(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let db = keel_engine::args::parse_db_index(args.next_arg()?, ctx.engine.databases())?;
    ctx.session.set_db(db);
    Ok(Frame::ok())
}

pub(crate) const QUIT: CommandSpec = CommandSpec {
    name: "QUIT",
    group: Group::Connection,
    arity: -1,
    flags: PRE_AUTH.union(Flags::TX_CONTROL),
    keys: Keys::None,
    summary: "Closes the connection.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: quit,
};

fn quit(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.session.close_after_reply = true;
    // Only the reply is left to send: the client is gone for everyone else.
    ctx.engine.disconnect(ctx.session);
    Ok(Frame::ok())
}

pub(crate) const RESET: CommandSpec = CommandSpec {
    name: "RESET",
    group: Group::Connection,
    arity: 1,
    flags: PRE_AUTH.union(Flags::TX_CONTROL),
    keys: Keys::None,
    summary: "Resets the connection.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: reset,
};

fn reset(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    crate::transactions::end_transaction(ctx);
    ctx.session.set_db(0);
    ctx.session.set_proto(Protocol::Resp2);
    ctx.session.set_name(None);
    ctx.session.set_no_evict(false);
    ctx.session.set_no_touch(false);
    keel_engine::monitor::stop(ctx.engine, ctx.session);
    ctx.engine.pubsub.drop_all(ctx.session);
    ctx.engine.tracking.disable(ctx.session);
    // Replies are switched back on before RESET answers; a SKIP in effect
    // still hides its answer.
    ctx.session.reply_flags &= keel_engine::session::REPLY_SKIP;
    let default = ctx.engine.acl.default_user();
    let needs_auth = default.needs_auth();
    login(ctx, default);
    if needs_auth {
        ctx.session.authenticated = false;
    }
    Ok(Frame::simple("RESET"))
}

pub const CLIENT: CommandSpec = CommandSpec {
    name: "CLIENT",
    group: Group::Connection,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for client connection commands.",
    since: "2.4.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &CLIENT_ID,
        &CLIENT_SETNAME,
        &CLIENT_GETNAME,
        &CLIENT_LIST,
        &CLIENT_INFO,
        &CLIENT_KILL,
        &CLIENT_SETINFO,
        &CLIENT_NO_EVICT,
        &CLIENT_NO_TOUCH,
        &CLIENT_PAUSE,
        &CLIENT_UNPAUSE,
        &CLIENT_REPLY,
        &CLIENT_UNBLOCK,
        &CLIENT_TRACKING,
        &CLIENT_CACHING,
        &CLIENT_GETREDIR,
        &CLIENT_TRACKINGINFO,
        &CLIENT_HELP,
    ],
    run: keel_engine::subcommands::container,
};

pub(crate) const CLIENT_UNBLOCK: CommandSpec = CommandSpec {
    name: "CLIENT|UNBLOCK",
    group: Group::Connection,
    arity: -3,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Unblocks a client blocked by a blocking command from a different connection.",
    since: "5.0.0",
    complexity: "O(log N) where N is the number of client connections",
    subcommands: &[],
    run: client_unblock,
};

fn client_unblock(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if args.remaining() > 2 {
        // Redis names the subcommand as it was typed.
        let sub = args
            .argv()
            .get(1)
            .map(|a| String::from_utf8_lossy(a).into_owned());
        return Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            sub.unwrap_or_default()
        )));
    }
    let id = keel_engine::args::parse_i64(args.next_arg()?)?;
    let error = match args.next_opt() {
        None => None,
        Some(a) if a.eq_ignore_ascii_case(b"TIMEOUT") => None,
        Some(a) if a.eq_ignore_ascii_case(b"ERROR") => Some(Frame::error(
            "UNBLOCKED client unblocked via CLIENT UNBLOCK",
        )),
        Some(_) => {
            return Err(CmdError::err(
                "CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let Ok(id) = u64::try_from(id) else {
        return Ok(Frame::Integer(0));
    };
    let engine = ctx.engine;
    Ok(Frame::Integer(i64::from(
        engine.unblock_client(ctx, id, error),
    )))
}

pub(crate) const CLIENT_ID: CommandSpec = CommandSpec {
    name: "CLIENT|ID",
    group: Group::Connection,
    arity: 2,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Returns the unique client ID of the connection.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_id,
};

fn client_id(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Integer(ctx.session.id() as i64))
}

pub(crate) const CLIENT_SETNAME: CommandSpec = CommandSpec {
    name: "CLIENT|SETNAME",
    group: Group::Connection,
    arity: 3,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Sets the connection name.",
    since: "2.6.9",
    complexity: "O(1)",
    subcommands: &[],
    run: client_setname,
};

fn client_setname(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let name = args.next_arg()?;
    set_client_name(ctx, name)?;
    Ok(Frame::ok())
}

pub(crate) const CLIENT_GETNAME: CommandSpec = CommandSpec {
    name: "CLIENT|GETNAME",
    group: Group::Connection,
    arity: 2,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Returns the name of the connection.",
    since: "2.6.9",
    complexity: "O(1)",
    subcommands: &[],
    run: client_getname,
};

fn client_getname(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(ctx
        .session
        .handle
        .name
        .lock()
        .clone()
        .map_or(Frame::Null, Frame::Bulk))
}

/// One CLIENT LIST / CLIENT INFO line, in Redis 7.2's field order. `argv` is
/// the running command's when the line describes the caller.
fn client_line(ctx: &Ctx<'_>, h: &ClientHandle, argv: &[Bytes]) -> String {
    keel_engine::clients::client_line_for(ctx.engine, ctx.now_ms(), ctx.session.id(), h, argv)
}

/// Text replies that Redis sends as verbatim strings in RESP3.
fn verbatim(s: String) -> Frame {
    Frame::Verbatim("txt", Bytes::from(s))
}

/// The client types of CLIENT LIST TYPE / CLIENT KILL TYPE, as the classes
/// of `client-output-buffer-limit` (a subscribed client is `pubsub`, any other
/// `normal`); `master` is a replica's link to its master (see [`type_of`]).
fn parse_client_type(t: &[u8]) -> Result<usize, CmdError> {
    use keel_engine::outbuf::{NORMAL, PUBSUB, REPLICA};
    if is(t, "normal") {
        Ok(NORMAL)
    } else if is(t, "pubsub") {
        Ok(PUBSUB)
    } else if is(t, "replica") || is(t, "slave") {
        Ok(REPLICA)
    } else if is(t, "master") {
        Ok(usize::MAX)
    } else {
        Err(CmdError::err(format!(
            "Unknown client type '{}'",
            String::from_utf8_lossy(t)
        )))
    }
}

/// A client's type as [`parse_client_type`] names it.
fn type_of(h: &ClientHandle) -> usize {
    if h.master.load(std::sync::atomic::Ordering::Relaxed) {
        usize::MAX
    } else {
        keel_engine::client::class_of(h)
    }
}

fn all_clients(ctx: &Ctx<'_>) -> Vec<Arc<ClientHandle>> {
    ctx.engine.clients.lock().values().cloned().collect()
}

pub(crate) const CLIENT_LIST: CommandSpec = CommandSpec {
    name: "CLIENT|LIST",
    group: Group::Connection,
    arity: -2,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Lists open connections.",
    since: "2.4.0",
    complexity: "O(N) where N is the number of client connections",
    subcommands: &[],
    run: client_list,
};

fn client_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let clients: Vec<Arc<ClientHandle>> = match args.next_opt() {
        None => all_clients(ctx),
        Some(opt) if is(opt, "TYPE") && args.remaining() == 1 => {
            let class = parse_client_type(args.next_arg()?)?;
            all_clients(ctx)
                .into_iter()
                .filter(|h| type_of(h) == class)
                .collect()
        }
        Some(opt) if is(opt, "ID") && args.remaining() >= 1 => {
            let mut ids = Vec::new();
            for raw in args.rest() {
                let id = keel_store::num::parse_i64(raw)
                    .ok_or_else(|| CmdError::err("Invalid client ID"))?;
                ids.push(id);
            }
            let table = ctx.engine.clients.lock();
            ids.iter()
                .filter_map(|&id| u64::try_from(id).ok().and_then(|id| table.get(&id)))
                .cloned()
                .collect()
        }
        Some(_) => return Err(CmdError::Syntax),
    };
    let mut out = String::new();
    for h in &clients {
        out.push_str(&client_line(ctx, h, args.argv()));
    }
    Ok(verbatim(out))
}

pub(crate) const CLIENT_INFO: CommandSpec = CommandSpec {
    name: "CLIENT|INFO",
    group: Group::Connection,
    arity: 2,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Returns information about the connection.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_info,
};

fn client_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let handle = ctx.session.handle.clone();
    Ok(verbatim(client_line(ctx, &handle, args.argv())))
}

pub(crate) const CLIENT_KILL: CommandSpec = CommandSpec {
    name: "CLIENT|KILL",
    group: Group::Connection,
    arity: -3,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Terminates open connections.",
    since: "2.4.0",
    complexity: "O(N) where N is the number of client connections",
    subcommands: &[],
    run: client_kill,
};

#[derive(Default)]
struct KillFilter<'a> {
    id: Option<u64>,
    addr: Option<&'a [u8]>,
    laddr: Option<&'a [u8]>,
    user: Option<&'a [u8]>,
    /// The client type (`client-output-buffer-limit` class) asked for.
    class: Option<usize>,
}

impl KillFilter<'_> {
    fn matches(&self, h: &ClientHandle) -> bool {
        self.id.is_none_or(|id| h.id == id)
            && self.addr.is_none_or(|a| h.addr.as_bytes() == a)
            && self.laddr.is_none_or(|a| h.laddr.as_bytes() == a)
            && self.user.is_none_or(|u| h.user.lock().as_bytes() == u)
            && self.class.is_none_or(|c| type_of(h) == c)
    }
}

fn client_kill(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // The old form, CLIENT KILL ip:port, replies OK and may kill the caller itself.
    if args.remaining() == 1 {
        let addr = args.next_arg()?;
        let filter = KillFilter {
            addr: Some(addr),
            ..KillFilter::default()
        };
        let killed = kill_matching(ctx, &filter, false);
        return if killed == 0 {
            Err(CmdError::err("No such client"))
        } else {
            Ok(Frame::ok())
        };
    }
    let mut filter = KillFilter::default();
    let mut skipme = true;
    while let Some(opt) = args.next_opt() {
        let Some(val) = args.next_opt() else {
            return Err(CmdError::Syntax);
        };
        if is(opt, "ID") {
            match keel_store::num::parse_i64(val) {
                Some(id) if id > 0 => filter.id = Some(id as u64),
                _ => return Err(CmdError::err("client-id should be greater than 0")),
            }
        } else if is(opt, "TYPE") {
            filter.class = Some(parse_client_type(val)?);
        } else if is(opt, "ADDR") {
            filter.addr = Some(val);
        } else if is(opt, "LADDR") {
            filter.laddr = Some(val);
        } else if is(opt, "USER") {
            if ctx.engine.acl.get(val).is_none() {
                return Err(CmdError::err(format!(
                    "No such user '{}'",
                    String::from_utf8_lossy(val)
                )));
            }
            filter.user = Some(val);
        } else if is(opt, "SKIPME") {
            skipme = if is(val, "yes") {
                true
            } else if is(val, "no") {
                false
            } else {
                return Err(CmdError::Syntax);
            };
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let killed = kill_matching(ctx, &filter, skipme);
    Ok(Frame::Integer(killed as i64))
}

/// Kill every client the filter selects and return how many. The caller is not
/// closed at once: its reply is written first, then the connection closes.
fn kill_matching(ctx: &mut Ctx<'_>, filter: &KillFilter<'_>, skipme: bool) -> usize {
    let me = ctx.session.id();
    let victims: Vec<Arc<ClientHandle>> = ctx
        .engine
        .clients
        .lock()
        .values()
        .filter(|h| filter.matches(h) && !(skipme && h.id == me))
        .cloned()
        .collect();
    for h in &victims {
        if h.id == me {
            ctx.session.close_after_reply = true;
        } else {
            h.kill();
        }
    }
    victims.len()
}

/// A reply that writes nothing: what Redis sends for CLIENT REPLY OFF/SKIP and
/// for a repeated MONITOR.
fn no_reply() -> Frame {
    Frame::Encoded(Bytes::new())
}

pub(crate) const MONITOR: CommandSpec = CommandSpec {
    name: "MONITOR",
    group: Group::Server,
    arity: 1,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Streams every command the server runs, as it runs it.",
    since: "1.0.0",
    complexity: "",
    subcommands: &[],
    run: monitor,
};

fn monitor(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    // Inside EXEC a client expects one reply per command, which a stream of
    // lines would break.
    if ctx.nested > 0 {
        return Err(CmdError::err(
            "MONITOR isn't allowed for DENY BLOCKING client",
        ));
    }
    // Redis ignores MONITOR from a client that already monitors.
    if ctx.session.monitor.is_some() {
        return Ok(no_reply());
    }
    keel_engine::monitor::start(ctx.engine, ctx.session);
    Ok(Frame::ok())
}

pub(crate) const CLIENT_PAUSE: CommandSpec = CommandSpec {
    name: "CLIENT|PAUSE",
    group: Group::Connection,
    arity: -3,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Holds back clients' commands for a while.",
    since: "2.9.50",
    complexity: "O(1)",
    subcommands: &[],
    run: client_pause,
};

fn client_pause(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if args.remaining() > 2 {
        let sub = args
            .argv()
            .get(1)
            .map(|s| String::from_utf8_lossy(s).into_owned());
        return Err(CmdError::err(format!(
            "unknown subcommand or wrong number of arguments for '{}'. Try CLIENT HELP.",
            sub.unwrap_or_default()
        )));
    }
    let timeout = args.next_arg()?;
    let mode = match args.next_opt() {
        None => PauseMode::All,
        Some(m) if is(m, "WRITE") => PauseMode::Write,
        Some(m) if is(m, "ALL") => PauseMode::All,
        Some(_) => return Err(CmdError::err("CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let ms = keel_store::num::parse_i64(timeout)
        .ok_or_else(|| CmdError::err("timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::err("timeout is negative"));
    }
    let now = ctx.now_ms();
    // Like Redis, a timeout of 0 is a deadline already passed, and one so large
    // that the deadline overflows wraps into the past: neither pauses anything.
    let end = if ms > 0 {
        (now as i64).wrapping_add(ms)
    } else {
        0
    };
    ctx.engine.pause.pause(mode, end, now);
    Ok(Frame::ok())
}

pub(crate) const CLIENT_UNPAUSE: CommandSpec = CommandSpec {
    name: "CLIENT|UNPAUSE",
    group: Group::Connection,
    arity: 2,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Ends a client pause at once.",
    since: "6.2.0",
    complexity: "O(N) Where N is the number of paused clients",
    subcommands: &[],
    run: client_unpause,
};

fn client_unpause(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    ctx.engine.pause.unpause();
    Ok(Frame::ok())
}

pub(crate) const CLIENT_REPLY: CommandSpec = CommandSpec {
    name: "CLIENT|REPLY",
    group: Group::Connection,
    arity: 3,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Turns the connection's replies on or off, or skips the next one.",
    since: "3.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_reply,
};

fn client_reply(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    use keel_engine::session::{REPLY_OFF, REPLY_SKIP, REPLY_SKIP_NEXT};
    let v = args.next_arg()?;
    let flags = &mut ctx.session.reply_flags;
    if is(v, "ON") {
        // Cleared before answering, so ON is answered even when replies were off.
        *flags &= !(REPLY_OFF | REPLY_SKIP);
        Ok(Frame::ok())
    } else if is(v, "OFF") {
        *flags |= REPLY_OFF;
        Ok(no_reply())
    } else if is(v, "SKIP") {
        if *flags & REPLY_OFF == 0 {
            *flags |= REPLY_SKIP_NEXT;
        }
        Ok(no_reply())
    } else {
        Err(CmdError::Syntax)
    }
}

pub(crate) const CLIENT_SETINFO: CommandSpec = CommandSpec {
    name: "CLIENT|SETINFO",
    group: Group::Connection,
    arity: 4,
    flags: CLIENT_SUB.union(Flags::ALLOW_BUSY),
    keys: Keys::None,
    summary: "Sets information specific to the client or connection.",
    since: "7.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_setinfo,
};

fn client_setinfo(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let attr = args.next_arg()?;
    let value = args.next_arg()?;
    let handle = ctx.session.handle.clone();
    let slot = if is(attr, "LIB-NAME") {
        &handle.lib_name
    } else if is(attr, "LIB-VER") {
        &handle.lib_ver
    } else {
        return Err(CmdError::err(format!(
            "Unrecognized option '{}'",
            String::from_utf8_lossy(attr)
        )));
    };
    if !valid_client_attr(value) {
        return Err(CmdError::err(format!(
            "{} cannot contain spaces, newlines or special characters.",
            String::from_utf8_lossy(attr)
        )));
    }
    // Copied: a slice would keep the whole request buffer alive with it.
    *slot.lock() = (!value.is_empty()).then(|| Bytes::copy_from_slice(value));
    Ok(Frame::ok())
}

/// ON / OFF, case-insensitive; anything else is a syntax error.
fn on_off(args: &mut Args<'_>) -> Result<bool, CmdError> {
    let v = args.next_arg()?;
    if is(v, "ON") {
        Ok(true)
    } else if is(v, "OFF") {
        Ok(false)
    } else {
        Err(CmdError::Syntax)
    }
}

pub(crate) const CLIENT_NO_EVICT: CommandSpec = CommandSpec {
    name: "CLIENT|NO-EVICT",
    group: Group::Connection,
    arity: 3,
    flags: CLIENT_ADMIN,
    keys: Keys::None,
    summary: "Sets the client eviction mode of the connection.",
    since: "7.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_no_evict,
};

fn client_no_evict(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let on = on_off(args)?;
    ctx.session.set_no_evict(on);
    Ok(Frame::ok())
}

pub(crate) const CLIENT_NO_TOUCH: CommandSpec = CommandSpec {
    name: "CLIENT|NO-TOUCH",
    group: Group::Connection,
    arity: 3,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
    since: "7.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_no_touch,
};

fn client_no_touch(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let on = on_off(args)?;
    ctx.session.set_no_touch(on);
    Ok(Frame::ok())
}

pub(crate) const CLIENT_TRACKING: CommandSpec = CommandSpec {
    name: "CLIENT|TRACKING",
    group: Group::Connection,
    arity: -3,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Enable or disable server assisted client side caching support",
    since: "6.0.0",
    complexity: "O(1). Some options may introduce additional complexity.",
    subcommands: &[],
    run: client_tracking,
};

fn client_tracking(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    keel_engine::tracking::client_tracking(ctx, args.argv())
}

pub(crate) const CLIENT_CACHING: CommandSpec = CommandSpec {
    name: "CLIENT|CACHING",
    group: Group::Connection,
    arity: 3,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Instruct the server about tracking or not keys in the next request",
    since: "6.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_caching,
};

fn client_caching(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let opt = args.next_arg()?;
    keel_engine::tracking::client_caching(ctx, opt)
}

pub(crate) const CLIENT_GETREDIR: CommandSpec = CommandSpec {
    name: "CLIENT|GETREDIR",
    group: Group::Connection,
    arity: 2,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary: "Get tracking notifications redirection client ID if any",
    since: "6.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_getredir,
};

fn client_getredir(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::tracking::client_getredir(ctx))
}

pub(crate) const CLIENT_TRACKINGINFO: CommandSpec = CommandSpec {
    name: "CLIENT|TRACKINGINFO",
    group: Group::Connection,
    arity: 2,
    flags: CLIENT_SUB,
    keys: Keys::None,
    summary:
        "Return information about server assisted client side caching for the current connection",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_trackinginfo,
};

fn client_trackinginfo(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::tracking::client_trackinginfo(ctx))
}

pub(crate) const CLIENT_HELP: CommandSpec = CommandSpec {
    name: "CLIENT|HELP",
    group: Group::Connection,
    arity: 2,
    flags: Flags::LOADING.union(Flags::STALE),
    keys: Keys::None,
    summary: "Returns helpful text about the different subcommands.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: client_help,
};

fn client_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "ID",
        "    The numeric ID of this connection.",
        "SETNAME <name>",
        "    Name this connection (no spaces or special characters).",
        "GETNAME",
        "    The name of this connection, or nil.",
        "INFO",
        "    One CLIENT LIST line describing this connection.",
        "LIST [TYPE (NORMAL|MASTER|REPLICA|PUBSUB)] [ID <id> [<id> ...]]",
        "    Describe the open connections, one per line.",
        "KILL <ip:port>",
        "    Close the connection coming from <ip:port>.",
        "KILL <filter> <value> [<filter> <value> ...]",
        "    Close every connection matching all the filters:",
        "    * ID <id>",
        "    * ADDR <ip:port>",
        "    * LADDR <ip:port>",
        "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
        "    * USER <username>",
        "    * SKIPME (YES|NO): leave the calling connection alone (default YES).",
        "SETINFO (LIB-NAME|LIB-VER) <value>",
        "    Record the client library's name or version.",
        "NO-EVICT (ON|OFF)",
        "    Exempt this connection from client eviction.",
        "NO-TOUCH (ON|OFF)",
        "    Read keys without updating their access time.",
        "PAUSE <timeout> [WRITE|ALL]",
        "    Hold back every command, or only those that write, for <timeout> ms.",
        "UNPAUSE",
        "    End a pause at once.",
        "REPLY (ON|OFF|SKIP)",
        "    Send replies, stop sending them, or leave out the next one.",
        "UNBLOCK <clientid> [TIMEOUT|ERROR]",
        "    Unblock the specified blocked client.",
        "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> ...] [OPTIN] [OPTOUT] [NOLOOP]",
        "    Turn invalidation messages for keys this connection reads on or off.",
        "CACHING (YES|NO)",
        "    In OPTIN or OPTOUT mode: whether the next command's keys are tracked.",
        "GETREDIR",
        "    The client invalidation messages are redirected to, 0 for none, -1 when not tracking.",
        "TRACKINGINFO",
        "    This connection's tracking mode, redirect and prefixes.",
        "HELP",
        "    Print this help.",
    ]))
}
