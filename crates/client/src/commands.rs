//! Typed methods for the commands Keel serves, each a thin shape over `cmd`.

use crate::client::Client;
use crate::error::{Error, Result};
use bytes::Bytes;
use keel_resp::Frame;

fn unexpected(f: &Frame) -> Error {
    Error::UnexpectedReply(format!("{f:?}"))
}

fn bulk_opt(f: Frame) -> Result<Option<Bytes>> {
    match f {
        Frame::Bulk(b) | Frame::Simple(b) | Frame::Verbatim(_, b) => Ok(Some(b)),
        Frame::Null | Frame::NullArray => Ok(None),
        other => Err(unexpected(&other)),
    }
}

fn int(f: Frame) -> Result<i64> {
    match f {
        Frame::Integer(n) => Ok(n),
        Frame::Boolean(b) => Ok(i64::from(b)),
        other => Err(unexpected(&other)),
    }
}

fn ok(f: Frame) -> Result<()> {
    match f {
        Frame::Simple(s) if &s[..] == b"OK" => Ok(()),
        other => Err(unexpected(&other)),
    }
}

impl Client {
    pub async fn ping(&self) -> Result<()> {
        match self.cmd(&["PING"]).await? {
            Frame::Simple(s) if &s[..] == b"PONG" => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn get(&self, key: impl AsRef<[u8]>) -> Result<Option<Bytes>> {
        bulk_opt(self.cmd(&[b"GET".as_slice(), key.as_ref()]).await?)
    }

    pub async fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) -> Result<()> {
        ok(self
            .cmd(&[b"SET".as_slice(), key.as_ref(), value.as_ref()])
            .await?)
    }

    /// SET with an expiry in milliseconds.
    pub async fn set_px(
        &self,
        key: impl AsRef<[u8]>,
        value: impl AsRef<[u8]>,
        ms: u64,
    ) -> Result<()> {
        let ms = ms.to_string();
        ok(self
            .cmd(&[
                b"SET".as_slice(),
                key.as_ref(),
                value.as_ref(),
                b"PX",
                ms.as_bytes(),
            ])
            .await?)
    }

    pub async fn del(&self, keys: &[&[u8]]) -> Result<i64> {
        let mut args: Vec<&[u8]> = vec![b"DEL"];
        args.extend_from_slice(keys);
        int(self.cmd(&args).await?)
    }

    pub async fn exists(&self, keys: &[&[u8]]) -> Result<i64> {
        let mut args: Vec<&[u8]> = vec![b"EXISTS"];
        args.extend_from_slice(keys);
        int(self.cmd(&args).await?)
    }

    pub async fn incr(&self, key: impl AsRef<[u8]>) -> Result<i64> {
        int(self.cmd(&[b"INCR".as_slice(), key.as_ref()]).await?)
    }

    pub async fn incr_by(&self, key: impl AsRef<[u8]>, by: i64) -> Result<i64> {
        let by = by.to_string();
        int(self
            .cmd(&[b"INCRBY".as_slice(), key.as_ref(), by.as_bytes()])
            .await?)
    }

    pub async fn mget(&self, keys: &[&[u8]]) -> Result<Vec<Option<Bytes>>> {
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend_from_slice(keys);
        match self.cmd(&args).await? {
            Frame::Array(items) => items.into_iter().map(bulk_opt).collect(),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn mset(&self, pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let mut args: Vec<&[u8]> = vec![b"MSET"];
        for (k, v) in pairs {
            args.push(k);
            args.push(v);
        }
        ok(self.cmd(&args).await?)
    }

    /// EXPIRE in seconds; whether the key existed.
    pub async fn expire(&self, key: impl AsRef<[u8]>, seconds: i64) -> Result<bool> {
        let s = seconds.to_string();
        Ok(int(self
            .cmd(&[b"EXPIRE".as_slice(), key.as_ref(), s.as_bytes()])
            .await?)?
            == 1)
    }

    /// TTL in seconds: -2 for a missing key, -1 for no expiry.
    pub async fn ttl(&self, key: impl AsRef<[u8]>) -> Result<i64> {
        int(self.cmd(&[b"TTL".as_slice(), key.as_ref()]).await?)
    }

    pub async fn dbsize(&self) -> Result<i64> {
        int(self.cmd(&["DBSIZE"]).await?)
    }

    pub async fn flushall(&self) -> Result<()> {
        ok(self.cmd(&["FLUSHALL"]).await?)
    }
}

fn array_of_bulks(f: Frame) -> Result<Vec<Bytes>> {
    match f {
        Frame::Array(items) | Frame::Set(items) => items
            .into_iter()
            .map(|i| {
                bulk_opt(i)?.ok_or_else(|| Error::UnexpectedReply("nil inside an array".into()))
            })
            .collect(),
        other => Err(unexpected(&other)),
    }
}

fn pairs(f: Frame) -> Result<Vec<(Bytes, Bytes)>> {
    match f {
        Frame::Map(kv) => kv
            .into_iter()
            .map(|(k, v)| {
                let k = bulk_opt(k)?.ok_or_else(|| Error::UnexpectedReply("nil key".into()))?;
                let v = bulk_opt(v)?.ok_or_else(|| Error::UnexpectedReply("nil value".into()))?;
                Ok((k, v))
            })
            .collect(),
        other => {
            let flat = array_of_bulks(other)?;
            let mut it = flat.into_iter();
            let mut out = Vec::new();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                out.push((k, v));
            }
            Ok(out)
        }
    }
}

fn float(f: Frame) -> Result<Option<f64>> {
    match f {
        Frame::Double(d) => Ok(Some(d)),
        Frame::Null => Ok(None),
        Frame::Bulk(b) => std::str::from_utf8(&b)
            .ok()
            .and_then(|s| match s {
                "inf" => Some(f64::INFINITY),
                "-inf" => Some(f64::NEG_INFINITY),
                _ => s.parse().ok(),
            })
            .map(Some)
            .ok_or_else(|| Error::UnexpectedReply(format!("not a float: {b:?}"))),
        other => Err(unexpected(&other)),
    }
}

/// `[name, key, a, b, ...]` as argument slices.
fn with_key<'a>(name: &'a [u8], key: &'a [u8], rest: &[&'a [u8]]) -> Vec<&'a [u8]> {
    let mut args = Vec::with_capacity(rest.len() + 2);
    args.push(name);
    args.push(key);
    args.extend_from_slice(rest);
    args
}

