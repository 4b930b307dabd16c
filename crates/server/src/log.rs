//! Log lines in Redis's layout (`pid:role dd Mon yyyy hh:mm:ss.mmm * msg`), on
//! stdout or appended to `logfile`.

use std::io::Write;
use std::sync::OnceLock;

/// The `logfile` in use; unset or empty for stdout.
static LOGFILE: OnceLock<String> = OnceLock::new();

/// Send log lines to `path` from now on ("" keeps stdout). Like Redis, the file
/// is opened for each line, so a rotated log is recreated by the next line.
/// Fails when the file cannot be opened for appending.
pub fn set_logfile(path: &str) -> std::io::Result<()> {
    if !path.is_empty() {
        open_logfile(path)?;
    }
    let _ = LOGFILE.set(path.to_string());
    Ok(())
}

pub fn open_logfile(path: &str) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn civil(days: i64) -> (i64, usize, i64) {
    // Days since 1970-01-01 to (year, month index, day), Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, (m - 1) as usize, d)
}

pub fn log(level: char, msg: &str) {
    if !keel_engine::config::log_enabled(level) {
        return;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ms = now.as_millis() as i64;
    let secs = ms / 1000;
    let (y, m, d) = civil(secs.div_euclid(86_400));
    let tod = secs.rem_euclid(86_400);
    let line = format!(
        "{}:M {:02} {} {} {:02}:{:02}:{:02}.{:03} {} {}\n",
        std::process::id(),
        d,
        MONTHS[m],
        y,
        tod / 3600,
        tod % 3600 / 60,
        tod % 60,
        ms % 1000,
        level,
        msg
    );
    match LOGFILE.get().filter(|p| !p.is_empty()) {
        Some(path) => {
            if let Ok(mut f) = open_logfile(path) {
                let _ = f.write_all(line.as_bytes());
            }
        }
        None => {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(line.as_bytes());
            let _ = out.flush();
        }
    }
}

#[macro_export]
macro_rules! info {
    ($($t:tt)*) => { $crate::log::log('*', &format!($($t)*)) };
}

#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => { $crate::log::log('#', &format!($($t)*)) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn civil_dates() {
        assert_eq!(super::civil(0), (1970, 0, 1));
        assert_eq!(super::civil(19_723), (2024, 0, 1));
        assert_eq!(super::civil(20_513), (2026, 2, 1));
    }
}
