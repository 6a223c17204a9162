//! The payset as stored in a block's bytes: its flat commitment, where its entries are, one
//! entry's txid, each entry's application id, and the block's round for errors. These read the
//! bytes structurally, without decoding the whole block.

use std::sync::Arc;

use sha2::{Digest, Sha512_256};

use super::entry::{Genesis, decode_entry, read_payset_len};
use super::error::DecodeError;
use super::leaves::Leaves;
use super::msgpack::{RawError, Reader, Token};
use super::read::{expect_end, once, read_key, read_map_len, read_uint};
use super::txid::TxnMap;
use crate::ids::{Round, Txid};

/// Domain-separation prefix of a flat payset commitment (go-algorand `protocol.PaysetFlat`).
pub const PAYSET_FLAT_PREFIX: &[u8; 2] = b"PF";

/// The flat payset commitment of the block in `bytes`: SHA-512/256 over `"PF"` and the msgpack
/// bytes of its `txns` array as stored. An absent `txns` (an empty payset) is hashed as msgpack
/// nil `0xc0`, how go-algorand encodes a nil `Payset`: the empty blocks of the real dataset2
/// network commit to SHA-512/256(`"PF"`, `0xc0`).
///
/// # Errors
/// [`DecodeError`] when `bytes` are not a block.
pub fn payset_commit_flat(bytes: &[u8]) -> Result<[u8; 32], DecodeError> {
    Ok(payset_digest(locate_payset(bytes)?.payset))
}

/// SHA-512/256 of `"PF"` and `payset` (the payset's msgpack bytes; empty = absent = nil).
pub(crate) fn payset_digest(payset: &[u8]) -> [u8; 32] {
    let mut h = Sha512_256::new();
    h.update(PAYSET_FLAT_PREFIX);
    h.update(if payset.is_empty() {
        &[0xc0][..]
    } else {
        payset
    });
    h.finalize().into()
}

/// A block's round and its payset's bytes as stored (empty when absent).
#[derive(Debug)]
pub(super) struct Located<'a> {
    pub(super) round: Round,
    pub(super) payset: &'a [u8],
    /// Nesting depth of the payset array (2 in `{block, cert}`, 1 in a bare block).
    pub(super) payset_depth: usize,
    /// The flat commitment of `payset` ([`payset_digest`]), when it was computed while the
    /// block was decoded.
    pub(super) flat: Option<[u8; 32]>,
    /// The leaves of its commitment trees, one per entry decoded, when they were computed
    /// while the block was decoded (shared, so that a helper can build trees from them).
    pub(super) leaves: Option<Arc<Leaves>>,
    /// Build the trees from `leaves` with a helper when there are at least this many (the
    /// block was decoded with one); `None`: on the calling thread.
    #[cfg_attr(not(feature = "parallel"), allow(dead_code))]
    pub(super) tree_split: Option<usize>,
}

impl Located<'_> {
    /// The flat commitment of the payset: computed while decoding, or now.
    pub(super) fn flat_digest(&self) -> [u8; 32] {
        self.flat.unwrap_or_else(|| payset_digest(self.payset))
    }
}

/// Finds the block's round and its `txns` bytes (empty when absent), checking structure only.
pub(super) fn locate_payset(bytes: &[u8]) -> Result<Located<'_>, DecodeError> {
    let mut r = Reader::new(bytes);
    let fail = |e: RawError| DecodeError::raw(e, peek_round(bytes));
    let Some(located) = locate_in_map(&mut r, 0, true).map_err(fail)? else {
        return Err(DecodeError::wrong_type(None, 0, "block", "a map"));
    };
    expect_end(&r, located.round)?;
    Ok(located)
}

/// `None` when the value under `r` is not a map.
fn locate_in_map<'a>(
    r: &mut Reader<'a>,
    depth: usize,
    top: bool,
) -> Result<Option<Located<'a>>, RawError> {
    let Token::Map(n) = r.token()?.0 else {
        return Ok(None);
    };
    let mut out = Located {
        round: 0,
        payset: &[],
        payset_depth: depth + 1,
        flat: None,
        leaves: None,
        tree_split: None,
    };
    let mut inner = None;
    for _ in 0..n {
        let (key, _) = r.token()?;
        let key = match key {
            Token::Str(k) | Token::Bin(k) => k,
            _ => b"",
        };
        match key {
            b"block" if top && inner.is_none() => match locate_in_map(r, depth + 1, false)? {
                Some(block) => inner = Some(block),
                None => return Ok(None),
            },
            b"rnd" if inner.is_none() => {
                if let (Token::Uint(v), _) = r.token()? {
                    out.round = v;
                }
            }
            b"txns" if inner.is_none() => {
                let (s, e) = r.skip_span(depth + 1)?;
                out.payset = &r.input()[s..e];
            }
            _ => r.skip(depth + 1)?,
        }
    }
    Ok(Some(inner.unwrap_or(out)))
}

/// Best-effort round of a (possibly broken) block: the first `rnd` of the top-level map or of
/// its `block` map, read until the first structural error.
pub(super) fn peek_round(bytes: &[u8]) -> Option<Round> {
    fn walk(r: &mut Reader<'_>, top: bool) -> Option<Round> {
        let Ok((Token::Map(n), _)) = r.token() else {
            return None;
        };
        for _ in 0..n {
            match r.token().ok()?.0 {
                Token::Str(b"rnd") => {
                    return match r.token().ok()?.0 {
                        Token::Uint(v) => Some(v),
                        _ => None,
                    };
                }
                Token::Str(b"block") if top => return walk(r, false),
                _ => r.skip(1).ok()?,
            }
        }
        // A block map without `rnd` is round 0 (go-algorand omits zero values).
        (!top).then_some(0)
    }
    walk(&mut Reader::new(bytes), true)
}

