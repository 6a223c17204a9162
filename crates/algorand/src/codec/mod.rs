//! Algorand msgpack codec: blocks as algod serves and stores them, transaction messages as peers
//! gossip them, txids by the go-algorand rule, and the payset commitment check.
//!
//! # Formats
//!
//! - A block is msgpack `{"block": {header..., "txns": [SignedTxnInBlock...]}, "cert": {...}}`
//!   (algod `GET /v2/blocks/{round}?format=msgpack`, and one file per round in algod's block
//!   archives) or the bare block map. The header fields read are `rnd`, `gen`, `gh`, `ts` and
//!   `txn`; `gh` is required (every txid needs it), the others default to zero/empty as
//!   go-algorand's `omitempty` encoding leaves zero values out (round 0 has no `rnd`).
//! - A transaction message is one or more concatenated msgpack `SignedTxn` maps (one per
//!   transaction of a group), what go-algorand's `TxnHandler` receives.
//!
//! # Txids
//!
//! A txid is SHA-512/256 over `"TX"` followed by the canonical msgpack encoding of the `txn` map
//! (go-algorand `Transaction.ID`). For a block entry the `txn` map is first completed the way
//! go-algorand `BlockHeader.DecodeSignedTxn` does: `gen` = the header's genesis id when the entry
//! has `hgi` true, and `gh` = the header's genesis hash always (every network here runs under
//! `RequireGenesisHash`); an entry whose `txn` already holds `gen` or `gh` is an error there and
//! here. A message's `txn` maps are hashed as they are (their senders put `gen`/`gh` in).
//!
//! "Canonical" is go-algorand's `protocol.Encode` form: keys sorted, empty values left out,
//! smallest integer and length forms, str and bin kept apart, str bytes kept as bytes even when
//! not UTF-8. Input that is already canonical (everything a go-algorand node writes) is hashed
//! from its own bytes without re-encoding; anything else is re-encoded value by value. A value
//! of all-zero bytes (a zero address) is kept: omitting it needs the field's type, which the
//! codec does not know; go-algorand never writes one.
//!
//! # Cost
//!
//! One pass over the input: each value is read once, and a `txn` map's bytes are read a second
//! time by the hash. Nothing is re-encoded unless the input is not canonical.
//!
//! # Errors
//!
//! Bad bytes give a [`DecodeError`] (never a panic) naming the byte offset and, when the input
//! holds one, the block's round.

mod msgpack;

use rmp::encode::ByteBuf;
use sha2::{Digest, Sha512_256};

use self::msgpack::{RawError, RawErrorKind, Reader, Scan, Token};
use crate::{Round, Txid};

pub(crate) use self::msgpack::{put_bin, put_str};
#[cfg(any(test, feature = "synth"))]
pub(crate) use self::msgpack::{put_array_len, put_bool, put_int, put_map_len, put_uint};

/// Domain-separation prefix of a transaction id (go-algorand `protocol.Transaction`).
pub const TXID_PREFIX: &[u8; 2] = b"TX";

/// Domain-separation prefix of a flat payset commitment (go-algorand `protocol.PaysetFlat`).
pub const PAYSET_FLAT_PREFIX: &[u8; 2] = b"PF";