/// Hashes, sets, lists, sorted sets and Bloom filters.
impl Client {
    pub async fn hset(&self, key: &[u8], fields: &[(&[u8], &[u8])]) -> Result<i64> {
        let mut args: Vec<&[u8]> = vec![b"HSET", key];
        for (f, v) in fields {
            args.push(f);
            args.push(v);
        }
        int(self.cmd(&args).await?)
    }

    pub async fn hget(&self, key: &[u8], field: &[u8]) -> Result<Option<Bytes>> {
        bulk_opt(self.cmd(&[b"HGET".as_slice(), key, field]).await?)
    }

    pub async fn hgetall(&self, key: &[u8]) -> Result<Vec<(Bytes, Bytes)>> {
        pairs(self.cmd(&[b"HGETALL".as_slice(), key]).await?)
    }

    pub async fn hdel(&self, key: &[u8], fields: &[&[u8]]) -> Result<i64> {
        int(self.cmd(&with_key(b"HDEL", key, fields)).await?)
    }

    pub async fn sadd(&self, key: &[u8], members: &[&[u8]]) -> Result<i64> {
        int(self.cmd(&with_key(b"SADD", key, members)).await?)
    }

    pub async fn srem(&self, key: &[u8], members: &[&[u8]]) -> Result<i64> {
        int(self.cmd(&with_key(b"SREM", key, members)).await?)
    }

    pub async fn sismember(&self, key: &[u8], member: &[u8]) -> Result<bool> {
        Ok(int(self.cmd(&[b"SISMEMBER".as_slice(), key, member]).await?)? == 1)
    }

    pub async fn smembers(&self, key: &[u8]) -> Result<Vec<Bytes>> {
        array_of_bulks(self.cmd(&[b"SMEMBERS".as_slice(), key]).await?)
    }

