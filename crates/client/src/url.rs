//! `redis://[user:pass@]host:port/db[?protocol=3]`, the form Redis clients accept.

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectInfo {
    pub host: String,
    pub port: u16,
    pub db: i64,
    pub user: Option<String>,
    pub password: Option<String>,
    pub resp3: bool,
}

impl ConnectInfo {
    pub fn addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

pub fn parse(url: &str) -> Result<ConnectInfo> {
    let bad = |why: &str| Error::Url(format!("{url}: {why}"));
    let rest = url
        .strip_prefix("redis://")
        .ok_or_else(|| bad("must start with redis://"))?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (auth, hostpart) = match rest.rsplit_once('@') {
        Some((a, h)) => (Some(a), h),
        None => (None, rest),
    };
    let (user, password) = match auth {
        None => (None, None),
        Some(a) => match a.split_once(':') {
            Some((u, p)) => ((!u.is_empty()).then(|| u.to_string()), Some(p.to_string())),
            None => (None, Some(a.to_string())),
        },
    };
    let (hostport, db) = match hostpart.split_once('/') {
        Some((hp, "")) => (hp, 0),
        Some((hp, d)) => (
            hp,
            d.parse::<i64>()
                .map_err(|_| bad("database must be a number"))?,
        ),
        None => (hostpart, 0),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) => (
            h,
            p.parse::<u16>().map_err(|_| bad("port must be a number"))?,
        ),
        None => (hostport, 6379),
    };
    if host.is_empty() {
        return Err(bad("missing host"));
    }
    let mut resp3 = false;
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        match kv.split_once('=') {
            Some(("protocol", "3")) => resp3 = true,
            Some(("protocol", "2")) => resp3 = false,
            _ => return Err(bad(&format!("unknown parameter '{kv}'"))),
        }
    }
    Ok(ConnectInfo {
        host: host.to_string(),
        port,
        db,
        user,
        password,
        resp3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let c = parse("redis://127.0.0.1:7000").unwrap();
        assert_eq!(
            (c.host.as_str(), c.port, c.db, c.resp3),
            ("127.0.0.1", 7000, 0, false)
        );
        let c = parse("redis://u:p@h:1/3?protocol=3").unwrap();
        assert_eq!(c.user.as_deref(), Some("u"));
        assert_eq!(c.password.as_deref(), Some("p"));
        assert_eq!((c.db, c.resp3), (3, true));
        let c = parse("redis://:secret@h").unwrap();
        assert_eq!(
            (c.user, c.password.as_deref(), c.port),
            (None, Some("secret"), 6379)
        );
        assert!(parse("http://h").is_err());
        assert!(parse("redis://h:x").is_err());
        assert!(parse("redis://h/1?foo=bar").is_err());
    }
}
