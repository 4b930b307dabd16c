//! Lists: LPUSH, LRANGE, LMOVE, LMPOP and the rest of the non-blocking list
//! commands, plus the key-level helpers (push, pop, move, LMPOP's argument
//! parser) that the blocking variants reuse.
//!
//! The list operations themselves live in `keel_store::list`; handlers here
//! parse arguments, check types, delete keys whose list became empty (Redis
//! never keeps an empty list) and shape the replies.

use bytes::Bytes;
use keel_engine::args::{parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_resp::Frame;
use keel_store::list::{self, End};
use keel_store::Value;

pub static COMMANDS: &[&CommandSpec] = &[
    &LPUSH, &RPUSH, &LPUSHX, &RPUSHX, &LPOP, &RPOP, &LLEN, &LRANGE, &LINDEX, &LSET, &LINSERT,
    &LREM, &LTRIM, &LPOS, &LMOVE, &RPOPLPUSH, &LMPOP,
];

fn bulk(v: Vec<u8>) -> Frame {
    Frame::Bulk(Bytes::from(v))
}

fn array(items: Vec<Vec<u8>>) -> Frame {
    Frame::Array(items.into_iter().map(bulk).collect())
}

/// Run `f` on the list at `key` for a read command, counting the keyspace hit
/// or miss. `None` when the key is missing; WRONGTYPE for another type.
fn read_list<R>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    f: impl FnOnce(&Value) -> R,
) -> Result<Option<R>, CmdError> {
    let out = ctx.read_value(key, keel_store::ValueType::List)?.map(f);
    ctx.hit_key(key, out.is_some());
    Ok(out)
}

/// The list at `key` for a write command: `None` when the key is missing,
/// WRONGTYPE for another type.
pub fn list_mut<'t>(ctx: &'t mut Ctx<'_>, key: &[u8]) -> Result<Option<&'t mut Value>, CmdError> {
    let now = ctx.now_ms();
    match ctx.table(key)?.get_mut(key, now) {
        None => Ok(None),
        Some(e) if list::is_list(&e.value) => Ok(Some(&mut e.value)),
        Some(_) => Err(CmdError::WrongType),
    }
}

/// Check that `key` is missing or holds a list, without changing it.
pub(crate) fn check_list(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<(), CmdError> {
    list_mut(ctx, key).map(|_| ())
}

/// Delete `key` if its list is now empty; whether it did. The caller
/// publishes `del` after its own event (see [`notify_del`]).
fn drop_if_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<bool, CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    if table
        .peek(key, now)
        .is_some_and(|e| list::is_list(&e.value) && list::is_empty(&e.value))
    {
        table.remove(key, now);
        return Ok(true);
    }
    Ok(false)
}

/// Publish `del` for a key a command emptied (after the command's own event).
fn notify_del(ctx: &mut Ctx<'_>, key: &[u8], deleted: bool) {
    if deleted {
        ctx.notify(Class::GENERIC, "del", key);
    }
}

/// The event of a pop from `end`.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// The event of a push at `end`.
fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// Push `elems` at `end` of the list at `key`, creating it when missing
/// unless `only_existing` (LPUSHX). Returns the new length, `None` when
/// nothing was pushed because the key is missing. Counts the change.
///
/// Every list command that creates a list key does it here (LPUSH, RPUSH,
/// LMOVE, RPOPLPUSH and their blocking forms), so this is where a key
/// becoming non-empty can be observed.
pub(crate) fn push_to<B: AsRef<[u8]>>(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    end: End,
    elems: &[B],
    only_existing: bool,
) -> Result<Option<usize>, CmdError> {
    let limits = ctx.limits();
    let now = ctx.now_ms();
    let n = match list_mut(ctx, key)? {
        Some(v) => list::push(v, end, elems, &limits),
        None if only_existing => return Ok(None),
        None => {
            let mut v = list::new_value();
            let n = list::push(&mut v, end, elems, &limits);
            ctx.table(key)?.insert(key, v, 0, now);
            n
        }
    };
    ctx.dirty(elems.len() as u64);
    ctx.notify(Class::LIST, push_event(end), key);
    Ok(Some(n))
}

