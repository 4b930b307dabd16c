//! COMMAND and its subcommands: the command table as clients see it. Everything
//! is derived from the specs in `ctx.engine.commands`, so a command appears here
//! the moment its spec is listed in a group's table.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::keyspec::{self, Begin, Find, KeySpec};
use keel_engine::spec::{acl_categories, CommandSpec, Flags, Group, Keys};
use keel_engine::table::CommandTable;
use keel_resp::Frame;

pub static COMMANDS: &[&CommandSpec] = &[&COMMAND];

const INTROSPECT: Flags = Flags::LOADING.union(Flags::STALE);

pub(crate) const COMMAND: CommandSpec = CommandSpec {
    name: "COMMAND",
    group: Group::Server,
    arity: -1,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Returns detailed information about all commands.",
    since: "2.8.13",
    complexity: "O(N) where N is the total number of Redis commands",
    subcommands: &[
        &COMMAND_COUNT,
        &COMMAND_INFO,
        &COMMAND_DOCS,
        &COMMAND_LIST,
        &COMMAND_GETKEYS,
        &COMMAND_GETKEYSANDFLAGS,
        &COMMAND_HELP,
    ],
    run: command,
};

fn bulk(s: &str) -> Frame {
    Frame::Bulk(Bytes::copy_from_slice(s.as_bytes()))
}

fn simple(s: &str) -> Frame {
    Frame::Simple(Bytes::copy_from_slice(s.as_bytes()))
}

/// A command id by its full name (`get`, `client|list`), ignoring case.
fn find(table: &CommandTable, name: &[u8]) -> Option<usize> {
    match name.iter().position(|&c| c == b'|') {
        None => table.lookup(name),
        Some(bar) => {
            let parent = table.lookup(&name[..bar])?;
            table.lookup_sub(parent, &name[bar + 1..])
        }
    }
}

/// The ids of the subcommands of container `id`, in declaration order.
fn subcommand_ids(table: &CommandTable, id: usize) -> impl Iterator<Item = usize> + '_ {
    (table.top_level..table.len()).filter(move |&i| table.parent[i] == id)
}

/// Whether the command's key positions depend on its arguments.
fn movable_keys(spec: &CommandSpec) -> bool {
    matches!(
        spec.keys,
        Keys::NumKeys { .. } | Keys::BeforeOptions { .. } | Keys::Find(_) | Keys::Streams
    )
}

pub fn flag_names(spec: &CommandSpec) -> Vec<&'static str> {
    let mut names = spec.flags.names();
    if movable_keys(spec) {
        // Redis lists movablekeys just before allow_busy.
        let at = names
            .iter()
            .position(|n| *n == "allow_busy")
            .unwrap_or(names.len());
        names.insert(at, "movablekeys");
    }
    names
}

/// Key flags in Redis's key-spec vocabulary. Keel's specs do not record per-key
/// access, so this is derived from the command's READONLY / WRITE flags; the
/// destination of a NumKeys command is overwritten, its sources are read.
fn key_flags(spec: &CommandSpec, destination: bool) -> &'static [&'static str] {
    if destination {
        &["OW", "update"]
    } else if movable_keys(spec) || !spec.flags.contains(Flags::WRITE) {
        &["RO", "access"]
    } else {
        &["RW", "update"]
    }
}

fn map(pairs: Vec<(&str, Frame)>) -> Frame {
    Frame::Map(pairs.into_iter().map(|(k, v)| (bulk(k), v)).collect())
}

fn key_spec(flags: &[&str], index: i64, find_keys: Frame) -> Frame {
    map(vec![
        (
            "flags",
            Frame::Set(flags.iter().map(|f| simple(f)).collect()),
        ),
        (
            "begin_search",
            map(vec![
                ("type", bulk("index")),
                ("spec", map(vec![("index", Frame::Integer(index))])),
            ]),
        ),
        ("find_keys", find_keys),
    ])
}

fn range_keys(lastkey: i64, keystep: i64) -> Frame {
    map(vec![
        ("type", bulk("range")),
        (
            "spec",
            map(vec![
                ("lastkey", Frame::Integer(lastkey)),
                ("keystep", Frame::Integer(keystep)),
                ("limit", Frame::Integer(0)),
            ]),
        ),
    ])
}

