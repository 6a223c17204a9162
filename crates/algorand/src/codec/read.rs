//! Typed reads of one field's value: each reads one token and either gives the value or a
//! [`DecodeError::WrongType`] naming the field (as go-algorand's msgpack names it) and what it
//! must be. A map key that came before is a [`DecodeError::DuplicateKey`] ([`once`]).

use super::error::DecodeError;
use super::msgpack::{Reader, Token};
use crate::ids::Round;

/// Reads one token and maps it with `want`; `None` from `want` is a wrong type for `field`.
pub(super) fn typed<'a, T>(
    r: &mut Reader<'a>,
    round: Option<Round>,
    field: &'static str,
    expected: &'static str,
    want: impl FnOnce(Token<'a>) -> Option<T>,
) -> Result<T, DecodeError> {
    let at = r.pos();
    let (token, _) = r.token().map_err(|e| DecodeError::raw(e, round))?;
    want(token).ok_or_else(|| DecodeError::wrong_type(round, at, field, expected))
}

/// A map key: str or bin (go-algorand's struct field names), anything else is a
/// [`DecodeError::BadKey`].
pub(super) fn read_key<'a>(
    r: &mut Reader<'a>,
    round: Option<Round>,
) -> Result<&'a [u8], DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Str(k) | Token::Bin(k) => Ok(k),
        _ => Err(DecodeError::BadKey { round, offset: at }),
    }
}

/// A non-negative integer (any integer marker holding a value >= 0).
pub(super) fn read_uint(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<u64, DecodeError> {
    typed(r, round, field, "an unsigned integer", |t| match t {
        Token::Uint(v) => Some(v),
        _ => None,
    })
}

/// An integer that fits an int64 (go-algorand's `int64` fields, e.g. the header's `ts`): a
/// non-integer is "expected an integer", an unsigned value above `i64::MAX` "expected an int64".
pub(super) fn read_int(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<i64, DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Uint(v) => {
            i64::try_from(v).map_err(|_| DecodeError::wrong_type(round, at, field, "an int64"))
        }
        Token::Neg(v) => Ok(v),
        _ => Err(DecodeError::wrong_type(round, at, field, "an integer")),
    }
}

/// A str or bin value as bytes (Go strings need not be UTF-8).
pub(super) fn read_bytes<'a>(
    r: &mut Reader<'a>,
    round: Option<Round>,
    field: &'static str,
) -> Result<&'a [u8], DecodeError> {
    typed(r, round, field, "a string", |t| match t {
        Token::Str(s) | Token::Bin(s) => Some(s),
        _ => None,
    })
}

/// A bin of exactly 32 bytes (addresses, digests, group ids).
pub(super) fn read_32(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<[u8; 32], DecodeError> {
    typed(r, round, field, "32 bytes of bin", |t| match t {
        Token::Bin(b) => b.try_into().ok(),
        _ => None,
    })
}

/// A bin of exactly 64 bytes (SHA-512 digests).
pub(super) fn read_64(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<[u8; 64], DecodeError> {
    typed(r, round, field, "64 bytes of bin", |t| match t {
        Token::Bin(b) => b.try_into().ok(),
        _ => None,
    })
}

/// An array header (nil reads as empty, how go-algorand encodes a nil slice).
pub(super) fn read_array_len(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<u32, DecodeError> {
    typed(r, round, field, "an array", |t| match t {
        Token::Array(n) => Some(n),
        Token::Nil => Some(0),
        _ => None,
    })
}

/// A map header; `what` names the map (e.g. "a SignedTxnInBlock map").
pub(super) fn read_map_len(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
    what: &'static str,
) -> Result<u32, DecodeError> {
    typed(r, round, field, what, |t| match t {
        Token::Map(n) => Some(n),
        _ => None,
    })
}

/// Fills `slot` with `read()`, unless the key (at byte `key_at`) came before in the same map:
/// then a [`DecodeError::DuplicateKey`].
pub(super) fn once<T>(
    slot: &mut Option<T>,
    round: Option<Round>,
    key_at: usize,
    read: impl FnOnce() -> Result<T, DecodeError>,
) -> Result<(), DecodeError> {
    if slot.is_some() {
        return Err(DecodeError::DuplicateKey {
            round,
            offset: key_at,
        });
    }
    *slot = Some(read()?);
    Ok(())
}

/// Checks that the block (of round `round`) is all the input: bytes after it are
/// [`DecodeError::TrailingBytes`].
pub(super) fn expect_end(r: &Reader<'_>, round: Round) -> Result<(), DecodeError> {
    if r.at_end() {
        return Ok(());
    }
    let len = r.input().len() - r.pos();
    Err(DecodeError::TrailingBytes {
        round: Some(round),
        offset: r.pos(),
        len,
    })
}