/// Where each payset entry (`SignedTxnInBlock` map) of the block in `bytes` starts, as byte
/// offsets into `bytes`, in payset order (`{block, cert}` or a bare block; an absent payset is
/// empty). A structural scan: the entries are not decoded.
///
/// # Errors
///
/// [`DecodeError`] when `bytes` are not a block or its `txns` is not an array.
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::{decode_block, payset_entry_txid, payset_offsets};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txns = [SynthTxn::payment([7; 32], 10, 1010), SynthTxn::payment([8; 32], 10, 1010)];
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &txns);
/// let block = decode_block(&bytes)?;
/// let offsets = payset_offsets(&bytes)?;
/// assert_eq!(offsets.len(), 2);
/// let txid = payset_entry_txid(&bytes, offsets[1], &block.genesis_id, &block.genesis_hash)?;
/// assert_eq!(txid, block.txns[1].txid);
/// # Ok::<(), txgate_algorand::codec::DecodeError>(())
/// ```
pub fn payset_offsets(bytes: &[u8]) -> Result<Vec<usize>, DecodeError> {
    let payset = locate_payset(bytes)?.payset;
    if payset.is_empty() {
        return Ok(Vec::new());
    }
    // `payset` is a subslice of `bytes` (from `locate_payset`): its offset in it.
    let base = payset.as_ptr() as usize - bytes.as_ptr() as usize;
    let round = peek_round(bytes);
    let raw = |e| DecodeError::raw(e, round);
    let mut r = Reader::span(bytes, base, base + payset.len());
    let n = read_payset_len(&mut r, round)?;
    let mut offsets = Vec::with_capacity((n as usize).min(payset.len()));
    for _ in 0..n {
        offsets.push(r.pos());
        r.skip(1).map_err(raw)?;
    }
    Ok(offsets)
}

/// The txid of the payset entry that starts at byte `offset` of `bytes` (an offset
/// [`payset_offsets`] returned), in a block with genesis id `genesis_id` and hash `genesis_hash`:
/// the same rule as [`decode_block`](super::decode_block) (`gen` added when the entry has `hgi`, `gh` always), for one
/// entry. The rest of the block is not read.
///
/// # Errors
///
/// [`DecodeError`] when the bytes at `offset` are not a payset entry.
pub fn payset_entry_txid(
    bytes: &[u8],
    offset: usize,
    genesis_id: &[u8],
    genesis_hash: &[u8; 32],
) -> Result<Txid, DecodeError> {
    let genesis = Genesis::new(genesis_id, genesis_hash);
    let mut r = Reader::span(bytes, offset, bytes.len());
    let mut scratch = TxnMap::default();
    Ok(decode_entry(&mut r, 0, &genesis, 0, &mut scratch, None)?
        .0
        .txid)
}

/// The application id (`txn.apid`) of every payset entry of the block in `bytes`, in payset
/// order; 0 for an entry without one (not an app call, or an app creation). `bytes` is msgpack
/// `{block, cert}` or a bare block; an absent payset gives no ids.
///
/// Foreign apps (`apfa`) and access-list apps (`al`) are not included: see
/// [`Txn::app_ids`](super::Txn::app_ids) for all of a transaction's apps.
///
/// # Errors
///
/// [`DecodeError`] when `bytes` are not a block, an entry is not a map or has no `txn` map,
/// or an `apid` is not an unsigned integer (or appears twice). An empty `apid` (nil, 0, false)
/// is absent, as for [`decode_block`](super::decode_block), and a block that decodes always
/// gives its ids.
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::payset_app_ids;
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txns = [
///     SynthTxn::payment([7; 32], 10, 1010),
///     SynthTxn::app_call([8; 32], 10, 1010, vec![42, 5]),
/// ];
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &txns);
/// assert_eq!(payset_app_ids(&bytes)?, vec![0, 42]);
/// # Ok::<(), txgate_algorand::codec::DecodeError>(())
/// ```
pub fn payset_app_ids(bytes: &[u8]) -> Result<Vec<u64>, DecodeError> {
    let round = peek_round(bytes);
    payset_offsets(bytes)?
        .into_iter()
        .map(|at| entry_app_id(bytes, at, round))
        .collect()
}

/// The `txn.apid` of the payset entry at byte `at` (0 when absent).
fn entry_app_id(bytes: &[u8], at: usize, round: Option<Round>) -> Result<u64, DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let mut r = Reader::span(bytes, at, bytes.len());
    let m = read_map_len(&mut r, round, "txns[]", "a SignedTxnInBlock map")?;
    let mut apid: Option<Option<u64>> = None;
    for _ in 0..m {
        let key_at = r.pos();
        if read_key(&mut r, round)? != b"txn" {
            r.skip(1).map_err(raw)?;
            continue;
        }
        once(&mut apid, round, key_at, || {
            let n = read_map_len(&mut r, round, "txn", "a map")?;
            let mut id = None;
            for _ in 0..n {
                let key_at = r.pos();
                let key = read_key(&mut r, round)?;
                let (start, end, scan) = r.scan_span(2).map_err(raw)?;
                // As the decoder reads a `txn` map: an empty value is an absent field.
                if key == b"apid" && !scan.empty {
                    once(&mut id, round, key_at, || {
                        read_uint(&mut Reader::span(bytes, start, end), round, "txn.apid")
                    })?;
                }
            }
            Ok(id)
        })?;
    }
    let apid = apid.ok_or(DecodeError::MissingField {
        round,
        field: "txns[].txn",
    })?;
    Ok(apid.unwrap_or(0))
}
