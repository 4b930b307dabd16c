//! Bitmap index commands, Keel's own `IDX.*` family: IDX.CREATE, IDX.ADD, IDX.DEL, IDX.SEARCH,
//! IDX.INFO and IDX.DROP. The index is `keel_store::index::BitmapIndex`; this file only parses
//! arguments, shapes replies and words the errors.
//!
//! An index is created explicitly and stays, empty or not, until IDX.DROP (or DEL) removes the
//! key. Every write is deterministic, so each is logged as sent.
//!
//! In IDX.ADD, a pair position holding the word `PAYLOAD` (any case) starts the payload
//! option, which must come last; in IDX.SEARCH the words `DEFAULT`, `LIMIT` and `WITHPAYLOAD`
//! end the conditions. Those words cannot be attribute names in these positions.

use bytes::Bytes;
use keel_engine::args::{is, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::index::{BitmapIndex, Query};
use keel_store::num::parse_i64;
use keel_store::{Value, ValueType};

pub static COMMANDS: &[&CommandSpec] = &[
    &IDX_CREATE,
    &IDX_ADD,
    &IDX_DEL,
    &IDX_SEARCH,
    &IDX_INFO,
    &IDX_DROP,
];

fn no_such_index() -> CmdError {
    CmdError::err("no such index")
}

/// The index at `key` for a read: `ERR no such index` when absent, WRONGTYPE for another type.
fn read_index<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t BitmapIndex, CmdError> {
    match ctx.read_value(key, ValueType::Index)? {
        Some(Value::Index(index)) => Ok(index),
        Some(_) => Err(CmdError::WrongType),
        None => Err(no_such_index()),
    }
}

/// The index at `key` for a write, with the same errors as [`read_index`].
fn write_index<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<&'t mut BitmapIndex, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now).map(|e| &mut e.value) {
        Some(Value::Index(index)) => Ok(index),
        Some(_) => Err(CmdError::WrongType),
        None => Err(no_such_index()),
    }
}

// ---------------------------------------------------------------------------
// IDX.CREATE

pub(crate) const IDX_CREATE: CommandSpec = CommandSpec {
    name: "IDX.CREATE",
    group: Group::Index,
    arity: 2,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Creates an empty bitmap index.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: idx_create,
};

fn idx_create(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    match table.peek(key, now).map(|e| &e.value) {
        Some(Value::Index(_)) => return Err(CmdError::err("index already exists")),
        Some(_) => return Err(CmdError::WrongType),
        None => {}
    }
    table.insert(key, Value::Index(Box::default()), 0, now);
    ctx.dirty(1);
    Ok(Frame::ok())
}

// ---------------------------------------------------------------------------
// IDX.ADD

pub(crate) const IDX_ADD: CommandSpec = CommandSpec {
    name: "IDX.ADD",
    group: Group::Index,
    arity: -5,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Adds an entity with its attribute value pairs and an optional payload to a bitmap \
              index, or replaces the entity whole. Replies 1 when the entity is new, 0 when it \
              was replaced.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of pairs of the entity and of the entity it replaces.",
    subcommands: &[],
    run: idx_add,
};

fn idx_add(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let id = args.next_arg()?;
    let rest = args.rest();
    // Attribute value pairs, as HSET counts its field value pairs.
    if !rest.len().is_multiple_of(2) {
        return Err(CmdError::WrongArity("idx.add".into()));
    }
    let mut pairs: Vec<(&[u8], &[u8])> = Vec::with_capacity(rest.len() / 2);
    let mut payload = None;
    for (i, pair) in rest.chunks_exact(2).enumerate() {
        if is(&pair[0], "PAYLOAD") {
            if (i + 1) * 2 != rest.len() {
                return Err(CmdError::Syntax);
            }
            payload = Some(pair[1].as_ref());
        } else {
            pairs.push((&pair[0], &pair[1]));
        }
    }
    if pairs.is_empty() {
        return Err(CmdError::WrongArity("idx.add".into()));
    }
    let index = write_index(ctx, key)?;
    let new = index
        .add(id, &pairs, payload)
        .map_err(|e| CmdError::msg(e.to_string()))?;
    ctx.dirty(1);
    Ok(Frame::Integer(i64::from(new)))
}

// ---------------------------------------------------------------------------
// IDX.DEL

pub(crate) const IDX_DEL: CommandSpec = CommandSpec {
    name: "IDX.DEL",
    group: Group::Index,
    arity: 3,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Removes an entity from a bitmap index. Replies 1 when it was there, else 0.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of pairs of the entity.",
    subcommands: &[],
    run: idx_del,
};