/// Why bytes are not a block or a transaction message.
///
/// `round` is the block's round when the input holds one (`None` for messages, and for blocks
/// too broken to show a `rnd`); `offset` is a byte offset into the input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ends inside a value (or a length header promises more bytes than there are).
    #[error("{}input ends inside a value at byte {offset}", RoundPrefix(*round))]
    Truncated {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the value or length that runs past the end.
        offset: usize,
    },
    /// Byte 0xc1, which msgpack reserves and never uses.
    #[error("{}reserved msgpack byte 0xc1 at byte {offset}", RoundPrefix(*round))]
    ReservedMarker {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the byte.
        offset: usize,
    },
    /// Arrays and maps nested deeper than the codec's limit (64).
    #[error("{}nesting deeper than 64 at byte {offset}", RoundPrefix(*round))]
    TooDeep {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the value that is too deep.
        offset: usize,
    },
    /// A field holds the wrong msgpack type (or a byte string of the wrong length).
    #[error("{}`{field}` at byte {offset}: expected {expected}", RoundPrefix(*round))]
    WrongType {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the value.
        offset: usize,
        /// The field, as go-algorand's msgpack names it (`rnd`, `txn.snd`, ...).
        field: &'static str,
        /// What it must be.
        expected: &'static str,
    },
    /// A required field is absent.
    #[error("{}missing required field `{field}`", RoundPrefix(*round))]
    MissingField {
        /// The block's round, if known.
        round: Option<Round>,
        /// The field.
        field: &'static str,
    },
    /// The same key twice in a map the codec reads or re-encodes.
    #[error("{}duplicate map key at byte {offset}", RoundPrefix(*round))]
    DuplicateKey {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the second occurrence.
        offset: usize,
    },
    /// A map key that is not a string or an integer.
    #[error("{}map key at byte {offset} is not a string or an integer", RoundPrefix(*round))]
    BadKey {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the key.
        offset: usize,
    },
    /// Bytes after the top-level block value.
    #[error("{}{len} trailing bytes after the block, from byte {offset}", RoundPrefix(*round))]
    TrailingBytes {
        /// The block's round, if known.
        round: Option<Round>,
        /// Offset of the first trailing byte.
        offset: usize,
        /// How many bytes trail.
        len: usize,
    },
    /// A payset entry's `txn` holds `gen` or `gh` itself, which go-algorand
    /// `BlockHeader.DecodeSignedTxn` rejects (the block supplies them).
    #[error("{}payset entry {intra}: `txn` holds `{field}` itself", RoundPrefix(*round))]
    GenesisInBlockTxn {
        /// The block's round, if known.
        round: Option<Round>,
        /// Index of the entry in the payset.
        intra: usize,
        /// `gen` or `gh`.
        field: &'static str,
    },
    /// A transaction message with no transaction in it.
    #[error("transaction message is empty")]
    EmptyMessage,
    /// Kept from the codec's first contract for callers that wrap other decoders; this codec
    /// reports every failure through the variants above and never returns it.
    #[error("msgpack decoding failed: {0}")]
    Malformed(String),
}

/// Formats `round N: ` or nothing.
struct RoundPrefix(Option<Round>);

impl std::fmt::Display for RoundPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(r) => write!(f, "round {r}: "),
            None => Ok(()),
        }
    }
}

impl DecodeError {
    /// The round of the block the error is in, when known.
    pub fn round(&self) -> Option<Round> {
        match self {
            Self::Truncated { round, .. }
            | Self::ReservedMarker { round, .. }
            | Self::TooDeep { round, .. }
            | Self::WrongType { round, .. }
            | Self::MissingField { round, .. }
            | Self::DuplicateKey { round, .. }
            | Self::BadKey { round, .. }
            | Self::TrailingBytes { round, .. }
            | Self::GenesisInBlockTxn { round, .. } => *round,
            Self::EmptyMessage | Self::Malformed(_) => None,
        }
    }

    fn set_round_if_unknown(&mut self, r: Round) {
        match self {
            Self::Truncated { round, .. }
            | Self::ReservedMarker { round, .. }
            | Self::TooDeep { round, .. }
            | Self::WrongType { round, .. }
            | Self::MissingField { round, .. }
            | Self::DuplicateKey { round, .. }
            | Self::BadKey { round, .. }
            | Self::TrailingBytes { round, .. }
            | Self::GenesisInBlockTxn { round, .. } => {
                round.get_or_insert(r);
            }
            Self::EmptyMessage | Self::Malformed(_) => {}
        }
    }

    fn raw(e: RawError, round: Option<Round>) -> Self {
        let offset = e.offset;
        match e.kind {
            RawErrorKind::Truncated => Self::Truncated { round, offset },
            RawErrorKind::ReservedMarker => Self::ReservedMarker { round, offset },
            RawErrorKind::TooDeep => Self::TooDeep { round, offset },
            RawErrorKind::DuplicateKey => Self::DuplicateKey { round, offset },
            RawErrorKind::BadKey => Self::BadKey { round, offset },
        }
    }
}

/// Why a block's payset does not match its header's commitment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaysetError {
    /// The bytes given are not a block.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The bytes given are a block of another round than the decoded one.
    #[error("round {round}: the bytes given are round {bytes_round}")]
    OtherBlock {
        /// The decoded block's round.
        round: Round,
        /// The round in the bytes.
        bytes_round: Round,
    },
    /// The header has no `txn` commitment.
    #[error("round {round}: the header has no payset commitment (`txn`)")]
    NoCommitment {
        /// The block's round.
        round: Round,
    },
    /// The flat commitment of the payset differs from the header's.
    #[error(
        "round {round}: payset commitment mismatch: header {}, payset {}",
        hex(header),
        hex(computed)
    )]
    Mismatch {
        /// The block's round.
        round: Round,
        /// The header's `txn`.
        header: [u8; 32],
        /// SHA-512/256 of `"PF"` and the payset bytes.
        computed: [u8; 32],
    },
}

