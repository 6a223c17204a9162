//! Blocks: the header fields txgate reads and the payset's entries, each `txn` completed with
//! the header's `gen`/`gh` before hashing (go-algorand `BlockHeader.DecodeSignedTxn`).

use std::ops::Range;
use std::sync::Arc;

use super::entry::{Genesis, decode_entry, read_payset_len};
use super::error::{DecodeError, PaysetError};
use super::leaves::{Leaves, Trees};
use super::msgpack::Reader;
use super::payset::{Located, locate_payset, payset_digest, peek_round};
use super::read::{
    expect_end, once, read_32, read_64, read_bytes, read_int, read_key, read_map_len, read_uint,
};
use super::txid::TxnMap;
use super::txn::Txn;
use super::verify::{Rule, rule};
use crate::ids::Round;

/// A decoded block.
///
/// [`decode_block`] builds it. It is `#[non_exhaustive]`, so that a later version can read
/// another header field without breaking anyone: outside this crate (tests) build one with
/// [`Block::new`] and the `with_*` setters, which take the new value of the field they are named
/// after and return the block. The fields stay public for reading and assigning.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Block {
    /// Header `rnd`.
    pub round: Round,
    /// Header `gen` (genesis id), bytes.
    pub genesis_id: Vec<u8>,
    /// Header `gh` (genesis hash).
    pub genesis_hash: [u8; 32],
    /// Header `ts` (seconds since the Unix epoch).
    pub timestamp: i64,
    /// Header `proto`: the consensus version string (empty when absent), which decides the
    /// payset commitments [`verify`](Self::verify) checks.
    pub protocol: Vec<u8>,
    /// Header `txn` (SHA-512/256 payset commitment: flat or Merkle by protocol), if present.
    pub txn_commitment: Option<[u8; 32]>,
    /// Header `txn256` (SHA-256 vector commitment to the payset), if present.
    pub txn256_commitment: Option<[u8; 32]>,
    /// Header `txn512` (SHA-512 vector commitment to the payset), if present.
    pub txn512_commitment: Option<[u8; 64]>,
    /// The payset in block order.
    pub txns: Vec<Txn>,
    /// Where each payset entry (`SignedTxnInBlock` map) starts in the bytes this block was
    /// decoded from, one per txn (empty for a block from [`Block::new`] until set).
    /// [`payset_offsets`](super::payset_offsets) computes them from bytes alone and
    /// [`payset_entry_txid`](super::payset_entry_txid) reads one entry's txid (the ledger's
    /// format-2 txid index pointed at entries this way);
    /// [`gossip_messages`](super::gossip_messages) relies on one per txn.
    pub entry_offsets: Vec<usize>,
}

impl Block {
    /// A block of round `round` of the network `genesis_id` (bytes) and `genesis_hash`, its other
    /// fields as the decoder leaves absent ones: timestamp 0, no protocol, no payset
    /// commitment, an empty payset and no entry offsets.
    ///
    /// Nothing ties the fields together: a block built by hand needs
    /// [`entry_offsets`](Self::entry_offsets) that match the bytes stored beside it wherever
    /// entries are found by offset (gossip messages), and txns whose txids are those of the
    /// bytes' entries (the ledger's txid index holds the block's txids).
    ///
    /// ```
    /// use txgate_algorand::Txid;
    /// use txgate_algorand::codec::{Block, Txn};
    ///
    /// let b = Block::new(7, b"testnet-v1.0", [1; 32]);
    /// assert_eq!((b.round, b.genesis_id.as_slice()), (7, &b"testnet-v1.0"[..]));
    /// assert_eq!((b.genesis_hash, b.timestamp, b.txn_commitment), ([1; 32], 0, None));
    /// assert!(b.txns.is_empty() && b.entry_offsets.is_empty());
    /// let txn = Txn::new(Txid([9; 32]), b"pay");
    /// let b = b
    ///     .with_timestamp(1_700_000_000)
    ///     .with_txn_commitment(Some([2; 32]))
    ///     .with_txns(vec![txn.clone()])
    ///     .with_entry_offsets(vec![40]);
    /// assert_eq!((b.timestamp, b.txn_commitment), (1_700_000_000, Some([2; 32])));
    /// assert_eq!((b.txns, b.entry_offsets), (vec![txn], vec![40]));
    /// ```
    pub fn new(round: Round, genesis_id: impl Into<Vec<u8>>, genesis_hash: [u8; 32]) -> Self {
        Self {
            round,
            genesis_id: genesis_id.into(),
            genesis_hash,
            timestamp: 0,
            protocol: Vec::new(),
            txn_commitment: None,
            txn256_commitment: None,
            txn512_commitment: None,
            txns: Vec::new(),
            entry_offsets: Vec::new(),
        }
    }

