//! Payset entries: one `SignedTxnInBlock` map, its `txn` completed with the block's genesis id
//! and hash (go-algorand `BlockHeader.DecodeSignedTxn`), and where its signature fields are.
//! What decoding a block, reading one entry's txid and writing gossip messages share.

use rmp::encode::ByteBuf;

use super::error::DecodeError;
use super::msgpack::{Reader, Scan, Token, put_bin, put_str};
use super::read::{once, read_key, read_map_len, typed};
use super::txid::TxnMap;
use super::txn::{Completion, Txn, decode_txn};
use crate::ids::Round;

/// The payset's array header (nil: empty).
pub(super) fn read_payset_len(
    r: &mut Reader<'_>,
    round: Option<Round>,
) -> Result<u32, DecodeError> {
    typed(r, round, "txns", "an array", |t| match t {
        Token::Array(n) => Some(n),
        Token::Nil => Some(0),
        _ => None,
    })
}

/// A block's genesis id and hash, pre-encoded as the values that complete its txns' maps.
pub(super) struct Genesis<'g> {
    id: &'g [u8],
    gen_buf: ByteBuf,
    gh_buf: ByteBuf,
}

impl<'g> Genesis<'g> {
    pub(super) fn new(id: &'g [u8], hash: &[u8; 32]) -> Self {
        let mut gen_buf = ByteBuf::new();
        put_str(&mut gen_buf, id);
        let mut gh_buf = ByteBuf::new();
        put_bin(&mut gh_buf, hash);
        Genesis {
            id,
            gen_buf,
            gh_buf,
        }
    }

    /// The completion of entry `intra` of the payset: `gen` when the entry has `hgi` (and the
    /// genesis id is not empty), `gh` always.
    pub(super) fn completion(&self, hgi: bool, intra: usize) -> Completion<'_> {
        Completion {
            gen_value: (hgi && !self.id.is_empty()).then_some(self.gen_buf.as_slice()),
            gh_value: self.gh_buf.as_slice(),
            intra,
        }
    }
}

/// The signature fields of a `SignedTxn` go-algorand writes next to `txn`, in key order:
/// `lsig` (`LogicSig`), `msig` (`MultisigSig`), `sgnr` (`AuthAddr`), `sig` (`Signature`).
pub(super) const SIGNATURE_KEYS: [&[u8]; 4] = [b"lsig", b"msig", b"sgnr", b"sig"];

/// What a payset entry holds besides its decoded `txn`: where its signature fields are.
///
/// Invariant: spans are byte ranges of the input the entry was read from, each one whole value.
#[derive(Debug, Default)]
pub(super) struct EntryRest {
    /// The spans of the [`SIGNATURE_KEYS`] fields present, by index, with their scans.
    pub(super) signatures: [Option<(usize, usize, Scan)>; 4],
}

/// Decodes the payset entry (a `SignedTxnInBlock` map) under `r`, entry `intra` of its payset
/// (the payset at `depth`). On success `scratch` holds the entry's completed, canonical `txn` map.
pub(super) fn decode_entry<'a: 'm, 'm>(
    r: &mut Reader<'a>,
    depth: usize,
    genesis: &'m Genesis<'_>,
    intra: usize,
    scratch: &mut TxnMap<'m>,
    round: Option<Round>,
) -> Result<(Txn, EntryRest), DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let m = read_map_len(r, round, "txns[]", "a SignedTxnInBlock map")?;
    let mut hgi: Option<bool> = None;
    // (txn, its span, the `hgi` it was completed with)
    let mut txn: Option<(Txn, usize, usize, bool)> = None;
    let mut rest = EntryRest::default();
    for _ in 0..m {
        let key_at = r.pos();
        let key = read_key(r, round)?;
        if key == b"txn" {
            once(&mut txn, round, key_at, || {
                let with_hgi = hgi.unwrap_or(false);
                let completion = genesis.completion(with_hgi, intra);
                let start = r.pos();
                let t = decode_txn(r, depth + 2, Some(&completion), scratch, round)?;
                Ok((t, start, r.pos(), with_hgi))
            })?;
        } else if key == b"hgi" {
            once(&mut hgi, round, key_at, || {
                typed(r, round, "hgi", "a bool", |t| match t {
                    Token::Bool(b) => Some(b),
                    _ => None,
                })
            })?;
        } else if let Some(i) = SIGNATURE_KEYS.iter().position(|k| *k == key)
            && rest.signatures[i].is_none()
        {
            // A repeated signature key is skipped like any field the codec does not decode, and
            // the first occurrence is the one kept for gossip: the txid does not cover
            // signatures, so the entry is as good as one without the repeat (go-algorand never
            // writes one).
            rest.signatures[i] = Some(r.scan_span(depth + 2).map_err(raw)?);
        } else {
            r.skip(depth + 2).map_err(raw)?;
        }
    }
    let Some((mut t, start, end, with_hgi)) = txn else {
        return Err(DecodeError::MissingField {
            round,
            field: "txns[].txn",
        });
    };
    let hgi = hgi.unwrap_or(false);
    if genesis.completion(hgi, intra).gen_value != genesis.completion(with_hgi, intra).gen_value {
        // `hgi` came after `txn` (not canonical order): hash again with the right map.
        let completion = genesis.completion(hgi, intra);
        let mut again = Reader::span(r.input(), start, end);
        t = decode_txn(&mut again, depth + 2, Some(&completion), scratch, round)?;
    }
    Ok((t, rest))
}
