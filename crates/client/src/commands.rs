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