    /// Sets [`timestamp`](Self::timestamp): header `ts`, seconds since the Unix epoch.
    #[must_use]
    pub fn with_timestamp(mut self, timestamp: i64) -> Self {
        self.timestamp = timestamp;
        self
    }

    /// Sets [`txn_commitment`](Self::txn_commitment): header `txn`, the payset commitment
    /// (`None` for none).
    #[must_use]
    pub fn with_txn_commitment(mut self, txn_commitment: Option<[u8; 32]>) -> Self {
        self.txn_commitment = txn_commitment;
        self
    }

    /// Sets [`protocol`](Self::protocol): header `proto`, the consensus version string.
    #[must_use]
    pub fn with_protocol(mut self, protocol: impl Into<Vec<u8>>) -> Self {
        self.protocol = protocol.into();
        self
    }

    /// Sets [`txn256_commitment`](Self::txn256_commitment) and
    /// [`txn512_commitment`](Self::txn512_commitment): header `txn256` and `txn512` (`None` for
    /// none).
    #[must_use]
    pub fn with_vector_commitments(
        mut self,
        txn256: Option<[u8; 32]>,
        txn512: Option<[u8; 64]>,
    ) -> Self {
        self.txn256_commitment = txn256;
        self.txn512_commitment = txn512;
        self
    }

    /// Sets [`txns`](Self::txns): the payset in block order.
    #[must_use]
    pub fn with_txns(mut self, txns: Vec<Txn>) -> Self {
        self.txns = txns;
        self
    }

    /// Sets [`entry_offsets`](Self::entry_offsets): where each payset entry starts in the block's
    /// bytes, one per txn.
    #[must_use]
    pub fn with_entry_offsets(mut self, entry_offsets: Vec<usize>) -> Self {
        self.entry_offsets = entry_offsets;
        self
    }

    /// Checks the header's `txn` commitment against the payset in `bytes` (the bytes this block
    /// was decoded from): SHA-512/256 over `"PF"` and the payset's msgpack bytes, go-algorand's
    /// `Payset.CommitFlat` (protocols before `PaysetCommitMerkle`; later blocks commit to a
    /// Merkle tree and will not match). The payset is hashed as it is stored, which is its
    /// canonical encoding for every block a go-algorand node writes.
    ///
    /// This is the flat kind alone, whatever the block's protocol: [`verify`](Self::verify)
    /// checks every commitment the protocol defines, the round and the network.
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
/// use txgate_algorand::codec::{Expected, decode_block};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txn = SynthTxn::payment([7; 32], 10, 1010);
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &[txn]);
/// let block = decode_block(&bytes)?;
/// assert_eq!((block.round, block.txns.len()), (11, 1));
/// block.verify_payset(&bytes).expect("synthetic blocks carry a correct commitment");
/// block.verify(&bytes, &Expected::round(11)).expect("and verify");
/// assert!(decode_block(&bytes[..bytes.len() - 1]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decode_block(bytes: &[u8]) -> Result<Block, DecodeError> {
    decode_located(bytes, Split::ONE).map(|(block, _)| block)
}

