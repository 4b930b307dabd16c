//! Bloom filter commands, RedisBloom's `BF.*` family: BF.RESERVE, BF.ADD,
//! BF.MADD, BF.INSERT, BF.EXISTS, BF.MEXISTS, BF.INFO, BF.CARD, BF.SCANDUMP,
//! BF.LOADCHUNK and BF.DEBUG. The filter itself is `keel_store::bloom::Chain`;
//! this file owns argument parsing, reply shapes and the error texts, which
//! follow RedisBloom's (some of them carry no `ERR` prefix there).

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::bloom::{BloomError, Chain, Layout, MAX_CAPACITY, MAX_EXPANSION};
use keel_store::num::{parse_f64_in_range, parse_i64};
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &BF_RESERVE,
    &BF_ADD,
    &BF_MADD,
    &BF_INSERT,
    &BF_EXISTS,
    &BF_MEXISTS,
    &BF_INFO,
    &BF_CARD,
    &BF_SCANDUMP,
    &BF_LOADCHUNK,
    &BF_DEBUG,
];

const WRITE: Flags = Flags::WRITE.union(Flags::DENYOOM);
const READ: Flags = Flags::READONLY.union(Flags::FAST);

/// RedisBloom raises any error rate above this to it when reserving.
const MAX_RESERVE_ERROR_RATE: f64 = 0.25;

fn bloom_err(e: BloomError) -> CmdError {
    CmdError::msg(e.to_string())
}

fn not_found() -> CmdError {
    CmdError::err("not found")
}

/// The filter at `key` for a read: `None` when absent, WRONGTYPE for another
/// type.
fn read_chain<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t Chain>, CmdError> {
    match ctx.read_value(key, ValueType::Bloom)? {
        Some(Value::Bloom(chain)) => Ok(Some(chain)),
        Some(_) => Err(CmdError::WrongType),
        None => Ok(None),
    }
}

/// For a pipelined BF.ADD, BF.EXISTS, CF.ADD or CF.EXISTS still waiting its turn: start loading
/// the filter lines or buckets it will probe (each a likely cache miss in a large
/// filter), as the executor already does for every command's key. Anything
/// else is left alone; a hint only, it changes nothing.
pub fn prefetch(table: &keel_store::Table, argv: &[Bytes]) {
    let (Some(name), Some(key), Some(item)) = (argv.first(), argv.get(1), argv.get(2)) else {
        return;
    };
    // Most commands are neither: one look at the first letter tells.
    if !matches!(name.first(), Some(b'B' | b'b' | b'C' | b'c')) {
        return;
    }
    let adding = if is(name, "BF.ADD") {
        true
    } else if is(name, "BF.EXISTS") {
        false
    } else {
        if is(name, "CF.EXISTS") || is(name, "CF.ADD") {
            if let Some(Value::Cuckoo(cf)) = table.find_for_hint(key).map(|e| &e.value) {
                cf.prefetch(item);
            }
        }
        return;
    };
    if let Some(Value::Bloom(chain)) = table.find_for_hint(key).map(|e| &e.value) {
        chain.prefetch(item, adding);
    }
}

/// Like [`read_chain`], but a missing key is `ERR not found`.
fn existing_chain<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t Chain, CmdError> {
    read_chain(ctx, key)?.ok_or_else(not_found)
}

/// How a filter is to be created, as the client gave it (or the configured
/// defaults); checked only when a filter is actually created, since options
/// for an existing key are ignored.
#[derive(Clone, Copy, Debug)]
struct FilterParams {
    capacity: i64,
    error_rate: f64,
    expansion: i64,
    nonscaling: bool,
    /// Keel's `LAYOUT BLOCKED` (cache-line-blocked probes); RedisBloom's
    /// layout otherwise.
    layout: Layout,
}

/// The value of a `LAYOUT` option: `CLASSIC` (RedisBloom's, the default) or
/// `BLOCKED`.
fn parse_layout(raw: &[u8]) -> Result<Layout, CmdError> {
    if is(raw, "BLOCKED") {
        Ok(Layout::Blocked)
    } else if is(raw, "CLASSIC") {
        Ok(Layout::Classic)
    } else {
        Err(CmdError::err("layout must be CLASSIC or BLOCKED"))
    }
}

