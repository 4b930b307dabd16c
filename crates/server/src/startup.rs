//! Reading the configuration at start-up: an optional redis.conf-style file
//! followed by `--name value ...` options, each the same directive as a file line.

use keel_engine::config::{Config, ConfigError};

/// Where a directive came from, for error messages.
pub struct Origin {
    pub file: String,
    pub line: usize,
    pub text: String,
}

pub struct StartupError {
    pub origin: Origin,
    pub message: String,
}

impl std::fmt::Display for StartupError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "\n*** FATAL CONFIG FILE ERROR (Keel {}) ***\nReading the configuration file {}, at line {}\n>>> '{}'\n{}",
            env!("CARGO_PKG_VERSION"),
            self.origin.file,
            self.origin.line,
            self.origin.text,
            self.message
        )
    }
}

/// Split command-line options into directive lines: `--port 7000 --save 60 1`
/// becomes `port 7000` and `save 60 1`.
pub fn args_to_lines(args: &[String]) -> Result<Vec<String>, String> {
    let mut lines: Vec<Vec<String>> = Vec::new();
    for a in args {
        if let Some(name) = a.strip_prefix("--") {
            lines.push(vec![name.to_string()]);
        } else if let Some(cur) = lines.last_mut() {
            let quoted = if a.is_empty() || a.contains(char::is_whitespace) || a.contains('"') {
                format!("\"{}\"", a.replace('\\', "\\\\").replace('"', "\\\""))
            } else {
                a.clone()
            };
            cur.push(quoted);
        } else {
            return Err(format!(
                "unexpected argument '{a}' (options are written --name value)"
            ));
        }
    }
    Ok(lines.into_iter().map(|l| l.join(" ")).collect())
}

/// How deep `include` may nest (a file that includes itself stops here).
const MAX_INCLUDE_DEPTH: usize = 16;

/// Reads directive lines into a configuration: the file, the files it
/// includes, then the command line. Every line is tried, so all the errors
/// are reported at once.
pub struct Loader<'c> {
    config: &'c Config,
    /// Redis adds `save` lines up until an `include` has been read; from then
    /// on each `save` line replaces the points before it.
    after_include: bool,
    /// A save line was read (the first one replaces the default points).
    saw_save: bool,
    /// Where the last `save` line stood, to name it if points are refused.
    errors: Vec<StartupError>,
}

impl<'c> Loader<'c> {
    pub fn new(config: &'c Config) -> Self {
        Loader {
            config,
            after_include: false,
            saw_save: false,
            errors: Vec::new(),
        }
    }

    /// Apply the lines of `text`, read from `file`.
    pub fn apply(&mut self, file: &str, text: &str) {
        self.apply_text(file, text, 0);
    }

    /// Every error found, in the order of the lines.
    pub fn finish(self) -> Result<(), Vec<StartupError>> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(self.errors)
        }
    }

    fn apply_text(&mut self, file: &str, text: &str, depth: usize) {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fail = |message: String| StartupError {
                origin: Origin {
                    file: file.to_string(),
                    line: i + 1,
                    text: line.to_string(),
                },
                message,
            };
            let Some(words) = keel_engine::config::line_words(line.as_bytes()) else {
                self.errors
                    .push(fail("Unbalanced quotes in configuration line".into()));
                continue;
            };
            let Some((name, values)) = words.split_first() else {
                continue;
            };
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            if name.eq_ignore_ascii_case("include") {
                if let Err(e) = self.include(&values, depth) {
                    self.errors.push(fail(e));
                }
                continue;
            }
            // As in Redis, the first save line replaces the default points;
            // later ones add to it (until an include has been read).
            let add_up =
                !self.after_include && (self.saw_save || !name.eq_ignore_ascii_case("save"));
            if name.eq_ignore_ascii_case("save") {
                self.saw_save = true;
            }
            if let Err(e) = self.config.apply_line(name, &values, add_up) {
                self.errors.push(fail(match e {
                    ConfigError::Unknown => "Bad directive or wrong number of arguments".into(),
                    // Keel's own refusal names the line it refuses, so that the
                    // last line of the report says what to change.
                    ConfigError::NotAvailable(feature) => format!(
                        "'{line}' needs {feature}, which is not available in this build of Keel"
                    ),
                    other => other.to_string(),
                }));
            }
        }
    }

    /// `include path`: the file's lines, applied where the include stands. A
    /// relative path is relative to the working directory, as in Redis.
    fn include(&mut self, values: &[&str], depth: usize) -> Result<(), String> {
        let [path] = values else {
            return Err("wrong number of arguments".into());
        };
        if depth >= MAX_INCLUDE_DEPTH {
            return Err(format!(
                "include nested more than {MAX_INCLUDE_DEPTH} deep: '{path}'"
            ));
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("Can't open config file '{path}': {}", os_text(&e)))?;
        self.apply_text(path, &text, depth + 1);
        self.after_include = true;
        Ok(())
    }
}