/// [`decode_block`] with the payset's entries decoded on the calling thread and a helper: the
/// same block, and on bad bytes the same error. A payset of fewer than [`MIN_PARALLEL_ENTRIES`]
/// entries is decoded on the calling thread alone.
///
/// The helper is a job on a pool of one thread (`txgate-decode`, started by the first call
/// that needs it, and kept for the process; on a machine with one processor, or if it cannot be
/// started, every payset is decoded on the calling thread). It works on its own copy of
/// `bytes`: it walks the payset without
/// decoding it (about a tenth of a decode's cost) to find where each entry starts, then takes
/// chunks of 16 entries from the back while the caller takes them from the front, until they
/// meet. The caller starts at once and never waits for a helper that has taken nothing (one
/// still waking, or busy with another call's payset); when the helper has taken entries, the
/// caller spins (then yields) until the helper's last chunk is done. On a 1,000-txn block this
/// takes about 0.7-0.8 of one thread's time on a 2-core machine (`add_block_split` in
/// txgate-ledger's examples; BENCHMARKS.md). Calls from several threads share the one helper.
///
/// # Errors
///
/// As [`decode_block`].
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::{decode_block, decode_block_parallel};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txns: Vec<_> = (0..600).map(|i| SynthTxn::payment([7; 32], 10, 1000 + i)).collect();
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &txns);
/// assert_eq!(decode_block_parallel(&bytes)?, decode_block(&bytes)?);
/// let cut = &bytes[..bytes.len() - 100];
/// assert_eq!(decode_block_parallel(cut).unwrap_err(), decode_block(cut).unwrap_err());
/// # Ok::<(), txgate_algorand::codec::DecodeError>(())
/// ```
#[cfg(feature = "parallel")]
pub fn decode_block_parallel(bytes: &[u8]) -> Result<Block, DecodeError> {
    decode_located(bytes, Split::PARALLEL).map(|(block, _)| block)
}

/// [`decode_block_parallel`] for paysets of at least `min_entries` entries, claimed `chunk` (at
/// least 1) at a time, so that the fuzzer's small paysets are split too. Only in fuzzing builds.
///
/// # Errors
///
/// As [`decode_block`].
#[cfg(all(feature = "parallel", fuzzing))]
pub fn decode_block_split(
    bytes: &[u8],
    min_entries: usize,
    chunk: u32,
) -> Result<Block, DecodeError> {
    decode_located(bytes, Split::small(min_entries, chunk)).map(|(block, _)| block)
}

/// [`decode_block`], and where its payset is in `bytes` (what `locate_payset` finds, without a
/// second walk of the block); the payset decoded as `split` says.
pub(super) fn decode_located(
    bytes: &[u8],
    split: Split,
) -> Result<(Block, Located<'_>), DecodeError> {
    decode_block_inner(bytes, split).map_err(|mut e| {
        if e.round().is_none()
            && let Some(r) = peek_round(bytes)
        {
            e.set_round_if_unknown(r);
        }
        e
    })
}

fn decode_block_inner(bytes: &[u8], split: Split) -> Result<(Block, Located<'_>), DecodeError> {
    let mut r = Reader::new(bytes);
    let (block, payset) = parse_block_map(&mut r, 0, true, split)?;
    expect_end(&r, block.round)?;
    let located = Located {
        round: block.round,
        payset: payset.as_ref().map_or(&[][..], |p| &bytes[p.start..p.end]),
        payset_depth: payset.as_ref().map_or(1, |p| p.depth),
        flat: payset.as_ref().and_then(|p| p.flat),
        leaves: payset.and_then(|p| p.leaves).map(Arc::new),
        tree_split: split.parallel.then_some(split.min_entries),
    };
    Ok((block, located))
}

/// Where a block map's `txns` value is: its byte range and its nesting depth, and its flat
/// commitment and tree leaves when they were computed while decoding.
#[derive(Debug)]
struct PaysetSpan {
    start: usize,
    end: usize,
    depth: usize,
    flat: Option<[u8; 32]>,
    leaves: Option<Leaves>,
}

/// Header fields seen so far in a block map.
#[derive(Default)]
struct Header<'a> {
    round: Option<Round>,
    genesis_id: Option<&'a [u8]>,
    genesis_hash: Option<[u8; 32]>,
    timestamp: Option<i64>,
    protocol: Option<&'a [u8]>,
    commitment: Option<[u8; 32]>,
    commitment_256: Option<[u8; 32]>,
    commitment_512: Option<[u8; 64]>,
    /// `txns` decoded in place (gen and gh were already known).
    txns: Option<Payset>,
    /// `txns` span, kept for after the map when gen or gh came later.
    deferred: Option<(usize, usize)>,
}