impl FilterParams {
    fn defaults(engine: &keel_engine::engine::Engine) -> FilterParams {
        let d = engine.config.bloom_defaults();
        FilterParams {
            capacity: i64::try_from(d.capacity).unwrap_or(i64::MAX),
            error_rate: d.error_rate,
            expansion: i64::from(d.expansion),
            nonscaling: false,
            layout: Layout::Classic,
        }
    }

    fn build(&self) -> Result<Chain, CmdError> {
        if !(self.error_rate > 0.0 && self.error_rate < 1.0) {
            return Err(bloom_err(BloomError::BadErrorRate));
        }
        let capacity = u64::try_from(self.capacity)
            .ok()
            .filter(|c| (1..=MAX_CAPACITY).contains(c))
            .ok_or(bloom_err(BloomError::BadCapacity))?;
        let expansion = u32::try_from(self.expansion)
            .ok()
            .filter(|e| *e <= MAX_EXPANSION)
            .ok_or(bloom_err(BloomError::BadExpansion))?;
        Chain::with_layout(
            capacity,
            self.error_rate,
            expansion,
            self.nonscaling,
            self.layout,
        )
        .map_err(bloom_err)
    }

    /// The BF.INSERT options that recreate exactly this filter, for logging a
    /// write that created one: replaying it must not depend on the defaults
    /// configured at replay time. `{:e}` prints the shortest form that parses
    /// back to the same `f64`.
    fn insert_argv(&self, key: &[u8], items: &[Bytes]) -> Vec<Bytes> {
        let mut argv: Vec<Bytes> = vec![
            Bytes::from_static(b"BF.INSERT"),
            Bytes::copy_from_slice(key),
            Bytes::from_static(b"CAPACITY"),
            Bytes::from(self.capacity.to_string()),
            Bytes::from_static(b"ERROR"),
            Bytes::from(format!("{:e}", self.error_rate)),
            Bytes::from_static(b"EXPANSION"),
            Bytes::from(self.expansion.to_string()),
        ];
        if self.nonscaling {
            argv.push(Bytes::from_static(b"NONSCALING"));
        }
        if self.layout == Layout::Blocked {
            argv.push(Bytes::from_static(b"LAYOUT"));
            argv.push(Bytes::from_static(b"BLOCKED"));
        }
        argv.push(Bytes::from_static(b"ITEMS"));
        argv.extend(items.iter().cloned());
        argv
    }
}

/// Adds `items` in order, stopping after the first that fails (a full
/// fixed-size filter): its error is the last result, as RedisBloom replies.
fn add_each(chain: &mut Chain, items: &[Bytes]) -> Vec<Result<bool, BloomError>> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let r = chain.add(item);
        let stop = r.is_err();
        out.push(r);
        if stop {
            break;
        }
    }
    out
}

/// What BF.ADD, BF.MADD and BF.INSERT do with a missing key.
enum Create {
    /// Create the filter from the configured defaults (read only then: this
    /// is the hot path of every add to an existing filter).
    Defaults,
    With(FilterParams),
    /// NOCREATE: `ERR not found`.
    No,
}

/// The write shared by BF.ADD, BF.MADD and BF.INSERT: add `items` to the
/// filter at `key`, creating it as `create` says when the key is missing.
fn add_items(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    items: &[Bytes],
    create: Create,
) -> Result<Vec<Result<bool, BloomError>>, CmdError> {
    let now = ctx.now_ms();
    let engine = ctx.engine;
    let table = ctx.table(key)?;
    let (results, created) = match table.get_mut(key, now) {
        Some(entry) => {
            let Value::Bloom(chain) = &mut entry.value else {
                return Err(CmdError::WrongType);
            };
            (add_each(chain, items), None)
        }
        None => {
            let params = match create {
                Create::Defaults => FilterParams::defaults(engine),
                Create::With(params) => params,
                Create::No => return Err(not_found()),
            };
            let mut chain = params.build()?;
            let results = add_each(&mut chain, items);
            table.insert(key, Value::Bloom(Box::new(chain)), 0, now);
            (results, Some(params))
        }
    };
    let added = results.iter().filter(|r| matches!(r, Ok(true))).count() as u64;
    if let Some(params) = created {
        ctx.dirty(added + 1);
        ctx.rewrite(params.insert_argv(key, items));
    } else {
        ctx.dirty(added);
    }
    Ok(results)
}

