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

#[cfg(test)]
mod tests {
    use crate::testing::*;
    use bytes::{Bytes, BytesMut};
    use keel_resp::{Frame, Protocol};

    fn yes() -> Frame {
        Frame::Boolean(true)
    }

    fn no() -> Frame {
        Frame::Boolean(false)
    }

    fn simple(s: &str) -> Frame {
        Frame::Simple(Bytes::copy_from_slice(s.as_bytes()))
    }

    fn bools(v: &[bool]) -> Frame {
        Frame::Array(v.iter().map(|b| Frame::Boolean(*b)).collect())
    }

    fn run_bytes(t: &mut TestEngine, argv: &[&[u8]]) -> Frame {
        let argv = argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        decoded(t.engine.execute(&mut t.session, argv))
    }

    fn debug_lines(t: &mut TestEngine, key: &str) -> Vec<String> {
        let Frame::Array(lines) = t.run(&["BF.DEBUG", key]) else {
            panic!("BF.DEBUG replies an array");
        };
        lines
            .into_iter()
            .map(|l| match l {
                Frame::Simple(s) => String::from_utf8_lossy(&s).into_owned(),
                other => panic!("status line expected, got {other:?}"),
            })
            .collect()
    }

    #[test]
    fn golden_debug_output() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["BF.RESERVE", "k", "0.01", "10"]), ok());
        for i in 0..100 {
            let item = i.to_string();
            assert!(matches!(t.run(&["BF.ADD", "k", &item]), Frame::Boolean(_)));
        }
        assert_eq!(
            debug_lines(&mut t, "k"),
            [
                "size:99",
                "bytes:16 bits:128 hashes:8 hashwidth:64 capacity:10 size:10 ratio:0.005",
                "bytes:32 bits:256 hashes:9 hashwidth:64 capacity:20 size:20 ratio:0.0025",
                "bytes:72 bits:576 hashes:10 hashwidth:64 capacity:40 size:40 ratio:0.00125",
                "bytes:160 bits:1280 hashes:11 hashwidth:64 capacity:80 size:29 ratio:0.000625",
            ]
        );
        assert_eq!(t.run(&["BF.CARD", "k"]), int(99));
        assert_eq!(
            t.run(&["BF.INFO", "k", "FILTERS"]),
            Frame::Array(vec![int(4)])
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "capacity"]),
            Frame::Array(vec![int(150)])
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "Size"]),
            Frame::Array(vec![int(32 + 64 * 4 + 16 + 32 + 72 + 160)])
        );
    }

    #[test]
    fn add_exists_and_card() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["BF.EXISTS", "k", "a"]), no());
        assert_eq!(t.run(&["BF.CARD", "k"]), int(0));
        assert_eq!(t.run(&["BF.ADD", "k", "a"]), yes());
        assert_eq!(t.run(&["BF.ADD", "k", "a"]), no());
        assert_eq!(t.run(&["BF.EXISTS", "k", "a"]), yes());
        assert_eq!(t.run(&["BF.EXISTS", "k", "b"]), no());
        assert_eq!(
            t.run(&["BF.MADD", "k", "b", "a", "c"]),
            bools(&[true, false, true])
        );
        assert_eq!(
            t.run(&["BF.MEXISTS", "k", "a", "b", "c", "d"]),
            bools(&[true, true, true, false])
        );
        assert_eq!(
            t.run(&["BF.MEXISTS", "nokey", "a", "b"]),
            bools(&[false, false])
        );
        assert_eq!(t.run(&["BF.CARD", "k"]), int(3));
        // The filter made on demand has the configured defaults.
        assert_eq!(
            debug_lines(&mut t, "k")[1],
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:3 ratio:0.005"
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "SIZE"]),
            Frame::Array(vec![int(240)])
        );
        assert_eq!(t.run(&["TYPE", "k"]), simple("MBbloom--"));
        assert_eq!(t.run(&["OBJECT", "ENCODING", "k"]), bulk("raw"));
    }

    #[test]
    fn configured_defaults_shape_new_filters() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["CONFIG", "SET", "bf-error-rate", "0.001"]), ok());
        assert_eq!(t.run(&["CONFIG", "SET", "bf-initial-size", "7"]), ok());
        assert_eq!(t.run(&["CONFIG", "SET", "bf-expansion-factor", "0"]), ok());
        assert_eq!(
            t.run(&["BF.MADD", "k", "1", "2", "3", "4", "5", "6", "7", "8"]),
            Frame::Array(vec![
                yes(),
                yes(),
                yes(),
                yes(),
                yes(),
                yes(),
                yes(),
                error("ERR non scaling filter is full"),
            ])
        );
        let lines = debug_lines(&mut t, "k");
        assert!(
            lines[1].ends_with("capacity:7 size:7 ratio:0.001"),
            "{lines:?}"
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "EXPANSION"]),
            Frame::Array(vec![Frame::Null])
        );
        // BF.RESERVE takes its default growth from the configuration too.
        assert_eq!(t.run(&["CONFIG", "SET", "bf-expansion-factor", "3"]), ok());
        assert_eq!(t.run(&["BF.RESERVE", "r", "0.01", "10"]), ok());
        assert_eq!(
            t.run(&["BF.INFO", "r", "EXPANSION"]),
            Frame::Array(vec![int(3)])
        );
        let e = t.run(&["CONFIG", "SET", "bf-error-rate", "1"]);
        assert!(
            matches!(&e, Frame::Error(m) if String::from_utf8_lossy(m).contains("must be in the range")),
            "{e:?}"
        );
    }

    #[test]
    fn reserve_options_and_errors() {
        let mut t = TestEngine::new();
        let cases: &[(&[&str], &str)] = &[
            (&["BF.RESERVE", "k", "x", "10"], "ERR bad error rate"),
            (
                &["BF.RESERVE", "k", "0", "10"],
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (
                &["BF.RESERVE", "k", "1", "10"],
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (&["BF.RESERVE", "k", "0.01", "x"], "ERR bad capacity"),
            (&["BF.RESERVE", "k", "0.01", "1.5"], "ERR bad capacity"),
            (
                &["BF.RESERVE", "k", "0.01", "0"],
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "1073741825"],
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "EXPANSION"],
                "ERR no expansion",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "expansion", "x"],
                "ERR bad expansion",
            ),
            (
                &[
                    "BF.RESERVE",
                    "k",
                    "0.01",
                    "10",
                    "NONSCALING",
                    "EXPANSION",
                    "2",
                ],
                "Nonscaling filters cannot expand",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "32769"],
                "ERR expansion must be in the range [0, 32768]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "EXPANSION", "-1"],
                "ERR expansion must be in the range [0, 32768]",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "10", "a", "b", "c", "d"],
                "ERR wrong number of arguments for 'bf.reserve' command",
            ),
            (
                &["BF.RESERVE", "k", "0.01"],
                "ERR wrong number of arguments for 'bf.reserve' command",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(t.run(argv), error(want), "{argv:?}");
        }
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        // Unknown tokens are skipped; keywords are found anywhere.
        assert_eq!(
            t.run(&["BF.RESERVE", "k", "0.01", "10", "junk", "expansion", "4"]),
            ok()
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "EXPANSION"]),
            Frame::Array(vec![int(4)])
        );
        assert_eq!(
            t.run(&["BF.RESERVE", "k", "0.01", "10"]),
            error("ERR item exists")
        );
        t.run(&["SET", "s", "v"]);
        assert_eq!(
            t.run(&["BF.RESERVE", "s", "0.01", "10"]),
            error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
        // EXPANSION 0 and NONSCALING both make a fixed-size filter.
        assert_eq!(
            t.run(&["BF.RESERVE", "z", "0.01", "2", "EXPANSION", "0"]),
            ok()
        );
        assert_eq!(t.run(&["BF.RESERVE", "n", "0.01", "2", "nonscaling"]), ok());
        for key in ["z", "n"] {
            assert_eq!(t.run(&["BF.MADD", key, "a", "b"]), bools(&[true, true]));
            assert_eq!(
                t.run(&["BF.ADD", key, "c"]),
                error("ERR non scaling filter is full")
            );
            assert_eq!(t.run(&["BF.ADD", key, "a"]), no());
            assert_eq!(
                t.run(&["BF.INFO", key, "EXPANSION"]),
                Frame::Array(vec![Frame::Null])
            );
        }
        // A non-scaling filter keeps the full rate; rates above 0.25 are capped.
        assert_eq!(
            debug_lines(&mut t, "n")[1],
            "bytes:8 bits:64 hashes:7 hashwidth:64 capacity:2 size:2 ratio:0.01"
        );
        assert_eq!(
            t.run(&["BF.RESERVE", "c", "0.9", "100", "NONSCALING"]),
            ok()
        );
        assert!(debug_lines(&mut t, "c")[1].ends_with("ratio:0.25"));
    }

    #[test]
    fn insert_options_and_errors() {
        let mut t = TestEngine::new();
        let arity = "ERR wrong number of arguments for 'bf.insert' command";
        let cases: &[(&[&str], &str)] = &[
            (&["BF.INSERT", "k", "ITEMS"], arity),
            (&["BF.INSERT", "k", "CAPACITY", "10"], arity),
            (&["BF.INSERT", "k", "CAPACITY", "10", "ITEMS"], arity),
            (&["BF.INSERT", "k", "NOCREATE", "ERROR"], arity),
            (&["BF.INSERT", "k", "NOCREATE", "CAPACITY"], arity),
            (
                &["BF.INSERT", "k", "ERROR", "x", "ITEMS", "a"],
                "Bad error rate",
            ),
            (
                &["BF.INSERT", "k", "EXPANSION", "x", "ITEMS", "a"],
                "Bad expansion",
            ),
            (
                &["BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a"],
                "Bad capacity",
            ),
            (
                &["BF.INSERT", "k", "BOGUS", "1", "ITEMS", "a"],
                "Unknown argument received",
            ),
            (
                &["BF.INSERT", "k", "", "ITEMS", "a"],
                "Unknown argument received",
            ),
            (
                &["BF.INSERT", "k", "NOCREATE", "ITEMS", "a"],
                "ERR not found",
            ),
            (
                &["BF.INSERT", "k", "ERROR", "0", "ITEMS", "a"],
                "ERR error rate must be in the range (0.000000, 1.000000)",
            ),
            (
                &["BF.INSERT", "k", "CAPACITY", "0", "ITEMS", "a"],
                "ERR capacity must be in the range [1, 1073741824]",
            ),
            (
                &["BF.INSERT", "k", "EXPANSION", "-3", "ITEMS", "a"],
                "ERR expansion must be in the range [0, 32768]",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(t.run(argv), error(want), "{argv:?}");
        }
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        assert_eq!(
            t.run(&[
                "BF.INSERT",
                "k",
                "capacity",
                "3",
                "error",
                "0.1",
                "nonscaling",
                "items",
                "a",
                "b",
                "a",
                "c",
                "d",
                "e"
            ]),
            Frame::Array(vec![
                yes(),
                yes(),
                no(),
                yes(),
                error("ERR non scaling filter is full"),
            ])
        );
        assert_eq!(
            debug_lines(&mut t, "k")[1],
            "bytes:8 bits:64 hashes:4 hashwidth:64 capacity:3 size:3 ratio:0.1"
        );
        // Options are ignored once the filter exists; NOCREATE is satisfied.
        assert_eq!(
            t.run(&["BF.INSERT", "k", "CAPACITY", "0", "NOCREATE", "ITEMS", "a"]),
            bools(&[false])
        );
        // Keywords are told apart by their letters, as RedisBloom does.
        assert_eq!(
            t.run(&[
                "BF.INSERT",
                "e",
                "Cap",
                "5",
                "Er",
                "0.5",
                "Ex",
                "3",
                "I",
                "x"
            ]),
            bools(&[true])
        );
        let lines = debug_lines(&mut t, "e");
        assert!(
            lines[1].ends_with("capacity:5 size:1 ratio:0.25"),
            "{lines:?}"
        );
        assert_eq!(
            t.run(&["BF.INFO", "e", "EXPANSION"]),
            Frame::Array(vec![int(3)])
        );
        // The items may look like options.
        assert_eq!(
            t.run(&["BF.INSERT", "w", "ITEMS", "NOCREATE", "ITEMS"]),
            bools(&[true, true])
        );
        t.run(&["SET", "s", "v"]);
        let wrong = "WRONGTYPE Operation against a key holding the wrong kind of value";
        assert_eq!(t.run(&["BF.INSERT", "s", "ITEMS", "a"]), error(wrong));
        assert_eq!(t.run(&["BF.ADD", "s", "a"]), error(wrong));
        assert_eq!(t.run(&["BF.MADD", "s", "a"]), error(wrong));
    }

    #[test]
    fn reads_of_other_types_and_missing_keys() {
        let mut t = TestEngine::new();
        t.run(&["SET", "s", "v"]);
        let wrong = error("WRONGTYPE Operation against a key holding the wrong kind of value");
        assert_eq!(t.run(&["BF.EXISTS", "s", "v"]), no());
        assert_eq!(
            t.run(&["BF.MEXISTS", "s", "v", "w"]),
            bools(&[false, false])
        );
        assert_eq!(t.run(&["BF.CARD", "s"]), wrong);
        assert_eq!(t.run(&["BF.INFO", "s"]), wrong);
        assert_eq!(t.run(&["BF.DEBUG", "s"]), wrong);
        assert_eq!(t.run(&["BF.SCANDUMP", "s", "0"]), wrong);
        assert_eq!(t.run(&["BF.LOADCHUNK", "s", "1", "x"]), wrong);
        assert_eq!(t.run(&["BF.LOADCHUNK", "s", "5", "x"]), wrong);
        let nf = error("ERR not found");
        assert_eq!(t.run(&["BF.INFO", "m"]), nf);
        assert_eq!(t.run(&["BF.INFO", "m", "CAPACITY"]), nf);
        assert_eq!(t.run(&["BF.DEBUG", "m"]), nf);
        assert_eq!(t.run(&["BF.SCANDUMP", "m", "0"]), nf);
        assert_eq!(t.run(&["BF.SCANDUMP", "m", "x"]), nf);
        assert_eq!(t.run(&["BF.LOADCHUNK", "m", "9", "x"]), nf);
        t.run(&["BF.ADD", "k", "a"]);
        assert_eq!(
            t.run(&["BF.INFO", "k", "BOGUS"]),
            error("Invalid information value")
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "CAPACITY", "SIZE"]),
            error("ERR wrong number of arguments for 'bf.info' command")
        );
        assert_eq!(
            t.run(&["BF.SCANDUMP", "k", "x"]),
            error("Second argument must be numeric")
        );
        assert_eq!(
            t.run(&["BF.LOADCHUNK", "k", "x", "data"]),
            error("ERR Second argument must be numeric")
        );
        for (argv, name) in [
            (&["BF.ADD", "k"][..], "bf.add"),
            (&["BF.ADD", "k", "a", "b"][..], "bf.add"),
            (&["BF.MADD", "k"][..], "bf.madd"),
            (&["BF.EXISTS", "k"][..], "bf.exists"),
            (&["BF.MEXISTS", "k"][..], "bf.mexists"),
            (&["BF.CARD"][..], "bf.card"),
            (&["BF.INFO"][..], "bf.info"),
            (&["BF.DEBUG", "k", "x"][..], "bf.debug"),
            (&["BF.SCANDUMP", "k"][..], "bf.scandump"),
            (&["bf.loadchunk", "k", "1"][..], "bf.loadchunk"),
            (&["BF.INSERT", "k", "ITEMS"][..], "bf.insert"),
        ] {
            assert_eq!(
                t.run(argv),
                error(&format!(
                    "ERR wrong number of arguments for '{name}' command"
                )),
                "{argv:?}"
            );
        }
    }

    #[test]
    fn info_shapes_in_both_protocols() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "k", "0.001", "100"]);
        t.run(&["BF.MADD", "k", "a", "b"]);
        let full = t.run(&["BF.INFO", "k"]);
        let want = Frame::Map(vec![
            (simple("Capacity"), int(100)),
            (simple("Size"), int(296)),
            (simple("Number of filters"), int(1)),
            (simple("Number of items inserted"), int(2)),
            (simple("Expansion rate"), int(2)),
        ]);
        assert_eq!(full, want);
        // RESP2 sees the map as a flat array.
        let mut out = BytesMut::new();
        keel_resp::encode(&full, Protocol::Resp2, &mut out);
        assert!(out.starts_with(b"*10\r\n+Capacity\r\n:100\r\n+Size\r\n:296\r\n"));
        assert_eq!(
            t.run(&["BF.INFO", "k", "items"]),
            Frame::Array(vec![int(2)])
        );
        t.run(&["HELLO", "3"]);
        assert_eq!(t.run(&["BF.INFO", "k"]), want);
        assert_eq!(
            t.run(&["BF.INFO", "k", "items"]),
            Frame::Map(vec![(simple("Number of items inserted"), int(2))])
        );
        assert_eq!(
            t.run(&["BF.INFO", "k", "Expansion"]),
            Frame::Map(vec![(simple("Expansion rate"), int(2))])
        );
        t.run(&["BF.RESERVE", "f", "0.01", "100", "NONSCALING"]);
        let Frame::Map(fields) = t.run(&["BF.INFO", "f"]) else {
            panic!("map expected");
        };
        assert_eq!(fields[4], (simple("Expansion rate"), Frame::Null));
        // 960 bits at the full 1% rate (a scaling filter's first link would
        // take 1152 at half the rate).
        assert_eq!(fields[1], (simple("Size"), int(32 + 64 + 120)));
        // Booleans in RESP3 become 1 and 0 for RESP2 clients.
        let mut out = BytesMut::new();
        keel_resp::encode(
            &t.run(&["BF.MADD", "k", "a", "z"]),
            Protocol::Resp2,
            &mut out,
        );
        assert_eq!(&out[..], b"*2\r\n:0\r\n:1\r\n");
    }

    /// Dumps `key` with SCANDUMP and loads it into `copy` with LOADCHUNK.
    fn dump_into(t: &mut TestEngine, key: &str, copy: &str) -> usize {
        let mut iter = b"0".to_vec();
        let mut chunks = 0;
        loop {
            let Frame::Array(reply) = run_bytes(t, &[b"BF.SCANDUMP", key.as_bytes(), &iter]) else {
                panic!("SCANDUMP replies an array");
            };
            let [Frame::Integer(next), Frame::Bulk(data)] = &reply[..] else {
                panic!("[iter, data] expected, got {reply:?}");
            };
            if *next == 0 {
                assert!(data.is_empty());
                return chunks;
            }
            let next = next.to_string();
            assert_eq!(
                run_bytes(
                    t,
                    &[b"BF.LOADCHUNK", copy.as_bytes(), next.as_bytes(), data]
                ),
                ok()
            );
            chunks += 1;
            iter = next.into_bytes();
        }
    }

    fn check_copy(t: &mut TestEngine, key: &str, copy: &str, probes: usize) {
        assert_eq!(debug_lines(t, copy), debug_lines(t, key));
        assert_eq!(t.run(&["BF.INFO", copy]), t.run(&["BF.INFO", key]));
        assert_eq!(t.run(&["BF.CARD", copy]), t.run(&["BF.CARD", key]));
        let items: Vec<String> = (0..probes).map(|i| format!("item{i}")).collect();
        let mut argv = vec!["BF.MEXISTS", key];
        argv.extend(items.iter().map(String::as_str));
        let original = t.run(&argv);
        argv[1] = copy;
        assert_eq!(t.run(&argv), original);
    }

    #[test]
    fn scandump_loadchunk_round_trip_one_link() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "k", "0.01", "1000"]);
        for i in 0..300 {
            t.run(&["BF.ADD", "k", &format!("item{i}")]);
        }
        // Header, then one chunk for the one link.
        assert_eq!(dump_into(&mut t, "k", "copy"), 2);
        check_copy(&mut t, "k", "copy", 1000);
        // Past the end and before the start, the dump is over.
        for iter in ["100000", "-5"] {
            assert_eq!(
                t.run(&["BF.SCANDUMP", "k", iter]),
                Frame::Array(vec![int(0), bulk("")])
            );
        }
    }

    #[test]
    fn scandump_loadchunk_round_trip_twenty_links() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "k", "0.01", "2", "EXPANSION", "1"]);
        let mut i = 0;
        while debug_lines(&mut t, "k").len() < 21 {
            t.run(&["BF.ADD", "k", &format!("item{i}")]);
            i += 1;
        }
        assert_eq!(dump_into(&mut t, "k", "copy"), 21);
        check_copy(&mut t, "k", "copy", 200);
        // Adding to both keeps them identical.
        assert_eq!(
            t.run(&["BF.ADD", "copy", "new"]),
            t.run(&["BF.ADD", "k", "new"])
        );
        check_copy(&mut t, "k", "copy", 200);
    }

    #[test]
    fn blocked_layout_is_chosen_at_creation_and_round_trips() {
        let mut t = TestEngine::new();
        assert_eq!(
            t.run(&[
                "BF.RESERVE",
                "k",
                "0.01",
                "2",
                "EXPANSION",
                "2",
                "LAYOUT",
                "blocked"
            ]),
            ok()
        );
        let mut i = 0;
        while debug_lines(&mut t, "k").len() < 6 {
            t.run(&["BF.ADD", "k", &format!("item{i}")]);
            i += 1;
        }
        let lines = debug_lines(&mut t, "k");
        assert!(
            lines[1..].iter().all(|l| l.ends_with(" layout:blocked")),
            "{lines:?}"
        );
        for j in 0..i {
            assert_eq!(
                t.run(&["BF.EXISTS", "k", &format!("item{j}")]),
                Frame::Boolean(true)
            );
        }
        assert_eq!(dump_into(&mut t, "k", "copy"), 6);
        check_copy(&mut t, "k", "copy", 200);
        assert_eq!(debug_lines(&mut t, "copy"), lines);

        // BF.INSERT takes the option too; CLASSIC is RedisBloom's layout.
        t.run(&["BF.INSERT", "i", "LAYOUT", "BLOCKED", "ITEMS", "a", "b"]);
        assert!(debug_lines(&mut t, "i")[1].ends_with(" layout:blocked"));
        t.run(&["BF.RESERVE", "c", "0.01", "100", "LAYOUT", "CLASSIC"]);
        assert_eq!(
            debug_lines(&mut t, "c")[1],
            "bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:0 ratio:0.005"
        );
    }

    #[test]
    fn layout_option_errors() {
        let mut t = TestEngine::new();
        let cases: &[(&[&str], &str)] = &[
            (
                &["BF.RESERVE", "k", "0.01", "100", "LAYOUT"],
                "ERR no layout",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "100", "LAYOUT", "dense"],
                "ERR layout must be CLASSIC or BLOCKED",
            ),
            (
                &["BF.RESERVE", "k", "0.01", "100", "EXPANSION", "2", "x", "y"],
                "ERR wrong number of arguments for 'bf.reserve' command",
            ),
            (
                &["BF.INSERT", "k", "LAYOUT"],
                "ERR wrong number of arguments for 'bf.insert' command",
            ),
            (
                &["BF.INSERT", "k", "LAYOUT", "x", "ITEMS", "a"],
                "ERR layout must be CLASSIC or BLOCKED",
            ),
        ];
        for (argv, want) in cases {
            assert_eq!(t.run(argv), error(want), "{argv:?}");
        }
        assert_eq!(t.run(&["EXISTS", "k"]), int(0));
        // The longest form: every RedisBloom option plus LAYOUT.
        assert_eq!(
            t.run(&[
                "BF.RESERVE",
                "k",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "LAYOUT",
                "BLOCKED",
                "x"
            ]),
            ok()
        );
    }

    #[test]
    fn blocked_filters_are_logged_with_their_layout() {
        let (mut t, rec) = crate::testing::TestEngine::recording(1_700_000_000_000);
        t.run(&["BF.RESERVE", "r", "0.01", "100", "LAYOUT", "BLOCKED"]);
        t.run(&["BF.INSERT", "i", "LAYOUT", "BLOCKED", "ITEMS", "a"]);
        let log = rec.commands();
        assert_eq!(
            log[0],
            [
                "BF.RESERVE",
                "r",
                "0.01",
                "100",
                "EXPANSION",
                "2",
                "LAYOUT",
                "BLOCKED"
            ]
        );
        assert_eq!(
            &log[1][log[1].len() - 4..],
            ["LAYOUT", "BLOCKED", "ITEMS", "a"]
        );
    }

    #[test]
    fn loadchunk_refuses_bad_data() {
        let mut t = TestEngine::new();
        t.run(&["BF.MADD", "k", "a", "b"]);
        let Frame::Array(reply) = t.run(&["BF.SCANDUMP", "k", "0"]) else {
            panic!("array");
        };
        let Some(Frame::Bulk(header)) = reply.get(1) else {
            panic!("header");
        };
        assert_eq!(header.len(), 20 + 53);
        let bad = error("ERR received bad data");
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", b"junk"]),
            bad
        );
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", &header[..50]]),
            bad
        );
        assert_eq!(t.run(&["EXISTS", "x"]), int(0));
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", header]),
            ok()
        );
        // The header onto an existing filter is a chunk at a negative offset.
        assert_eq!(
            run_bytes(&mut t, &[b"BF.LOADCHUNK", b"x", b"1", header]),
            bad
        );
        // Chunks must fall inside the bit arrays.
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "-1", "ab"]), bad);
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "146", "ab"]), bad);
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "999999999999", "ab"]), bad);
        assert_eq!(t.run(&["BF.LOADCHUNK", "x", "145", "ab"]), ok());
        // Loaded with zeroed bits and not yet given its chunk, the copy
        // holds nothing but keeps the header's count.
        assert_eq!(t.run(&["BF.CARD", "x"]), int(2));
    }

    #[test]
    fn writes_are_dirty_only_when_they_change_something() {
        let mut t = TestEngine::new();
        let dirty = |t: &mut TestEngine| {
            let info = t.run(&["INFO", "persistence"]);
            let (Frame::Verbatim(_, text) | Frame::Bulk(text)) = info else {
                panic!("INFO text");
            };
            let text = String::from_utf8_lossy(&text).into_owned();
            text.lines()
                .find_map(|l| l.strip_prefix("rdb_changes_since_last_save:"))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .expect("changes counter")
        };
        let before = dirty(&mut t);
        t.run(&["BF.ADD", "k", "a"]);
        let after_add = dirty(&mut t);
        assert!(after_add > before);
        t.run(&["BF.ADD", "k", "a"]);
        t.run(&["BF.MADD", "k", "a"]);
        t.run(&["BF.EXISTS", "k", "a"]);
        assert_eq!(dirty(&mut t), after_add);
        t.run(&["BF.MADD", "k", "b", "c"]);
        assert_eq!(dirty(&mut t), after_add + 2);
    }

    #[test]
    fn writes_are_logged_so_that_replay_does_not_depend_on_config() {
        let (mut t, rec) = crate::testing::TestEngine::recording(1_700_000_000_000);
        let mut run = |argv: &[&str]| t.run(argv);
        run(&["BF.ADD", "k", "a"]);
        run(&["BF.ADD", "k", "a"]);
        run(&["BF.ADD", "k", "b"]);
        run(&["BF.MADD", "m", "x", "y"]);
        run(&[
            "BF.INSERT",
            "i",
            "CAPACITY",
            "5",
            "NONSCALING",
            "ITEMS",
            "p",
        ]);
        run(&["BF.RESERVE", "r", "0.01", "10", "x", "y", "z"]);
        run(&["BF.RESERVE", "q", "0.01", "10", "NONSCALING"]);
        run(&["BF.EXISTS", "k", "a"]);
        run(&["BF.LOADCHUNK", "k", "x", "y"]);
        let logged = rec.commands();
        let want: Vec<Vec<&str>> = vec![
            vec![
                "BF.INSERT",
                "k",
                "CAPACITY",
                "100",
                "ERROR",
                "1e-2",
                "EXPANSION",
                "2",
                "ITEMS",
                "a",
            ],
            vec!["BF.ADD", "k", "b"],
            vec![
                "BF.INSERT",
                "m",
                "CAPACITY",
                "100",
                "ERROR",
                "1e-2",
                "EXPANSION",
                "2",
                "ITEMS",
                "x",
                "y",
            ],
            vec![
                "BF.INSERT",
                "i",
                "CAPACITY",
                "5",
                "ERROR",
                "1e-2",
                "EXPANSION",
                "2",
                "NONSCALING",
                "ITEMS",
                "p",
            ],
            vec!["BF.RESERVE", "r", "0.01", "10", "EXPANSION", "2"],
            vec!["BF.RESERVE", "q", "0.01", "10", "NONSCALING"],
        ];
        assert_eq!(logged, want);
    }

    #[test]
    fn memory_usage_counts_the_bits() {
        let mut t = TestEngine::new();
        t.run(&["BF.RESERVE", "small", "0.01", "10"]);
        t.run(&["BF.RESERVE", "big", "0.0001", "1000000"]);
        let usage = |t: &mut TestEngine, k: &str| match t.run(&["MEMORY", "USAGE", k]) {
            Frame::Integer(n) => n,
            other => panic!("{other:?}"),
        };
        assert!(usage(&mut t, "small") < 1000);
        assert!(usage(&mut t, "big") > 2_576_608);
        assert_eq!(
            debug_lines(&mut t, "big")[1],
            "bytes:2576608 bits:20612864 hashes:15 hashwidth:64 capacity:1000000 size:0 ratio:5e-05"
        );
        // COPY clones the filter; the copy then changes on its own.
        assert_eq!(t.run(&["COPY", "small", "dup"]), int(1));
        assert_eq!(t.run(&["BF.ADD", "dup", "a"]), yes());
        assert_eq!(t.run(&["BF.EXISTS", "small", "a"]), no());
        assert_eq!(t.run(&["RENAME", "dup", "moved"]), ok());
        assert_eq!(t.run(&["BF.EXISTS", "moved", "a"]), yes());
    }
}
