//! Replication and cluster commands. As a master Keel serves replicas
//! (PSYNC, SYNC, REPLCONF: see `keel_engine::replication`) and WAIT counts
//! their acknowledgements; REPLICAOF makes it follow one. FAILOVER and the
//! cluster are not built: these answer as Redis answers in that state where
//! that answer is true of Keel (CLUSTER says cluster support is disabled,
//! FAILOVER finds no replica it could hand over to), and refuse, naming the
//! missing feature, whatever would need it.

use bytes::Bytes;
use keel_engine::args::{parse_i64, Args};
use keel_engine::ctx::Ctx;
use keel_engine::error::CmdError;
use keel_engine::replication::state::{Replica, ReplicaState, Sync};
use keel_engine::replication::{random_id, ReplConf, SyncRequest};
use keel_engine::spec::{CommandSpec, Flags, Group, KeyFinder, Keys};
use keel_resp::Frame;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

pub static COMMANDS: &[&CommandSpec] = &[
    &WAIT, &REPLICAOF, &SLAVEOF, &FAILOVER, &PSYNC, &SYNC, &REPLCONF, &MIGRATE, &CLUSTER,
    &READONLY, &READWRITE, &ASKING,
];

pub(crate) const WAIT: CommandSpec = CommandSpec {
    name: "WAIT",
    group: Group::Generic,
    arity: 3,
    flags: Flags::NOSCRIPT,
    keys: Keys::None,
    summary: "Wait for the synchronous replication of all the write commands sent in the context of the current connection",
    since: "3.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: wait,
};

/// `WAIT numreplicas timeout`: how many replicas have acknowledged this
/// client's last write, once `numreplicas` have or the timeout ends (at
/// once inside MULTI or a script, or when enough already have); timeout 0
/// waits until they do or the client is unblocked, as in Redis.
fn wait(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if ctx.engine.follow.following() {
        return Err(CmdError::msg(
            "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 \
             if a replica is configured to be writable (which is not the default) writes to \
             replicas are just local and are not propagated.",
        ));
    }
    let wanted = args.next_i64()?;
    let timeout = parse_i64(args.next_arg()?)
        .map_err(|_| CmdError::msg("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(CmdError::msg("ERR timeout is negative"));
    }
    let offset = ctx.session.handle.woff.load(Ordering::Relaxed);
    let acked = ctx.engine.repl.acked(offset);
    if acked as i64 >= wanted || !ctx.may_block() {
        return Ok(Frame::Integer(acked as i64));
    }
    let timeout = (timeout > 0).then(|| Duration::from_millis(timeout as u64));
    let argv = args.argv().to_vec();
    keel_engine::replication::block_wait(
        ctx.engine,
        ctx.session,
        &argv,
        timeout,
        offset,
        wanted as usize,
    );
    Ok(Frame::Null)
}

pub(crate) const REPLICAOF: CommandSpec = CommandSpec {
    name: "REPLICAOF",
    group: Group::Server,
    arity: 3,
    flags: Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::STALE),
    keys: Keys::None,
    summary: "Make the server a replica of another instance, or promote it as master.",
    since: "5.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: replicaof,
};

pub(crate) const SLAVEOF: CommandSpec = CommandSpec {
    name: "SLAVEOF",
    group: Group::Server,
    arity: 3,
    flags: Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::STALE),
    keys: Keys::None,
    summary: "Make the server a replica of another instance, or promote it as master.",
    since: "1.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: replicaof,
};