fn multi_reply(results: Vec<Result<bool, BloomError>>) -> Frame {
    Frame::Array(
        results
            .into_iter()
            .map(|r| match r {
                Ok(b) => Frame::Boolean(b),
                Err(e) => Frame::Error(Bytes::from(e.to_string())),
            })
            .collect(),
    )
}

// ---------------------------------------------------------------------------
// BF.RESERVE

pub(crate) const BF_RESERVE: CommandSpec = CommandSpec {
    name: "BF.RESERVE",
    group: Group::Bloom,
    arity: -4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Creates a new Bloom Filter",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: bf_reserve,
};

/// BF.RESERVE's keywords after the capacity. Like RedisBloom, each is found
/// wherever it appears, ignoring case, and tokens it does not know are
/// skipped.
struct ReserveOptions {
    /// The EXPANSION value as given, if the keyword is present.
    expansion: Option<i64>,
    nonscaling: bool,
    /// Keel's own keyword, `LAYOUT CLASSIC|BLOCKED`.
    layout: Option<Layout>,
}

impl ReserveOptions {
    fn parse(opts: &[Bytes]) -> Result<ReserveOptions, CmdError> {
        let nonscaling = opts.iter().any(|a| is(a, "NONSCALING"));
        let layout = match opts.iter().position(|a| is(a, "LAYOUT")) {
            None => None,
            Some(at) => {
                let raw = opts.get(at + 1).ok_or(CmdError::err("no layout"))?;
                Some(parse_layout(raw)?)
            }
        };
        let expansion = match opts.iter().position(|a| is(a, "EXPANSION")) {
            None => None,
            Some(at) => {
                let raw = opts.get(at + 1).ok_or(CmdError::err("no expansion"))?;
                let n = parse_i64(raw).ok_or(CmdError::err("bad expansion"))?;
                if nonscaling {
                    return Err(CmdError::msg("Nonscaling filters cannot expand"));
                }
                if !(0..=i64::from(MAX_EXPANSION)).contains(&n) {
                    return Err(bloom_err(BloomError::BadExpansion));
                }
                Some(n)
            }
        };
        Ok(ReserveOptions {
            expansion,
            nonscaling,
            layout,
        })
    }
}