/// Pop up to `count` elements from `end` of the list at `key`, deleting the
/// key when it empties. `None` when the key is missing. Counts the change.
pub fn pop_from(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    end: End,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, CmdError> {
    let Some(v) = list_mut(ctx, key)? else {
        return Ok(None);
    };
    let popped = list::pop_many(v, end, count);
    let deleted = drop_if_empty(ctx, key)?;
    ctx.dirty(popped.len() as u64);
    if !popped.is_empty() {
        ctx.notify(Class::LIST, pop_event(end), key);
    }
    notify_del(ctx, key, deleted);
    Ok(Some(popped))
}

/// LMOVE's effect: pop from `from` of `src`, push at `to` of `dst`. `None`
/// when `src` is missing; WRONGTYPE when either key holds another type (the
/// destination is checked only once the source has something to give).
pub fn move_element(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Vec<u8>>, CmdError> {
    if list_mut(ctx, src)?.is_none() {
        return Ok(None);
    }
    check_list(ctx, dst)?;
    let limits = ctx.limits();
    let Some(v) = list_mut(ctx, src)? else {
        return Ok(None);
    };
    let Some(elem) = list::pop(v, from) else {
        return Ok(None);
    };
    if src == dst {
        // A rotation: the key never empties, so it keeps its expiry.
        list::push(v, to, &[&elem], &limits);
        ctx.dirty(1);
        // Redis publishes the push, then the pop, even for a rotation.
        ctx.notify(Class::LIST, push_event(to), dst);
        ctx.notify(Class::LIST, pop_event(from), src);
    } else {
        let deleted = drop_if_empty(ctx, src)?;
        push_to(ctx, dst, to, &[&elem], false)?;
        ctx.notify(Class::LIST, pop_event(from), src);
        notify_del(ctx, src, deleted);
    }
    Ok(Some(elem))
}

/// LMPOP's arguments after the command name (BLMPOP's after its timeout):
/// `numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
pub struct MpopArgs<'a> {
    pub keys: &'a [Bytes],
    pub end: End,
    pub count: usize,
}

/// Parse [`MpopArgs`] with Redis's errors and their order.
pub fn parse_mpop<'a>(args: &mut Args<'a>) -> Result<MpopArgs<'a>, CmdError> {
    let numkeys_err = || CmdError::err("numkeys should be greater than 0");
    let numkeys = parse_i64(args.next_arg()?).map_err(|_| numkeys_err())?;
    if numkeys < 1 {
        return Err(numkeys_err());
    }
    let rest = args.rest();
    let numkeys = usize::try_from(numkeys).unwrap_or(usize::MAX);
    if numkeys >= rest.len() {
        return Err(CmdError::Syntax);
    }
    let (keys, tail) = rest.split_at(numkeys);
    let mut tail = tail.iter();
    let end = tail
        .next()
        .and_then(|w| End::parse(w))
        .ok_or(CmdError::Syntax)?;
    let mut count = None;
    while let Some(opt) = tail.next() {
        match tail.as_slice().first() {
            Some(raw) if count.is_none() && keel_engine::args::is(opt, "COUNT") => {
                tail.next();
                let count_err = || CmdError::err("count should be greater than 0");
                let n = parse_i64(raw).map_err(|_| count_err())?;
                if n < 1 {
                    return Err(count_err());
                }
                count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            }
            _ => return Err(CmdError::Syntax),
        }
    }
    Ok(MpopArgs {
        keys,
        end,
        count: count.unwrap_or(1),
    })
}

/// What an LMPOP took: the key and its popped elements, in pop order.
pub(crate) type Popped = (Bytes, Vec<Vec<u8>>);

/// Pop from the first of `m.keys` holding a non-empty list; `None` when none
/// does. WRONGTYPE for a key of another type met before that list. Only the
/// key popped from counts as modified for WATCH.
pub fn mpop(ctx: &mut Ctx<'_>, m: &MpopArgs<'_>) -> Result<Option<Popped>, CmdError> {
    for key in m.keys {
        if let Some(popped) = pop_from(ctx, key, m.end, m.count)? {
            if !popped.is_empty() {
                let db = ctx.db();
                ctx.modified(db, key);
                return Ok(Some((key.clone(), popped)));
            }
        }
    }
    Ok(None)
}