fn hex(b: &[u8; 32]) -> String {
    data_encoding::HEXLOWER.encode(b)
}

/// One transaction of a block (or of a transaction message), with what the ledger and the
/// handler need from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    /// The txid by the go-algorand rule.
    pub txid: Txid,
    /// The `type` field as bytes (`pay`, `appl`, ...).
    pub tx_type: Vec<u8>,
    /// The sender address (`snd`), 32 bytes (zero if absent).
    pub sender: [u8; 32],
    /// First valid round (`fv`, 0 if absent).
    pub first_valid: Round,
    /// Last valid round (`lv`, 0 if absent).
    pub last_valid: Round,
    /// The group id (`grp`), if any.
    pub group: Option<[u8; 32]>,
    /// App ids: `apid`, foreign apps (`apfa`) and access-list app references (`al[i].p`, go-algorand
    /// `ResourceRef.App`); 0 (creation) dropped; distinct, in that order, first-seen within it.
    pub app_ids: Vec<u64>,
}

/// A decoded block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Header `rnd`.
    pub round: Round,
    /// Header `gen` (genesis id), bytes.
    pub genesis_id: Vec<u8>,
    /// Header `gh` (genesis hash).
    pub genesis_hash: [u8; 32],
    /// Header `ts` (seconds since the Unix epoch).
    pub timestamp: i64,
    /// Header `txn` (payset commitment), if present.
    pub txn_commitment: Option<[u8; 32]>,
    /// The payset in block order.
    pub txns: Vec<Txn>,
    /// Where each payset entry (`SignedTxnInBlock` map) starts in the bytes this block was
    /// decoded from, one per txn (empty for a block built by hand). The ledger's compact txid
    /// index points at entries by these offsets ([`payset_offsets`] computes them from bytes
    /// alone, [`payset_entry_txid`] reads one entry's txid).
    pub entry_offsets: Vec<usize>,
}

impl Block {
    /// Checks the header's `txn` commitment against the payset in `bytes` (the bytes this block
    /// was decoded from): SHA-512/256 over `"PF"` and the payset's msgpack bytes, go-algorand's
    /// `Payset.CommitFlat` (protocols before `PaysetCommitMerkle`; later blocks commit to a
    /// Merkle tree and will not match). The payset is hashed as it is stored, which is its
    /// canonical encoding for every block a go-algorand node writes.
    ///
    /// # Errors
    /// [`PaysetError`]: bytes that are not a block (or another round's), no commitment, or a
    /// mismatch (which also holds for blocks whose payset was trimmed, like the betanet test
    /// block of the indexer).
    pub fn verify_payset(&self, bytes: &[u8]) -> Result<(), PaysetError> {
        let located = locate_payset(bytes)?;
        if located.round != self.round {
            return Err(PaysetError::OtherBlock {
                round: self.round,
                bytes_round: located.round,
            });
        }
        let header = self
            .txn_commitment
            .ok_or(PaysetError::NoCommitment { round: self.round })?;
        let computed = payset_digest(located.payset);
        if computed == header {
            Ok(())
        } else {
            Err(PaysetError::Mismatch {
                round: self.round,
                header,
                computed,
            })
        }
    }
}

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

struct Located<'a> {
    round: Round,
    payset: &'a [u8],
}

/// Finds the block's round and its `txns` bytes (empty when absent), checking structure only.
fn locate_payset(bytes: &[u8]) -> Result<Located<'_>, DecodeError> {
    let mut r = Reader::new(bytes);
    let fail = |e: RawError| DecodeError::raw(e, peek_round(bytes));
    let Some(located) = locate_in_map(&mut r, 0, true).map_err(fail)? else {
        return Err(DecodeError::WrongType {
            round: None,
            offset: 0,
            field: "block",
            expected: "a map",
        });
    };
    if !r.at_end() {
        return Err(DecodeError::TrailingBytes {
            round: Some(located.round),
            offset: r.pos(),
            len: bytes.len() - r.pos(),
        });
    }
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
                let (s, e, _) = r.scan_span(depth + 1)?;
                out.payset = &r.input()[s..e];
            }
            _ => r.skip(depth + 1)?,
        }
    }
    Ok(Some(inner.unwrap_or(out)))
}