fn bf_reserve(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let argv = args.argv();
    // RedisBloom's limit, plus room for Keel's `LAYOUT name`.
    let layout_words = if argv.iter().skip(4).any(|a| is(a, "LAYOUT")) {
        2
    } else {
        0
    };
    if argv.len() > 7 + layout_words {
        return Err(CmdError::WrongArity("bf.reserve".into()));
    }
    let key = args.next_key()?;
    let error_rate = parse_f64_in_range(args.next_arg()?).ok_or(CmdError::err("bad error rate"))?;
    if !(error_rate > 0.0 && error_rate < 1.0) {
        return Err(bloom_err(BloomError::BadErrorRate));
    }
    let capacity = parse_i64(args.next_arg()?).ok_or(CmdError::err("bad capacity"))?;
    if !(1..=MAX_CAPACITY as i64).contains(&capacity) {
        return Err(bloom_err(BloomError::BadCapacity));
    }
    let opts = ReserveOptions::parse(args.rest())?;
    let configured = FilterParams::defaults(ctx.engine).expansion;
    let params = FilterParams {
        capacity,
        error_rate: error_rate.min(MAX_RESERVE_ERROR_RATE),
        expansion: opts.expansion.unwrap_or(configured),
        nonscaling: opts.nonscaling,
        layout: opts.layout.unwrap_or(Layout::Classic),
    };
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    match table.peek(key, now) {
        Some(e) if matches!(e.value, Value::Bloom(_)) => return Err(CmdError::err("item exists")),
        Some(_) => return Err(CmdError::WrongType),
        None => {}
    }
    let chain = params.build()?;
    table.insert(key, Value::Bloom(Box::new(chain)), 0, now);
    ctx.dirty(1);
    if opts.expansion.is_none() && !opts.nonscaling {
        // The growth came from the configuration: log it explicitly so a
        // replay under another configuration builds the same filter.
        // Tokens it ignored are dropped, which keeps the line within arity.
        let mut logged = argv.get(..4).unwrap_or(argv).to_vec();
        logged.push(Bytes::from_static(b"EXPANSION"));
        logged.push(Bytes::from(configured.to_string()));
        if params.layout == Layout::Blocked {
            logged.push(Bytes::from_static(b"LAYOUT"));
            logged.push(Bytes::from_static(b"BLOCKED"));
        }
        ctx.rewrite(logged);
    }
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// BF.ADD, BF.MADD, BF.INSERT

pub(crate) const BF_ADD: CommandSpec = CommandSpec {
    name: "BF.ADD",
    group: Group::Bloom,
    arity: 3,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Adds an item to a Bloom Filter",
    since: "1.0.0",
    complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
    subcommands: &[],
    run: bf_add,
};

fn bf_add(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let results = add_items(ctx, key, items, Create::Defaults)?;
    match results.into_iter().next() {
        Some(Ok(added)) => Ok(Frame::Boolean(added)),
        Some(Err(e)) => Err(bloom_err(e)),
        None => Err(CmdError::WrongArity("bf.add".into())),
    }
}

pub(crate) const BF_MADD: CommandSpec = CommandSpec {
    name: "BF.MADD",
    group: Group::Bloom,
    arity: -3,
    flags: WRITE,
    keys: Keys::single(1),
    summary:
        "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
    since: "1.0.0",
    complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
    subcommands: &[],
    run: bf_madd,
};

fn bf_madd(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    Ok(multi_reply(add_items(ctx, key, items, Create::Defaults)?))
}

pub(crate) const BF_INSERT: CommandSpec = CommandSpec {
    name: "BF.INSERT",
    group: Group::Bloom,
    arity: -4,
    flags: WRITE,
    keys: Keys::single(1),
    summary:
        "Adds one or more items to a Bloom Filter. A filter will be created if it does not exist",
    since: "1.0.0",
    complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
    subcommands: &[],
    run: bf_insert,
};

/// BF.INSERT's options before ITEMS. RedisBloom tells them apart by their
/// first letters (`ERROR` from `EXPANSION` by the second, `NOCREATE` from
/// `NONSCALING` by the third), so any word with the right letters works.
/// Returns what to create a missing filter with, `None` for NOCREATE; `args`
/// is left at the first item.
fn parse_insert(
    args: &mut Args<'_>,
    mut params: FilterParams,
) -> Result<Option<FilterParams>, CmdError> {
    let arity = || CmdError::WrongArity("bf.insert".into());
    let mut autocreate = true;
    loop {
        let Some(word) = args.next_opt() else {
            return Err(arity());
        };
        let letter = |i: usize| word.get(i).map(u8::to_ascii_lowercase);
        match letter(0) {
            Some(b'i') => break,
            Some(b'e') => {
                let value = args.next_opt().ok_or_else(arity)?;
                if letter(1) == Some(b'r') {
                    params.error_rate =
                        parse_f64_in_range(value).ok_or(CmdError::msg("Bad error rate"))?;
                } else {
                    params.expansion = parse_i64(value).ok_or(CmdError::msg("Bad expansion"))?;
                }
            }
            Some(b'c') => {
                let value = args.next_opt().ok_or_else(arity)?;
                params.capacity = parse_i64(value).ok_or(CmdError::msg("Bad capacity"))?;
            }
            Some(b'n') if letter(2) == Some(b'c') => autocreate = false,
            Some(b'n') => params.nonscaling = true,
            // Keel's own option; RedisBloom has no word starting with 'l'.
            Some(b'l') => params.layout = parse_layout(args.next_opt().ok_or_else(arity)?)?,
            _ => return Err(CmdError::msg("Unknown argument received")),
        }
    }
    Ok(autocreate.then_some(params))
}

fn bf_insert(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let create = match parse_insert(args, FilterParams::defaults(ctx.engine))? {
        Some(params) => Create::With(params),
        None => Create::No,
    };
    let items = args.rest();
    if items.is_empty() {
        return Err(CmdError::WrongArity("bf.insert".into()));
    }
    Ok(multi_reply(add_items(ctx, key, items, create)?))
}

// ---------------------------------------------------------------------------
// BF.EXISTS, BF.MEXISTS

/// Whether each item is in the filter at `key`. A missing key, or one of
/// another type, holds none of them (RedisBloom answers 0, not WRONGTYPE).
fn exists_each(ctx: &mut Ctx<'_>, key: &[u8], items: &[Bytes]) -> Result<Vec<bool>, CmdError> {
    let found = match read_chain(ctx, key) {
        Ok(Some(chain)) => Some(items.iter().map(|i| chain.exists(i)).collect::<Vec<_>>()),
        Ok(None) | Err(CmdError::WrongType) => None,
        Err(e) => return Err(e),
    };
    ctx.hit_key(key, found.is_some());
    Ok(found.unwrap_or_else(|| vec![false; items.len()]))
}

pub(crate) const BF_EXISTS: CommandSpec = CommandSpec {
    name: "BF.EXISTS",
    group: Group::Bloom,
    arity: 3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Checks whether an item exists in a Bloom Filter",
    since: "1.0.0",
    complexity: "O(k), where k is the number of hash functions used by the last sub-filter",
    subcommands: &[],
    run: bf_exists,
};

fn bf_exists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let found = exists_each(ctx, key, items)?;
    Ok(Frame::Boolean(found.first().copied().unwrap_or(false)))
}

