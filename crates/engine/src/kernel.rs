//! The four types of the kernel that name one another, defined together: the
//! [`Engine`] holds a [`CommandTable`] of [`CommandSpec`]s whose handlers take
//! a [`Ctx`], which borrows the Engine. Nothing else lives here. What they do
//! is implemented above them, in `engine.rs`, `ctx.rs`, `spec.rs` and
//! `table.rs`, which re-export them; the registries the Engine holds are
//! their `state` modules, which name none of these four.

use crate::args::Args;
use crate::client::ClientHandle;
use crate::clock::Clock;
use crate::config::Config;
use crate::declare::{Flags, Group, Keys};
use crate::error::CmdError;
use crate::guards::Guards;
use crate::session::Session;
use crate::stats::Stats;
use crate::watch::Watches;
use bytes::{Bytes, BytesMut};
use hashbrown::HashMap;
use keel_resp::Frame;
use keel_store::Keyspace;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Receives the effect of every write, in execution order, while the writer still
/// holds its shard locks. Persistence and replication implement it.
pub trait EffectSink: Send + Sync {
    fn append(&self, db: usize, argv: &[Bytes]);
}

/// What the network layer lets CONFIG SET change at run time. The engine opens
/// no sockets; the server installs this once its listeners are up.
pub trait NetControl: Send + Sync {
    /// Listen on the `bind` addresses at `port` instead (`port` 0: on none).
    /// On failure the current listeners stay and the reason is returned.
    fn rebind(&self, bind: &str, port: u16) -> Result<(), String>;
    /// Make room for `maxclients` descriptors; on failure, the most clients
    /// the process can serve.
    fn fit_maxclients(&self, maxclients: u64) -> Result<(), u64>;
    /// Apply the `tls-*` directives as they are now (CONFIG SET): a new
    /// certificate, CA or port for the TLS listeners. The error is the
    /// reason CONFIG SET reports.
    fn reload_tls(&self, _config: &crate::config::Config) -> Result<(), String> {
        Ok(())
    }
}

/// Random numbers, injected like time so tests can be exact.
pub trait Rng: Send + Sync {
    fn next_u64(&self) -> u64;
}

/// xorshift64* seeded from the clock; good enough for RANDOMKEY and sampling.
pub struct FastRng(AtomicU64);

impl FastRng {
    pub fn new(seed: u64) -> FastRng {
        FastRng(AtomicU64::new(seed | 1))
    }
}

impl Rng for FastRng {
    fn next_u64(&self) -> u64 {
        let mut x = self.0.load(Ordering::Relaxed);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0.store(x, Ordering::Relaxed);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

pub struct Engine {
    pub keyspace: Keyspace,
    pub commands: CommandTable,
    /// What the executor asks of the command families (see [`crate::families`]).
    pub families: Box<dyn crate::families::Families>,
    pub config: Config,
    pub stats: Stats,
    pub clock: Arc<dyn Clock>,
    pub rng: Arc<dyn Rng>,
    pub clients: Mutex<BTreeMap<u64, Arc<ClientHandle>>>,
    pub(crate) next_client_id: AtomicU64,
    pub watches: Watches,
    pub sink: Option<Arc<dyn EffectSink>>,
    pub start_ms: u64,
    pub started: std::time::Instant,
    pub run_id: String,
    pub last_save_s: AtomicU64,
    /// Set by SHUTDOWN or a signal; the network layer stops when it sees it.
    pub shutdown_requested: AtomicBool,
    pub shutdown_notify: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
    /// The address and port actually bound, for INFO server.
    pub tcp_port: AtomicU64,
    pub executable: String,
    pub config_file: String,
    /// Bytes currently allocated by the process, as the allocator counts them.
    pub used_memory: fn() -> u64,
    /// Clients blocked on keys (BLPOP and friends).
    pub blocking: crate::blocking::state::Blocking,
    /// Installed by the server: rebinding listeners, the descriptor limit.
    pub net: std::sync::OnceLock<Arc<dyn NetControl>>,
    /// Clients running MONITOR.
    pub monitors: crate::monitor::state::Monitors,
    /// CLIENT PAUSE in force, if any.
    pub pause: crate::pause::state::Pause,
    /// SLOWLOG's entries and the latency monitor's events.
    pub slowlog: crate::slowlog::SlowLog,
    pub latency: crate::latency::LatencyMonitor,
    /// The AOF, snapshots and their state.
    pub persist: crate::persistence::state::Persistence,
    /// This engine as a weak handle, for background jobs (set by
    /// [`Engine::install_self`] once it lives in an `Arc`).
    pub me: std::sync::OnceLock<std::sync::Weak<Engine>>,
    /// The script cache, function libraries and running scripts; the
    /// language host is installed by the server.
    pub scripting: crate::scripting::Scripting,
    /// Pub/sub subscriptions.
    pub pubsub: crate::pubsub::state::PubSub,
    /// Client-side caching: tracking clients and the keys they read.
    pub tracking: crate::tracking::state::Tracking,
    /// `maxmemory` eviction: the pool and counters.
    pub evictor: crate::evict::state::Evictor,
    /// ACL users and the ACL log.
    pub acl: crate::acl::state::Acl,
    /// The replication stream and the replicas attached to it.
    pub repl: crate::replication::state::Master,
    /// The master this server follows, when it is a replica.
    pub follow: crate::replication::follow::Follow,
}

pub struct Ctx<'a> {
    pub engine: &'a Engine,
    pub session: &'a mut Session,
    pub guards: Guards<'a>,
    pub(crate) tick: crate::clock::Tick,
    /// Number of changes the current command made; > 0 means it is logged and
    /// watchers of its keys are invalidated.
    pub(crate) dirty: u64,
    /// How much of `dirty` has been added to the statistics already.
    pub(crate) dirty_counted: u64,
    /// The effect to log instead of the command as typed (`SET k v EX 10` is
    /// logged as `SET k v PXAT <abs>`).
    pub(crate) rewrite: Option<Vec<Bytes>>,
    /// Effects logged for this command, in order, when a sink is installed.
    pub effects: Vec<(usize, Vec<Bytes>)>,
    /// Keys the command says it changed, for WATCH; `None` means "every key the
    /// spec declares" (right for most write commands).
    pub modified: Option<Vec<(usize, Bytes)>>,
    pub(crate) hits: u64,
    pub(crate) misses: u64,
    /// Keys written while clients may be blocked on them; served after the
    /// command releases its locks.
    pub(crate) ready: Vec<Bytes>,
    /// How deep in nested calls (EXEC, scripts) this command runs; blocking
    /// commands never block when it is above zero.
    pub nested: u32,
    /// Arguments MONITOR must not show (passwords), recorded by the handler.
    pub(crate) redacted: Vec<usize>,
    /// A script is running this command (MONITOR shows `lua`, SLOWLOG no client).
    pub in_script: bool,
    /// Set by a handler whose write serves no blocked client, though it
    /// changed its keys (Redis signals no key for XDEL, XACK, XGROUP SETID,
    /// ...); the executor clears it after each command.
    pub(crate) wakes_none: bool,
    /// Set while the command holds its shard shared and reached something
    /// only the exclusive lock allows (an expired key to remove, a table to
    /// change, an event to publish): the executor throws its reply away and
    /// runs it again holding the shard exclusively.
    pub(crate) must_write: Option<Upgrade>,
    /// The connection's output, while the command runs for its own client at
    /// the top level with every reply sent: a reply read out of a value can
    /// be encoded straight into it instead of being copied into a frame
    /// first (see [`Ctx::bulk_reply`]).
    pub(crate) out: Option<&'a mut BytesMut>,
}

/// Why a command that held its shard shared ran again exclusively.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Upgrade {
    /// This run only: it found an expired key to remove, or an event to
    /// publish; the data asked for it, not the command.
    Once,
    /// Its handler asks for its table to change: it would every time, so the
    /// command is run exclusively from now on.
    Always,
}