/// One of Redis's own key specs (`keyspecs.rs`) in COMMAND INFO's shape.
fn redis_key_spec(ks: &KeySpec) -> Frame {
    let begin = match ks.begin {
        Begin::Index(i) => ("index", map(vec![("index", Frame::Integer(i))])),
        Begin::Keyword { keyword, startfrom } => (
            "keyword",
            map(vec![
                ("keyword", bulk(keyword)),
                ("startfrom", Frame::Integer(startfrom)),
            ]),
        ),
        Begin::Unknown => ("unknown", map(vec![])),
    };
    let find = match ks.find {
        Find::Range {
            lastkey,
            keystep,
            limit,
        } => (
            "range",
            map(vec![
                ("lastkey", Frame::Integer(lastkey)),
                ("keystep", Frame::Integer(keystep)),
                ("limit", Frame::Integer(limit)),
            ]),
        ),
        Find::Keynum {
            keynumidx,
            firstkey,
            keystep,
        } => (
            "keynum",
            map(vec![
                ("keynumidx", Frame::Integer(keynumidx)),
                ("firstkey", Frame::Integer(firstkey)),
                ("keystep", Frame::Integer(keystep)),
            ]),
        ),
        Find::Unknown => ("unknown", map(vec![])),
    };
    let mut fields = Vec::new();
    if !ks.notes.is_empty() {
        fields.push(("notes", bulk(ks.notes)));
    }
    fields.push((
        "flags",
        Frame::Set(ks.flags.iter().map(|f| simple(f)).collect()),
    ));
    fields.push((
        "begin_search",
        map(vec![("type", bulk(begin.0)), ("spec", begin.1)]),
    ));
    fields.push((
        "find_keys",
        map(vec![("type", bulk(find.0)), ("spec", find.1)]),
    ));
    map(fields)
}

/// Redis's key specifications for the command where Redis has it; for
/// Keel's own commands, specs derived from the spec's `keys`.
pub fn key_specs(spec: &CommandSpec) -> Vec<Frame> {
    if let Some(specs) = keel_engine::keyspecs::for_command(&spec.name.to_ascii_lowercase()) {
        return specs.iter().map(redis_key_spec).collect();
    }
    match spec.keys {
        // Only XREAD and XREADGROUP, whose specs are Redis's.
        Keys::None | Keys::Queued | Keys::Streams => Vec::new(),
        Keys::Find(_) => vec![key_spec(key_flags(spec, false), 1, range_keys(0, 1))],
        Keys::BeforeOptions { first, .. } => vec![key_spec(
            key_flags(spec, false),
            first.into(),
            range_keys(-1, 1),
        )],
        Keys::Range { first, last, step } => {
            // `lastkey` is relative to the first key when non-negative.
            let lastkey = if last < 0 { last } else { last - first };
            vec![key_spec(
                key_flags(spec, false),
                first.into(),
                range_keys(lastkey.into(), step.max(1).into()),
            )]
        }
        Keys::NumKeys { numkeys, extra } => {
            let mut out = Vec::new();
            if extra > 0 {
                out.push(key_spec(
                    key_flags(spec, true),
                    extra.into(),
                    range_keys(0, 1),
                ));
            }
            out.push(key_spec(
                key_flags(spec, false),
                numkeys.into(),
                map(vec![
                    ("type", bulk("keynum")),
                    (
                        "spec",
                        map(vec![
                            ("keynumidx", Frame::Integer(0)),
                            ("firstkey", Frame::Integer(1)),
                            ("keystep", Frame::Integer(1)),
                        ]),
                    ),
                ]),
            ));
            out
        }
    }
}

/// The legacy (first, last, step) triple; commands whose only keys follow a
/// count have none, as in Redis (ZUNION, EVAL).
pub fn legacy_keys(spec: &CommandSpec) -> (i64, i64, i64) {
    match spec.keys {
        Keys::NumKeys { extra, .. } if extra <= 0 => (0, 0, 0),
        keys => keys.legacy_triple(),
    }
}

