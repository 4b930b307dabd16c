//! Lists: LPUSH, LRANGE, LMOVE, LMPOP and the rest of the non-blocking list
//! commands, plus the key-level helpers (push, pop, move, LMPOP's argument
//! parser) that the blocking variants reuse.
//!
//! The list operations themselves live in `keel_store::list`; handlers here
//! parse arguments, check types, delete keys whose list became empty (Redis
//! never keeps an empty list) and shape the replies.

use crate::args::{parse_i64, Args};
use crate::ctx::Ctx;
use crate::error::CmdError;
use crate::spec::{CommandSpec, Flags, Group, Keys};
use bytes::Bytes;
use keel_resp::Frame;
use keel_store::list::{self, End};
use keel_store::Value;

pub(crate) static COMMANDS: &[&CommandSpec] =
    &[&LPUSH, &RPUSH, &LPOP, &RPOP, &LLEN, &LRANGE, &LMOVE, &LMPOP];

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
    let now = ctx.now_ms();
    let no_touch = ctx.session.no_touch;
    let table = ctx.table(key)?;
    let entry = if no_touch {
        table.peek(key, now)
    } else {
        table.get(key, now)
    };
    let out = match entry {
        None => None,
        Some(e) if list::is_list(&e.value) => Some(f(&e.value)),
        Some(_) => return Err(CmdError::WrongType),
    };
    ctx.hit(out.is_some());
    Ok(out)
}

/// The list at `key` for a write command: `None` when the key is missing,
/// WRONGTYPE for another type.
pub(crate) fn list_mut<'t>(
    ctx: &'t mut Ctx<'_>,
    key: &[u8],
) -> Result<Option<&'t mut Value>, CmdError> {
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

/// Delete `key` if its list is now empty.
fn drop_if_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> Result<(), CmdError> {
    let now = ctx.now_ms();
    let table = ctx.table(key)?;
    if table
        .peek(key, now)
        .is_some_and(|e| list::is_list(&e.value) && list::is_empty(&e.value))
    {
        table.remove(key, now);
    }
    Ok(())
}

/// Push `elems` at `end` of the list at `key`, creating it when missing
/// unless `only_existing` (LPUSHX). Returns the new length, `None` when
/// nothing was pushed because the key is missing. Counts the change.
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
    Ok(Some(n))
}

/// Pop up to `count` elements from `end` of the list at `key`, deleting the
/// key when it empties. `None` when the key is missing. Counts the change.
pub(crate) fn pop_from(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    end: End,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, CmdError> {
    let Some(v) = list_mut(ctx, key)? else {
        return Ok(None);
    };
    let popped = list::pop_many(v, end, count);
    drop_if_empty(ctx, key)?;
    ctx.dirty(popped.len() as u64);
    Ok(Some(popped))
}

/// LMOVE's effect: pop from `from` of `src`, push at `to` of `dst`. `None`
/// when `src` is missing; WRONGTYPE when either key holds another type (the
/// destination is checked only once the source has something to give).
pub(crate) fn move_element(
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
    } else {
        drop_if_empty(ctx, src)?;
        push_to(ctx, dst, to, &[&elem], false)?;
    }
    Ok(Some(elem))
}

/// LMPOP's arguments after the command name (BLMPOP's after its timeout):
/// `numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
pub(crate) struct MpopArgs<'a> {
    pub keys: &'a [Bytes],
    pub end: End,
    pub count: usize,
}