/// Best-effort round of a (possibly broken) block: the first `rnd` of the top-level map or of
/// its `block` map, read until the first structural error.
fn peek_round(bytes: &[u8]) -> Option<Round> {
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

/// Decodes a block: msgpack `{block, cert}` or a bare block.
///
/// # Errors
///
/// [`DecodeError`] on any malformed input (see its variants; the error names the round when the
/// input shows it); never panics.
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::decode_block;
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txn = SynthTxn::payment([7; 32], 10, 1010);
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &[txn]);
/// let block = decode_block(&bytes)?;
/// assert_eq!((block.round, block.txns.len()), (11, 1));
/// block.verify_payset(&bytes).expect("synthetic blocks carry a correct commitment");
/// assert!(decode_block(&bytes[..bytes.len() - 1]).is_err());
/// # Ok::<(), txgate_algorand::codec::DecodeError>(())
/// ```
pub fn decode_block(bytes: &[u8]) -> Result<Block, DecodeError> {
    decode_block_inner(bytes).map_err(|mut e| {
        if e.round().is_none()
            && let Some(r) = peek_round(bytes)
        {
            e.set_round_if_unknown(r);
        }
        e
    })
}

fn decode_block_inner(bytes: &[u8]) -> Result<Block, DecodeError> {
    let mut r = Reader::new(bytes);
    let block = parse_block_map(&mut r, 0, true)?;
    if !r.at_end() {
        return Err(DecodeError::TrailingBytes {
            round: Some(block.round),
            offset: r.pos(),
            len: bytes.len() - r.pos(),
        });
    }
    Ok(block)
}

/// Header fields seen so far in a block map.
#[derive(Default)]
struct Header<'a> {
    round: Option<Round>,
    genesis_id: Option<&'a [u8]>,
    genesis_hash: Option<[u8; 32]>,
    timestamp: Option<i64>,
    commitment: Option<[u8; 32]>,
    /// `txns` decoded in place (gen and gh were already known).
    txns: Option<(Vec<Txn>, Vec<usize>)>,
    /// `txns` span, kept for after the map when gen or gh came later.
    deferred: Option<(usize, usize)>,
}

fn parse_block_map(r: &mut Reader<'_>, depth: usize, top: bool) -> Result<Block, DecodeError> {
    let at = r.pos();
    let n = match r.token().map_err(|e| DecodeError::raw(e, None))?.0 {
        Token::Map(n) => n,
        _ => {
            return Err(DecodeError::WrongType {
                round: None,
                offset: at,
                field: "block",
                expected: "a map",
            });
        }
    };
    let mut h = Header::default();
    let mut inner: Option<Block> = None;
    for _ in 0..n {
        let round = h.round;
        let raw = |e| DecodeError::raw(e, round);
        let key_at = r.pos();
        let key = read_key(r, round)?;
        if inner.is_some() {
            // The rest of a `{block, cert}` wrapper (the certificate) is checked, not read.
            r.skip(depth + 1).map_err(raw)?;
            continue;
        }
        let dup = || DecodeError::DuplicateKey {
            round,
            offset: key_at,
        };
        match key {
            b"block" if top => {
                inner = Some(parse_block_map(r, depth + 1, false)?);
            }
            b"rnd" => {
                if h.round.is_some() {
                    return Err(dup());
                }
                h.round = Some(read_uint(r, round, "rnd")?);
            }
            b"gen" => {
                if h.genesis_id.is_some() {
                    return Err(dup());
                }
                h.genesis_id = Some(read_bytes(r, round, "gen")?);
            }
            b"gh" => {
                if h.genesis_hash.is_some() {
                    return Err(dup());
                }
                h.genesis_hash = Some(read_32(r, round, "gh")?);
            }
            b"ts" => {
                if h.timestamp.is_some() {
                    return Err(dup());
                }
                h.timestamp = Some(read_int(r, round, "ts")?);
            }
            b"txn" => {
                if h.commitment.is_some() {
                    return Err(dup());
                }
                h.commitment = Some(read_32(r, round, "txn")?);
            }
            b"txns" => {
                if h.txns.is_some() || h.deferred.is_some() {
                    return Err(dup());
                }
                match (h.genesis_id, h.genesis_hash) {
                    (Some(gen_id), Some(gh)) => {
                        h.txns = Some(decode_payset(r, depth + 1, gen_id, &gh, round)?);
                    }
                    _ => {
                        let (s, e, _) = r.scan_span(depth + 1).map_err(raw)?;
                        h.deferred = Some((s, e));
                    }
                }
            }
            _ => r.skip(depth + 1).map_err(raw)?,
        }
    }
    if let Some(block) = inner {
        return Ok(block);
    }
    let round = h.round.unwrap_or(0);
    let genesis_hash = h.genesis_hash.ok_or(DecodeError::MissingField {
        round: Some(round),
        field: "gh",
    })?;
    let genesis_id = h.genesis_id.unwrap_or_default();
    let (txns, entry_offsets) = match (h.txns, h.deferred) {
        (Some(txns), _) => txns,
        (None, Some((s, e))) => {
            let mut pr = Reader::span(r.input(), s, e);
            decode_payset(&mut pr, depth + 1, genesis_id, &genesis_hash, Some(round))?
        }
        (None, None) => (Vec::new(), Vec::new()),
    };
    Ok(Block {
        round,
        genesis_id: genesis_id.to_vec(),
        genesis_hash,
        timestamp: h.timestamp.unwrap_or(0),
        txn_commitment: h.commitment,
        txns,
        entry_offsets,
    })
}

