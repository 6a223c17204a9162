//! A bounds-checked msgpack cursor over a byte slice, a one-pass "skip and check canonical"
//! scan, and the canonical re-encoder the txid rule needs.
//!
//! Markers are classified by [`rmp::Marker`]; values are written with `rmp::encode` into an
//! [`rmp::encode::ByteBuf`] (whose writes cannot fail). Nothing here panics on input: every read
//! is bounds-checked, nesting is limited to [`MAX_DEPTH`], and no allocation is sized from an
//! untrusted length before that length is checked against the bytes that remain.
//!
//! "Canonical" is go-algorand's msgpack form (its `msgp` fork with `omitempty` everywhere and
//! sorted fields; see `protocol.Encode`): map keys in increasing order (strings bytewise,
//! unsigned integers numerically), empty values left out of maps (nil, false, 0, empty str, bin,
//! array and map), non-negative integers as the smallest unsigned form, negative ones as the
//! smallest signed form, str and bin with the smallest length header, str kept as str and bin as
//! bin, str bytes kept as they are (Go strings need not be UTF-8).

use std::cmp::Ordering;
use std::collections::BTreeSet;

use rmp::Marker;
use rmp::encode::ByteBuf;

/// Deepest nesting of arrays and maps accepted (the whole input counts from depth 0). Real blocks
/// nest about ten deep (state proof transactions are the deepest); 64 leaves room and keeps the
/// recursive walkers' stack use small.
pub(crate) const MAX_DEPTH: usize = 64;

/// What went wrong at the msgpack level, before any field is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RawErrorKind {
    /// The input ends inside a value.
    Truncated,
    /// Byte 0xc1, which msgpack never uses.
    ReservedMarker,
    /// Nesting deeper than [`MAX_DEPTH`].
    TooDeep,
    /// The same key twice in a map that is being re-encoded.
    DuplicateKey,
    /// A map key that is an array or a map (or nil), which no Algorand structure has.
    BadKey,
}

/// A msgpack-level error at a byte offset into the whole input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawError {
    pub(crate) offset: usize,
    pub(crate) kind: RawErrorKind,
}