/// Parse [`MpopArgs`] with Redis's errors and their order.
pub(crate) fn parse_mpop<'a>(args: &mut Args<'a>) -> Result<MpopArgs<'a>, CmdError> {
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
            Some(raw) if count.is_none() && crate::args::is(opt, "COUNT") => {
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
/// does. WRONGTYPE for a key of another type met before that list.
pub(crate) fn mpop(ctx: &mut Ctx<'_>, m: &MpopArgs<'_>) -> Result<Option<Popped>, CmdError> {
    for key in m.keys {
        if let Some(popped) = pop_from(ctx, key, m.end, m.count)? {
            if !popped.is_empty() {
                return Ok(Some((key.clone(), popped)));
            }
        }
    }
    Ok(None)
}

/// LMPOP's and BLMPOP's reply: `[key, [elements]]`.
pub(crate) fn mpop_reply(key: Bytes, elems: Vec<Vec<u8>>) -> Frame {
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
    let items = read_list(ctx, key, |v| {
        let mut out = Vec::new();
        list::range_with(v, start, stop, |e| {
            out.push(Frame::Bulk(Bytes::copy_from_slice(e)))
        });
        out
    })?;
    Ok(Frame::Array(items.unwrap_or_default()))
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

#[cfg(test)]
mod tests {
    use crate::testing::*;
    use keel_resp::Frame;

    fn arr(items: &[&str]) -> Frame {
        Frame::Array(items.iter().map(|s| bulk(s)).collect())
    }

    #[test]
    fn push_pop_range_len() {
        let mut t = TestEngine::new();
        assert_eq!(t.run(&["LPUSH", "l", "a", "b"]), int(2));
        assert_eq!(t.run(&["RPUSH", "l", "c", "1"]), int(4));
        assert_eq!(
            t.run(&["LRANGE", "l", "0", "-1"]),
            arr(&["b", "a", "c", "1"])
        );
        assert_eq!(t.run(&["LRANGE", "l", "-2", "100"]), arr(&["c", "1"]));
        assert_eq!(t.run(&["LRANGE", "l", "3", "1"]), arr(&[]));
        assert_eq!(t.run(&["LLEN", "l"]), int(4));
        assert_eq!(t.run(&["LPOP", "l"]), bulk("b"));
        assert_eq!(t.run(&["RPOP", "l", "2"]), arr(&["1", "c"]));
        assert_eq!(t.run(&["LPOP", "l", "0"]), arr(&[]));
        assert_eq!(t.run(&["RPOP", "l", "5"]), arr(&["a"]));
        assert_eq!(t.run(&["EXISTS", "l"]), int(0));
        assert_eq!(t.run(&["LPOP", "l"]), Frame::Null);
        assert_eq!(t.run(&["LPOP", "l", "0"]), Frame::NullArray);
        assert_eq!(t.run(&["LLEN", "l"]), int(0));
        assert_eq!(t.run(&["LRANGE", "l", "0", "-1"]), arr(&[]));
        assert_eq!(
            t.run(&["LPOP", "l", "-1"]),
            error("ERR value is out of range, must be positive")
        );
        assert_eq!(
            t.run(&["LPOP", "l", "1", "2"]),
            error("ERR wrong number of arguments for 'lpop' command")
        );
        assert_eq!(
            t.run(&["LRANGE", "l", "a", "1"]),
            error("ERR value is not an integer or out of range")
        );
    }

    #[test]
    fn wrong_type() {
        let mut t = TestEngine::new();
        t.run(&["SET", "s", "v"]);
        t.run(&["RPUSH", "l", "x"]);
        let wt = error("WRONGTYPE Operation against a key holding the wrong kind of value");
        for cmd in [
            &["LPUSH", "s", "a"][..],
            &["RPUSH", "s", "a"],
            &["LPOP", "s"],
            &["RPOP", "s", "2"],
            &["LLEN", "s"],
            &["LRANGE", "s", "0", "1"],
            &["LMOVE", "s", "l", "LEFT", "LEFT"],
            &["LMOVE", "l", "s", "LEFT", "LEFT"],
        ] {
            assert_eq!(t.run(cmd), wt, "{cmd:?}");
        }
        assert_eq!(t.run(&["LRANGE", "l", "0", "-1"]), arr(&["x"]));
        // A missing source answers nil before the destination is looked at.
        assert_eq!(t.run(&["LMOVE", "nope", "s", "LEFT", "LEFT"]), Frame::Null);
    }

    #[test]
    fn lmove_between_and_within_lists() {
        let mut t = TestEngine::new();
        t.run(&["RPUSH", "a", "1", "2", "3"]);
        assert_eq!(t.run(&["LMOVE", "a", "b", "LEFT", "RIGHT"]), bulk("1"));
        assert_eq!(t.run(&["LMOVE", "a", "b", "right", "left"]), bulk("3"));
        assert_eq!(t.run(&["LRANGE", "b", "0", "-1"]), arr(&["3", "1"]));
        assert_eq!(t.run(&["LMOVE", "a", "a", "LEFT", "RIGHT"]), bulk("2"));
        t.run(&["PEXPIRE", "a", "5000"]);
        // A one-element rotation keeps the key and its expiry.
        assert_eq!(t.run(&["LMOVE", "a", "a", "LEFT", "RIGHT"]), bulk("2"));
        assert_eq!(t.run(&["PTTL", "a"]), int(5000));
        assert_eq!(t.run(&["LMOVE", "a", "b", "LEFT", "LEFT"]), bulk("2"));
        assert_eq!(t.run(&["EXISTS", "a"]), int(0));
        assert_eq!(t.run(&["LMOVE", "a", "b", "LEFT", "LEFT"]), Frame::Null);
        assert_eq!(
            t.run(&["LMOVE", "a", "b", "UP", "LEFT"]),
            error("ERR syntax error")
        );
    }

    #[test]
    fn mpop_arguments() {
        use crate::args::Args;
        use bytes::Bytes;
        let parse = |line: &[&str]| {
            let argv: Vec<Bytes> = line.iter().map(|s| Bytes::from(s.to_string())).collect();
            let mut args = Args::new(&argv, 1);
            super::parse_mpop(&mut args).map(|m| (m.keys.len(), m.end, m.count))
        };
        use keel_store::list::End;
        assert_eq!(
            parse(&["LMPOP", "2", "a", "b", "LEFT"]),
            Ok((2, End::Left, 1))
        );
        assert_eq!(
            parse(&["LMPOP", "1", "a", "right", "COUNT", "7"]),
            Ok((1, End::Right, 7))
        );
        let numkeys = Err(crate::error::CmdError::err(
            "numkeys should be greater than 0",
        ));
        assert_eq!(parse(&["LMPOP", "0", "a", "LEFT"]), numkeys);
        assert_eq!(parse(&["LMPOP", "x", "a", "LEFT"]), numkeys);
        let syntax = Err(crate::error::CmdError::Syntax);
        assert_eq!(parse(&["LMPOP", "2", "a", "LEFT"]), syntax);
        assert_eq!(parse(&["LMPOP", "1", "a", "MIDDLE"]), syntax);
        assert_eq!(parse(&["LMPOP", "1", "a", "LEFT", "COUNT"]), syntax);
        assert_eq!(
            parse(&["LMPOP", "1", "a", "LEFT", "COUNT", "1", "COUNT", "1"]),
            syntax
        );
        let count = Err(crate::error::CmdError::err(
            "count should be greater than 0",
        ));
        assert_eq!(parse(&["LMPOP", "1", "a", "LEFT", "COUNT", "0"]), count);
        assert_eq!(parse(&["LMPOP", "1", "a", "LEFT", "COUNT", "x"]), count);
    }

    #[test]
    fn lmpop_pops_from_the_first_non_empty_list() {
        let mut t = TestEngine::new();
        t.run(&["RPUSH", "b", "1", "2", "3"]);
        t.run(&["SET", "s", "v"]);
        assert_eq!(
            t.run(&["LMPOP", "3", "a", "b", "s", "LEFT", "COUNT", "2"]),
            Frame::Array(vec![bulk("b"), arr(&["1", "2"])])
        );
        assert_eq!(
            t.run(&["LMPOP", "2", "a", "b", "RIGHT", "COUNT", "9"]),
            Frame::Array(vec![bulk("b"), arr(&["3"])])
        );
        assert_eq!(t.run(&["EXISTS", "b"]), int(0));
        assert_eq!(t.run(&["LMPOP", "2", "a", "b", "LEFT"]), Frame::NullArray);
        assert_eq!(
            t.run(&["LMPOP", "2", "a", "s", "LEFT"]),
            error("WRONGTYPE Operation against a key holding the wrong kind of value")
        );
    }
}