/// What to add to a `txn` map before hashing (block entries only).
struct Completion<'e> {
    /// Pre-encoded `gen` value (str), when the block's genesis id is not empty.
    gen_value: Option<&'e [u8]>,
    /// Pre-encoded `gh` value (bin 32).
    gh_value: &'e [u8],
    /// Index of the entry in the payset (for errors).
    intra: usize,
}

fn decode_payset(
    r: &mut Reader<'_>,
    depth: usize,
    genesis_id: &[u8],
    genesis_hash: &[u8; 32],
    round: Option<Round>,
) -> Result<(Vec<Txn>, Vec<usize>), DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let at = r.pos();
    let n = match r.token().map_err(raw)?.0 {
        Token::Array(n) => n,
        Token::Nil => 0,
        _ => {
            return Err(DecodeError::WrongType {
                round,
                offset: at,
                field: "txns",
                expected: "an array",
            });
        }
    };
    let genesis = Genesis::new(genesis_id, genesis_hash);
    let mut scratch = Vec::new();
    // A length header is checked against the bytes left, not trusted for a large allocation.
    let mut txns = Vec::with_capacity((n as usize).min(4096));
    let mut offsets = Vec::with_capacity((n as usize).min(4096));
    for intra in 0..n as usize {
        offsets.push(r.pos());
        txns.push(decode_entry(
            r,
            depth,
            &genesis,
            intra,
            &mut scratch,
            round,
        )?);
    }
    Ok((txns, offsets))
}

/// A block's genesis id and hash, pre-encoded as the values that complete its txns' maps.
struct Genesis<'g> {
    id: &'g [u8],
    gen_buf: ByteBuf,
    gh_buf: ByteBuf,
}

impl<'g> Genesis<'g> {
    fn new(id: &'g [u8], hash: &[u8; 32]) -> Self {
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
}

/// Decodes the payset entry (a `SignedTxnInBlock` map) under `r`, entry `intra` of its payset.
fn decode_entry<'a>(
    r: &mut Reader<'a>,
    depth: usize,
    genesis: &Genesis<'_>,
    intra: usize,
    scratch: &mut Vec<Entry<'a>>,
    round: Option<Round>,
) -> Result<Txn, DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let (genesis_id, gen_buf, gh_buf) = (genesis.id, &genesis.gen_buf, &genesis.gh_buf);
    let at = r.pos();
    let Token::Map(m) = r.token().map_err(raw)?.0 else {
        return Err(DecodeError::WrongType {
            round,
            offset: at,
            field: "txns[]",
            expected: "a SignedTxnInBlock map",
        });
    };
    let mut hgi: Option<bool> = None;
    // (txn, its span, whether it was completed with `gen`)
    let mut txn: Option<(Txn, usize, usize, bool)> = None;
    for _ in 0..m {
        let key_at = r.pos();
        let key = read_key(r, round)?;
        match key {
            b"txn" => {
                if txn.is_some() {
                    return Err(DecodeError::DuplicateKey {
                        round,
                        offset: key_at,
                    });
                }
                let with_gen = hgi.unwrap_or(false) && !genesis_id.is_empty();
                let completion = Completion {
                    gen_value: with_gen.then_some(gen_buf.as_slice()),
                    gh_value: gh_buf.as_slice(),
                    intra,
                };
                let start = r.pos();
                let t = decode_txn(r, depth + 2, Some(&completion), scratch, round)?;
                txn = Some((t, start, r.pos(), with_gen));
            }
            b"hgi" => {
                if hgi.is_some() {
                    return Err(DecodeError::DuplicateKey {
                        round,
                        offset: key_at,
                    });
                }
                let at = r.pos();
                hgi = Some(match r.token().map_err(raw)?.0 {
                    Token::Bool(b) => b,
                    _ => {
                        return Err(DecodeError::WrongType {
                            round,
                            offset: at,
                            field: "hgi",
                            expected: "a bool",
                        });
                    }
                });
            }
            _ => r.skip(depth + 2).map_err(raw)?,
        }
    }
    let Some((mut t, start, end, with_gen)) = txn else {
        return Err(DecodeError::MissingField {
            round,
            field: "txns[].txn",
        });
    };
    let want_gen = hgi.unwrap_or(false) && !genesis_id.is_empty();
    if want_gen != with_gen {
        // `hgi` came after `txn` (not canonical order): hash again with the right map.
        let completion = Completion {
            gen_value: want_gen.then_some(gen_buf.as_slice()),
            gh_value: gh_buf.as_slice(),
            intra,
        };
        let mut again = Reader::span(r.input(), start, end);
        t = decode_txn(&mut again, depth + 2, Some(&completion), scratch, round)?;
    }
    Ok(t)
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
    let mut r = Reader::new(payset);
    let n = match r.token().map_err(raw)?.0 {
        Token::Array(n) => n,
        Token::Nil => 0,
        _ => {
            return Err(DecodeError::WrongType {
                round,
                offset: base,
                field: "txns",
                expected: "an array",
            });
        }
    };
    let mut offsets = Vec::with_capacity((n as usize).min(payset.len()));
    for _ in 0..n {
        offsets.push(base + r.pos());
        r.skip(1).map_err(raw)?;
    }
    Ok(offsets)
}