pub(crate) const BF_MEXISTS: CommandSpec = CommandSpec {
    name: "BF.MEXISTS",
    group: Group::Bloom,
    arity: -3,
    flags: READ,
    keys: Keys::single(1),
    summary: "Checks whether one or more items exist in a Bloom Filter",
    since: "1.0.0",
    complexity: "O(k * n), where k is the number of hash functions and n is the number of items",
    subcommands: &[],
    run: bf_mexists,
};

fn bf_mexists(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let items = args.rest();
    let found = exists_each(ctx, key, items)?;
    Ok(Frame::Array(
        found.into_iter().map(Frame::Boolean).collect(),
    ))
}

// ---------------------------------------------------------------------------
// BF.INFO, BF.CARD, BF.DEBUG

pub(crate) const BF_INFO: CommandSpec = CommandSpec {
    name: "BF.INFO",
    group: Group::Bloom,
    arity: -2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns information about a Bloom Filter",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: bf_info,
};

/// BF.INFO's fields: the one-field keyword and the label of the full reply.
const INFO_FIELDS: [(&str, &str); 5] = [
    ("CAPACITY", "Capacity"),
    ("SIZE", "Size"),
    ("FILTERS", "Number of filters"),
    ("ITEMS", "Number of items inserted"),
    ("EXPANSION", "Expansion rate"),
];

fn info_value(chain: &Chain, field: usize) -> Frame {
    let int = |n: u64| Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    match field {
        0 => int(chain.capacity()),
        1 => int(chain.size_bytes()),
        2 => int(chain.nfilters() as u64),
        3 => int(chain.card()),
        // A fixed-size filter has no expansion rate: nil.
        _ => chain
            .expansion()
            .map_or(Frame::Null, |e| Frame::Integer(i64::from(e))),
    }
}

fn bf_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if args.argv().len() > 3 {
        return Err(CmdError::WrongArity("bf.info".into()));
    }
    let key = args.next_key()?;
    let field = args.next_opt();
    let resp3 = ctx.resp3();
    let chain = existing_chain(ctx, key)?;
    let Some(field) = field else {
        // A map in RESP3; the encoder flattens it for RESP2.
        return Ok(Frame::Map(
            INFO_FIELDS
                .iter()
                .enumerate()
                .map(|(i, (_, label))| (Frame::simple(label), info_value(chain, i)))
                .collect(),
        ));
    };
    let i = INFO_FIELDS
        .iter()
        .position(|(name, _)| is(field, name))
        .ok_or(CmdError::msg("Invalid information value"))?;
    let value = info_value(chain, i);
    Ok(if resp3 {
        Frame::Map(vec![(Frame::simple(INFO_FIELDS[i].1), value)])
    } else {
        Frame::Array(vec![value])
    })
}