impl Header<'_> {
    /// What decoding the payset computes besides its entries, for a decode that `split` says a
    /// verification follows, as far as the header read so far says. A guess only saves time:
    /// verification computes what it lacks, and uses leaves computed while decoding only when
    /// they cover the trees it builds.
    ///
    /// - The flat commitment (on a helper only): for a protocol whose rule is the flat one
    ///   (go-algorand `PaysetCommitFlat`), or one txgate does not know whose header has `txn`
    ///   and no vector commitment (the flat hash is tried first).
    /// - The trees' leaves: for a known protocol, the trees of its rule; for one txgate does not
    ///   know, a Merkle `txn` beside each vector commitment the header has.
    fn extras(&self, split: Split) -> Extras {
        if !split.for_verify {
            return Extras::default();
        }
        match rule(self.protocol.unwrap_or_default()) {
            Rule::Known {
                merkle,
                sha256,
                sha512,
            } => Extras {
                flat: !merkle,
                trees: Trees {
                    merkle,
                    sha256,
                    sha512,
                },
            },
            Rule::FromHeader => {
                let sha256 = self.commitment_256.is_some_and(|c| c != [0; 32]);
                let sha512 = self.commitment_512.is_some_and(|c| c != [0; 64]);
                Extras {
                    flat: self.commitment.is_some()
                        && self.commitment_256.is_none()
                        && self.commitment_512.is_none(),
                    trees: Trees {
                        merkle: sha256 || sha512,
                        sha256,
                        sha512,
                    },
                }
            }
            Rule::Unsupported => Extras::default(),
        }
    }
}

/// What a payset's decode computes besides its entries, for a verification that follows.
#[derive(Debug, Clone, Copy, Default)]
// Without feature `parallel` there is no helper to compute the flat commitment.
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
pub(super) struct Extras {
    /// The flat commitment, on a helper (the calling thread alone leaves it to verification).
    pub(super) flat: bool,
    /// The leaves of these trees, for every entry.
    pub(super) trees: Trees,
}

/// Reads the block map under `r` (or the `{block, cert}` wrapper around it, when `top`); returns
/// the block and where its `txns` value is (`None`: absent).
fn parse_block_map(
    r: &mut Reader<'_>,
    depth: usize,
    top: bool,
    split: Split,
) -> Result<(Block, Option<PaysetSpan>), DecodeError> {
    let n = read_map_len(r, None, "block", "a map")?;
    let mut h = Header::default();
    let mut inner: Option<(Block, Option<PaysetSpan>)> = None;
    let mut payset: Option<PaysetSpan> = None;
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
        match key {
            b"block" if top => {
                inner = Some(parse_block_map(r, depth + 1, false, split)?);
            }
            b"rnd" => once(&mut h.round, round, key_at, || read_uint(r, round, "rnd"))?,
            b"gen" => once(&mut h.genesis_id, round, key_at, || {
                read_bytes(r, round, "gen")
            })?,
            b"gh" => once(&mut h.genesis_hash, round, key_at, || {
                read_32(r, round, "gh")
            })?,
            b"ts" => once(&mut h.timestamp, round, key_at, || read_int(r, round, "ts"))?,
            b"txn" => once(&mut h.commitment, round, key_at, || {
                read_32(r, round, "txn")
            })?,
            b"txn256" => once(&mut h.commitment_256, round, key_at, || {
                read_32(r, round, "txn256")
            })?,
            b"txn512" => once(&mut h.commitment_512, round, key_at, || {
                read_64(r, round, "txn512")
            })?,
            b"proto" => once(&mut h.protocol, round, key_at, || {
                read_bytes(r, round, "proto")
            })?,
            b"txns" => {
                if h.txns.is_some() || h.deferred.is_some() {
                    return Err(DecodeError::DuplicateKey {
                        round,
                        offset: key_at,
                    });
                }
                let start = r.pos();
                match (h.genesis_id, h.genesis_hash) {
                    (Some(gen_id), Some(gh)) => {
                        let extras = h.extras(split);
                        h.txns = Some(decode_payset(
                            r,
                            depth + 1,
                            gen_id,
                            &gh,
                            round,
                            split,
                            extras,
                        )?);
                    }
                    _ => {
                        h.deferred = Some(r.skip_span(depth + 1).map_err(raw)?);
                    }
                }
                payset = Some(PaysetSpan {
                    start,
                    end: r.pos(),
                    depth: depth + 1,
                    flat: None,
                    leaves: None,
                });
            }
            _ => r.skip(depth + 1).map_err(raw)?,
        }
    }
    if let Some(inner) = inner {
        return Ok(inner);
    }
    let round = h.round.unwrap_or(0);
    let genesis_hash = h.genesis_hash.ok_or(DecodeError::MissingField {
        round: Some(round),
        field: "gh",
    })?;
    let genesis_id = h.genesis_id.unwrap_or_default();
    let extras = h.extras(split);
    let decoded = match (h.txns, h.deferred) {
        (Some(txns), _) => txns,
        (None, Some((s, e))) => {
            let mut pr = Reader::span(r.input(), s, e);
            decode_payset(
                &mut pr,
                depth + 1,
                genesis_id,
                &genesis_hash,
                Some(round),
                split,
                extras,
            )?
        }
        (None, None) => Payset::default(),
    };
    let Payset {
        entries:
            Entries {
                txns,
                offsets: entry_offsets,
                leaves,
            },
        flat,
    } = decoded;
    if let Some(p) = payset.as_mut() {
        p.flat = flat;
        p.leaves = leaves;
    }
    let block = Block {
        round,
        genesis_id: genesis_id.to_vec(),
        genesis_hash,
        timestamp: h.timestamp.unwrap_or(0),
        protocol: h.protocol.unwrap_or_default().to_vec(),
        txn_commitment: h.commitment,
        txn256_commitment: h.commitment_256,
        txn512_commitment: h.commitment_512,
        txns,
        entry_offsets,
    };
    Ok((block, payset))
}