/// `REPLICAOF host port` follows a master: the server's link connects,
/// syncs and applies its stream (see `keel_engine::replication::follow`).
/// `REPLICAOF NO ONE` makes a replica a master again, keeping its data and
/// its history under a new id; on a master it changes nothing.
fn replicaof(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let host = args.next_arg()?;
    let port = args.next_arg()?;
    let e = ctx.engine;
    let who = format!(
        "id={} addr={} laddr={} name={}",
        ctx.session.handle.id,
        ctx.session.handle.addr,
        ctx.session.handle.laddr,
        ctx.session
            .handle
            .name
            .lock()
            .as_ref()
            .map_or(String::new(), |n| String::from_utf8_lossy(n).into_owned())
    );
    if host.eq_ignore_ascii_case(b"no") && port.eq_ignore_ascii_case(b"one") {
        if e.follow.following() {
            let _ = e.config.set("replicaof", &["no", "one"], true);
            e.follow.set_target(None, ctx.now_ms());
            for id in e.repl.promote(random_id(e)) {
                if let Some(h) = e.clients.lock().get(&id) {
                    h.kill();
                }
            }
            keel_engine::logging::log_notice(&format!(
                "MASTER MODE enabled (user request from '{who}')"
            ));
        }
        return Ok(Frame::ok());
    }
    let port = match parse_i64(port) {
        Ok(p) if (0..=65535).contains(&p) => p as u16,
        _ => return Err(CmdError::msg("ERR Invalid master port")),
    };
    let host = String::from_utf8_lossy(host).into_owned();
    if e.follow.target() == Some((host.clone(), port)) {
        return Ok(Frame::simple("OK Already connected to specified master"));
    }
    // CONFIG GET replicaof names the master, as in Redis.
    let _ = e.config.set("replicaof", &[&host, &port.to_string()], true);
    e.repl.set_upstream();
    e.follow
        .set_target(Some((host.clone(), port)), ctx.now_ms());
    keel_engine::logging::log_notice(&format!(
        "REPLICAOF {host}:{port} enabled (user request from '{who}')"
    ));
    Ok(Frame::ok())
}

pub(crate) const FAILOVER: CommandSpec = CommandSpec {
    name: "FAILOVER",
    group: Group::Server,
    arity: -1,
    flags: Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::STALE),
    keys: Keys::None,
    summary: "Start a coordinated failover between this server and one of its replicas.",
    since: "6.2.0",
    complexity: "O(1)",
    subcommands: &[],
    run: failover,
};

/// `FAILOVER [TO host port [FORCE]] [ABORT] [TIMEOUT ms]`, checked as Redis
/// checks it; a master with no replica has nothing to fail over to.
fn failover(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let (mut to, mut force, mut abort, mut timeout) = (false, false, false, false);
    while let Some(word) = args.next_opt() {
        if word.eq_ignore_ascii_case(b"to") && !to && args.remaining() >= 2 {
            args.next_arg()?;
            let port = args.next_arg()?;
            parse_i64(port)?;
            to = true;
        } else if word.eq_ignore_ascii_case(b"force") && !force {
            force = true;
        } else if word.eq_ignore_ascii_case(b"abort") && !abort {
            abort = true;
        } else if word.eq_ignore_ascii_case(b"timeout") && !timeout && args.remaining() >= 1 {
            let ms = args.next_i64()?;
            if ms <= 0 {
                return Err(CmdError::msg("ERR FAILOVER timeout must be greater than 0"));
            }
            timeout = true;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    if abort {
        if to || force || timeout {
            return Err(CmdError::Syntax);
        }
        return Err(CmdError::msg("ERR No failover in progress."));
    }
    if !ctx.engine.repl.replicas().is_empty() {
        return Err(CmdError::msg(
            "ERR FAILOVER is not available in this build of Keel",
        ));
    }
    // FORCE's own checks come after this one in Redis, so never show.
    Err(CmdError::msg("ERR FAILOVER requires connected replicas."))
}

pub(crate) const PSYNC: CommandSpec = CommandSpec {
    name: "PSYNC",
    group: Group::Server,
    arity: -3,
    flags: Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::NO_MULTI),
    keys: Keys::None,
    summary: "Internal command used for replication",
    since: "2.8.0",
    complexity: "",
    subcommands: &[],
    run: psync,
};

pub(crate) const SYNC: CommandSpec = CommandSpec {
    name: "SYNC",
    group: Group::Server,
    arity: 1,
    flags: Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::NO_MULTI),
    keys: Keys::None,
    summary: "Internal command used for replication",
    since: "1.0.0",
    complexity: "",
    subcommands: &[],
    run: psync,
};

pub(crate) const REPLCONF: CommandSpec = CommandSpec {
    name: "REPLCONF",
    group: Group::Server,
    arity: -1,
    flags: Flags::ADMIN
        .union(Flags::NOSCRIPT)
        .union(Flags::LOADING)
        .union(Flags::STALE)
        .union(Flags::ALLOW_BUSY),
    keys: Keys::None,
    summary: "An internal command for configuring the replication stream",
    since: "3.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: replconf,
};