pub(crate) const BF_CARD: CommandSpec = CommandSpec {
    name: "BF.CARD",
    group: Group::Bloom,
    arity: 2,
    flags: READ,
    keys: Keys::single(1),
    summary: "Returns the cardinality of a Bloom filter",
    since: "2.4.4",
    complexity: "O(1)",
    subcommands: &[],
    run: bf_card,
};

fn bf_card(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let card = read_chain(ctx, key)?.map(Chain::card);
    ctx.hit_key(key, card.is_some());
    Ok(Frame::Integer(
        i64::try_from(card.unwrap_or(0)).unwrap_or(i64::MAX),
    ))
}

pub(crate) const BF_DEBUG: CommandSpec = CommandSpec {
    name: "BF.DEBUG",
    group: Group::Bloom,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Shows the size and shape of each sub-filter of a Bloom filter",
    since: "1.0.0",
    complexity: "O(n), where n is the number of sub-filters",
    subcommands: &[],
    run: bf_debug,
};

fn bf_debug(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let chain = existing_chain(ctx, key)?;
    Ok(Frame::Array(
        chain
            .debug_lines()
            .into_iter()
            .map(|line| Frame::Simple(Bytes::from(line)))
            .collect(),
    ))
}

// ---------------------------------------------------------------------------
// BF.SCANDUMP, BF.LOADCHUNK

pub(crate) const BF_SCANDUMP: CommandSpec = CommandSpec {
    name: "BF.SCANDUMP",
    group: Group::Bloom,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Begins an incremental save of the bloom filter",
    since: "1.0.0",
    complexity: "O(n), where n is the capacity",
    subcommands: &[],
    run: bf_scandump,
};

fn bf_scandump(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw_iter = args.next_arg()?;
    let chain = existing_chain(ctx, key)?;
    let iter = parse_i64(raw_iter).ok_or(CmdError::msg("Second argument must be numeric"))?;
    let (next, data) = if iter == 0 {
        (1, Bytes::from(chain.header_bytes()))
    } else {
        // Before the first chunk or past the last: the end, `[0, ""]`.
        u64::try_from(iter)
            .ok()
            .and_then(|i| chain.chunk_after(i))
            .map_or((0, Bytes::new()), |(next, chunk)| {
                (next, Bytes::copy_from_slice(chunk))
            })
    };
    Ok(Frame::Array(vec![
        Frame::Integer(i64::try_from(next).unwrap_or(0)),
        Frame::Bulk(data),
    ]))
}

pub(crate) const BF_LOADCHUNK: CommandSpec = CommandSpec {
    name: "BF.LOADCHUNK",
    group: Group::Bloom,
    arity: 4,
    flags: WRITE,
    keys: Keys::single(1),
    summary: "Restores a filter previously saved using SCANDUMP",
    since: "1.0.0",
    complexity: "O(n), where n is the capacity",
    subcommands: &[],
    run: bf_loadchunk,
};

/// Iterator 1 on a missing key is the dump header, which creates the filter
/// with zeroed bits; every other call copies a chunk into an existing filter.
/// Iterator 1 on an existing filter is treated as a chunk too, as RedisBloom
/// does: a non-empty one cannot start before the first byte, so it is refused
/// as bad data rather than replacing the filter.
fn bf_loadchunk(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let iter =
        parse_i64(args.next_arg()?).ok_or(CmdError::err("Second argument must be numeric"))?;
    let data = args.next_arg()?;
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    match table.get_mut(key, now) {
        None if iter == 1 => {
            let chain = Chain::from_header(data).map_err(bloom_err)?;
            table.insert(key, Value::Bloom(Box::new(chain)), 0, now);
        }
        None => return Err(not_found()),
        Some(entry) => {
            let Value::Bloom(chain) = &mut entry.value else {
                return Err(CmdError::WrongType);
            };
            let iter = u64::try_from(iter).map_err(|_| bloom_err(BloomError::BadData))?;
            chain.load_chunk(iter, data).map_err(bloom_err)?;
        }
    }
    ctx.dirty(1);
    Ok(Frame::ok())
}