/// LMPOP's and BLMPOP's reply: `[key, [elements]]`.
pub fn mpop_reply(key: Bytes, elems: Vec<Vec<u8>>) -> Frame {
    Frame::Array(vec![Frame::Bulk(key), array(elems)])
}

/// `LEFT` or `RIGHT`, else a syntax error.
fn parse_end(arg: &[u8]) -> Result<End, CmdError> {
    End::parse(arg).ok_or(CmdError::Syntax)
}

pub(crate) const LPUSH: CommandSpec = CommandSpec {
    name: "LPUSH",
    group: Group::List,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.",
    since: "1.0.0",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    subcommands: &[],
    run: lpush,
};

fn lpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    push_cmd(ctx, args, End::Left, false)
}

fn push_cmd(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    end: End,
    only_existing: bool,
) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let elems = args.rest();
    let n = push_to(ctx, key, end, elems, only_existing)?.unwrap_or(0);
    Ok(Frame::Integer(n as i64))
}

pub(crate) const RPUSH: CommandSpec = CommandSpec {
    name: "RPUSH",
    group: Group::List,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.",
    since: "1.0.0",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    subcommands: &[],
    run: rpush,
};

fn rpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    push_cmd(ctx, args, End::Right, false)
}

pub(crate) const LPOP: CommandSpec = CommandSpec {
    name: "LPOP",
    group: Group::List,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the first elements in a list after removing it. Deletes the list if the last element was popped.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements returned",
    subcommands: &[],
    run: lpop,
};

fn lpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    pop_cmd(ctx, args, End::Left, "lpop")
}

/// LPOP/RPOP: without a count, one element or nil; with one, an array (empty
/// for COUNT 0) or a null array when the key is missing, as Redis 7.0.
fn pop_cmd(
    ctx: &mut Ctx<'_>,
    args: &mut Args<'_>,
    end: End,
    name: &str,
) -> Result<Frame, CmdError> {
    if args.remaining() > 2 {
        return Err(CmdError::WrongArity(name.to_string()));
    }
    let key = args.next_key()?;
    let count = match args.next_opt() {
        None => None,
        Some(raw) => {
            let positive = || CmdError::err("value is out of range, must be positive");
            let n = parse_i64(raw).map_err(|_| positive())?;
            Some(usize::try_from(n).map_err(|_| positive())?)
        }
    };
    let popped = pop_from(ctx, key, end, count.unwrap_or(1))?;
    Ok(match (popped, count) {
        (None, None) => Frame::Null,
        (None, Some(_)) => Frame::NullArray,
        (Some(mut one), None) => one.pop().map_or(Frame::Null, bulk),
        (Some(all), Some(_)) => array(all),
    })
}

pub(crate) const RPOP: CommandSpec = CommandSpec {
    name: "RPOP",
    group: Group::List,
    arity: -2,
    flags: Flags::WRITE.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns and removes the last elements of a list. Deletes the list if the last element was popped.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements returned",
    subcommands: &[],
    run: rpop,
};

fn rpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    pop_cmd(ctx, args, End::Right, "rpop")
}

pub(crate) const LLEN: CommandSpec = CommandSpec {
    name: "LLEN",
    group: Group::List,
    arity: 2,
    flags: Flags::READONLY.union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Returns the length of a list.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: llen,
};

fn llen(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let n = read_list(ctx, key, list::len)?.unwrap_or(0);
    Ok(Frame::Integer(n as i64))
}

pub(crate) const LRANGE: CommandSpec = CommandSpec {
    name: "LRANGE",
    group: Group::List,
    arity: 4,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns a range of elements from a list.",
    since: "1.0.0",
    complexity: "O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
    subcommands: &[],
    run: lrange,
};

fn lrange(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let start = args.next_i64()?;
    let stop = args.next_i64()?;
    // Encoded as it is read: one copy per element, no frame per element.
    let reply = read_list(ctx, key, |v| {
        let mut out = keel_resp::BulkArray::new();
        list::range_with(v, start, stop, |e| out.push(e));
        out.finish()
    })?;
    Ok(reply.unwrap_or_else(|| Frame::Array(Vec::new())))
}

pub(crate) const LPUSHX: CommandSpec = CommandSpec {
    name: "LPUSHX",
    group: Group::List,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Prepends one or more elements to a list only when the list exists.",
    since: "2.2.0",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    subcommands: &[],
    run: lpushx,
};