/// `PSYNC replid offset` (and `SYNC`, which takes the snapshot without the
/// `+FULLRESYNC` line): a partial resync answers `+CONTINUE` with the backlog
/// from `offset` on; a full one leaves the snapshot to the connection,
/// which sends it (see `keel_engine::replication`). Either way the
/// connection is the replica's link from here on.
fn psync(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    let legacy = args.argv()[0].eq_ignore_ascii_case(b"sync");
    if ctx.session.sync.is_some() {
        // Already a replica: Redis ignores it.
        return Ok(Frame::Encoded(Bytes::new()));
    }
    if ctx.session.handle.bufs.out_pending() > 0 {
        return Err(CmdError::msg(
            "ERR SYNC and PSYNC are invalid with pending output",
        ));
    }
    let (want_id, want_offset) = if legacy {
        (Bytes::from_static(b"?"), -1)
    } else {
        let id = args.next_arg()?.clone();
        let off = args.next_i64()?;
        (id, off)
    };
    let conf = ctx.session.replconf.as_deref().cloned().unwrap_or_default();
    let engine = ctx.engine;
    let handle = &ctx.session.handle;
    let (feed, _) = handle.push_feed();
    let replica = Arc::new(Replica::new(handle.id, feed, engine.now_ms()));
    replica.port.store(conf.listening_port, Ordering::Relaxed);
    let ip = conf.ip_address.clone().unwrap_or_else(|| {
        handle
            .addr
            .rsplit_once(':')
            .map_or(handle.addr.clone(), |(h, _)| h.to_string())
    });
    *replica.ip.lock() = ip;
    handle.replica.store(true, Ordering::Relaxed);
    let size = engine.config.get_i64("repl-backlog-size").max(1) as usize;
    let answer = if legacy {
        engine
            .repl
            .psync(b"?", -1, size, || random_id(engine), &replica)
    } else {
        engine
            .repl
            .psync(&want_id, want_offset, size, || random_id(engine), &replica)
    };
    let (full, reply) = match answer {
        Sync::Continue { replid, backlog } => {
            let head = if conf.capa_psync2 {
                format!("+CONTINUE {replid}\r\n")
            } else {
                "+CONTINUE\r\n".to_string()
            };
            let mut out = Vec::with_capacity(head.len() + backlog.len());
            out.extend_from_slice(head.as_bytes());
            out.extend_from_slice(&backlog);
            keel_engine::logging::log_notice(&format!(
                "Partial resynchronization request from {} accepted. Sending {} bytes of \
                 backlog starting from offset {want_offset}.",
                replica_name(&replica),
                backlog.len()
            ));
            (false, Frame::Encoded(Bytes::from(out)))
        }
        Sync::Full { .. } => {
            keel_engine::logging::log_notice(&format!(
                "Replica {} asks for synchronization",
                replica_name(&replica)
            ));
            (true, Frame::Encoded(Bytes::new()))
        }
    };
    ctx.session.sync = Some(Box::new(SyncRequest {
        replica,
        full,
        legacy,
        capa_eof: conf.capa_eof,
        started: false,
    }));
    Ok(reply)
}

fn replica_name(r: &Replica) -> String {
    format!("{}:{}", r.ip.lock(), r.port.load(Ordering::Relaxed))
}