/// One msgpack token: a scalar, or the header of an array or a map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Token<'a> {
    Nil,
    Bool(bool),
    /// A non-negative integer, whatever marker held it.
    Uint(u64),
    /// A negative integer.
    Neg(i64),
    F32(u32),
    F64(u64),
    Str(&'a [u8]),
    Bin(&'a [u8]),
    Array(u32),
    Map(u32),
    Ext(i8, &'a [u8]),
}

/// What a scan learned about the value it skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scan {
    /// The value's bytes are already canonical.
    pub(crate) canonical: bool,
    /// The value is empty in the `omitempty` sense (a map leaves it out).
    pub(crate) empty: bool,
}

impl Scan {
    /// What [`Reader::scan`] reports of a scalar `token` whose header was `minimal`.
    #[inline]
    pub(crate) fn of_scalar(token: Token<'_>, minimal: bool) -> Self {
        let empty = match token {
            Token::Nil => true,
            Token::Bool(b) => !b,
            Token::Uint(v) => v == 0,
            Token::Str(s) | Token::Bin(s) => s.is_empty(),
            Token::Array(n) | Token::Map(n) => n == 0,
            Token::Neg(_) | Token::F32(_) | Token::F64(_) | Token::Ext(..) => false,
        };
        Self {
            canonical: minimal,
            empty,
        }
    }
}

/// Sort key of a map key: how canonical maps order their keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum KeyOrd<'a> {
    Neg(i64),
    Uint(u64),
    Bytes(&'a [u8]),
    /// Bool, float or ext keys: kept in input order, never canonical.
    Other,
}

/// A cursor over `buf[pos..end]`; offsets in errors are offsets into `buf`.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    /// A reader over all of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Self {
            buf,
            pos: 0,
            end: buf.len(),
        }
    }

    /// A reader over `buf[start..end]` (a span an earlier scan returned), offsets still into `buf`.
    pub(crate) fn span(buf: &'a [u8], start: usize, end: usize) -> Self {
        let end = end.min(buf.len());
        Self {
            buf,
            pos: start.min(end),
            end,
        }
    }

    /// This reader's window, from `pos` (at most the window's end).
    #[cfg(feature = "parallel")]
    pub(crate) fn at(&self, pos: usize) -> Self {
        Self {
            buf: self.buf,
            pos: pos.min(self.end),
            end: self.end,
        }
    }

    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.end
    }

    /// The whole input this reader is a window of.
    pub(crate) fn input(&self) -> &'a [u8] {
        self.buf
    }

    #[inline]
    fn err(&self, kind: RawErrorKind) -> RawError {
        RawError {
            offset: self.pos,
            kind,
        }
    }

    /// Bytes left before the end of the window.
    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.end - self.pos
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8], RawError> {
        if n > self.remaining() {
            return Err(self.err(RawErrorKind::Truncated));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn be<const N: usize>(&mut self) -> Result<[u8; N], RawError> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }

    #[inline]
    fn len8(&mut self) -> Result<usize, RawError> {
        Ok(usize::from(self.be::<1>()?[0]))
    }
    #[inline]
    fn len16(&mut self) -> Result<usize, RawError> {
        Ok(usize::from(u16::from_be_bytes(self.be()?)))
    }
    #[inline]
    fn len32(&mut self) -> Result<usize, RawError> {
        usize::try_from(u32::from_be_bytes(self.be()?))
            .map_err(|_| self.err(RawErrorKind::Truncated))
    }

    /// Checks that `n` container items (each at least `min_item` bytes) can still follow.
    #[inline]
    fn check_items(&self, n: usize, min_item: usize) -> Result<u32, RawError> {
        if n.saturating_mul(min_item) > self.remaining() {
            return Err(self.err(RawErrorKind::Truncated));
        }
        // n <= remaining <= usize and n came from a u32 header.
        u32::try_from(n).map_err(|_| self.err(RawErrorKind::Truncated))
    }

    /// Reads one token; the flag says whether its header (marker and length bytes) is the smallest
    /// form for its value (see the module docs).
    ///
    /// The markers a go-algorand block is mostly made of (positive fixint, fixstr, fixmap,
    /// fixarray, bin 8, bool, nil, uint 8/16/32) are read here; the rest by the general path,
    /// which gives the same token for these too.
    #[inline]
    pub(crate) fn token(&mut self) -> Result<(Token<'a>, bool), RawError> {
        let Some(&byte) = self.buf[..self.end].get(self.pos) else {
            return Err(self.err(RawErrorKind::Truncated));
        };
        let tok = match byte {
            0x00..=0x7f => {
                self.pos += 1;
                (Token::Uint(u64::from(byte)), true)
            }
            0xa0..=0xbf => {
                self.pos += 1;
                (Token::Str(self.take(usize::from(byte & 0x1f))?), true)
            }
            0x80..=0x8f => {
                self.pos += 1;
                (
                    Token::Map(self.check_items(usize::from(byte & 0x0f), 2)?),
                    true,
                )
            }
            0x90..=0x9f => {
                self.pos += 1;
                (
                    Token::Array(self.check_items(usize::from(byte & 0x0f), 1)?),
                    true,
                )
            }
            0xc0 => {
                self.pos += 1;
                (Token::Nil, true)
            }
            0xc2 | 0xc3 => {
                self.pos += 1;
                (Token::Bool(byte == 0xc3), true)
            }
            0xc4 => {
                self.pos += 1;
                let n = self.len8()?;
                (Token::Bin(self.take(n)?), true)
            }
            0xcc => {
                self.pos += 1;
                let v = u64::from(self.be::<1>()?[0]);
                (Token::Uint(v), v >= 0x80)
            }
            0xcd => {
                self.pos += 1;
                let v = u64::from(u16::from_be_bytes(self.be()?));
                (Token::Uint(v), v > 0xff)
            }
            0xce => {
                self.pos += 1;
                let v = u64::from(u32::from_be_bytes(self.be()?));
                (Token::Uint(v), v > 0xffff)
            }
            _ => return self.token_general(),
        };
        Ok(tok)
    }

    /// [`token`](Self::token) for every marker, classified by [`rmp::Marker`].
    #[inline(never)]
    fn token_general(&mut self) -> Result<(Token<'a>, bool), RawError> {
        let start = self.pos;
        let byte = self.be::<1>()?[0];
        let tok = match Marker::from_u8(byte) {
            Marker::FixPos(v) => (Token::Uint(u64::from(v)), true),
            Marker::FixNeg(v) => (Token::Neg(i64::from(v)), true),
            Marker::Null => (Token::Nil, true),
            Marker::Reserved => {
                return Err(RawError {
                    offset: start,
                    kind: RawErrorKind::ReservedMarker,
                });
            }
            Marker::False => (Token::Bool(false), true),
            Marker::True => (Token::Bool(true), true),
            Marker::U8 => {
                let v = u64::from(self.be::<1>()?[0]);
                (Token::Uint(v), v >= 0x80)
            }
            Marker::U16 => {
                let v = u64::from(u16::from_be_bytes(self.be()?));
                (Token::Uint(v), v > 0xff)
            }
            Marker::U32 => {
                let v = u64::from(u32::from_be_bytes(self.be()?));
                (Token::Uint(v), v > 0xffff)
            }
            Marker::U64 => {
                let v = u64::from_be_bytes(self.be()?);
                (Token::Uint(v), v > 0xffff_ffff)
            }
            Marker::I8 => signed(i64::from(i8::from_be_bytes(self.be()?)), -0x20),
            Marker::I16 => signed(i64::from(i16::from_be_bytes(self.be()?)), -0x80),
            Marker::I32 => signed(i64::from(i32::from_be_bytes(self.be()?)), -0x8000),
            Marker::I64 => signed(i64::from_be_bytes(self.be()?), -0x8000_0000),
            Marker::F32 => (Token::F32(u32::from_be_bytes(self.be()?)), true),
            Marker::F64 => (Token::F64(u64::from_be_bytes(self.be()?)), true),
            Marker::FixStr(n) => (Token::Str(self.take(usize::from(n))?), true),
            Marker::Str8 => {
                let n = self.len8()?;
                (Token::Str(self.take(n)?), n >= 32)
            }
            Marker::Str16 => {
                let n = self.len16()?;
                (Token::Str(self.take(n)?), n > 0xff)
            }
            Marker::Str32 => {
                let n = self.len32()?;
                (Token::Str(self.take(n)?), n > 0xffff)
            }
            Marker::Bin8 => {
                let n = self.len8()?;
                (Token::Bin(self.take(n)?), true)
            }
            Marker::Bin16 => {
                let n = self.len16()?;
                (Token::Bin(self.take(n)?), n > 0xff)
            }
            Marker::Bin32 => {
                let n = self.len32()?;
                (Token::Bin(self.take(n)?), n > 0xffff)
            }
            Marker::FixArray(n) => (Token::Array(self.check_items(usize::from(n), 1)?), true),
            Marker::Array16 => {
                let n = self.len16()?;
                (Token::Array(self.check_items(n, 1)?), n > 0xf)
            }
            Marker::Array32 => {
                let n = self.len32()?;
                (Token::Array(self.check_items(n, 1)?), n > 0xffff)
            }
            Marker::FixMap(n) => (Token::Map(self.check_items(usize::from(n), 2)?), true),
            Marker::Map16 => {
                let n = self.len16()?;
                (Token::Map(self.check_items(n, 2)?), n > 0xf)
            }
            Marker::Map32 => {
                let n = self.len32()?;
                (Token::Map(self.check_items(n, 2)?), n > 0xffff)
            }
            Marker::FixExt1 => self.ext(1)?,
            Marker::FixExt2 => self.ext(2)?,
            Marker::FixExt4 => self.ext(4)?,
            Marker::FixExt8 => self.ext(8)?,
            Marker::FixExt16 => self.ext(16)?,
            Marker::Ext8 => {
                let n = self.len8()?;
                self.ext(n)?
            }
            Marker::Ext16 => {
                let n = self.len16()?;
                self.ext(n)?
            }
            Marker::Ext32 => {
                let n = self.len32()?;
                self.ext(n)?
            }
        };
        Ok(tok)
    }

    fn ext(&mut self, n: usize) -> Result<(Token<'a>, bool), RawError> {
        let ty = i8::from_be_bytes(self.be()?);
        Ok((Token::Ext(ty, self.take(n)?), true))
    }

    /// Reads the value under the cursor when it is a scalar (one token), with its minimal flag;
    /// `None`, the cursor left where it was, when it is an array or a map. The same errors as
    /// [`scan`](Self::scan) at `depth` (the nesting depth of the value itself).
    #[inline]
    pub(crate) fn scalar(&mut self, depth: usize) -> Result<Option<(Token<'a>, bool)>, RawError> {
        if depth > MAX_DEPTH {
            return Err(self.err(RawErrorKind::TooDeep));
        }
        let at = self.pos;
        let read = self.token()?;
        if matches!(read.0, Token::Array(_) | Token::Map(_)) {
            self.pos = at;
            return Ok(None);
        }
        Ok(Some(read))
    }

    /// Skips one value (with everything inside it) and reports whether its bytes are canonical
    /// and whether it is empty. `depth` is the nesting depth of the value itself.
    pub(crate) fn scan(&mut self, depth: usize) -> Result<Scan, RawError> {
        if depth > MAX_DEPTH {
            return Err(self.err(RawErrorKind::TooDeep));
        }
        let (tok, minimal) = self.token()?;
        let scan = match tok {
            Token::Array(_) | Token::Map(_) => self.scan_container(tok, minimal, depth)?,
            scalar => Scan::of_scalar(scalar, minimal),
        };
        Ok(scan)
    }

    /// The rest of [`scan`](Self::scan) of a container whose header was `tok`.
    fn scan_container(
        &mut self,
        tok: Token<'a>,
        minimal: bool,
        depth: usize,
    ) -> Result<Scan, RawError> {
        let scan = match tok {
            Token::Array(n) => {
                let mut canonical = minimal;
                for _ in 0..n {
                    canonical &= self.scan(depth + 1)?.canonical;
                }
                Scan {
                    canonical,
                    empty: n == 0,
                }
            }
            Token::Map(n) => {
                let mut canonical = minimal;
                let mut prev: Option<KeyOrd<'a>> = None;
                for _ in 0..n {
                    let key_start = self.pos;
                    let key = self.key_ord(depth + 1)?;
                    match (key, prev) {
                        (Some(KeyOrd::Other) | None, _) => canonical = false,
                        (Some(k), Some(p)) if !key_follows(p, k) => canonical = false,
                        _ => {}
                    }
                    // A bin key is re-encoded as str (see `write_canonical`), so it is not
                    // canonical as it stands.
                    if self
                        .buf
                        .get(key_start)
                        .is_some_and(|b| (0xc4..=0xc6).contains(b))
                    {
                        canonical = false;
                    }
                    prev = key;
                    let value = self.scan(depth + 1)?;
                    canonical &= value.canonical && !value.empty;
                }
                Scan {
                    canonical,
                    empty: n == 0,
                }
            }
            scalar => Scan::of_scalar(scalar, minimal),
        };
        Ok(scan)
    }

    /// Reads a map key: its sort key, or `None` (after skipping it) for a key no canonical map
    /// can have (array, map, nil).
    fn key_ord(&mut self, depth: usize) -> Result<Option<KeyOrd<'a>>, RawError> {
        let save = self.pos;
        let (tok, minimal) = self.token()?;
        let key = match tok {
            Token::Str(s) | Token::Bin(s) => Some(KeyOrd::Bytes(s)),
            Token::Uint(v) => Some(KeyOrd::Uint(v)),
            Token::Neg(v) => Some(KeyOrd::Neg(v)),
            Token::Bool(_) | Token::F32(_) | Token::F64(_) | Token::Ext(..) => Some(KeyOrd::Other),
            Token::Nil | Token::Array(_) | Token::Map(_) => {
                self.pos = save;
                self.scan(depth)?;
                return Ok(None);
            }
        };
        Ok(if minimal { key } else { Some(KeyOrd::Other) })
    }

    /// Skips one value (with everything inside it), checking its structure only: the same
    /// errors at the same offsets as [`scan`](Self::scan) (a truncated value, byte 0xc1,
    /// nesting deeper than [`MAX_DEPTH`]), without scan's canonical-form bookkeeping (key
    /// order, empty values), which is most of its cost. `depth` is the nesting depth of the
    /// value itself.
    pub(crate) fn skip(&mut self, depth: usize) -> Result<(), RawError> {
        if depth > MAX_DEPTH {
            return Err(self.err(RawErrorKind::TooDeep));
        }
        match self.token()?.0 {
            Token::Array(n) => {
                for _ in 0..n {
                    self.skip(depth + 1)?;
                }
            }
            Token::Map(n) => {
                for _ in 0..n {
                    // A key as `key_ord` reads it: a scalar in one token (its depth not
                    // checked), a nil or a container as a value one level down.
                    let key_at = self.pos;
                    if matches!(
                        self.token()?.0,
                        Token::Nil | Token::Array(_) | Token::Map(_)
                    ) {
                        self.pos = key_at;
                        self.skip(depth + 1)?;
                    }
                    self.skip(depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// [`skip`](Self::skip), returning the byte range the value occupied.
    pub(crate) fn skip_span(&mut self, depth: usize) -> Result<(usize, usize), RawError> {
        let start = self.pos;
        self.skip(depth)?;
        Ok((start, self.pos))
    }

    /// Skips one value and returns the byte range it occupied.
    pub(crate) fn scan_span(&mut self, depth: usize) -> Result<(usize, usize, Scan), RawError> {
        let start = self.pos;
        let scan = self.scan(depth)?;
        Ok((start, self.pos, scan))
    }
}

fn signed(v: i64, smallest_of_wider: i64) -> (Token<'static>, bool) {
    if v >= 0 {
        // Canonical writes non-negative integers unsigned.
        (Token::Uint(v.unsigned_abs()), false)
    } else {
        // A negative value belongs in this width only if the next narrower one cannot hold it.
        (Token::Neg(v), v < smallest_of_wider)
    }
}

/// Whether `next` may follow `prev` in a canonical map: same kind, strictly increasing.
fn key_follows(prev: KeyOrd<'_>, next: KeyOrd<'_>) -> bool {
    match (prev, next) {
        (KeyOrd::Bytes(a), KeyOrd::Bytes(b)) => bytes_lt(a, b),
        (KeyOrd::Uint(a), KeyOrd::Uint(b)) => a < b,
        (KeyOrd::Neg(a), KeyOrd::Neg(b)) => a < b,
        _ => false,
    }
}

/// `a < b` in the order of byte slices (bytewise, then the shorter first), compared inline:
/// map keys are a few bytes, for which a call to the C library's `memcmp` (what slice `<`
/// compiles to) costs more than the compare itself.
#[inline]
pub(crate) fn bytes_lt(a: &[u8], b: &[u8]) -> bool {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x < y;
        }
    }
    a.len() < b.len()
}

/// Total order used when re-encoding a map's keys: negative ints, unsigned ints, then bytes.
pub(crate) fn key_cmp(a: &KeyOrd<'_>, b: &KeyOrd<'_>) -> Ordering {
    a.cmp(b)
}

// ---- writing (rmp::encode into a ByteBuf: its writes are infallible) ----

/// A msgpack header of at most 5 bytes, on the stack.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    bytes: [u8; 5],
    len: usize,
}

impl AsRef<[u8]> for Header {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// The smallest header of a container or a str of `n` items or bytes: `fix | n` below `fix_max`,
/// else the 16-bit marker, else the 32-bit one (msgpack spec, "formats").
fn header(n: usize, fix: u8, fix_max: usize, m8: Option<u8>, m16: u8, m32: u8) -> Header {
    let mut bytes = [0u8; 5];
    let len = match (n, m8) {
        (n, _) if n < fix_max => {
            bytes[0] = fix | n as u8;
            1
        }
        (n, Some(m8)) if n <= 0xff => {
            bytes[..2].copy_from_slice(&[m8, n as u8]);
            2
        }
        (n, _) if n <= 0xffff => {
            bytes[0] = m16;
            bytes[1..3].copy_from_slice(&(n as u16).to_be_bytes());
            3
        }
        (n, _) => {
            bytes[0] = m32;
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            bytes[1..5].copy_from_slice(&n.to_be_bytes());
            5
        }
    };
    Header { bytes, len }
}

/// The smallest str header for `len` bytes (what `put_str_len` writes), without allocating.
pub(crate) fn str_header(len: usize) -> Header {
    header(len, 0xa0, 32, Some(0xd9), 0xda, 0xdb)
}

/// The smallest map header for `n` entries (what `put_map_len` writes), without allocating.
pub(crate) fn map_header(n: usize) -> Header {
    header(n, 0x80, 16, None, 0xde, 0xdf)
}

/// Appends the smallest str header for `len` bytes.
pub(crate) fn put_str_len(out: &mut ByteBuf, len: usize) {
    let len = u32::try_from(len).unwrap_or(u32::MAX);
    let Ok(_) = rmp::encode::write_str_len(out, len);
}

/// Appends a str.
pub(crate) fn put_str(out: &mut ByteBuf, s: &[u8]) {
    put_str_len(out, s.len());
    out.as_mut_vec().extend_from_slice(s);
}

/// Appends a bin with the smallest header.
pub(crate) fn put_bin(out: &mut ByteBuf, b: &[u8]) {
    let len = u32::try_from(b.len()).unwrap_or(u32::MAX);
    let Ok(_) = rmp::encode::write_bin_len(out, len);
    out.as_mut_vec().extend_from_slice(b);
}

/// Appends an unsigned integer in its smallest form.
pub(crate) fn put_uint(out: &mut ByteBuf, v: u64) {
    let Ok(_) = rmp::encode::write_uint(out, v);
}

/// Appends a signed integer in its canonical form (unsigned when non-negative).
pub(crate) fn put_int(out: &mut ByteBuf, v: i64) {
    if v >= 0 {
        put_uint(out, v.unsigned_abs());
    } else {
        let Ok(_) = rmp::encode::write_sint(out, v);
    }
}

/// Appends the smallest array header.
pub(crate) fn put_array_len(out: &mut ByteBuf, n: usize) {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let Ok(_) = rmp::encode::write_array_len(out, n);
}

/// Appends the smallest map header.
pub(crate) fn put_map_len(out: &mut ByteBuf, n: usize) {
    let n = u32::try_from(n).unwrap_or(u32::MAX);
    let Ok(_) = rmp::encode::write_map_len(out, n);
}

/// Appends a bool.
pub(crate) fn put_bool(out: &mut ByteBuf, b: bool) {
    let Ok(()) = rmp::encode::write_bool(out, b);
}

/// Re-encodes the value under `r` canonically onto `out` and returns whether it is empty (its
/// bytes are still written: the caller of a map entry truncates them).
///
/// # Errors
/// Malformed input; a duplicate key or a nil/array/map key in a map.
pub(crate) fn write_canonical(
    r: &mut Reader<'_>,
    out: &mut ByteBuf,
    depth: usize,
) -> Result<bool, RawError> {
    if depth > MAX_DEPTH {
        return Err(r.err(RawErrorKind::TooDeep));
    }
    let (tok, _) = r.token()?;
    let empty = match tok {
        Token::Nil => {
            let Ok(()) = rmp::encode::write_nil(out);
            true
        }
        Token::Bool(b) => {
            put_bool(out, b);
            !b
        }
        Token::Uint(v) => {
            put_uint(out, v);
            v == 0
        }
        Token::Neg(v) => {
            put_int(out, v);
            false
        }
        Token::F32(bits) => {
            let Ok(()) = rmp::encode::write_f32(out, f32::from_bits(bits));
            false
        }
        Token::F64(bits) => {
            let Ok(()) = rmp::encode::write_f64(out, f64::from_bits(bits));
            false
        }
        Token::Str(s) => {
            put_str(out, s);
            s.is_empty()
        }
        Token::Bin(b) => {
            put_bin(out, b);
            b.is_empty()
        }
        Token::Ext(ty, data) => {
            let len = u32::try_from(data.len()).unwrap_or(u32::MAX);
            let Ok(_) = rmp::encode::write_ext_meta(out, len, ty);
            out.as_mut_vec().extend_from_slice(data);
            false
        }
        Token::Array(n) => {
            put_array_len(out, n as usize);
            for _ in 0..n {
                write_canonical(r, out, depth + 1)?;
            }
            n == 0
        }
        Token::Map(n) => return write_canonical_map(r, out, n, depth),
    };
    Ok(empty)
}

/// Keys up to which [`write_canonical_map`] looks for a repeated key by scanning the ones before.
const SHORT_MAP: usize = 16;

fn write_canonical_map(
    r: &mut Reader<'_>,
    out: &mut ByteBuf,
    n: u32,
    depth: usize,
) -> Result<bool, RawError> {
    // Entries are encoded into one scratch buffer, then sorted by key.
    let mut scratch = ByteBuf::new();
    let mut entries: Vec<(KeyOrd<'_>, usize, usize)> = Vec::new();
    // The keys so far, once the map outgrows a short scan: a repeat is found in input order (the
    // first one is the error) in O(n log n) for a map of n keys, not O(n^2).
    let mut seen: Option<BTreeSet<KeyOrd<'_>>> = None;
    for _ in 0..n {
        let key_at = r.pos();
        let (tok, _) = r.token()?;
        let start = scratch.as_slice().len();
        let key = match tok {
            // A bin key is a struct field name read leniently: written back as str.
            Token::Str(s) | Token::Bin(s) => {
                put_str(&mut scratch, s);
                KeyOrd::Bytes(s)
            }
            Token::Uint(v) => {
                put_uint(&mut scratch, v);
                KeyOrd::Uint(v)
            }
            Token::Neg(v) => {
                put_int(&mut scratch, v);
                KeyOrd::Neg(v)
            }
            _ => {
                return Err(RawError {
                    offset: key_at,
                    kind: RawErrorKind::BadKey,
                });
            }
        };
        let empty = write_canonical(r, &mut scratch, depth + 1)?;
        if empty {
            scratch.as_mut_vec().truncate(start);
        } else {
            let repeat = if entries.len() < SHORT_MAP {
                entries.iter().any(|(k, _, _)| *k == key)
            } else {
                let keys = seen.get_or_insert_with(|| entries.iter().map(|e| e.0).collect());
                !keys.insert(key)
            };
            if repeat {
                return Err(RawError {
                    offset: key_at,
                    kind: RawErrorKind::DuplicateKey,
                });
            }
            entries.push((key, start, scratch.as_slice().len()));
        }
    }
    entries.sort_by(|a, b| key_cmp(&a.0, &b.0));
    put_map_len(out, entries.len());
    for (_, start, end) in &entries {
        out.as_mut_vec()
            .extend_from_slice(&scratch.as_slice()[*start..*end]);
    }
    Ok(entries.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(bytes: &[u8]) -> (Vec<u8>, bool) {
        let mut out = ByteBuf::new();
        let empty = write_canonical(&mut Reader::new(bytes), &mut out, 0).unwrap();
        (out.into_vec(), empty)
    }

    /// The fast markers of `token` read exactly what the general path reads: the same token,
    /// the same minimal flag, the same end or the same error at the same offset, for every
    /// first byte, followed by payloads whose first bytes take the values at the length and
    /// width boundaries (0x0f/0x10, 0x1f/0x20, 0x7f/0x80, 0xff, 0xffff/0x10000), cut at every
    /// length up to 6, also inside a span that ends before the input does.
    #[test]
    fn token_fast_path_agrees_with_general() {
        let edges = [0x00, 0x01, 0x0f, 0x10, 0x1f, 0x20, 0x7f, 0x80, 0xfe, 0xff];
        let tails: [[u8; 4]; 3] = [[0; 4], [0xff; 4], [0, 0, 0, 1]];
        let mut whole = 0;
        for first in 0..=255u8 {
            for b0 in edges {
                for b1 in edges {
                    for tail in tails {
                        let mut payload = vec![b0, b1];
                        payload.extend_from_slice(&tail);
                        for len in 0..=payload.len() {
                            let mut bytes = vec![0xee, first];
                            bytes.extend_from_slice(&payload[..len]);
                            for end in [bytes.len(), bytes.len() - 1] {
                                let mut a = Reader::span(&bytes, 1, end);
                                let mut b = a.clone();
                                let fast = a.token();
                                let general = b.token_general();
                                assert_eq!(fast, general, "{first:#04x} {:?} {end}", &bytes);
                                assert_eq!(a.pos(), b.pos(), "{first:#04x} {:?} {end}", &bytes);
                                whole += usize::from(fast.is_ok());
                            }
                        }
                    }
                }
            }
        }
        // Not vacuous: most first bytes read a whole token from some payload.
        assert!(whole > 100_000, "{whole}");
    }

    fn scan(bytes: &[u8]) -> Scan {
        let mut r = Reader::new(bytes);
        let s = r.scan(0).unwrap();
        assert!(r.at_end());
        s
    }

    #[test]
    fn integers_take_their_smallest_unsigned_form() {
        // 5 as u8, u16, i8, i64: all re-encode to the fixint 0x05 and none is canonical as given.
        for bytes in [
            &[0xcc, 5][..],
            &[0xcd, 0, 5],
            &[0xd0, 5],
            &[0xd3, 0, 0, 0, 0, 0, 0, 0, 5],
        ] {
            assert!(!scan(bytes).canonical, "{bytes:x?}");
            assert_eq!(canon(bytes), (vec![0x05], false));
        }
        assert!(scan(&[0xcc, 0x80]).canonical);
        assert!(scan(&[0xcd, 0x01, 0x00]).canonical);
        assert!(!scan(&[0xcd, 0x00, 0xff]).canonical);
        // -1 as i8 is not canonical (fixneg is); -33 as i8 is.
        assert!(!scan(&[0xd0, 0xff]).canonical);
        assert!(scan(&[0xd0, 0xdf]).canonical);
        assert_eq!(canon(&[0xd0, 0xff]).0, vec![0xff]);
    }

    #[test]
    fn maps_sort_keys_and_drop_empty_values() {
        // {"b": 1, "a": 0, "c": ""} -> {"b": 1}
        let input = [0x83, 0xa1, b'b', 0x01, 0xa1, b'a', 0x00, 0xa1, b'c', 0xa0];
        assert!(!scan(&input).canonical);
        assert_eq!(canon(&input), (vec![0x81, 0xa1, b'b', 0x01], false));
        // {"b": 1, "a": 2} -> {"a": 2, "b": 1}
        let input = [0x82, 0xa1, b'b', 0x01, 0xa1, b'a', 0x02];
        assert_eq!(
            canon(&input).0,
            vec![0x82, 0xa1, b'a', 0x02, 0xa1, b'b', 0x01]
        );
        // "b" (fixstr 1) sorts after "ab" by content, not by encoded header.
        let input = [0x82, 0xa2, b'a', b'b', 0x01, 0xa1, b'b', 0x02];
        assert!(scan(&input).canonical);
        // Uint keys sort numerically.
        assert!(scan(&[0x82, 0x02, 0x01, 0x0a, 0x01]).canonical);
        assert!(!scan(&[0x82, 0x0a, 0x01, 0x02, 0x01]).canonical);
        // A map whose every value is empty is itself empty.
        assert_eq!(canon(&[0x81, 0xa1, b'a', 0xc2]), (vec![0x80], true));
        // Arrays keep empty elements.
        assert!(scan(&[0x92, 0x80, 0x00]).canonical);
    }

    #[test]
    fn str_and_bin_stay_apart_and_non_utf8_str_survives() {
        let input = [0x82, 0xa1, b'a', 0xc4, 0x01, 0xff, 0xa1, b'b', 0xa1, 0xff];
        assert!(scan(&input).canonical);
        assert_eq!(canon(&input).0, input.to_vec());
        // A str8 holding 3 bytes re-encodes as a fixstr.
        assert_eq!(
            canon(&[0xd9, 3, b'x', b'y', 0xfe]).0,
            vec![0xa3, b'x', b'y', 0xfe]
        );
    }

    #[test]
    fn stack_headers_match_rmp() {
        for n in [0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536, 1 << 20] {
            let mut a = ByteBuf::new();
            put_str_len(&mut a, n);
            assert_eq!(str_header(n).as_ref(), a.as_slice(), "str {n}");
            let mut b = ByteBuf::new();
            put_map_len(&mut b, n);
            assert_eq!(map_header(n).as_ref(), b.as_slice(), "map {n}");
        }
    }

    #[test]
    fn bytes_lt_is_slice_order() {
        let keys: [&[u8]; 9] = [
            b"",
            b"a",
            b"ab",
            b"b",
            b"gen",
            b"gh",
            b"grp",
            b"\xff",
            b"\xff\x00",
        ];
        for a in keys {
            for b in keys {
                assert_eq!(bytes_lt(a, b), a < b, "{a:?} < {b:?}");
            }
        }
    }

    #[test]
    fn malformed_input_is_an_error() {
        let err = |b: &[u8]| Reader::new(b).scan(0).unwrap_err().kind;
        assert_eq!(err(&[]), RawErrorKind::Truncated);
        assert_eq!(err(&[0xc1]), RawErrorKind::ReservedMarker);
        assert_eq!(
            err(&[0xdd, 0xff, 0xff, 0xff, 0xff]),
            RawErrorKind::Truncated
        );
        assert_eq!(
            err(&[0xc6, 0xff, 0xff, 0xff, 0xff, 0]),
            RawErrorKind::Truncated
        );
        let deep = vec![0x91; MAX_DEPTH + 2];
        assert_eq!(err(&deep), RawErrorKind::TooDeep);
        let dup = [0x82, 0xa1, b'a', 0x01, 0xa1, b'a', 0x02];
        let e = write_canonical(&mut Reader::new(&dup), &mut ByteBuf::new(), 0).unwrap_err();
        assert_eq!(e.kind, RawErrorKind::DuplicateKey);
    }

    /// A repeated key in a map of any size is the error at the first repeat in input order,
    /// whether it comes before or after the scan gives way to the key set (16 keys), and keys
    /// whose values are empty (left out) do not count; without a repeat, the keys come out
    /// sorted. Checked against a reference that scans every key before.
    #[test]
    fn a_repeated_key_is_found_at_its_first_repeat_in_maps_of_any_size() {
        // Keys `k{i}` with uint values; `empty` keys get nil (left out, so never a repeat).
        let map = |keys: &[u32], empty: &[usize]| -> (Vec<u8>, Vec<usize>) {
            let mut b = ByteBuf::new();
            put_map_len(&mut b, keys.len());
            let mut at = Vec::new();
            for (i, k) in keys.iter().enumerate() {
                at.push(b.as_slice().len());
                put_str(&mut b, format!("k{k:05}").as_bytes());
                if empty.contains(&i) {
                    b.as_mut_vec().push(0xc0);
                } else {
                    put_uint(&mut b, u64::from(*k) + 1);
                }
            }
            (b.into_vec(), at)
        };
        // The reference: the offset of the first key (in input order) that a kept key before it
        // already had.
        let first_repeat = |keys: &[u32], empty: &[usize], at: &[usize]| {
            (0..keys.len()).find_map(|i| {
                let kept = |j: usize| !empty.contains(&j);
                (kept(i) && (0..i).any(|j| kept(j) && keys[j] == keys[i])).then_some(at[i])
            })
        };
        let mut checked = 0;
        for n in [3u32, 15, 16, 17, 40, 2000] {
            let distinct: Vec<u32> = (0..n).map(|i| (i * 7919) % 10_007).collect();
            let mut cases = vec![(distinct.clone(), vec![])];
            for (from, to) in [(0, 1), (1, n - 1), (n / 2, n - 1), (n - 2, n - 1)] {
                let mut keys = distinct.clone();
                keys[to as usize] = keys[from as usize];
                cases.push((keys.clone(), vec![]));
                // The first of the pair empty: no repeat there.
                cases.push((keys, vec![from as usize]));
            }
            for (keys, empty) in cases {
                let (bytes, at) = map(&keys, &empty);
                let got = write_canonical(&mut Reader::new(&bytes), &mut ByteBuf::new(), 0);
                match first_repeat(&keys, &empty, &at) {
                    Some(offset) => {
                        let e = got.unwrap_err();
                        assert_eq!((e.kind, e.offset), (RawErrorKind::DuplicateKey, offset));
                    }
                    None => {
                        let (out, _) = canon(&bytes);
                        let mut want: Vec<u32> = (0..keys.len())
                            .filter(|i| !empty.contains(i))
                            .map(|i| keys[i])
                            .collect();
                        want.sort_unstable();
                        let (want_bytes, _) = map(&want, &[]);
                        assert_eq!(out, want_bytes, "n {n}");
                    }
                }
                checked += 1;
            }
        }
        assert_eq!(checked, 6 * 9);
    }

    /// Where `scan` and `skip` leave a reader over `bytes` (from depth `depth`): the end offset
    /// or the error.
    fn both(bytes: &[u8], depth: usize) -> (Result<usize, RawError>, Result<usize, RawError>) {
        let mut a = Reader::new(bytes);
        let mut b = Reader::new(bytes);
        (
            a.scan(depth).map(|_| a.pos()),
            b.skip(depth).map(|()| b.pos()),
        )
    }

    /// The structural skip accepts and refuses exactly what the canonical scan does, ending at
    /// the same offset or failing with the same error at the same offset: on a real-shaped
    /// block, every prefix of it, every byte of it set to each marker class's first byte, and
    /// nesting around the depth limit (keys that are containers included).
    #[test]
    fn skip_agrees_with_scan() {
        use crate::synth::{SynthTxn, encode_block};
        let mut call = SynthTxn::app_call([3; 32], 10, 1010, vec![7, 8]);
        call.group = Some([4; 32]);
        let block = encode_block(
            9,
            "net-v1",
            &[1; 32],
            5,
            &[SynthTxn::payment([2; 32], 1, 2), call],
        );
        let (scan, skip) = both(&block, 0);
        assert_eq!(scan, Ok(block.len()));
        assert_eq!(skip, scan);
        for cut in 0..block.len() {
            let (scan, skip) = both(&block[..cut], 0);
            assert!(scan.is_err(), "prefix {cut}");
            assert_eq!(skip, scan, "prefix {cut}");
        }
        let markers = [
            0x00, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc4, 0xc5, 0xc6, 0xc7, 0xca,
            0xcb, 0xcc, 0xcf, 0xd0, 0xd4, 0xd8, 0xd9, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff,
        ];
        for at in 0..block.len() {
            for m in markers {
                let mut b = block.clone();
                b[at] = m;
                assert_eq!(both(&b, 0).1, both(&b, 0).0, "byte {at} = {m:#x}");
            }
        }
        for n in [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2] {
            let mut arrays = vec![0x91; n];
            arrays.push(0x01);
            // Maps whose one key is the next map.
            let mut keys = vec![0x81; n];
            keys.push(0x01);
            keys.extend(std::iter::repeat_n(0xc0, n));
            for bytes in [arrays, keys] {
                let (scan, skip) = both(&bytes, 0);
                assert_eq!(skip, scan, "{n} deep");
                assert_eq!(scan.is_ok(), n <= MAX_DEPTH, "{n} deep");
            }
        }
    }
}
