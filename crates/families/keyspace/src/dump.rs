//! DUMP and RESTORE: a key's value as Redis's serialized payload (RDB encoding, RDB version,
//! CRC-64) and back, with Redis 7.0's replies and errors.

use bytes::Bytes;
use keel_engine::args::{is, parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::notify::Class;
use keel_engine::spec::{CommandSpec, Flags, Group, Keys};
use keel_persist::rdb::{dump_payload_with, parse_payload, to_store_value};
use keel_resp::Frame;

pub static COMMANDS: &[&CommandSpec] = &[&DUMP, &RESTORE, &RESTORE_ASKING];

pub(crate) const DUMP: CommandSpec = CommandSpec {
    name: "DUMP",
    group: Group::Generic,
    arity: 2,
    flags: Flags::READONLY,
    keys: Keys::single(1),
    summary: "Returns a serialized representation of the value stored at a key.",
    since: "2.6.0",
    complexity: "O(1) to access the key and additional O(N*M) to serialize it, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1).",
    subcommands: &[],
    run: dump,
};

fn dump(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let now = ctx.now_ms();
    let limits = ctx.limits();
    let compress = ctx.engine.config.get("rdbcompression") != "no";
    let payload = ctx
        .table(key)?
        .get(key, now)
        .map(|e| dump_payload_with(&e.value, compress, limits.list_size));
    ctx.hit_key(key, payload.is_some());
    Ok(match payload {
        Some(p) => Frame::Bulk(Bytes::from(p)),
        None => Frame::Null,
    })
}

pub(crate) const RESTORE: CommandSpec = CommandSpec {
    name: "RESTORE",
    group: Group::Generic,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "Creates a key from the serialized representation of a value.",
    since: "2.6.0",
    complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
    subcommands: &[],
    run: restore,
};

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]`, checked in Redis's
/// order: options, then an existing key, then the TTL, then the payload.
///
/// `sanitize-dump-payload` is not consulted: Keel validates every payload deeply (every
/// length against the bytes present, duplicates, empty collections), so `no`, `yes` and
/// `clients` all behave as `yes`.
///
/// IDLETIME sets the key's access clock (OBJECT IDLETIME) under an LRU or no-eviction
/// policy, FREQ its access counter under an LFU policy; each is checked and ignored under
/// the other kind of policy, as in Redis.
pub(crate) fn restore(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let key = args.next_key()?;
    let ttl_arg = args.next_arg()?;
    let payload = args.next_arg()?;
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (None::<i64>, None::<i64>);
    while let Some(opt) = args.next_opt() {
        let has_value = !args.is_empty();
        if is(opt, "REPLACE") {
            replace = true;
        } else if is(opt, "ABSTTL") {
            absttl = true;
        } else if is(opt, "IDLETIME") && has_value && freq.is_none() {
            let v = parse_i64(args.next_arg()?)?;
            if v < 0 {
                return Err(CmdError::err("Invalid IDLETIME value, must be >= 0"));
            }
            idle = Some(v);
        } else if is(opt, "FREQ") && has_value && idle.is_none() {
            let v = parse_i64(args.next_arg()?)?;
            if !(0..=255).contains(&v) {
                return Err(CmdError::err("Invalid FREQ value, must be >= 0 and <= 255"));
            }
            freq = Some(v);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let now = ctx.now_ms();
    if !replace && ctx.table(key)?.contains(key, now) {
        return Err(CmdError::msg("BUSYKEY Target key name already exists."));
    }
    let ttl = parse_i64(ttl_arg)?;
    if ttl < 0 {
        return Err(CmdError::err("Invalid TTL value, must be >= 0"));
    }
    let rdb = parse_payload(payload).map_err(|e| CmdError::err(e.to_string()))?;
    let value = to_store_value(rdb, &ctx.limits()).map_err(|_| CmdError::err("Bad data format"))?;
    let lfu = ctx.engine.config.ops.evict.policy().is_lfu();
    let table = ctx.table(key)?;
    let deleted = replace && table.remove(key, now).is_some();
    // A relative TTL counts from now; the effect logged carries the absolute time. Redis adds
    // without an overflow check, so a TTL near the top of the range wraps into the past and
    // the key is not created: the same here.
    let at = if ttl != 0 && !absttl {
        ttl.wrapping_add(now as i64)
    } else {
        ttl
    };
    if at != 0 && at <= now as i64 {
        // Already expired: the key is not created, and one it replaced is gone.
        if deleted {
            ctx.dirty(1);
            ctx.notify(Class::GENERIC, "del", key);
            ctx.rewrite(vec![Bytes::from_static(b"DEL"), key.clone()]);
        }
        return Ok(Frame::ok());
    }
    table.insert(key, value, at as u64, now);
    // Redis keeps FREQ under an LFU policy and IDLETIME under any other.
    match (lfu, idle, freq) {
        (false, Some(idle), _) => {
            if let Some(e) = table.get_mut(key, now) {
                e.set_idle_seconds(idle as u64, now);
            }
        }
        (true, _, Some(freq)) => {
            if let Some(e) = table.get_mut(key, now) {
                e.set_frequency(freq.clamp(0, 255) as u8);
            }
        }
        _ => {}
    }
    ctx.dirty(1);
    ctx.notify(Class::GENERIC, "restore", key);
    if at != 0 && !absttl {
        let mut argv = args.argv().to_vec();
        if let Some(t) = argv.get_mut(2) {
            *t = Bytes::from(at.to_string());
        }
        argv.push(Bytes::from_static(b"ABSTTL"));
        ctx.rewrite(argv);
    }
    Ok(Frame::ok())
}

/// RESTORE as a cluster's importing node receives it from MIGRATE.
pub(crate) const RESTORE_ASKING: CommandSpec = CommandSpec {
    name: "RESTORE-ASKING",
    group: Group::Server,
    arity: -4,
    flags: Flags::WRITE.union(Flags::DENYOOM),
    keys: Keys::single(1),
    summary: "An internal command for migrating keys in a cluster",
    since: "3.0.0",
    complexity: "O(1) to create the new key and additional O(N*M) to reconstruct the serialized value, where N is the number of Redis objects composing the value and M their average size. For small string values the time complexity is thus O(1)+O(1*M) where M is small, so simply O(1). However for sorted set values the complexity is O(N*M*log(N)) because inserting values into sorted sets is O(log(N)).",
    subcommands: &[],
    run: restore,
};