/// `REPLCONF option value ...`: what a replica tells its master before
/// PSYNC (listening-port, ip-address, capa), and its `ACK offset` after,
/// which gets no reply.
fn replconf(ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Frame, CmdError> {
    if args.remaining() % 2 == 1 {
        return Err(CmdError::Syntax);
    }
    while args.remaining() >= 2 {
        let opt = args.next_arg()?.clone();
        let val = args.next_arg()?.clone();
        let low = opt.to_ascii_lowercase();
        match low.as_slice() {
            b"listening-port" => {
                let port = parse_i64(&val).map_err(|_| CmdError::NotInteger)?;
                conf(ctx).listening_port = port.max(0) as u64;
            }
            b"ip-address" => {
                conf(ctx).ip_address = Some(String::from_utf8_lossy(&val).into_owned());
            }
            b"capa" => {
                if val.eq_ignore_ascii_case(b"eof") {
                    conf(ctx).capa_eof = true;
                } else if val.eq_ignore_ascii_case(b"psync2") {
                    conf(ctx).capa_psync2 = true;
                }
            }
            b"ack" => {
                // Only a replica's ACK counts; it is never answered.
                if let Some(s) = ctx.session.sync.as_ref() {
                    if let Ok(off) = parse_i64(&val) {
                        let r = &s.replica;
                        r.ack_offset.fetch_max(off.max(0) as u64, Ordering::Relaxed);
                        r.ack_ms.store(ctx.engine.now_ms(), Ordering::Relaxed);
                        if s.started && r.state() == ReplicaState::SendBulk {
                            // The first ACK after an EOF-marked image.
                            r.go_online();
                            keel_engine::logging::log_notice(&format!(
                                "Synchronization with replica {} succeeded",
                                replica_name(r)
                            ));
                        }
                        keel_engine::replication::acks_arrived(ctx.engine);
                    }
                }
                return Ok(Frame::Encoded(Bytes::new()));
            }
            b"getack" => return Ok(Frame::Encoded(Bytes::new())),
            b"rdb-only" | b"rdb-filter-only" => {}
            _ => {
                return Err(CmdError::msg(format!(
                    "ERR Unrecognized REPLCONF option: {}",
                    String::from_utf8_lossy(&opt)
                )))
            }
        }
    }
    Ok(Frame::ok())
}

fn conf<'s>(ctx: &'s mut Ctx<'_>) -> &'s mut ReplConf {
    ctx.session.replconf.get_or_insert_with(Default::default)
}

pub(crate) const MIGRATE: CommandSpec = CommandSpec {
    name: "MIGRATE",
    group: Group::Generic,
    arity: -6,
    flags: Flags::WRITE,
    keys: Keys::Find(KeyFinder(migrate_keys)),
    summary: "Atomically transfer a key from a Redis instance to another one.",
    since: "2.6.0",
    complexity: "This command actually executes a DUMP+DEL in the source instance, and a RESTORE in the target instance. See the pages of these commands for time complexity. Also an O(N) data transfer between the two instances is performed.",
    subcommands: &[],
    run: migrate,
};

/// MIGRATE's keys, found as Redis finds them: the one at 3, unless a KEYS
/// option follows (past AUTH's and AUTH2's arguments), which needs an empty
/// name at 3 and names the keys after it; none when it does not.
fn migrate_keys(argv: &[Bytes], out: &mut Vec<usize>) {
    if argv.len() < 4 {
        return;
    }
    let mut i = 6;
    while i < argv.len() {
        let w = &argv[i];
        if w.eq_ignore_ascii_case(b"keys") {
            if argv[3].is_empty() {
                out.extend(i + 1..argv.len());
            }
            return;
        }
        i += if w.eq_ignore_ascii_case(b"auth") {
            2
        } else if w.eq_ignore_ascii_case(b"auth2") {
            3
        } else {
            1
        };
    }
    out.push(3);
}

fn migrate(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Err(CmdError::msg(
        "ERR MIGRATE is not available in this build of Keel",
    ))
}

pub(crate) const CLUSTER: CommandSpec = CommandSpec {
    name: "CLUSTER",
    group: Group::Cluster,
    arity: -2,
    flags: Flags::NONE,
    keys: Keys::None,
    summary: "A container for cluster commands",
    since: "3.0.0",
    complexity: "Depends on subcommand.",
    subcommands: &[
        &CLUSTER_ADDSLOTS,
        &CLUSTER_ADDSLOTSRANGE,
        &CLUSTER_BUMPEPOCH,
        &CLUSTER_COUNT_FAILURE_REPORTS,
        &CLUSTER_COUNTKEYSINSLOT,
        &CLUSTER_DELSLOTS,
        &CLUSTER_DELSLOTSRANGE,
        &CLUSTER_FAILOVER,
        &CLUSTER_FLUSHSLOTS,
        &CLUSTER_FORGET,
        &CLUSTER_GETKEYSINSLOT,
        &CLUSTER_HELP,
        &CLUSTER_INFO,
        &CLUSTER_KEYSLOT,
        &CLUSTER_LINKS,
        &CLUSTER_MEET,
        &CLUSTER_MYID,
        &CLUSTER_NODES,
        &CLUSTER_REPLICAS,
        &CLUSTER_REPLICATE,
        &CLUSTER_RESET,
        &CLUSTER_SAVECONFIG,
        &CLUSTER_SET_CONFIG_EPOCH,
        &CLUSTER_SETSLOT,
        &CLUSTER_SHARDS,
        &CLUSTER_SLAVES,
        &CLUSTER_SLOTS,
    ],
    run: keel_engine::subcommands::container,
};

/// Every CLUSTER subcommand, READONLY, READWRITE and ASKING, as Redis answers
/// them with cluster support disabled.
fn cluster_disabled(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Frame, CmdError> {
    Err(CmdError::msg(
        "ERR This instance has cluster support disabled",
    ))
}

/// A CLUSTER subcommand: declared as Redis declares it, answered by
/// [`cluster_disabled`].
const fn cluster_sub(
    name: &'static str,
    arity: i32,
    flags: Flags,
    summary: &'static str,
    since: &'static str,
    complexity: &'static str,
) -> CommandSpec {
    CommandSpec {
        name,
        group: Group::Cluster,
        arity,
        flags,
        keys: Keys::None,
        summary,
        since,
        complexity,
        subcommands: &[],
        run: cluster_disabled,
    }
}

const CLUSTER_ADDSLOTS: CommandSpec = cluster_sub(
    "CLUSTER|ADDSLOTS",
    -3,
    Flags::ADMIN.union(Flags::STALE),
    "Assign new hash slots to receiving node",
    "3.0.0",
    "O(N) where N is the total number of hash slot arguments",
);

const CLUSTER_ADDSLOTSRANGE: CommandSpec = cluster_sub(
    "CLUSTER|ADDSLOTSRANGE",
    -4,
    Flags::ADMIN.union(Flags::STALE),
    "Assign new hash slots to receiving node",
    "7.0.0",
    "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
);

const CLUSTER_BUMPEPOCH: CommandSpec = cluster_sub(
    "CLUSTER|BUMPEPOCH",
    2,
    Flags::ADMIN.union(Flags::STALE),
    "Advance the cluster config epoch",
    "3.0.0",
    "O(1)",
);

const CLUSTER_COUNT_FAILURE_REPORTS: CommandSpec = cluster_sub(
    "CLUSTER|COUNT-FAILURE-REPORTS",
    3,
    Flags::ADMIN.union(Flags::STALE),
    "Return the number of failure reports active for a given node",
    "3.0.0",
    "O(N) where N is the number of failure reports",
);

const CLUSTER_COUNTKEYSINSLOT: CommandSpec = cluster_sub(
    "CLUSTER|COUNTKEYSINSLOT",
    3,
    Flags::STALE,
    "Return the number of local keys in the specified hash slot",
    "3.0.0",
    "O(1)",
);

const CLUSTER_DELSLOTS: CommandSpec = cluster_sub(
    "CLUSTER|DELSLOTS",
    -3,
    Flags::ADMIN.union(Flags::STALE),
    "Set hash slots as unbound in receiving node",
    "3.0.0",
    "O(N) where N is the total number of hash slot arguments",
);

const CLUSTER_DELSLOTSRANGE: CommandSpec = cluster_sub(
    "CLUSTER|DELSLOTSRANGE",
    -4,
    Flags::ADMIN.union(Flags::STALE),
    "Set hash slots as unbound in receiving node",
    "7.0.0",
    "O(N) where N is the total number of the slots between the start slot and end slot arguments.",
);

const CLUSTER_FAILOVER: CommandSpec = cluster_sub(
    "CLUSTER|FAILOVER",
    -2,
    Flags::ADMIN.union(Flags::STALE),
    "Forces a replica to perform a manual failover of its master.",
    "3.0.0",
    "O(1)",
);

const CLUSTER_FLUSHSLOTS: CommandSpec = cluster_sub(
    "CLUSTER|FLUSHSLOTS",
    2,
    Flags::ADMIN.union(Flags::STALE),
    "Delete a node's own slots information",
    "3.0.0",
    "O(1)",
);

const CLUSTER_FORGET: CommandSpec = cluster_sub(
    "CLUSTER|FORGET",
    3,
    Flags::ADMIN.union(Flags::STALE),
    "Remove a node from the nodes table",
    "3.0.0",
    "O(1)",
);

const CLUSTER_GETKEYSINSLOT: CommandSpec = cluster_sub(
    "CLUSTER|GETKEYSINSLOT",
    4,
    Flags::STALE,
    "Return local key names in the specified hash slot",
    "3.0.0",
    "O(log(N)) where N is the number of requested keys",
);

const CLUSTER_HELP: CommandSpec = cluster_sub(
    "CLUSTER|HELP",
    2,
    Flags::LOADING.union(Flags::STALE),
    "Show helpful text about the different subcommands",
    "5.0.0",
    "O(1)",
);

const CLUSTER_INFO: CommandSpec = cluster_sub(
    "CLUSTER|INFO",
    2,
    Flags::STALE,
    "Provides info about Redis Cluster node state",
    "3.0.0",
    "O(1)",
);

const CLUSTER_KEYSLOT: CommandSpec = cluster_sub(
    "CLUSTER|KEYSLOT",
    3,
    Flags::STALE,
    "Returns the hash slot of the specified key",
    "3.0.0",
    "O(N) where N is the number of bytes in the key",
);

const CLUSTER_LINKS: CommandSpec = cluster_sub(
    "CLUSTER|LINKS",
    2,
    Flags::STALE,
    "Returns a list of all TCP links to and from peer nodes in cluster",
    "7.0.0",
    "O(N) where N is the total number of Cluster nodes",
);

const CLUSTER_MEET: CommandSpec = cluster_sub(
    "CLUSTER|MEET",
    -4,
    Flags::ADMIN.union(Flags::STALE),
    "Force a node cluster to handshake with another node",
    "3.0.0",
    "O(1)",
);

const CLUSTER_MYID: CommandSpec = cluster_sub(
    "CLUSTER|MYID",
    2,
    Flags::STALE,
    "Return the node id",
    "3.0.0",
    "O(1)",
);

const CLUSTER_NODES: CommandSpec = cluster_sub(
    "CLUSTER|NODES",
    2,
    Flags::STALE,
    "Get Cluster config for the node",
    "3.0.0",
    "O(N) where N is the total number of Cluster nodes",
);

const CLUSTER_REPLICAS: CommandSpec = cluster_sub(
    "CLUSTER|REPLICAS",
    3,
    Flags::ADMIN.union(Flags::STALE),
    "List replica nodes of the specified master node",
    "5.0.0",
    "O(1)",
);

const CLUSTER_REPLICATE: CommandSpec = cluster_sub(
    "CLUSTER|REPLICATE",
    3,
    Flags::ADMIN.union(Flags::STALE),
    "Reconfigure a node as a replica of the specified master node",
    "3.0.0",
    "O(1)",
);

const CLUSTER_RESET: CommandSpec = cluster_sub(
    "CLUSTER|RESET",
    -2,
    Flags::ADMIN.union(Flags::NOSCRIPT).union(Flags::STALE),
    "Reset a Redis Cluster node",
    "3.0.0",
    "O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
);

const CLUSTER_SAVECONFIG: CommandSpec = cluster_sub(
    "CLUSTER|SAVECONFIG",
    2,
    Flags::ADMIN.union(Flags::STALE),
    "Forces the node to save cluster state on disk",
    "3.0.0",
    "O(1)",
);

const CLUSTER_SET_CONFIG_EPOCH: CommandSpec = cluster_sub(
    "CLUSTER|SET-CONFIG-EPOCH",
    3,
    Flags::ADMIN.union(Flags::STALE),
    "Set the configuration epoch in a new node",
    "3.0.0",
    "O(1)",
);

const CLUSTER_SETSLOT: CommandSpec = cluster_sub(
    "CLUSTER|SETSLOT",
    -4,
    Flags::ADMIN.union(Flags::STALE),
    "Bind a hash slot to a specific node",
    "3.0.0",
    "O(1)",
);

const CLUSTER_SHARDS: CommandSpec = cluster_sub(
    "CLUSTER|SHARDS",
    2,
    Flags::STALE,
    "Get array of cluster slots to node mappings",
    "7.0.0",
    "O(N) where N is the total number of cluster nodes",
);

const CLUSTER_SLAVES: CommandSpec = cluster_sub(
    "CLUSTER|SLAVES",
    3,
    Flags::ADMIN.union(Flags::STALE),
    "List replica nodes of the specified master node",
    "3.0.0",
    "O(1)",
);

const CLUSTER_SLOTS: CommandSpec = cluster_sub(
    "CLUSTER|SLOTS",
    2,
    Flags::STALE,
    "Get array of Cluster slot to node mappings",
    "3.0.0",
    "O(N) where N is the total number of Cluster nodes",
);

pub(crate) const READONLY: CommandSpec = CommandSpec {
    name: "READONLY",
    group: Group::Cluster,
    arity: 1,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::FAST),
    keys: Keys::None,
    summary: "Enables read queries for a connection to a cluster replica node",
    since: "3.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cluster_disabled,
};

pub(crate) const READWRITE: CommandSpec = CommandSpec {
    name: "READWRITE",
    group: Group::Cluster,
    arity: 1,
    flags: Flags::LOADING.union(Flags::STALE).union(Flags::FAST),
    keys: Keys::None,
    summary: "Disables read queries for a connection to a cluster replica node",
    since: "3.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cluster_disabled,
};

pub(crate) const ASKING: CommandSpec = CommandSpec {
    name: "ASKING",
    group: Group::Cluster,
    arity: 1,
    flags: Flags::FAST,
    keys: Keys::None,
    summary: "Sent by cluster clients after an -ASK redirect",
    since: "3.0.0",
    complexity: "O(1)",
    subcommands: &[],
    run: cluster_disabled,
};