fn idx_del(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let id = args.next_arg()?;
    let removed = write_index(ctx, key)?.remove(id);
    ctx.dirty(u64::from(removed));
    Ok(Frame::Integer(i64::from(removed)))
}

// ---------------------------------------------------------------------------
// IDX.SEARCH

pub(crate) const IDX_SEARCH: CommandSpec = CommandSpec {
    name: "IDX.SEARCH",
    group: Group::Index,
    arity: -4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns the ids of the entities of a bitmap index that carry every given attribute \
              value pair; of several, with DEFAULT only those also carrying that pair; at most \
              LIMIT of them; WITHPAYLOAD adds each one's payload (nil when it has none).",
    since: "1.0.0",
    complexity: "O(S * C) where S is the number of entities with the rarest condition's pair and \
                 C the number of conditions.",
    subcommands: &[],
    run: idx_search,
};

fn is_search_keyword(a: &[u8]) -> bool {
    is(a, "DEFAULT") || is(a, "LIMIT") || is(a, "WITHPAYLOAD")
}

fn idx_search(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let mut query = Query::default();
    while let Some(attr) = args.peek() {
        if is_search_keyword(attr) {
            break;
        }
        args.next_opt();
        let value = args.next_opt().ok_or(CmdError::Syntax)?;
        query.conditions.push((attr, value));
    }
    if query.conditions.is_empty() {
        return Err(CmdError::Syntax);
    }
    let mut with_payload = false;
    while let Some(word) = args.next_opt() {
        if is(word, "DEFAULT") {
            let attr = args.next_opt().ok_or(CmdError::Syntax)?;
            let value = args.next_opt().ok_or(CmdError::Syntax)?;
            query.default = Some((attr, value));
        } else if is(word, "LIMIT") {
            let n = args.next_opt().ok_or(CmdError::Syntax)?;
            let n = parse_i64(n)
                .and_then(|n| usize::try_from(n).ok())
                .ok_or(CmdError::NotInteger)?;
            query.limit = Some(n);
        } else if is(word, "WITHPAYLOAD") {
            with_payload = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let index = read_index(ctx, key)?;
    let hits = index.search(&query);
    let mut out = Vec::with_capacity(hits.len() * if with_payload { 2 } else { 1 });
    for hit in &hits {
        out.push(Frame::bulk_from_slice(hit.id));
        if with_payload {
            out.push(hit.payload.map_or(Frame::Null, Frame::bulk_from_slice));
        }
    }
    ctx.hit(true);
    Ok(Frame::Array(out))
}

// ---------------------------------------------------------------------------
// IDX.INFO

pub(crate) const IDX_INFO: CommandSpec = CommandSpec {
    name: "IDX.INFO",
    group: Group::Index,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns a bitmap index's figures as field value pairs (a map in RESP3): entities, \
              pairs (distinct attribute value pairs, one bitmap each), attributes, payload_bytes \
              and memory_bytes.",
    since: "1.0.0",
    complexity: "O(P log P) where P is the number of distinct pairs.",
    subcommands: &[],
    run: idx_info,
};

fn idx_info(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let index = read_index(ctx, key)?;
    let int = |n: usize| Frame::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let fields = [
        ("entities", index.len()),
        ("pairs", index.pair_count()),
        ("attributes", index.attribute_count()),
        ("payload_bytes", index.payload_bytes()),
        // As MEMORY USAGE counts the value: its heap and the box it lives in.
        (
            "memory_bytes",
            index.heap_bytes() + std::mem::size_of::<BitmapIndex>(),
        ),
    ];
    Ok(Frame::Map(
        fields
            .into_iter()
            .map(|(name, n)| (Frame::bulk(Bytes::from_static(name.as_bytes())), int(n)))
            .collect(),
    ))
}

// ---------------------------------------------------------------------------
// IDX.DROP

pub(crate) const IDX_DROP: CommandSpec = CommandSpec {
    name: "IDX.DROP",
    group: Group::Index,
    arity: 2,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary: "Deletes a bitmap index and its key.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of entities and pairs of the index.",
    subcommands: &[],
    run: idx_drop,
};

fn idx_drop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    write_index(ctx, key)?;
    let now = ctx.now_ms();
    ctx.table(key)?.remove(key, now);
    ctx.dirty(1);
    Ok(Frame::ok())
}
