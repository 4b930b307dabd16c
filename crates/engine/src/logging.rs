//! The server log as the kernel writes to it: where lines go (set by the
//! server at start-up) and the `loglevel` that filters them.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

/// Where the server's log lines go, once it has said (the engine writes none
/// itself otherwise).
static LOGGER: OnceLock<fn(char, &str)> = OnceLock::new();

/// Send this process's log lines to `f` (level `*` notice, `#` warning).
pub fn set_logger(f: fn(char, &str)) {
    let _ = LOGGER.set(f);
}

/// A warning in the server log, for decisions a client only sees as an error
/// (SHUTDOWN refused).
pub fn log_warning(msg: &str) {
    if let Some(f) = LOGGER.get() {
        f('#', msg);
    }
}

/// A line at the verbose level (`redis.log(redis.LOG_VERBOSE, ...)`).
pub fn log_verbose(msg: &str) {
    if let Some(f) = LOGGER.get() {
        if log_enabled('-') {
            f('-', msg);
        }
    }
}

/// A line at the debug level.
pub fn log_debug(msg: &str) {
    if let Some(f) = LOGGER.get() {
        if log_enabled('.') {
            f('.', msg);
        }
    }
}

/// A notice in the server log (persistence progress).
pub fn log_notice(msg: &str) {
    if let Some(f) = LOGGER.get() {
        if log_enabled('*') {
            f('*', msg);
        }
    }
}

/// `loglevel` as a number (0 debug, 1 verbose, 2 notice, 3 warning) for the
/// process's log; set at start-up and by CONFIG SET.
static LOG_VERBOSITY: AtomicU8 = AtomicU8::new(2);

/// Follow `loglevel` (one of its enum values) from now on.
pub fn set_log_verbosity(loglevel: &str) {
    let v = match loglevel {
        "debug" => 0,
        "verbose" => 1,
        "warning" => 3,
        _ => 2,
    };
    LOG_VERBOSITY.store(v, Ordering::Relaxed);
}

/// Whether a line of `level` (Redis's marks: `.` debug, `-` verbose, `*`
/// notice, `#` warning) is logged at the current `loglevel`.
pub fn log_enabled(level: char) -> bool {
    let l = match level {
        '.' => 0,
        '-' => 1,
        '#' => 3,
        _ => 2,
    };
    l >= LOG_VERBOSITY.load(Ordering::Relaxed)
}
