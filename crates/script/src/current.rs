//! The script running on this thread, as `redis.call` reaches it.
//!
//! `redis.call` and `redis.pcall` are created once per VM, but each call must
//! reach the `ScriptRun` of the script running now, which borrows the
//! command's context and so cannot be stored in Lua. While a script runs its
//! run is parked here as a pointer; `with` lends it out to one caller at a time.

use keel_engine::scripting::ScriptRun;
use std::cell::Cell;
use std::ptr::null_mut;

thread_local! {
    static CURRENT: Cell<*mut ()> = const { Cell::new(null_mut()) };
}

/// Clears the slot when the script's call ends (also on unwinding).
pub struct Bound(());

impl Drop for Bound {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(null_mut()));
    }
}

/// Park `run` for the duration of the returned guard. The caller must not use
/// `run` itself until the guard is dropped.
pub fn bind(run: &mut ScriptRun<'_, '_>) -> Bound {
    let p: *mut ScriptRun<'_, '_> = run;
    CURRENT.with(|c| c.set(p.cast()));
    Bound(())
}

/// Lend the parked run to `f`; `None` when no script runs on this thread (or
/// the run is already lent out).
#[allow(unsafe_code)]
pub fn with<R>(f: impl for<'c, 'a> FnOnce(&mut ScriptRun<'c, 'a>) -> R) -> Option<R> {
    let p = CURRENT.with(|c| c.replace(null_mut()));
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` came from a live `&mut ScriptRun` in `bind`; the frame that
    // holds that borrow is still running (its `Bound` guard clears the slot
    // before the borrow ends) and does not touch the run meanwhile. The slot
    // was emptied above, so this is the only reference made from it until it
    // is put back below. `f` is generic over the lifetimes, so it cannot keep
    // the reference or anything borrowed through it.
    let run = unsafe { &mut *p.cast::<ScriptRun<'static, 'static>>() };
    let r = f(run);
    CURRENT.with(|c| c.set(p));
    Some(r)
}
