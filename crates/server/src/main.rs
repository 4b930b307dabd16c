//! `keel-server`: read the configuration, start the worker threads, serve until a
//! signal or SHUTDOWN, then exit cleanly.

mod alloc;
mod fdlimit;
mod log;
mod net;
mod startup;
mod tls;
mod upstream;

use keel_engine::config::Config;
use keel_engine::expire::{active_expire_cycle, cycle_budget, ExpireCursor};
use keel_engine::{Engine, EngineBuilder};
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

fn usage() -> ! {
    println!(
        "Usage: keel-server [/path/to/keel.conf] [--name value ...]\n\
         \x20      keel-server --version\n\n\
         Every --name value is the same directive as a config file line 'name value'.\n\
         Examples:\n\
         \x20      keel-server --port 7777 --threads 2\n\
         \x20      keel-server /etc/keel.conf --requirepass secret"
    );
    std::process::exit(0)
}

fn load_config(args: &[String]) -> (Config, String) {
    let config = Config::default();
    let mut loader = startup::Loader::new(&config);
    let mut rest = args;
    let mut file_name = String::new();
    if let Some(first) = args.first() {
        if !first.starts_with("--") {
            // Absolute, as Redis keeps it: `dir` changes the working directory
            // before CONFIG REWRITE writes the file back.
            file_name = std::path::absolute(first)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_else(|_| first.clone());
            let text = match std::fs::read_to_string(first) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("Fatal error, can't open config file '{first}': {e}");
                    std::process::exit(1);
                }
            };
            loader.apply(first, &text);
            rest = &args[1..];
        }
    }
    let lines = match startup::args_to_lines(rest) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("Fatal error in command line: {e}");
            std::process::exit(1);
        }
    };
    loader.apply("(command line)", &lines.join("\n"));
    if let Err(errors) = loader.finish() {
        config_errors(&errors);
    }
    (config, file_name)
}

fn config_errors(errors: &[startup::StartupError]) -> ! {
    for e in errors {
        eprintln!("{e}");
    }
    std::process::exit(1)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v" | "--version") => {
            println!("Keel server v={}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Some("-h" | "--help") => usage(),
        _ => {}
    }
    let (config, config_file) = load_config(&args);
    if let Err(e) = start_up(&config) {
        eprintln!("Fatal: {e}");
        std::process::exit(1);
    }
    let pidfile = config.get("pidfile");
    if let Err(e) = run(config, config_file) {
        warn!("Fatal: {e:#}");
        pidfile_cleanup(&pidfile);
        std::process::exit(1);
    }
}

/// After the configuration is read and before any thread starts: open the log
/// file (while errors can still reach the terminal), daemonize, write the pid
/// file, report recorded no-ops.
fn start_up(config: &Config) -> std::io::Result<()> {
    // Checked once the file and the command line are both read, so an option
    // can move the log somewhere writable.
    if let Err(e) = log::set_logfile(&config.get("logfile")) {
        eprintln!(
            "\n*** FATAL CONFIG FILE ERROR (Keel {}) ***\nCan't open the log file: {}",
            env!("CARGO_PKG_VERSION"),
            startup::os_text(&e)
        );
        std::process::exit(1);
    }
    if config.get_bool("daemonize") {
        startup::daemonize()?;
        if config.get("pidfile").is_empty() {
            let _ = config.set("pidfile", &[startup::DEFAULT_DAEMON_PIDFILE], true);
        }
    }
    keel_engine::config::set_log_verbosity(&config.get("loglevel"));
    keel_engine::config::set_logger(log::log);
    startup::write_pidfile(&config.get("pidfile"));
    startup::log_noops(config);
    Ok(())
}