/// One COMMAND INFO entry, Redis 7 shape: name, arity, flags, first key, last
/// key, step, ACL categories, tips, key specs, subcommands.
fn info_entry(table: &CommandTable, id: usize) -> Frame {
    let spec = table.specs[id];
    let (first, last, step) = legacy_keys(spec);
    let subs: Vec<Frame> = subcommand_ids(table, id)
        .map(|s| info_entry(table, s))
        .collect();
    Frame::Array(vec![
        bulk(&table.full_name(id)),
        Frame::Integer(spec.arity.into()),
        Frame::Set(flag_names(spec).into_iter().map(simple).collect()),
        Frame::Integer(first),
        Frame::Integer(last),
        Frame::Integer(step),
        Frame::Set(acl_categories(spec).into_iter().map(simple).collect()),
        Frame::Set(Vec::new()),
        Frame::Set(key_specs(spec)),
        // Redis sends an empty set, not an empty array, when there are none.
        if subs.is_empty() {
            Frame::Set(Vec::new())
        } else {
            Frame::Array(subs)
        },
    ])
}

/// One COMMAND DOCS entry (the value; the key is the full name).
fn docs_entry(table: &CommandTable, id: usize) -> Frame {
    let spec = table.specs[id];
    let mut fields = vec![
        ("summary", bulk(spec.summary)),
        ("since", bulk(spec.since)),
        ("group", bulk(spec.group.name())),
    ];
    // Redis documents no complexity for a few commands (MONITOR).
    if !spec.complexity.is_empty() {
        fields.push(("complexity", bulk(spec.complexity)));
    }
    let subs: Vec<(Frame, Frame)> = subcommand_ids(table, id)
        .map(|s| (bulk(&table.full_name(s)), docs_entry(table, s)))
        .collect();
    if !subs.is_empty() {
        fields.push(("subcommands", Frame::Map(subs)));
    }
    map(fields)
}

fn command(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let table = &ctx.engine.commands;
    Ok(Frame::Array(
        (0..table.top_level)
            .map(|id| info_entry(table, id))
            .collect(),
    ))
}

pub(crate) const COMMAND_COUNT: CommandSpec = CommandSpec {
    name: "COMMAND|COUNT",
    group: Group::Server,
    arity: 2,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Returns a count of commands.",
    since: "2.8.13",
    complexity: "O(1)",
    subcommands: &[],
    run: command_count,
};

pub fn command_count(ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(Frame::Integer(ctx.engine.commands.top_level as i64))
}

pub(crate) const COMMAND_INFO: CommandSpec = CommandSpec {
    name: "COMMAND|INFO",
    group: Group::Server,
    arity: -2,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Returns information about one, multiple or all commands.",
    since: "2.8.13",
    complexity: "O(N) where N is the number of commands to look up",
    subcommands: &[],
    run: command_info,
};

fn command_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let table = &ctx.engine.commands;
    if args.is_empty() {
        return command(ctx, args);
    }
    Ok(Frame::Array(
        args.rest()
            .iter()
            .map(|name| find(table, name).map_or(Frame::Null, |id| info_entry(table, id)))
            .collect(),
    ))
}

pub(crate) const COMMAND_DOCS: CommandSpec = CommandSpec {
    name: "COMMAND|DOCS",
    group: Group::Server,
    arity: -2,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Returns documentary information about one, multiple or all commands.",
    since: "7.0.0",
    complexity: "O(N) where N is the number of commands to look up",
    subcommands: &[],
    run: command_docs,
};

fn command_docs(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let table = &ctx.engine.commands;
    let ids: Vec<usize> = if args.is_empty() {
        (0..table.top_level).collect()
    } else {
        // Unknown names are left out of the map.
        args.rest()
            .iter()
            .filter_map(|name| find(table, name))
            .collect()
    };
    Ok(Frame::Map(
        ids.into_iter()
            .map(|id| (bulk(&table.full_name(id)), docs_entry(table, id)))
            .collect(),
    ))
}

pub(crate) const COMMAND_LIST: CommandSpec = CommandSpec {
    name: "COMMAND|LIST",
    group: Group::Server,
    arity: -2,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Returns a list of command names.",
    since: "7.0.0",
    complexity: "O(N) where N is the total number of Redis commands",
    subcommands: &[],
    run: command_list,
};