    pub async fn lpush(&self, key: &[u8], values: &[&[u8]]) -> Result<i64> {
        int(self.cmd(&with_key(b"LPUSH", key, values)).await?)
    }

    pub async fn rpush(&self, key: &[u8], values: &[&[u8]]) -> Result<i64> {
        int(self.cmd(&with_key(b"RPUSH", key, values)).await?)
    }

    pub async fn lpop(&self, key: &[u8]) -> Result<Option<Bytes>> {
        bulk_opt(self.cmd(&[b"LPOP".as_slice(), key]).await?)
    }

    pub async fn rpop(&self, key: &[u8]) -> Result<Option<Bytes>> {
        bulk_opt(self.cmd(&[b"RPOP".as_slice(), key]).await?)
    }

    pub async fn llen(&self, key: &[u8]) -> Result<i64> {
        int(self.cmd(&[b"LLEN".as_slice(), key]).await?)
    }

    pub async fn lrange(&self, key: &[u8], start: i64, stop: i64) -> Result<Vec<Bytes>> {
        let (a, b) = (start.to_string(), stop.to_string());
        array_of_bulks(
            self.cmd(&[b"LRANGE".as_slice(), key, a.as_bytes(), b.as_bytes()])
                .await?,
        )
    }

    pub async fn zadd(&self, key: &[u8], members: &[(f64, &[u8])]) -> Result<i64> {
        let scores: Vec<String> = members.iter().map(|(s, _)| s.to_string()).collect();
        let mut args: Vec<&[u8]> = vec![b"ZADD", key];
        for ((_, m), s) in members.iter().zip(&scores) {
            args.push(s.as_bytes());
            args.push(m);
        }
        int(self.cmd(&args).await?)
    }

    pub async fn zscore(&self, key: &[u8], member: &[u8]) -> Result<Option<f64>> {
        float(self.cmd(&[b"ZSCORE".as_slice(), key, member]).await?)
    }

    pub async fn zrem(&self, key: &[u8], members: &[&[u8]]) -> Result<i64> {
        int(self.cmd(&with_key(b"ZREM", key, members)).await?)
    }

    /// Members by rank, lowest score first.
    pub async fn zrange(&self, key: &[u8], start: i64, stop: i64) -> Result<Vec<Bytes>> {
        let (a, b) = (start.to_string(), stop.to_string());
        array_of_bulks(
            self.cmd(&[b"ZRANGE".as_slice(), key, a.as_bytes(), b.as_bytes()])
                .await?,
        )
    }

    pub async fn bf_reserve(&self, key: &[u8], error_rate: f64, capacity: u64) -> Result<()> {
        let (e, c) = (error_rate.to_string(), capacity.to_string());
        ok(self
            .cmd(&[b"BF.RESERVE".as_slice(), key, e.as_bytes(), c.as_bytes()])
            .await?)
    }

    /// Whether the item was newly added.
    pub async fn bf_add(&self, key: &[u8], item: &[u8]) -> Result<bool> {
        Ok(int(self.cmd(&[b"BF.ADD".as_slice(), key, item]).await?)? == 1)
    }

    pub async fn bf_exists(&self, key: &[u8], item: &[u8]) -> Result<bool> {
        Ok(int(self.cmd(&[b"BF.EXISTS".as_slice(), key, item]).await?)? == 1)
    }

    pub async fn bf_madd(&self, key: &[u8], items: &[&[u8]]) -> Result<Vec<bool>> {
        match self.cmd(&with_key(b"BF.MADD", key, items)).await? {
            Frame::Array(items) => items.into_iter().map(|i| Ok(int(i)? == 1)).collect(),
            other => Err(unexpected(&other)),
        }
    }

    pub async fn bf_mexists(&self, key: &[u8], items: &[&[u8]]) -> Result<Vec<bool>> {
        match self.cmd(&with_key(b"BF.MEXISTS", key, items)).await? {
            Frame::Array(items) => items.into_iter().map(|i| Ok(int(i)? == 1)).collect(),
            other => Err(unexpected(&other)),
        }
    }
}