fn run(config: Config, config_file: String) -> anyhow::Result<()> {
    let dir = config.get("dir");
    if dir != "." {
        std::env::set_current_dir(&dir)
            .map_err(|e| anyhow::anyhow!("can't chdir to '{dir}': {e}"))?;
    }
    let threads = match config.get_i64("threads") {
        0 => std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        n => n as usize,
    };
    let port = config.get_i64("port") as u16;
    let backlog = config.get_i64("tcp-backlog") as i32;
    let bind = config.get("bind");
    let reserved_fds = fdlimit::reserved_fds(threads, bind.split_whitespace().count());
    fit_maxclients(&config, reserved_fds);
    let pidfile = config.get("pidfile");

    let mut builder = EngineBuilder {
        // The one place that names every command family.
        commands: keel_server::families::table(),
        families: Box::new(keel_server::families::AllFamilies),
        config,
        ..EngineBuilder::default()
    };
    builder.used_memory = alloc::allocated_bytes;
    builder.config_file = config_file;
    // Enough shards that worker threads rarely meet on one lock.
    builder.shard_bits = 6;
    let engine = Arc::new(builder.build());
    engine.install_self();
    if let Err(why) = keel_engine::acl::load_at_start(&engine) {
        warn!("{why}");
        std::process::exit(1);
    }
    engine
        .scripting
        .install(Arc::new(keel_script::LuaHost::new()));
    let _ = engine
        .persist
        .aof
        .on_durable
        .set(Box::new(net::durable_wake_all));

    // What the empty server holds (INFO used_memory_startup): this, before
    // any data is loaded, plus what the workers take when they start.
    let before_load = alloc::allocated_bytes();

    // SIGTERM and SIGINT are caught from before the port opens: one sent as
    // soon as a client can connect (or while the data loads) waits for the
    // cron loop and shuts down as any other, saving and fsyncing, instead of
    // killing the process.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let signals = {
        use tokio::signal::unix::{signal, SignalKind};
        let _in_runtime = rt.enter();
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some((term, int)),
            _ => None,
        }
    };

    // Bind every listener before announcing readiness.
    let tls = tls_listeners(&engine.config, &bind, backlog, &pidfile);
    let bound = listen_or_exit(&bind, port, backlog, &pidfile, tls.is_some());
    engine.tcp_port.store(u64::from(port), Ordering::Relaxed);

    // Load what is on disk (connections wait in the listen backlog).
    if let Err(why) = keel_engine::persistence::start(&engine) {
        warn!("{why}");
        pidfile_cleanup(&pidfile);
        std::process::exit(1);
    }

    // A replica follows its master from the start (the `replicaof`
    // directive); REPLICAOF later wakes the same link thread.
    if let Some((host, port)) = engine.config.get("replicaof").split_once(' ') {
        if let Ok(port) = port.trim().parse::<u16>() {
            engine.repl.set_upstream();
            engine
                .follow
                .set_target(Some((host.to_string(), port)), engine.now_ms());
        }
    }
    // min-replicas-to-write holds from the first command, not the first tick.
    keel_engine::replication::cron(&engine, engine.now_ms());
    if let Err(e) = upstream::spawn(engine.clone()) {
        warn!("cannot start the replication link thread: {e}");
    }

    let stop = Arc::new(tokio::sync::Notify::new());
    {
        let stop = stop.clone();
        engine
            .shutdown_notify
            .lock()
            .push(Box::new(move || stop.notify_waiters()));
    }
    info!(
        "Keel version={} pid={} threads={threads} just started",
        env!("CARGO_PKG_VERSION"),
        std::process::id()
    );
    let mut workers = Vec::new();
    let mut links = Vec::new();
    let before_spawn = alloc::allocated_bytes();
    let (started_tx, started) = std::sync::mpsc::channel::<()>();
    for i in 0..threads {
        let (link, inbox) = net::worker_channel()?;
        links.push(link);
        let (event_loop, inbox) = inbox.split();
        // The worker's event loop serves its plain TCP connections.
        let loop_engine = engine.clone();
        let loop_started = started_tx.clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("keel-worker-{i}"))
                .spawn(move || {
                    // This thread's command counters, made now rather than
                    // on its first command.
                    loop_engine
                        .stats
                        .with_local(loop_engine.commands.len(), |_| ());
                    let _ = loop_started.send(());
                    drop(loop_started);
                    if let Err(e) = event_loop.run(&loop_engine) {
                        warn!("worker {i} event loop failed: {e}");
                    }
                })?,
        );
        // Its runtime serves the connections that wait on more than their
        // socket, and TLS.
        let engine = engine.clone();
        let stop = stop.clone();
        let started_tx = started_tx.clone();
        workers.push(
            std::thread::Builder::new()
                .name(format!("keel-io-{i}"))
                .spawn(move || {
                    let Some(rt) = thread_runtime(&format!("worker {i}")) else {
                        return;
                    };
                    engine.stats.with_local(engine.commands.len(), |_| ());
                    let _ = started_tx.send(());
                    drop(started_tx);
                    rt.block_on(async move {
                        tokio::spawn(async {
                            let mut tick =
                                tokio::time::interval(std::time::Duration::from_millis(250));
                            loop {
                                tick.tick().await;
                                alloc::collect_thread();
                            }
                        });
                        net::worker_loop(engine, inbox, stop).await;
                    });
                })?,
        );
    }
    drop(started_tx);
    for _ in 0..2 * threads {
        if started.recv().is_err() {
            break;
        }
    }
    let workers_took = alloc::allocated_bytes().saturating_sub(before_spawn);
    engine
        .stats
        .memory_startup
        .store(before_load + workers_took, Ordering::Relaxed);
    let tls_port = tls.is_some();
    spawn_acceptor(&engine, bound, links, backlog, tls, reserved_fds, &stop)?;
    info!("Ready to accept connections tcp on port {port}");
    if tls_port {
        info!(
            "Ready to accept connections tls on port {}",
            engine.config.get_i64("tls-port")
        );
    }

    rt.block_on(cron(engine.clone(), stop.clone(), signals));
    if !engine.persist.shutdown_done.load(Ordering::SeqCst) {
        // A signal: fsync the AOF, and save when save points are set.
        let save = !engine.config.get("save").is_empty();
        if let Err(why) = keel_engine::persistence::prepare_shutdown(&engine, save) {
            warn!("Error trying to save the DB, can't exit. {why}");
        }
    }
    engine.persist.aof.stop();
    for c in engine.clients.lock().values() {
        c.kill();
    }
    pidfile_cleanup(&pidfile);
    warn!("Keel is now ready to exit, bye bye...");
    Ok(())
}