/// The txid of the payset entry that starts at byte `offset` of `bytes` (an offset
/// [`payset_offsets`] returned), in a block with genesis id `genesis_id` and hash `genesis_hash`:
/// the same rule as [`decode_block`] (`gen` added when the entry has `hgi`, `gh` always), for one
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
    let mut scratch = Vec::new();
    Ok(decode_entry(&mut r, 0, &genesis, 0, &mut scratch, None)?.txid)
}

/// Decodes a transaction message: one or more concatenated msgpack `SignedTxn` maps (a group).
/// Each txid is over the `txn` map as sent (no `gen`/`gh` added).
///
/// # Errors
///
/// [`DecodeError`] on any malformed input (no transaction at all is
/// [`DecodeError::EmptyMessage`]; bytes after the last map that are not a whole map are an
/// error too); never panics.
pub fn decode_txn_message(bytes: &[u8]) -> Result<Vec<Txn>, DecodeError> {
    let mut r = Reader::new(bytes);
    let raw = |e| DecodeError::raw(e, None);
    let mut scratch = Vec::new();
    let mut out = Vec::new();
    while !r.at_end() {
        let at = r.pos();
        let Token::Map(m) = r.token().map_err(raw)?.0 else {
            return Err(DecodeError::WrongType {
                round: None,
                offset: at,
                field: "SignedTxn",
                expected: "a map",
            });
        };
        let mut txn = None;
        for _ in 0..m {
            let key_at = r.pos();
            let key = read_key(&mut r, None)?;
            if key == b"txn" {
                if txn.is_some() {
                    return Err(DecodeError::DuplicateKey {
                        round: None,
                        offset: key_at,
                    });
                }
                txn = Some(decode_txn(&mut r, 1, None, &mut scratch, None)?);
            } else {
                r.skip(1).map_err(raw)?;
            }
        }
        out.push(txn.ok_or(DecodeError::MissingField {
            round: None,
            field: "txn",
        })?);
    }
    if out.is_empty() {
        return Err(DecodeError::EmptyMessage);
    }
    Ok(out)
}

/// One entry of a `txn` map on its way to the hash.
enum EntryValue {
    /// Canonical bytes of the input, `start..end`.
    Span(usize, usize),
    /// Re-encoded bytes.
    Owned(Vec<u8>),
    /// A completion value (`gen` or `gh`), by index: 0 = gen, 1 = gh.
    Completion(u8),
}

struct Entry<'a> {
    key: &'a [u8],
    key_at: usize,
    value: EntryValue,
}