fn lpushx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    push_cmd(ctx, args, End::Left, true)
}

pub(crate) const RPUSHX: CommandSpec = CommandSpec {
    name: "RPUSHX",
    group: Group::List,
    arity: -3,
    flags: Flags::WRITE.union(Flags::DENYOOM).union(Flags::FAST),
    keys: Keys::single(1),
    summary: "Appends an element to a list only when the list exists.",
    since: "2.2.0",
    complexity: "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
    subcommands: &[],
    run: rpushx,
};

fn rpushx(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    push_cmd(ctx, args, End::Right, true)
}

pub(crate) const LINDEX: CommandSpec = CommandSpec {
    name: "LINDEX",
    group: Group::List,
    arity: 3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns an element from a list by its index.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
    subcommands: &[],
    run: lindex,
};

fn lindex(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.next_arg()?;
    // Redis looks the key up before parsing the index: a missing key is nil
    // whatever the index says.
    let found = read_list(ctx, key, |v| parse_i64(raw).map(|i| list::index(v, i)))?;
    Ok(found.transpose()?.flatten().map_or(Frame::Null, bulk))
}

pub(crate) const LSET: CommandSpec = CommandSpec {
    name: "LSET",
    group: Group::List,
    arity: 4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Sets the value of an element in a list by its index.",
    since: "1.0.0",
    complexity: "O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
    subcommands: &[],
    run: lset,
};

fn lset(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let raw = args.next_arg()?;
    let elem = args.next_arg()?;
    let limits = ctx.limits();
    // The key is checked before the index is parsed, as in Redis.
    let v = list_mut(ctx, key)?.ok_or(CmdError::NoSuchKey)?;
    let i = parse_i64(raw)?;
    if !list::set(v, i, elem, &limits) {
        return Err(CmdError::err("index out of range"));
    }
    ctx.dirty(1);
    ctx.notify(Class::LIST, "lset", key);
    Ok(Frame::ok())
}

pub(crate) const LINSERT: CommandSpec = CommandSpec {
    name: "LINSERT",
    group: Group::List,
    arity: 5,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Inserts an element before or after another element in a list.",
    since: "2.2.0",
    complexity: "O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
    subcommands: &[],
    run: linsert,
};