/// Apply the lines of one text to `config` (a file, or options alone).
#[cfg(test)]
pub fn apply(config: &Config, file: &str, text: &str) -> Result<(), Vec<StartupError>> {
    let mut loader = Loader::new(config);
    loader.apply(file, text);
    loader.finish()
}

/// An I/O error as the C library words it, without Rust's "(os error N)".
pub fn os_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Log, once each, the recorded no-op directives set to something other than
/// their default: they are accepted so that a redis.conf loads, but change
/// nothing in Keel.
pub fn log_noops(config: &Config) {
    for (name, value) in config.noops_changed() {
        crate::info!(
            "Note: '{name} {value}' is accepted for compatibility and has no effect in Keel"
        );
    }
}

/// `daemonize yes`: fork, let the parent exit, detach from the terminal, and
/// point stdin, stdout and stderr at /dev/null (logs go to `logfile`, or
/// nowhere, as in Redis). Must run before any thread starts.
#[allow(unsafe_code)]
pub fn daemonize() -> std::io::Result<()> {
    // SAFETY: called from main before any other thread exists, so the child
    // is a complete copy of a single-threaded process; fork has no other
    // preconditions.
    match unsafe { libc::fork() } {
        -1 => return Err(std::io::Error::last_os_error()),
        0 => {}
        _ => std::process::exit(0),
    }
    // SAFETY: setsid takes no arguments and only fails (harmlessly) when the
    // caller already leads a process group.
    unsafe { libc::setsid() };
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    use std::os::fd::AsRawFd;
    for fd in 0..3 {
        // SAFETY: both descriptors are open (null lives until the end of this
        // function); dup2 replaces fd atomically.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
    Ok(())
}

/// The pid file Redis writes when daemonized without a `pidfile`.
pub const DEFAULT_DAEMON_PIDFILE: &str = "/var/run/redis.pid";

/// Write the pid file. One that cannot be written is a warning, not a reason
/// to stop (Debian's stock file names a directory that may not exist).
pub fn write_pidfile(path: &str) {
    if path.is_empty() {
        return;
    }
    if let Err(e) = std::fs::write(path, format!("{}\n", std::process::id())) {
        crate::warn!("Failed to write PID file: {}", os_text(&e));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_become_lines() {
        let args: Vec<String> = [
            "--port",
            "7000",
            "--save",
            "60",
            "1",
            "--requirepass",
            "a b",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            args_to_lines(&args).unwrap(),
            vec!["port 7000", "save 60 1", "requirepass \"a b\""]
        );
    }

    #[test]
    fn errors_name_file_line_and_directive() {
        let c = Config::default();
        assert!(apply(&c, "k.conf", "# comment\nport 7001\n\nbind 127.0.0.1\n").is_ok());
        assert_eq!(c.get("port"), "7001");
        let e = apply(&c, "k.conf", "port 7001\nfrobnicate yes\n")
            .err()
            .unwrap();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].origin.line, 2);
        assert!(e[0].to_string().contains("k.conf"));
        assert!(e[0].to_string().contains("frobnicate"));
        let e = apply(&c, "k.conf", "port abc\n").err().unwrap();
        assert_eq!(e[0].origin.text, "port abc");
        assert_eq!(e[0].message, "argument couldn't be parsed into an integer");
        let e = apply(&c, "k.conf", "requirepass \"abc\n").err().unwrap();
        assert_eq!(e[0].origin.line, 1);
    }

    #[test]
    fn every_error_of_a_file_is_reported_in_one_pass() {
        let c = Config::default();
        let text = "frobnicate yes\nhz 1 2\nport 7002\nactivedefrag yes\nappendonly maybe\n";
        let e = apply(&c, "k.conf", text).err().unwrap();
        let got: Vec<(usize, &str)> = e
            .iter()
            .map(|e| (e.origin.line, e.message.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "Bad directive or wrong number of arguments"),
                (2, "wrong number of arguments"),
                (
                    4,
                    "'activedefrag yes' needs active defragmentation, which is not \
                     available in this build of Keel"
                ),
                (5, "argument must be 'yes' or 'no'"),
            ]
        );
        // The good lines between them were applied.
        assert_eq!(c.get("port"), "7002");
    }

    #[test]
    fn include_save_lines_and_output_limits() {
        let dir = std::env::temp_dir().join(format!("keel-startup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let inner = dir.join("inner.conf");
        std::fs::write(&inner, "save 300 10\nbogus-name 1\n").unwrap();
        let inner = inner.to_string_lossy().into_owned();
        let c = Config::default();
        let text = format!(
            "save 3600 1\ninclude {inner}\nsave 60 10000\n\
             client-output-buffer-limit normal 0 0 0\n\
             client-output-buffer-limit replica 256mb 64mb 60\n\
             include /nonexistent/keel.conf\n"
        );
        let e = apply(&c, "outer.conf", &text).err().unwrap();
        assert_eq!(
            e.len(),
            2,
            "{:?}",
            e.iter().map(|e| e.to_string()).collect::<Vec<_>>()
        );
        assert_eq!(
            (e[0].origin.file.as_str(), e[0].origin.line),
            (inner.as_str(), 2)
        );
        assert_eq!(e[1].origin.line, 6);
        assert!(
            e[1].message.contains("Can't open config file"),
            "{}",
            e[1].message
        );
        // The first save line replaces the default points, the include's add
        // up with it, and after the include a line replaces them (Redis 7.0).
        assert_eq!(c.get("save"), "60 10000");
        assert_eq!(
            c.get("client-output-buffer-limit"),
            keel_engine::config::COBL_DEFAULT
        );
        let c = Config::default();
        assert!(apply(&c, "k", "save \"\"\nsave 10 1\n").is_ok());
        assert_eq!(c.get("save"), "10 1");
        let c = Config::default();
        assert!(apply(&c, "k", "save 10 1\nsave \"\"\n").is_ok());
        assert_eq!(c.get("save"), "");
        let c = Config::default();
        assert!(apply(&c, "k", "save 3600 1\nsave 300 100\n").is_ok());
        assert_eq!(c.get("save"), "3600 1 300 100");
        let c = Config::default();
        let text = format!("save 3600 1\ninclude {inner}\n");
        assert!(apply(&c, "k", &text).is_err());
        assert_eq!(c.get("save"), "3600 1 300 10");
        // After an include, each save line replaces the points before it (Redis 7.0).
        let c = Config::default();
        let text = format!("save 3600 1\ninclude {inner}\nsave 10 1\nsave 20 2\n");
        assert!(apply(&c, "k", &text).is_err());
        assert_eq!(c.get("save"), "20 2");
        // An include of itself stops at the depth limit instead of recursing forever.
        let selfie = dir.join("self.conf");
        let selfie_s = selfie.to_string_lossy().into_owned();
        std::fs::write(&selfie, format!("include {selfie_s}\n")).unwrap();
        let e = apply(&Config::default(), "k", &format!("include {selfie_s}\n"))
            .err()
            .unwrap();
        assert!(e.iter().any(|e| e.message.contains("nested")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
