//! Fuzz the Lua host with arbitrary script source and arguments: the input is
//! split at the first NUL into a body and NUL-separated arguments, run as
//! `EVAL body n keys... args...`, then the body is also offered to FUNCTION
//! LOAD behind a library header.
//!
//! Properties: nothing panics or aborts whatever the script does (errors,
//! deep recursion, huge allocations within the VM's bound, endless loops,
//! which a watchdog stops with SCRIPT KILL's flag), every reply is a frame,
//! and the engine still answers afterwards.

#![no_main]

use bytes::Bytes;
use keel_engine::{Engine, EngineBuilder};
use keel_resp::Frame;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

fn engine() -> &'static Arc<Engine> {
    static ENGINE: OnceLock<Arc<Engine>> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let engine = Arc::new(
            EngineBuilder {
                commands: keel_server::families::table(),
                families: Box::new(keel_server::families::AllFamilies),
                ..EngineBuilder::default()
            }
            .build(),
        );
        engine.install_self();
        engine
            .scripting
            .install(Arc::new(keel_script::LuaHost::new()));
        engine
            .config
            .set("busy-reply-threshold", &["20"], false)
            .expect("threshold");
        // The watchdog: any script busy past the threshold is told to stop.
        let e = engine.clone();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(5));
            for r in e.scripting.busy.running() {
                r.kill.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
        engine
    })
}

fuzz_target!(|data: &[u8]| {
    let engine = engine();
    let mut parts = data.split(|&b| b == 0);
    let body = parts.next().unwrap_or_default();
    let args: Vec<Bytes> = parts.take(16).map(Bytes::copy_from_slice).collect();
    let mut session = engine.connect("fuzz:1".into(), "fuzz:0".into());
    let nkeys = args.len().min(2);
    let mut argv = vec![
        Bytes::from_static(b"EVAL"),
        Bytes::copy_from_slice(body),
        Bytes::from(nkeys.to_string()),
    ];
    argv.extend(args.iter().cloned());
    let reply = engine.execute(&mut session, argv);
    assert!(!matches!(reply, Frame::Encoded(_)));
    let mut code = b"#!lua name=fuzzlib\n".to_vec();
    code.extend_from_slice(body);
    let _ = engine.execute(
        &mut session,
        vec![
            Bytes::from_static(b"FUNCTION"),
            Bytes::from_static(b"LOAD"),
            Bytes::from_static(b"REPLACE"),
            Bytes::from(code),
        ],
    );
    let _ = engine.execute(
        &mut session,
        vec![Bytes::from_static(b"FUNCTION"), Bytes::from_static(b"FLUSH")],
    );
    let pong = engine.execute(&mut session, vec![Bytes::from_static(b"PING")]);
    assert_eq!(pong, Frame::simple("PONG"));
    engine.disconnect(&mut session);
});