/// A decoded payset: its entries, and its flat commitment when it was computed on the side
/// ([`Split::for_verify`]).
#[derive(Debug, Default)]
pub(super) struct Payset {
    pub(super) entries: Entries,
    pub(super) flat: Option<[u8; 32]>,
}

/// Decoded payset entries: their txns, where each starts, and their commitment trees' leaves.
#[derive(Debug, Default)]
pub(super) struct Entries {
    pub(super) txns: Vec<Txn>,
    pub(super) offsets: Vec<usize>,
    /// One leaf per entry for each tree asked for; `None` when none was, or when an entry's
    /// leaves could not be computed (verification then walks the payset itself, and meets the
    /// same bytes).
    pub(super) leaves: Option<Leaves>,
}

impl Entries {
    /// No entries yet, room for `capacity`, the leaves of `trees` to be computed.
    pub(super) fn new(trees: Trees, capacity: usize) -> Self {
        Entries {
            txns: Vec::with_capacity(capacity),
            offsets: Vec::with_capacity(capacity),
            leaves: trees.any().then(|| Leaves::new(trees, capacity)),
        }
    }
}

/// Decodes the payset (`txns`: an array of `SignedTxnInBlock` maps, nil when empty) under `r`,
/// on the calling thread or, as `split` says, on it and a helper (`parallel::decode_payset`).
/// The same txns and offsets, and on bad bytes the same error, either way. The leaves of
/// `extras.trees` are computed for every entry; with a helper and `extras.flat`, the helper also
/// computes the payset's flat commitment.
fn decode_payset(
    r: &mut Reader<'_>,
    depth: usize,
    genesis_id: &[u8],
    genesis_hash: &[u8; 32],
    round: Option<Round>,
    split: Split,
    extras: Extras,
) -> Result<Payset, DecodeError> {
    let at_payset = r.pos();
    let n = read_payset_len(r, round)? as usize;
    // A count beyond the bytes left cannot be met (an entry takes at least one byte): one
    // thread meets the error, without a helper for it.
    #[cfg(feature = "parallel")]
    if split.parallel
        && n >= split.min_entries
        && n <= r.remaining()
        && let Some(helpers) = super::parallel::helpers()
    {
        let payset = super::parallel::Payset {
            at: at_payset,
            n,
            depth,
            round,
            chunk: split.chunk,
            extras,
        };
        return payset.decode(r, (genesis_id, genesis_hash), helpers);
    }
    #[cfg(not(feature = "parallel"))]
    let _ = (at_payset, split);
    let genesis = Genesis::new(genesis_id, genesis_hash);
    let entries = decode_entries(r, 0..n, depth, &genesis, round, extras.trees)?;
    Ok(Payset {
        entries,
        flat: None,
    })
}

/// Payset entries below which [`decode_block_parallel`] decodes on the calling thread alone.
/// 256 entries are about 0.3 ms of decoding on one thread (1.2-1.8 us each, AMD EPYC Zen 4),
/// against the helper's costs: waking it (50-300 us on a virtual machine), copying the block
/// and walking the entries (about a tenth of their decode). Below that it would take a small
/// share, or none.
pub const MIN_PARALLEL_ENTRIES: usize = 256;

/// Entries a thread claims at a time when a payset is decoded with a helper: about 25 us of
/// decoding, so that the two threads finish within that of each other.
const CHUNK_ENTRIES: u32 = 16;