fn command_list(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let table = &ctx.engine.commands;
    enum Filter<'a> {
        All,
        Nothing,
        Group(Group),
        Category(String),
        Pattern(&'a [u8]),
    }
    let filter = match args.remaining() {
        0 => Filter::All,
        3 if args.eat("FILTERBY") => {
            let kind = args.next_arg()?;
            let value = args.next_arg()?;
            if is(kind, "MODULE") {
                // The only module Keel reports (MODULE LIST) is the built-in
                // Bloom filter family, under RedisBloom's name.
                if value.eq_ignore_ascii_case(b"bf") {
                    Filter::Group(Group::Bloom)
                } else {
                    Filter::Nothing
                }
            } else if is(kind, "ACLCAT") {
                Filter::Category(format!("@{}", String::from_utf8_lossy(value)))
            } else if is(kind, "PATTERN") {
                Filter::Pattern(value)
            } else {
                return Err(CmdError::Syntax);
            }
        }
        _ => return Err(CmdError::Syntax),
    };
    let names = (0..table.len())
        .filter(|&id| match &filter {
            Filter::All => true,
            Filter::Nothing => false,
            // RedisBloom's module `bf` serves cuckoo filters, sketches, top-k and t-digest too.
            Filter::Group(g) => {
                let own = table.specs[id].group;
                own == *g
                    || (*g == Group::Bloom
                        && matches!(
                            own,
                            Group::Cuckoo | Group::Cms | Group::TopK | Group::TDigest
                        ))
            }
            Filter::Category(c) => acl_categories(table.specs[id])
                .iter()
                .any(|k| k.eq_ignore_ascii_case(c)),
            Filter::Pattern(p) => {
                keel_store::glob::glob_match(p, table.full_name(id).as_bytes(), true)
            }
        })
        .map(|id| bulk(&table.full_name(id)))
        .collect();
    Ok(Frame::Array(names))
}

/// The argv positions of the keys of the command in `argv`, with the spec that
/// declares them, reporting Redis's GETKEYS errors.
pub fn keys_of(
    table: &CommandTable,
    argv: &[Bytes],
) -> Result<(&'static CommandSpec, Vec<usize>), CmdError> {
    let invalid_cmd = || CmdError::err("Invalid command specified");
    let name = argv.first().ok_or_else(invalid_cmd)?;
    let mut id = table.lookup(name).ok_or_else(invalid_cmd)?;
    if !table.specs[id].subcommands.is_empty() {
        if let Some(sub) = argv.get(1) {
            id = table.lookup_sub(id, sub).ok_or_else(invalid_cmd)?;
        }
    }
    let spec = table.specs[id];
    if !spec.arity_ok(argv.len()) {
        return Err(CmdError::err(
            "Invalid number of arguments specified for command",
        ));
    }
    // Shard channels sit where keys would (for cluster routing) but are not keys.
    if matches!(spec.keys, Keys::None | Keys::Queued) || spec.group == Group::Pubsub {
        return Err(CmdError::err("The command has no key arguments"));
    }
    let invalid_args = || CmdError::err("Invalid arguments specified for command");
    // A command whose keys are optional (EVAL, FCALL) has none rather than bad ones.
    let no_keys =
        |spec: &'static CommandSpec| -> Result<(&'static CommandSpec, Vec<usize>), CmdError> {
            if spec.flags.contains(Flags::NO_MANDATORY_KEYS) {
                Ok((spec, Vec::new()))
            } else {
                Err(invalid_args())
            }
        };
    if let Keys::NumKeys { numkeys, .. } = spec.keys {
        // Positions would silently stop at the end of argv; a count that runs
        // past it is an error here, as in Redis.
        let idx = usize::try_from(numkeys).map_err(|_| invalid_args())?;
        let n = argv.get(idx).and_then(|a| keel_store::num::parse_i64(a));
        let available = argv.len().saturating_sub(idx + 1) as i64;
        if !n.is_some_and(|n| (0..=available).contains(&n)) {
            return no_keys(spec);
        }
    }
    let mut pos = Vec::new();
    spec.keys.positions(argv, &mut pos);
    if pos.is_empty() {
        return no_keys(spec);
    }
    Ok((spec, pos))
}