/// Decodes the `txn` map under `r` (at `depth`), completing it with `completion` (block entries),
/// extracting the fields and hashing its canonical form.
fn decode_txn<'a>(
    r: &mut Reader<'a>,
    depth: usize,
    completion: Option<&Completion<'_>>,
    scratch: &mut Vec<Entry<'a>>,
    round: Option<Round>,
) -> Result<Txn, DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let input = r.input();
    let at = r.pos();
    let Token::Map(n) = r.token().map_err(raw)?.0 else {
        return Err(DecodeError::WrongType {
            round,
            offset: at,
            field: "txn",
            expected: "a map",
        });
    };
    scratch.clear();
    let mut f = Fields::default();
    let mut sorted = true;
    for _ in 0..n {
        let key_at = r.pos();
        let key = read_key(r, round)?;
        if let Some(c) = completion
            && (key == b"gen" || key == b"gh")
        {
            return Err(DecodeError::GenesisInBlockTxn {
                round,
                intra: c.intra,
                field: if key == b"gen" { "gen" } else { "gh" },
            });
        }
        let (start, end, Scan { canonical, empty }) = r.scan_span(depth + 1).map_err(raw)?;
        if empty {
            continue;
        }
        f.read(key, &mut Reader::span(input, start, end), depth + 1, round)?;
        let value = if canonical {
            EntryValue::Span(start, end)
        } else {
            let mut out = ByteBuf::new();
            let empty =
                msgpack::write_canonical(&mut Reader::span(input, start, end), &mut out, depth + 1)
                    .map_err(raw)?;
            if empty {
                continue;
            }
            EntryValue::Owned(out.into_vec())
        };
        if let Some(last) = scratch.last() {
            sorted &= last.key < key;
        }
        scratch.push(Entry { key, key_at, value });
    }
    if let Some(c) = completion {
        let mut add = |key: &'static [u8], index| {
            let entry = Entry {
                key,
                key_at: at,
                value: EntryValue::Completion(index),
            };
            if sorted {
                // Keys are unique and sorted, and `key` is not among them (checked above).
                let pos = scratch.partition_point(|e| e.key < key);
                scratch.insert(pos, entry);
            } else {
                scratch.push(entry);
            }
        };
        if c.gen_value.is_some() {
            add(b"gen", 0);
        }
        add(b"gh", 1);
    }
    if !sorted {
        scratch.sort_by(|a, b| a.key.cmp(b.key));
        if let Some(w) = scratch.windows(2).find(|w| w[0].key == w[1].key) {
            return Err(DecodeError::DuplicateKey {
                round,
                offset: w[0].key_at.max(w[1].key_at),
            });
        }
    }
    let tx_type = f.tx_type.ok_or(DecodeError::MissingField {
        round,
        field: "txn.type",
    })?;

    let mut h = Sha512_256::new();
    h.update(TXID_PREFIX);
    h.update(msgpack::map_header(scratch.len()).as_ref());
    for e in scratch.iter() {
        h.update(msgpack::str_header(e.key.len()).as_ref());
        h.update(e.key);
        match &e.value {
            EntryValue::Span(s, t) => h.update(&input[*s..*t]),
            EntryValue::Owned(v) => h.update(v),
            EntryValue::Completion(i) => {
                let c = completion.map(|c| {
                    if *i == 0 {
                        c.gen_value.unwrap_or(&[])
                    } else {
                        c.gh_value
                    }
                });
                h.update(c.unwrap_or(&[]));
            }
        }
    }
    let txid = Txid(h.finalize().into());

    let app_ids = distinct_app_ids(
        f.apid
            .into_iter()
            .chain(f.apps.iter().copied())
            .chain(f.access_apps.iter().copied()),
    );
    Ok(Txn {
        txid,
        tx_type: tx_type.to_vec(),
        sender: f.sender.unwrap_or([0; 32]),
        first_valid: f.first_valid.unwrap_or(0),
        last_valid: f.last_valid.unwrap_or(0),
        group: f.group,
        app_ids,
    })
}

/// The fields of a `txn` map the ledger and the handler use.
#[derive(Default)]
struct Fields<'a> {
    tx_type: Option<&'a [u8]>,
    sender: Option<[u8; 32]>,
    first_valid: Option<u64>,
    last_valid: Option<u64>,
    group: Option<[u8; 32]>,
    apid: Option<u64>,
    apps: Vec<u64>,
    access_apps: Vec<u64>,
}

