//! `Engine`: the shared server state every connection's `execute` works against.

use crate::clock::{Clock, SystemClock};
use crate::config::Config;
pub use crate::kernel::{EffectSink, Engine, FastRng, NetControl, Rng};
use crate::session::{ClientHandle, Session};
use crate::stats::Stats;
use crate::table::CommandTable;
use crate::watch::Watches;
use bytes::Bytes;
use keel_store::Keyspace;
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

pub struct EngineBuilder {
    /// Every command the engine serves. The kernel knows no command family:
    /// whoever builds the engine assembles the table (the server from every
    /// family, a test from those it needs); the default is empty.
    pub commands: CommandTable,
    /// What the kernel asks of the families that `commands` come from.
    pub families: Box<dyn crate::families::Families>,
    pub config: Config,
    pub clock: Arc<dyn Clock>,
    pub rng: Option<Arc<dyn Rng>>,
    pub sink: Option<Arc<dyn EffectSink>>,
    pub shard_bits: u32,
    pub used_memory: fn() -> u64,
    pub config_file: String,
}

fn no_memory_probe() -> u64 {
    0
}

impl Default for EngineBuilder {
    fn default() -> Self {
        EngineBuilder {
            commands: CommandTable::new(&[]),
            families: Box::new(crate::families::NoFamilies),
            config: Config::default(),
            clock: Arc::new(SystemClock),
            rng: None,
            sink: None,
            shard_bits: 6,
            used_memory: no_memory_probe,
            config_file: String::new(),
        }
    }
}

impl EngineBuilder {
    pub fn build(self) -> Engine {
        crate::cycles::init();
        let start_ms = self.clock.now_ms();
        let seed = start_ms ^ (u64::from(std::process::id()) << 32) ^ 0x9e37_79b9_7f4a_7c15;
        let rng = self.rng.unwrap_or_else(|| Arc::new(FastRng::new(seed)));
        let run_id: String = (0..40)
            .map(|_| char::from(b"0123456789abcdef"[(rng.next_u64() % 16) as usize]))
            .collect();
        let replid: String = (0..40)
            .map(|_| char::from(b"0123456789abcdef"[(rng.next_u64() % 16) as usize]))
            .collect();
        let databases = self.config.get_i64("databases").max(1) as usize;
        let acl = crate::acl::Acl::new(&self.config.get("requirepass"), self.commands.rebuilt());
        Engine {
            keyspace: Keyspace::new(databases, self.shard_bits),
            commands: self.commands,
            families: self.families,
            config: self.config,
            stats: Stats::default(),
            clock: self.clock,
            rng,
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            watches: Watches::default(),
            sink: self.sink,
            start_ms,
            started: std::time::Instant::now(),
            run_id,
            last_save_s: AtomicU64::new(start_ms / 1000),
            shutdown_requested: AtomicBool::new(false),
            shutdown_notify: Mutex::new(Vec::new()),
            tcp_port: AtomicU64::new(0),
            executable: std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            config_file: self.config_file,
            used_memory: self.used_memory,
            blocking: crate::blocking::Blocking::default(),
            net: std::sync::OnceLock::new(),
            monitors: crate::monitor::Monitors::default(),
            pause: crate::pause::Pause::default(),
            slowlog: crate::slowlog::SlowLog::default(),
            latency: crate::latency::LatencyMonitor::default(),
            persist: crate::persistence::Persistence::default(),
            me: std::sync::OnceLock::new(),
            scripting: crate::scripting::Scripting::default(),
            pubsub: crate::pubsub::PubSub::default(),
            tracking: crate::tracking::Tracking::default(),
            evictor: crate::evict::Evictor::default(),
            acl,
            repl: crate::replication::state::Master::new(replid),
            follow: Default::default(),
        }
    }
}

impl Engine {
    pub fn new() -> Engine {
        EngineBuilder::default().build()
    }

    /// Let background jobs (BGSAVE, BGREWRITEAOF) hold this engine.
    pub fn install_self(self: &Arc<Self>) {
        let _ = self.me.set(Arc::downgrade(self));
    }