/// Raise the descriptor limit for `maxclients`, or lower `maxclients` to
/// what the limit allows, before any client connects.
fn fit_maxclients(config: &Config, reserved_fds: u64) {
    let want = config.maxclients().max(1) as u64;
    let fit = fdlimit::adjust(want, reserved_fds);
    if fit < want {
        let _ = config.set("maxclients", &[&fit.to_string()], true);
    }
}

/// Bind every `bind` address at `port`, or exit as Redis does when one is
/// taken (by any process, another Keel included) or nothing would listen.
fn listen_or_exit(
    bind: &str,
    port: u16,
    backlog: i32,
    pidfile: &str,
    tls: bool,
) -> Vec<net::Bound> {
    let why = match net::bind_all(bind, port, backlog, Vec::new()) {
        Ok((bound, _)) if !bound.is_empty() || tls => return bound,
        Ok(_) => "Configured to not listen anywhere, exiting.".to_string(),
        Err(_) => format!("Failed listening on port {port} (TCP), aborting."),
    };
    warn!("{why}");
    // The pid file was written before binding; a server that never listened
    // leaves none behind.
    pidfile_cleanup(pidfile);
    std::process::exit(1);
}

/// The `tls-port` listeners and the acceptor their connections go through,
/// or none when `tls-port` is 0; exits as Redis does when TLS cannot be set
/// up or the port cannot be bound.
fn tls_listeners(
    config: &Config,
    bind: &str,
    backlog: i32,
    pidfile: &str,
) -> Option<(Vec<net::Bound>, tls::TlsAcceptor)> {
    let port = config.get_i64("tls-port") as u16;
    if port == 0 {
        return None;
    }
    let why = match tls::acceptor(config) {
        Err(e) => format!("{e}\nFailed to configure TLS. Check logs for more info."),
        Ok(acceptor) => match net::bind_all(bind, port, backlog, Vec::new()) {
            Ok((bound, _)) => return Some((bound, acceptor)),
            Err(_) => format!("Failed listening on port {port} (tls), aborting."),
        },
    };
    warn!("{why}");
    pidfile_cleanup(pidfile);
    std::process::exit(1);
}