impl<'a> Fields<'a> {
    /// Reads `key`'s value from `r` when it is a field of interest.
    fn read(
        &mut self,
        key: &[u8],
        r: &mut Reader<'a>,
        depth: usize,
        round: Option<Round>,
    ) -> Result<(), DecodeError> {
        match key {
            b"type" => self.tx_type = Some(read_bytes(r, round, "txn.type")?),
            b"snd" => self.sender = Some(read_32(r, round, "txn.snd")?),
            b"fv" => self.first_valid = Some(read_uint(r, round, "txn.fv")?),
            b"lv" => self.last_valid = Some(read_uint(r, round, "txn.lv")?),
            b"grp" => self.group = Some(read_32(r, round, "txn.grp")?),
            b"apid" => self.apid = Some(read_uint(r, round, "txn.apid")?),
            b"apfa" => {
                let n = read_array_len(r, round, "txn.apfa")?;
                for _ in 0..n {
                    self.apps.push(read_uint(r, round, "txn.apfa[]")?);
                }
            }
            b"al" => {
                let n = read_array_len(r, round, "txn.al")?;
                for _ in 0..n {
                    let at = r.pos();
                    let Token::Map(m) = r.token().map_err(|e| DecodeError::raw(e, round))?.0 else {
                        return Err(DecodeError::WrongType {
                            round,
                            offset: at,
                            field: "txn.al[]",
                            expected: "a ResourceRef map",
                        });
                    };
                    for _ in 0..m {
                        if read_key(r, round)? == b"p" {
                            self.access_apps.push(read_uint(r, round, "txn.al[].p")?);
                        } else {
                            r.skip(depth + 2).map_err(|e| DecodeError::raw(e, round))?;
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

fn read_key<'a>(r: &mut Reader<'a>, round: Option<Round>) -> Result<&'a [u8], DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Str(k) | Token::Bin(k) => Ok(k),
        _ => Err(DecodeError::BadKey { round, offset: at }),
    }
}

fn wrong(
    round: Option<Round>,
    offset: usize,
    field: &'static str,
    expected: &'static str,
) -> DecodeError {
    DecodeError::WrongType {
        round,
        offset,
        field,
        expected,
    }
}

fn read_uint(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<u64, DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Uint(v) => Ok(v),
        _ => Err(wrong(round, at, field, "an unsigned integer")),
    }
}

fn read_int(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<i64, DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Uint(v) => i64::try_from(v).map_err(|_| wrong(round, at, field, "an int64")),
        Token::Neg(v) => Ok(v),
        _ => Err(wrong(round, at, field, "an integer")),
    }
}

fn read_bytes<'a>(
    r: &mut Reader<'a>,
    round: Option<Round>,
    field: &'static str,
) -> Result<&'a [u8], DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Str(s) | Token::Bin(s) => Ok(s),
        _ => Err(wrong(round, at, field, "a string")),
    }
}

fn read_32(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<[u8; 32], DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Bin(b) => b
            .try_into()
            .map_err(|_| wrong(round, at, field, "32 bytes of bin")),
        _ => Err(wrong(round, at, field, "32 bytes of bin")),
    }
}

fn read_array_len(
    r: &mut Reader<'_>,
    round: Option<Round>,
    field: &'static str,
) -> Result<u32, DecodeError> {
    let at = r.pos();
    match r.token().map_err(|e| DecodeError::raw(e, round))?.0 {
        Token::Array(n) => Ok(n),
        Token::Nil => Ok(0),
        _ => Err(wrong(round, at, field, "an array")),
    }
}

#[cfg(test)]
mod tests;

/// The distinct non-zero ids of `ids`, in first-seen order, in O(n log n) whatever the input
/// (a peer controls how many foreign apps a message names: a quadratic scan would let one
/// message burn CPU by the square of its size). A group's apps are the distinct ids of its
/// transactions' [`Txn::app_ids`].
///
/// ```
/// use txgate_algorand::codec::distinct_app_ids;
/// assert_eq!(distinct_app_ids([7, 0, 3, 7, 3].into_iter()), vec![7, 3]);
/// ```
pub fn distinct_app_ids(ids: impl Iterator<Item = u64>) -> Vec<u64> {
    /// Up to this many ids a linear scan beats a set.
    const SMALL: usize = 16;
    let mut out: Vec<u64> = Vec::new();
    let mut seen: Option<std::collections::HashSet<u64>> = None;
    for id in ids.filter(|&id| id != 0) {
        let new = match &mut seen {
            Some(set) => set.insert(id),
            None if out.len() < SMALL => !out.contains(&id),
            None => {
                let mut set: std::collections::HashSet<u64> = out.iter().copied().collect();
                let new = set.insert(id);
                seen = Some(set);
                new
            }
        };
        if new {
            out.push(id);
        }
    }
    out
}
