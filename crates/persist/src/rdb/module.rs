//! Reading a module value's data: the opcode-tagged fields (`uint`, `double`, `string`, end)
//! that Redis's module API writes after the module id. Shared by every module type Keel loads
//! (RedisBloom's Bloom filters, redis-roaring's bitmaps, Keel's bitmap index); each names its
//! own error through `err`, so a damaged value is reported under its type.
//!
//! Nothing is sized from a claimed length: strings are taken from the bytes present, and an
//! LZF string's claimed output is refused beyond what its input could expand to.

use super::convert_error::ConvertError;
use crate::lzf;

pub(crate) const MOD_EOF: u64 = 0;
pub(crate) const MOD_UINT: u64 = 2;
pub(crate) const MOD_DOUBLE: u64 = 4;
pub(crate) const MOD_STRING: u64 = 5;

/// A cursor over a module value's bytes.
pub(crate) struct ModReader<'a> {
    buf: &'a [u8],
    pub(crate) pos: usize,
    err: fn(&'static str) -> ConvertError,
}

impl<'a> ModReader<'a> {
    pub(crate) fn new(buf: &'a [u8], err: fn(&'static str) -> ConvertError) -> ModReader<'a> {
        ModReader { buf, pos: 0, err }
    }

    fn bad(&self) -> ConvertError {
        (self.err)("truncated or malformed module data")
    }

    pub(crate) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ConvertError> {
        let end = self.pos.checked_add(n).ok_or_else(|| self.bad())?;
        let s = self.buf.get(self.pos..end).ok_or_else(|| self.bad())?;
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8, ConvertError> {
        Ok(self.take(1)?[0])
    }

    fn fixed<const N: usize>(&mut self) -> Result<[u8; N], ConvertError> {
        self.take(N)?.try_into().map_err(|_| self.bad())
    }

    /// A length, or the special-encoding number when the top bits are `11`.
    fn len(&mut self) -> Result<(u64, bool), ConvertError> {
        let b = self.byte()?;
        Ok(match (b >> 6, b) {
            (0, _) => (u64::from(b & 0x3f), false),
            (1, _) => ((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?), false),
            (2, 0x80) => (u64::from(u32::from_be_bytes(self.fixed()?)), false),
            (2, 0x81) => (u64::from_be_bytes(self.fixed()?), false),
            (2, _) => return Err(self.bad()),
            _ => (u64::from(b & 0x3f), true),
        })
    }

    pub(crate) fn plain_len(&mut self) -> Result<u64, ConvertError> {
        match self.len()? {
            (n, false) => Ok(n),
            _ => Err(self.bad()),
        }
    }

    /// The next opcode, which must be `want`.
    pub(crate) fn opcode(&mut self, want: u64) -> Result<(), ConvertError> {
        if self.plain_len()? == want {
            Ok(())
        } else {
            Err((self.err)("unexpected field type"))
        }
    }

    pub(crate) fn uint(&mut self) -> Result<u64, ConvertError> {
        self.opcode(MOD_UINT)?;
        self.plain_len()
    }

    pub(crate) fn double(&mut self) -> Result<f64, ConvertError> {
        self.opcode(MOD_DOUBLE)?;
        Ok(f64::from_le_bytes(self.fixed()?))
    }

    pub(crate) fn string(&mut self) -> Result<Vec<u8>, ConvertError> {
        self.opcode(MOD_STRING)?;
        let size = |r: &Self, n: u64| usize::try_from(n).map_err(|_| r.bad());
        match self.len()? {
            (n, false) => Ok(self.take(size(self, n)?)?.to_vec()),
            (0, true) => Ok((self.byte()? as i8).to_string().into_bytes()),
            (1, true) => Ok(i16::from_le_bytes(self.fixed()?).to_string().into_bytes()),
            (2, true) => Ok(i32::from_le_bytes(self.fixed()?).to_string().into_bytes()),
            (3, true) => {
                let clen = self.plain_len()?;
                let clen = size(self, clen)?;
                let ulen = self.plain_len()?;
                let ulen = size(self, ulen)?;
                let data = self.take(clen)?;
                // LZF expands at most about 264 times: refuse a larger claim before
                // allocating the output.
                if ulen / 264 > clen + 1 {
                    return Err(self.bad());
                }
                lzf::decompress(data, ulen).map_err(|_| self.bad())
            }
            _ => Err(self.bad()),
        }
    }
}
