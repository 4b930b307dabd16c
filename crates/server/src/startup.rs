//! Reading the configuration at start-up: an optional redis.conf-style file
//! followed by `--name value ...` options, each the same directive as a file line.

use keel_engine::config::Config;

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

/// Apply directive lines from `file` to `config`, stopping at the first error.
pub fn apply(config: &Config, file: &str, text: &str) -> Result<(), StartupError> {
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let origin = || Origin {
            file: file.to_string(),
            line: i + 1,
            text: line.to_string(),
        };
        let words = keel_resp::split_args(line.as_bytes()).ok_or_else(|| StartupError {
            origin: origin(),
            message: "Unbalanced quotes in configuration line".into(),
        })?;
        let words: Vec<String> = words
            .iter()
            .map(|w| String::from_utf8_lossy(w).into_owned())
            .collect();
        let Some((name, values)) = words.split_first() else {
            continue;
        };
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        config.set(name, &values, true).map_err(|e| StartupError {
            origin: origin(),
            message: match e {
                keel_engine::config::ConfigError::Unknown => {
                    format!("Bad directive or wrong number of arguments: '{name}'")
                }
                other => format!("Invalid argument for directive '{name}': {other}"),
            },
        })?;
    }
    Ok(())
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
        assert_eq!(e.origin.line, 2);
        assert!(e.to_string().contains("k.conf"));
        assert!(e.to_string().contains("frobnicate"));
        let e = apply(&c, "k.conf", "port abc\n").err().unwrap();
        assert!(e.message.contains("port"));
        let e = apply(&c, "k.conf", "requirepass \"abc\n").err().unwrap();
        assert_eq!(e.origin.line, 1);
    }
}