    /// Whether commands must hand their effects on (an AOF or a sink).
    #[inline]
    pub fn logging(&self) -> bool {
        self.sink.is_some() || self.persist.aof.on() || self.repl.active()
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Register a new client and return its session. `authenticated` is false when
    /// `requirepass` is set.
    pub fn connect(&self, addr: String, laddr: String) -> Session {
        self.stats.connected_clients.fetch_add(1, Ordering::Relaxed);
        self.register(addr, laddr)
    }

    /// Like [`Engine::connect`], but refuses (`None`) once `maxclients` clients are
    /// connected. The slot is taken before the check, so connections arriving on
    /// several threads at once cannot overshoot the limit.
    pub fn try_connect(&self, addr: String, laddr: String) -> Option<Session> {
        let max = self.config.maxclients().max(1) as u64;
        if self.stats.connected_clients.fetch_add(1, Ordering::SeqCst) >= max {
            self.stats.connected_clients.fetch_sub(1, Ordering::SeqCst);
            self.stats
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            return None;
        }
        Some(self.register(addr, laddr))
    }

    fn register(&self, addr: String, laddr: String) -> Session {
        let id = self.next_client_id.fetch_add(1, Ordering::Relaxed);
        let handle = Arc::new(ClientHandle::new(id, addr, laddr, self.now_ms()));
        handle.bufs.output.attach(self.config.output_limits.clone());
        self.clients.lock().insert(id, handle.clone());
        self.stats.total_connections.fetch_add(1, Ordering::Relaxed);
        // Like Redis: a client starts as `default`, logged in unless that
        // user needs a password.
        let user = self.acl.default_user();
        let needs_auth = user.needs_auth();
        let mut session = Session::new(handle, !needs_auth);
        session.user = Some(user);
        session
    }

    /// The session the link to this replica's master applies the stream
    /// in: a client like any other in CLIENT LIST (`flags=M`), never
    /// refused, replied to by nobody.
    pub fn master_session(&self, addr: String, laddr: String) -> Session {
        let mut session = self.connect(addr, laddr);
        session.authenticated = true;
        session.user = None;
        session.master = true;
        session.handle.master.store(true, Ordering::Relaxed);
        // As Redis names the user of a client that may do everything.
        *session.handle.user.lock() = "(superuser)".into();
        session
    }

    /// Forget a client whose connection has closed, or that sent QUIT (its
    /// subscriptions end before the next command of anyone, as in Redis).
    /// A second call does nothing more.
    pub fn disconnect(&self, session: &mut Session) {
        self.drop_block(session);
        crate::monitor::stop(self, session);
        self.pubsub.drop_all(session);
        self.tracking.disable(session);
        self.watches.unwatch_all(session);
        if let Some(s) = session.sync.take() {
            self.repl.detach(s.replica.client_id, self.now_ms());
            crate::logging::log_notice(&format!(
                "Connection with replica {}:{} lost.",
                s.replica.ip.lock(),
                s.replica.port.load(Ordering::Relaxed)
            ));
        }
        if self.clients.lock().remove(&session.id()).is_some() {
            self.stats.connected_clients.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Ask the server to stop (SHUTDOWN, SIGTERM).
    pub fn request_shutdown(&self) {
        self.shutdown_requested.store(true, Ordering::SeqCst);
        for f in self.shutdown_notify.lock().iter() {
            f();
        }
    }

    pub fn databases(&self) -> usize {
        self.keyspace.databases()
    }

    /// Whether a call with these flags and arguments must hold every shard:
    /// a whole-keyspace command, or one whose patterns reach other keys.
    #[inline]
    pub fn every_shard(&self, flags: crate::spec::Flags, argv: &[Bytes]) -> bool {
        use crate::spec::Flags;
        flags.contains(Flags::ALL_SHARDS)
            || (flags.contains(Flags::KEY_PATTERNS) && self.families.names_other_keys(argv))
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}