fn linsert(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let place = args.next_arg()?;
    let after = if keel_engine::args::is(place, "AFTER") {
        true
    } else if keel_engine::args::is(place, "BEFORE") {
        false
    } else {
        return Err(CmdError::Syntax);
    };
    let pivot = args.next_arg()?;
    let elem = args.next_arg()?;
    let limits = ctx.limits();
    let Some(v) = list_mut(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    match list::insert(v, pivot, after, elem, &limits) {
        Some(n) => {
            ctx.dirty(1);
            ctx.notify(Class::LIST, "linsert", key);
            Ok(Frame::Integer(n as i64))
        }
        None => Ok(Frame::Integer(-1)),
    }
}

pub(crate) const LREM: CommandSpec = CommandSpec {
    name: "LREM",
    group: Group::List,
    arity: 4,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary: "Removes elements from a list. Deletes the list if the last element was removed.",
    since: "1.0.0",
    complexity: "O(N+M) where N is the length of the list and M is the number of elements removed.",
    subcommands: &[],
    run: lrem,
};

fn lrem(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let count = args.next_i64()?;
    let elem = args.next_arg()?;
    let Some(v) = list_mut(ctx, key)? else {
        return Ok(Frame::Integer(0));
    };
    let removed = list::remove(v, count, elem);
    if removed > 0 {
        let deleted = drop_if_empty(ctx, key)?;
        ctx.dirty(removed as u64);
        ctx.notify(Class::LIST, "lrem", key);
        notify_del(ctx, key, deleted);
    }
    Ok(Frame::Integer(removed as i64))
}

pub(crate) const LTRIM: CommandSpec = CommandSpec {
    name: "LTRIM",
    group: Group::List,
    arity: 4,
    flags: Flags::WRITE,
    keys: Keys::single(1),
    summary:
        "Removes elements from both ends a list. Deletes the list if all elements were trimmed.",
    since: "1.0.0",
    complexity: "O(N) where N is the number of elements to be removed by the operation.",
    subcommands: &[],
    run: ltrim,
};

fn ltrim(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let start = args.next_i64()?;
    let stop = args.next_i64()?;
    if let Some(v) = list_mut(ctx, key)? {
        let before = list::len(v);
        list::trim(v, start, stop);
        let removed = before - list::len(v);
        let deleted = drop_if_empty(ctx, key)?;
        ctx.dirty(removed as u64);
        // Redis publishes `ltrim` even when nothing was trimmed.
        ctx.notify(Class::LIST, "ltrim", key);
        notify_del(ctx, key, deleted);
    }
    Ok(Frame::ok())
}

pub(crate) const LPOS: CommandSpec = CommandSpec {
    name: "LPOS",
    group: Group::List,
    arity: -3,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns the index of matching elements in a list.",
    since: "6.0.6",
    complexity: "O(N) where N is the number of elements in the list, for the average case. When searching for the first match or the last match from the tail it is O(1) per element.",
    subcommands: &[],
    run: lpos,
};

fn lpos(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let elem = args.next_arg()?;
    let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
    while let Some(opt) = args.next_opt() {
        if args.is_empty() {
            return Err(CmdError::Syntax);
        }
        if keel_engine::args::is(opt, "RANK") {
            rank = args.next_i64()?;
            if rank == 0 {
                return Err(CmdError::err(
                    "RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                ));
            }
        } else if keel_engine::args::is(opt, "COUNT") {
            let negative = || CmdError::err("COUNT can't be negative");
            let n = parse_i64(args.next_arg()?).map_err(|_| negative())?;
            count = Some(usize::try_from(n).map_err(|_| negative())?);
        } else if keel_engine::args::is(opt, "MAXLEN") {
            let negative = || CmdError::err("MAXLEN can't be negative");
            let n = parse_i64(args.next_arg()?).map_err(|_| negative())?;
            maxlen = usize::try_from(n).map_err(|_| negative())?;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let found = read_list(ctx, key, |v| {
        list::positions(v, elem, rank, count.unwrap_or(1), maxlen)
    })?
    .unwrap_or_default();
    let int = |i: usize| Frame::Integer(i as i64);
    Ok(match count {
        Some(_) => Frame::Array(found.into_iter().map(int).collect()),
        None => found.first().map_or(Frame::Null, |&i| int(i)),
    })
}

pub(crate) const LMOVE: CommandSpec = CommandSpec {
    name: "LMOVE",
    group: Group::List,
    arity: 5,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, 2, 1),
    summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: lmove,
};

fn lmove(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    let from = parse_end(args.next_arg()?)?;
    let to = parse_end(args.next_arg()?)?;
    Ok(move_element(ctx, src, dst, from, to)?.map_or(Frame::Null, bulk))
}

pub(crate) const LMPOP: CommandSpec = CommandSpec {
    name: "LMPOP",
    group: Group::List,
    arity: -4,
    flags: Flags::WRITE,
    keys: Keys::NumKeys {
        numkeys: 1,
        extra: 0,
    },
    summary: "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.",
    since: "7.0.0",
    complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
    subcommands: &[],
    run: lmpop,
};

fn lmpop(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let m = parse_mpop(args)?;
    let Some((key, popped)) = mpop(ctx, &m)? else {
        return Ok(Frame::NullArray);
    };
    // Logged as the single-key pop it turned out to be, as Redis does.
    let name: &'static [u8] = match m.end {
        End::Left => b"LPOP",
        End::Right => b"RPOP",
    };
    ctx.rewrite(vec![
        Bytes::from_static(name),
        key.clone(),
        Bytes::from(popped.len().to_string()),
    ]);
    Ok(mpop_reply(key, popped))
}

pub(crate) const RPOPLPUSH: CommandSpec = CommandSpec {
    name: "RPOPLPUSH",
    group: Group::List,
    arity: 3,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::range(1, 2, 1),
    summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
    since: "1.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: rpoplpush,
};

fn rpoplpush(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let src = args.next_key()?;
    let dst = args.next_key()?;
    Ok(move_element(ctx, src, dst, End::Right, End::Left)?.map_or(Frame::Null, bulk))
}