pub(crate) const COMMAND_GETKEYS: CommandSpec = CommandSpec {
    name: "COMMAND|GETKEYS",
    group: Group::Server,
    arity: -4,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Extracts the key names from an arbitrary command.",
    since: "2.8.13",
    complexity: "O(N) where N is the number of arguments to the command",
    subcommands: &[],
    run: command_getkeys,
};

fn command_getkeys(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.rest();
    let (_, pos) = keys_of(&ctx.engine.commands, argv)?;
    Ok(Frame::Array(
        pos.into_iter()
            .map(|i| Frame::Bulk(argv[i].clone()))
            .collect(),
    ))
}

pub(crate) const COMMAND_GETKEYSANDFLAGS: CommandSpec = CommandSpec {
    name: "COMMAND|GETKEYSANDFLAGS",
    group: Group::Server,
    arity: -4,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Extracts the key names and access flags for an arbitrary command.",
    since: "7.0.0",
    complexity: "O(N) where N is the number of arguments to the command",
    subcommands: &[],
    run: command_getkeysandflags,
};

fn command_getkeysandflags(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.rest();
    let (spec, pos) = keys_of(&ctx.engine.commands, argv)?;
    let dest = match spec.keys {
        Keys::NumKeys { extra, .. } if extra > 0 => Some(extra as usize),
        // SORT's STORE destination, which Redis's key specs cannot locate.
        Keys::Find(_) => pos.get(1).copied(),
        _ => None,
    };
    let name = spec.name.to_ascii_lowercase();
    let from_redis = keel_engine::keyspecs::for_command(&name)
        .map(|specs| keyspec::positions(specs, argv))
        .unwrap_or_default();
    Ok(Frame::Array(
        pos.into_iter()
            .map(|i| {
                let flags: Vec<&str> = match from_redis.iter().find(|(p, _)| *p == i) {
                    Some((_, flags)) => variable_key_flags(&name, argv).unwrap_or_else(|| {
                        flags
                            .iter()
                            .copied()
                            .filter(|f| *f != "variable_flags" && *f != "incomplete")
                            .collect()
                    }),
                    None => key_flags(spec, dest == Some(i)).to_vec(),
                };
                Frame::Array(vec![
                    Frame::Bulk(argv[i].clone()),
                    Frame::Set(flags.iter().map(|f| simple(f)).collect()),
                ])
            })
            .collect(),
    ))
}

/// The commands whose key flags depend on their arguments (Redis marks
/// them `variable_flags`): SET reads the old value only with GET, BITFIELD
/// writes only with SET or INCRBY.
fn variable_key_flags(name: &str, argv: &[Bytes]) -> Option<Vec<&'static str>> {
    let has = |word: &str| argv.iter().skip(2).any(|a| is(a, word));
    match name {
        "set" if has("GET") => Some(vec!["RW", "access", "update"]),
        "set" => Some(vec!["OW", "update"]),
        "bitfield" if has("SET") || has("INCRBY") => Some(vec!["RW", "access", "update"]),
        "bitfield" => Some(vec!["RO", "access"]),
        _ => None,
    }
}

pub(crate) const COMMAND_HELP: CommandSpec = CommandSpec {
    name: "COMMAND|HELP",
    group: Group::Server,
    arity: 2,
    flags: INTROSPECT,
    keys: Keys::None,
    summary: "Returns helpful text about the different subcommands.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: command_help,
};

fn command_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Ok(keel_engine::subcommands::help(&[
        "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "(no subcommand)",
        "    Describe every command.",
        "COUNT",
        "    How many commands the server has.",
        "LIST [FILTERBY (MODULE <name>|ACLCAT <category>|PATTERN <glob>)]",
        "    The names of the commands, subcommands included.",
        "INFO [<command-name> ...]",
        "    Describe the named commands, or every command.",
        "DOCS [<command-name> ...]",
        "    Documentation of the named commands, or of every command.",
        "GETKEYS <full-command>",
        "    The keys a command would access.",
        "GETKEYSANDFLAGS <full-command>",
        "    The keys a command would access, with how it accesses each.",
        "HELP",
        "    Print this help.",
    ]))
}