/// A handler: parse its arguments, operate on the store, return the reply.
pub type Handler = fn(&mut Ctx<'_>, &mut Args<'_>) -> Result<Frame, CmdError>;

/// One command, declared once.
pub struct CommandSpec {
    pub name: &'static str,
    pub group: Group,
    /// Redis arity: N means exactly N arguments including the name, -N at least N.
    pub arity: i32,
    pub flags: Flags,
    pub keys: Keys,
    pub summary: &'static str,
    pub since: &'static str,
    pub complexity: &'static str,
    /// Subcommands (CLIENT, CONFIG, ...), each a spec of its own named
    /// `parent|sub` in COMMAND output; dispatched by the parent handler.
    pub subcommands: &'static [&'static CommandSpec],
    pub run: Handler,
}

impl std::fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// One slot of the table of short names: the name as one word with every
/// byte's 0x20 bit set (0 for an empty slot), the name in lowercase, the
/// mask of 0x20 where it has a letter (see `CommandTable::exact`), its id.
#[derive(Clone, Copy, Default)]
pub(crate) struct ShortSlot {
    pub(crate) key: u64,
    pub(crate) lower: u64,
    pub(crate) letters: u64,
    pub(crate) id: u32,
}

pub struct CommandTable {
    pub(crate) by_name: HashMap<Vec<u8>, usize>,
    /// Names of up to 8 bytes (nearly every command a client sends), as
    /// `packed` below holds longer ones but in one word: the lookup is a
    /// few loads, one multiply and one compare.
    pub(crate) short: Box<[ShortSlot]>,
    pub(crate) short_bits: u32,
    /// Names of 9 to 16 bytes packed into a `u128` with every byte's 0x20 bit
    /// set, in an open-addressed table: the lookup of nearly every command
    /// is one multiply, one probe or two, and a check of the name.
    pub(crate) packed: Box<[(u128, u32)]>,
    /// Beside each slot of `packed`: its name in lowercase, unfolded, and a
    /// mask of 0x20 where that name has a letter. A name typed in any case
    /// matches when its bytes with those bits set equal the lowercase name,
    /// which no byte the fold merely maps there does.
    pub(crate) exact: Box<[(u128, u128)]>,
    pub(crate) packed_bits: u32,
    /// Every spec, top-level commands and subcommands; the index is the command id.
    pub specs: Vec<&'static CommandSpec>,
    /// For each id, the id of its parent container (or itself).
    pub parent: Vec<usize>,
    /// Number of top-level commands.
    pub top_level: usize,
    /// For each id, whether the command runs holding its shard shared: set
    /// for read-only commands of one key, cleared the first time one asks for
    /// its table to change (see `Upgrade::Always` in the executor).
    pub(crate) shared: Box<[AtomicBool]>,
    /// The groups the table was built from, for [`CommandTable::rebuilt`].
    pub(crate) groups: Vec<&'static [&'static CommandSpec]>,
}
