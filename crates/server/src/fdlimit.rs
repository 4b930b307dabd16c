//! The open-files limit. Every client costs one descriptor, and the server
//! keeps a reserve for its own (listeners, the runtimes' event queues, files).
//! At start-up, and when CONFIG SET raises `maxclients`, the soft
//! RLIMIT_NOFILE is raised toward `maxclients` plus the reserve; where the
//! hard limit forbids it, `maxclients` shrinks to what fits, logged in
//! Redis's words.

/// Redis's reserve (CONFIG_MIN_RESERVED_FDS).
pub const MIN_RESERVED_FDS: u64 = 32;

/// The descriptors to keep for the server itself: Redis's 32, or more when
/// Keel's own need more: stdio, four per runtime (tokio's event queue, its
/// clone, its waker, and its end of the signal pipe; a worker's runtime has
/// no signal driver, and its event loop's epoll set and eventfd take those
/// two), the signal pipe itself, the listeners, and a few for files opened
/// now and then.
pub fn reserved_fds(threads: usize, listeners: usize) -> u64 {
    // The workers, the acceptor and the main thread's.
    let runtimes = threads as u64 + 2;
    let own = 3 + 4 * runtimes + 4 + listeners as u64;
    (own + 8).max(MIN_RESERVED_FDS)
}

fn nofile() -> std::io::Result<libc::rlimit> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid, exclusively borrowed
    // struct and reads nothing else.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if rc == 0 {
        Ok(limit)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn set_nofile(limit: &libc::rlimit) -> std::io::Result<()> {
    // SAFETY: setrlimit only reads the valid rlimit it is given.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, limit) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(test)]
fn current_limit() -> Option<u64> {
    nofile().ok().map(|l| l.rlim_cur)
}

fn os_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Raise the soft limit so `maxclients` clients fit beside `reserved`
/// descriptors, trying 16 fewer each time it is refused, as Redis does, and
/// return how many clients fit (`maxclients` when all do). A limit too low
/// for any client exits, as Redis does. The hard limit is only raised (when
/// the process may), never lowered.
pub fn adjust(maxclients: u64, reserved: u64) -> u64 {
    let want = maxclients.saturating_add(reserved);
    let limit = match nofile() {
        Ok(l) => l,
        Err(e) => {
            crate::warn!(
                "Unable to obtain the current NOFILE limit ({}), assuming 1024 and setting the max clients configuration accordingly.",
                os_text(&e)
            );
            return 1024u64.saturating_sub(reserved).max(1);
        }
    };
    let old: u64 = limit.rlim_cur;
    if old >= want {
        return maxclients;
    }
    let hard: u64 = limit.rlim_max;
    // The kernel refuses any limit above fs.nr_open, so start there rather
    // than stepping down from a figure no process can have (maxclients may
    // be 2^32 - 1).
    let ceiling = std::fs::read_to_string("/proc/sys/fs/nr_open")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or(1 << 20);
    let mut best = want.min(ceiling);
    let mut error = None;
    while best > old {
        let next = libc::rlimit {
            rlim_cur: best,
            rlim_max: best.max(hard),
        };
        match set_nofile(&next) {
            Ok(()) => break,
            Err(e) => {
                let denied = e.raw_os_error() == Some(libc::EPERM);
                error = Some(e);
                // Without the right to raise the hard limit, anything up to
                // it is allowed: go there at once instead of 16 at a time.
                if denied && best > hard {
                    best = hard;
                    continue;
                }
            }
        }
        if best < 16 {
            best = old;
            break;
        }
        best -= 16;
    }
    best = best.max(old);
    if best >= want {
        crate::info!(
            "Increased maximum number of open files to {want} (it was originally set to {old})."
        );
        return maxclients;
    }
    if best <= reserved {
        crate::warn!(
            "Your current 'ulimit -n' of {old} is not enough for the server to start. Please increase your open file limit to at least {want}. Exiting."
        );
        std::process::exit(1);
    }
    let fit = best - reserved;
    let reason = error.as_ref().map(os_text).unwrap_or_default();
    crate::warn!(
        "You requested maxclients of {maxclients} requiring at least {want} max file descriptors."
    );
    crate::warn!("Server can't set maximum open files to {want} because of OS error: {reason}.");
    crate::warn!(
        "Current maximum open files is {best}. maxclients has been reduced to {fit} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'."
    );
    fit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_is_redis_figure_for_few_threads() {
        assert_eq!(reserved_fds(1, 1), 32);
        assert_eq!(reserved_fds(2, 1), 32);
        assert!(reserved_fds(64, 2) > 4 * 64);
    }

    #[test]
    fn a_limit_already_high_enough_is_left_alone() {
        let before = current_limit().expect("getrlimit");
        assert_eq!(adjust(1, 1), 1);
        assert_eq!(current_limit(), Some(before));
    }
}