/// How a payset is decoded: on the calling thread, or on it and a helper.
#[derive(Debug, Clone, Copy)]
// Without feature `parallel` a payset is always decoded on one thread.
#[cfg_attr(not(feature = "parallel"), allow(dead_code))]
pub(super) struct Split {
    /// With a helper.
    parallel: bool,
    /// Paysets of fewer entries are decoded on the calling thread alone.
    min_entries: usize,
    /// Entries claimed at a time (at least 1).
    chunk: u32,
    /// Decoding for a verification: as the header says verification will need them, each
    /// entry's tree leaves are computed as it is decoded (on whichever thread decodes it), and
    /// a helper computes the payset's flat commitment.
    for_verify: bool,
}

impl Split {
    /// One thread.
    pub(super) const ONE: Split = Split {
        parallel: false,
        min_entries: MIN_PARALLEL_ENTRIES,
        chunk: CHUNK_ENTRIES,
        for_verify: false,
    };

    /// With a helper, for paysets of at least [`MIN_PARALLEL_ENTRIES`] entries.
    #[cfg(feature = "parallel")]
    pub(super) const PARALLEL: Split = Split {
        parallel: true,
        ..Split::ONE
    };

    /// With a helper for paysets of at least `min_entries` entries, claimed `chunk` (at least
    /// 1) at a time: small paysets split too, for tests and fuzzing.
    #[cfg(all(feature = "parallel", any(test, fuzzing)))]
    pub(super) fn small(min_entries: usize, chunk: u32) -> Split {
        Split {
            parallel: true,
            min_entries,
            chunk: chunk.max(1),
            for_verify: false,
        }
    }

    /// This split, for a decode that a verification follows: as the header says verification
    /// will need them, each entry's tree leaves are computed as it is decoded, and a helper
    /// computes the payset's flat commitment meanwhile.
    pub(super) fn for_verify(self) -> Split {
        Split {
            for_verify: true,
            ..self
        }
    }
}

/// Decodes the payset entries `range` (entry indices) under `r`, which is at entry
/// `range.start`, with the leaves of `trees`.
pub(super) fn decode_entries(
    r: &mut Reader<'_>,
    range: Range<usize>,
    depth: usize,
    genesis: &Genesis<'_>,
    round: Option<Round>,
    trees: Trees,
) -> Result<Entries, DecodeError> {
    // Entry counts come from length headers: an allocation is bounded, not trusted.
    let mut out = Entries::new(trees, range.len().min(4096));
    let mut scratch = TxnMap::default();
    decode_entries_onto(r, range, depth, genesis, round, &mut scratch, &mut out)?;
    Ok(out)
}

/// [`decode_entries`] onto `out`, with `scratch` kept between calls. On an error, `out` may
/// hold the range's entries before the failing one.
pub(super) fn decode_entries_onto<'a: 'm, 'm>(
    r: &mut Reader<'a>,
    range: Range<usize>,
    depth: usize,
    genesis: &'m Genesis<'_>,
    round: Option<Round>,
    scratch: &mut TxnMap<'m>,
    out: &mut Entries,
) -> Result<(), DecodeError> {
    for intra in range {
        let start = r.pos();
        out.offsets.push(start);
        let txn = decode_entry(r, depth, genesis, intra, scratch, round)?.0;
        if out.leaves.is_some() {
            push_leaves(&mut out.leaves, r, start, depth, &txn, scratch);
        }
        out.txns.push(txn);
    }
    Ok(())
}

/// Pushes onto `leaves` those of the entry just decoded from `start` to where `r` is
/// (`scratch` holds its completed `txn` map). Bytes that decode but cannot be hashed here (not
/// expected) drop the leaves: verification then walks the payset itself. Out of line, so that a
/// decode without leaves keeps its loop as it was.
#[inline(never)]
fn push_leaves(
    leaves: &mut Option<Leaves>,
    r: &Reader<'_>,
    start: usize,
    depth: usize,
    txn: &Txn,
    scratch: &TxnMap<'_>,
) {
    let Some(l) = leaves else { return };
    let (input, end) = (r.input(), r.pos());
    let pushed = Reader::span(input, start, end)
        .scan(depth + 1)
        .and_then(|scan| {
            l.push(
                input,
                (start, end),
                scan.canonical,
                depth,
                &txn.txid,
                scratch,
            )
        });
    if pushed.is_err() {
        *leaves = None;
    }
}