/// A worker's or the acceptor's runtime: sockets and timers, no signals (the
/// main thread takes those), so each costs two descriptors, not four.
fn thread_runtime(what: &str) -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(rt) => Some(rt),
        Err(e) => {
            warn!("{what} failed to start: {e}");
            None
        }
    }
}

/// The acceptor thread: it alone accepts, then hands connections to the
/// workers; CONFIG SET reaches it through the engine's `net` handle.
fn spawn_acceptor(
    engine: &Arc<Engine>,
    bound: Vec<net::Bound>,
    links: Vec<net::WorkerLink>,
    backlog: i32,
    tls: Option<(Vec<net::Bound>, tls::TlsAcceptor)>,
    reserved_fds: u64,
    stop: &Arc<tokio::sync::Notify>,
) -> std::io::Result<()> {
    let (handle, ctl) = net::NetHandle::new(reserved_fds);
    let _ = engine.net.set(Arc::new(handle));
    let engine = engine.clone();
    let stop = stop.clone();
    std::thread::Builder::new()
        .name("keel-accept".into())
        .spawn(move || {
            let Some(rt) = thread_runtime("acceptor") else {
                return;
            };
            rt.block_on(net::accept_loop(
                engine, bound, links, ctl, backlog, tls, stop,
            ));
        })?;
    Ok(())
}

fn pidfile_cleanup(pidfile: &str) {
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(pidfile);
    }
}

/// Background work: the active expiry cycle at `hz`, and waiting for a shutdown.
async fn cron(
    engine: Arc<Engine>,
    stop: Arc<tokio::sync::Notify>,
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
) {
    let Some((mut term, mut int)) = signals else {
        warn!("cannot install signal handlers");
        return;
    };
    let mut cursor = ExpireCursor::default();
    let mut clients_looked = std::time::Instant::now();
    loop {
        let hz = engine.config.get_i64("hz").clamp(1, 500) as u64;
        let tick = tokio::time::sleep(std::time::Duration::from_millis(1000 / hz));
        tokio::select! {
            _ = tick => {
                keel_admin::server::cron_sample(&engine);
                engine.tracking.cron(&engine);
                keel_engine::persistence::snapshot::cron(&engine);
                keel_engine::replication::cron(&engine, engine.now_ms());
                keel_engine::client_evict::cron(&engine);
                if clients_looked.elapsed() >= std::time::Duration::from_secs(1) {
                    clients_looked = std::time::Instant::now();
                    net::clients_cron(&engine);
                }
                let e = engine.clone();
                let budget = cycle_budget(&e);
                // The cycle takes shard locks; run it off the async thread.
                let c = std::mem::take(&mut cursor);
                cursor = tokio::task::spawn_blocking(move || {
                    let mut c = c;
                    active_expire_cycle(&e, &mut c, budget);
                    keel_engine::evict::cron(&e);
                    c
                }).await.unwrap_or_default();
            }
            _ = term.recv() => {
                warn!("Received SIGTERM scheduling shutdown...");
                engine.request_shutdown();
            }
            _ = int.recv() => {
                warn!("Received SIGINT scheduling shutdown...");
                engine.request_shutdown();
            }
            _ = stop.notified() => {}
        }
        if engine.shutdown_requested.load(Ordering::SeqCst) {
            warn!("User requested shutdown...");
            return;
        }
    }
}
