//! Block verification: the payset against the header's commitments for the block's protocol,
//! the round and the network against what the caller expects ([`Block::verify`]). The rules,
//! what they cover and what they do not are in the [`codec`](super) docs ("Verification").

use std::fmt;

use super::block::{Block, Split, decode_located};
use super::entry::{Genesis, decode_entry, read_payset_len};
use super::error::DecodeError;
use super::leaves::{Leaves, Trees};
use super::msgpack::{Reader, Token};
use super::payset::{Located, locate_payset};
use super::read::{read_key, read_map_len};
use super::trees::roots;
use super::txid::TxnMap;
use super::txn::read_txn_map;
use crate::ids::{Round, Txid};

/// Domain prefix of a payset Merkle leaf (go-algorand `protocol.TxnMerkleLeaf`).
pub const TXN_MERKLE_LEAF_PREFIX: &[u8; 2] = b"TL";
/// Domain prefix of an inner Merkle node (go-algorand `protocol.MerkleArrayNode`).
pub const MERKLE_NODE_PREFIX: &[u8; 2] = b"MA";
/// Domain prefix of a vector commitment's padding leaf (go-algorand
/// `protocol.MerkleVectorCommitmentBottomLeaf`).
pub const MERKLE_BOTTOM_LEAF_PREFIX: &[u8; 2] = b"MB";
/// Domain prefix of a `SignedTxnInBlock` hash (go-algorand `protocol.SignedTxnInBlock`).
pub const SIGNED_TXN_IN_BLOCK_PREFIX: &[u8; 4] = b"STIB";

/// One of a header's payset commitments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Commitment {
    /// `txn` as the flat SHA-512/256 hash of the payset (`PaysetCommitFlat`).
    Flat,
    /// `txn` as the SHA-512/256 Merkle root (`PaysetCommitMerkle`).
    Merkle,
    /// `txn256`, the SHA-256 vector commitment.
    Sha256,
    /// `txn512`, the SHA-512 vector commitment.
    Sha512,
}

impl Commitment {
    /// The header field that holds it.
    pub fn field(self) -> &'static str {
        match self {
            Self::Flat | Self::Merkle => "txn",
            Self::Sha256 => "txn256",
            Self::Sha512 => "txn512",
        }
    }
}

impl fmt::Display for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            Self::Flat => "flat SHA-512/256 hash",
            Self::Merkle => "SHA-512/256 Merkle root",
            Self::Sha256 => "SHA-256 vector commitment",
            Self::Sha512 => "SHA-512 vector commitment",
        };
        write!(f, "payset commitment `{}` ({what})", self.field())
    }
}

/// What the caller knows of a block before verifying it: the round it asked for, its network,
/// and whether blocks without a payset commitment are acceptable.
///
/// `Expected::default()` knows nothing and refuses uncommitted blocks.
///
/// ```
/// use txgate_algorand::codec::Expected;
///
/// let e = Expected::round(11).with_genesis("testnet-v1.0", [1; 32]);
/// assert_eq!(e.round, Some(11));
/// assert_eq!(e.genesis_id.as_deref(), Some(&b"testnet-v1.0"[..]));
/// assert!(!e.allow_uncommitted && Expected::default().allowing_uncommitted().allow_uncommitted);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Expected {
    /// The round the caller expects (e.g. the round it asked algod for).
    pub round: Option<Round>,
    /// The network's genesis id (`gen`), bytes.
    pub genesis_id: Option<Vec<u8>>,
    /// The network's genesis hash (`gh`).
    pub genesis_hash: Option<[u8; 32]>,
    /// Accept a header without any payset commitment (only for blocks the caller built or
    /// verified itself: nothing then ties the payset to the header).
    pub allow_uncommitted: bool,
}

impl Expected {
    /// Expects round `round`, nothing else.
    pub fn round(round: Round) -> Self {
        Self {
            round: Some(round),
            ..Self::default()
        }
    }

    /// Sets the expected round (`None`: any).
    #[must_use]
    pub fn with_round(mut self, round: Option<Round>) -> Self {
        self.round = round;
        self
    }

    /// Sets the expected network: genesis id (bytes) and genesis hash.
    #[must_use]
    pub fn with_genesis(mut self, genesis_id: impl Into<Vec<u8>>, genesis_hash: [u8; 32]) -> Self {
        self.genesis_id = Some(genesis_id.into());
        self.genesis_hash = Some(genesis_hash);
        self
    }

    /// Accepts headers without any payset commitment (see [`allow_uncommitted`](Self::allow_uncommitted)).
    #[must_use]
    pub fn allowing_uncommitted(mut self) -> Self {
        self.allow_uncommitted = true;
        self
    }
}

/// Why a block failed verification. Every variant names the block's round.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VerifyError {
    /// The bytes given are not a block (or their payset entries do not decode).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The block is not the round the caller expected.
    #[error("round {found}: expected round {expected}")]
    Round {
        /// The round expected.
        expected: Round,
        /// The round the block claims.
        found: Round,
    },
    /// The block's genesis id is not the expected network's.
    #[error(
        "round {round}: genesis id {}, expected {}",
        Shown(found),
        Shown(expected)
    )]
    GenesisId {
        /// The block's round.
        round: Round,
        /// The expected genesis id.
        expected: Vec<u8>,
        /// The block's `gen`.
        found: Vec<u8>,
    },
    /// The block's genesis hash is not the expected network's.
    #[error(
        "round {round}: genesis hash {}, expected {}",
        b64(found),
        b64(expected)
    )]
    GenesisHash {
        /// The block's round.
        round: Round,
        /// The expected genesis hash.
        expected: [u8; 32],
        /// The block's `gh`.
        found: [u8; 32],
    },
    /// The bytes given are another block than the decoded one (another round, or other txids).
    #[error("round {round}: the bytes given are not this block's ({what})")]
    OtherBlock {
        /// The decoded block's round.
        round: Round,
        /// What differs.
        what: String,
    },
    /// The block's protocol commits to its payset in a way go-algorand no longer supports.
    #[error(
        "round {round}: protocol {} commits to the payset by a rule go-algorand no longer supports",
        Shown(protocol)
    )]
    UnsupportedProtocol {
        /// The block's round.
        round: Round,
        /// Header `proto`.
        protocol: Vec<u8>,
    },
    /// The header carries no payset commitment (and the block's protocol needs one).
    #[error("round {round}: the header carries no payset commitment for its {txns} transactions")]
    NoCommitment {
        /// The block's round.
        round: Round,
        /// Transactions in the payset.
        txns: usize,
    },
    /// A commitment in the header (or its absence) does not match the payset.
    #[error(
        "round {round}: {commitment} mismatch: header {}, payset {}",
        hex_or_none(header),
        hex_or_none(computed)
    )]
    Mismatch {
        /// The block's round.
        round: Round,
        /// Which commitment.
        commitment: Commitment,
        /// The header's value (`None`: absent or all zero).
        header: Option<Vec<u8>>,
        /// The value computed from the payset (`None`: the protocol defines none, or it is all
        /// zero).
        computed: Option<Vec<u8>>,
    },
}

impl VerifyError {
    /// The round of the block that failed (the round shown by its bytes for a
    /// [`Decode`](Self::Decode) error, when they show one).
    pub fn round(&self) -> Option<Round> {
        match self {
            Self::Decode(e) => e.round(),
            Self::Round { found, .. } => Some(*found),
            Self::GenesisId { round, .. }
            | Self::GenesisHash { round, .. }
            | Self::OtherBlock { round, .. }
            | Self::UnsupportedProtocol { round, .. }
            | Self::NoCommitment { round, .. }
            | Self::Mismatch { round, .. } => Some(*round),
        }
    }
}

/// Input bytes shown in an error: lossy UTF-8, at most 80 characters.
struct Shown<'a>(&'a [u8]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = String::from_utf8_lossy(self.0);
        let mut chars = s.chars();
        let head: String = chars.by_ref().take(80).collect();
        if chars.next().is_some() {
            write!(f, "{head:?}...")
        } else {
            write!(f, "{head:?}")
        }
    }
}

fn b64(b: &[u8; 32]) -> String {
    data_encoding::BASE64.encode(b)
}

fn hex_or_none(b: &Option<Vec<u8>>) -> String {
    match b {
        Some(b) => data_encoding::HEXLOWER.encode(b),
        None => "none".to_owned(),
    }
}

/// The payset rule of a protocol (go-algorand `config.Consensus`: `PaysetCommit`,
/// `EnableSHA256TxnCommitmentHeader`, `EnableSha512BlockHash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// `PaysetCommitUnsupported` (v7 to v10) or a deprecated version (v0 to v6).
    Unsupported,
    /// A protocol in go-algorand's table.
    Known {
        merkle: bool,
        sha256: bool,
        sha512: bool,
    },
    /// `future` or a version string txgate does not know: read from the header.
    FromHeader,
}

/// The spec commits of consensus versions v13 to v42 (go-algorand `protocol/consensus.go`);
/// v13 to v16 under `algorand/spec`, the rest under `algorandfoundation/specs`.
const SPEC_COMMITS: [(u32, &str); 30] = [
    (
        13,
        "algorand/spec/tree/0c8a9dc44d7368cc266d5407b79fb3311f4fc795",
    ),
    (
        14,
        "algorand/spec/tree/2526b6ae062b4fe5e163e06e41e1d9b9219135a9",
    ),
    (
        15,
        "algorand/spec/tree/a26ed78ed8f834e2b9ccb6eb7d3ee9f629a6e622",
    ),
    (
        16,
        "algorand/spec/tree/22726c9dcd12d9cddce4a8bd7e8ccaa707f74101",
    ),
    (
        17,
        "algorandfoundation/specs/tree/5615adc36bad610c7f165fa2967f4ecfa75125f0",
    ),
    (
        18,
        "algorandfoundation/specs/tree/6c6bd668be0ab14098e51b37e806c509f7b7e31f",
    ),
    (
        19,
        "algorandfoundation/specs/tree/0e196e82bfd6e327994bec373c4cc81bc878ef5c",
    ),
    (
        20,
        "algorandfoundation/specs/tree/4a9db6a25595c6fd097cf9cc137cc83027787eaa",
    ),
    (
        21,
        "algorandfoundation/specs/tree/8096e2df2da75c3339986317f9abe69d4fa86b4b",
    ),
    (
        22,
        "algorandfoundation/specs/tree/57016b942f6d97e6d4c0688b373bb0a2fc85a1a2",
    ),
    (
        23,
        "algorandfoundation/specs/tree/e5f565421d720c6f75cdd186f7098495caf9101f",
    ),
    (
        24,
        "algorandfoundation/specs/tree/3a83c4c743f8b17adfd73944b4319c25722a6782",
    ),
    (
        25,
        "algorandfoundation/specs/tree/bea19289bf41217d2c0af30522fa222ef1366466",
    ),
    (
        26,
        "algorandfoundation/specs/tree/ac2255d586c4474d4ebcf3809acccb59b7ef34ff",
    ),
    (
        27,
        "algorandfoundation/specs/tree/d050b3cade6d5c664df8bd729bf219f179812595",
    ),
    (
        28,
        "algorandfoundation/specs/tree/65b4ab3266c52c56a0fa7d591754887d68faad0a",
    ),
    (
        29,
        "algorandfoundation/specs/tree/abc54f79f9ad679d2d22f0fb9909fb005c16f8a1",
    ),
    (
        30,
        "algorandfoundation/specs/tree/bc36005dbd776e6d1eaf0c560619bb183215645c",
    ),
    (
        31,
        "algorandfoundation/specs/tree/85e6db1fdbdef00aa232c75199e10dc5fe9498f6",
    ),
    (
        32,
        "algorandfoundation/specs/tree/d5ac876d7ede07367dbaa26e149aa42589aac1f7",
    ),
    (
        33,
        "algorandfoundation/specs/tree/830a4e673148498cc7230a0d1ba1ed0a5471acc6",
    ),
    (
        34,
        "algorandfoundation/specs/tree/2dd5435993f6f6d65691140f592ebca5ef19ffbd",
    ),
    (
        35,
        "algorandfoundation/specs/tree/433d8e9a7274b6fca703d91213e05c7e6a589e69",
    ),
    (
        36,
        "algorandfoundation/specs/tree/44fa607d6051730f5264526bf3c108d51f0eadb6",
    ),
    (
        37,
        "algorandfoundation/specs/tree/1ac4dd1f85470e1fb36c8a65520e1313d7dfed5e",
    ),
    (
        38,
        "algorandfoundation/specs/tree/abd3d4823c6f77349fc04c3af7b1e99fe4df699f",
    ),
    (
        39,
        "algorandfoundation/specs/tree/925a46433742afb0b51bb939354bd907fa88bf95",
    ),
    (
        40,
        "algorandfoundation/specs/tree/236dcc18c9c507d794813ab768e467ea42d1b4d9",
    ),
    (
        41,
        "algorandfoundation/specs/tree/953304de35264fc3ef91bcd05c123242015eeaed",
    ),
    (
        42,
        "algorandfoundation/specs/tree/268b63433a907455d439995bf916f6b296018f4f",
    ),
];

/// The consensus version string of go-algorand protocol `v{n}` (7 to 42), e.g. for the
/// synthetic encoder's headers.
#[cfg(any(test, feature = "synth"))]
pub(crate) fn consensus_version(n: u32) -> Option<String> {
    match n {
        7..=12 => Some(format!("v{n}")),
        _ => SPEC_COMMITS
            .iter()
            .find(|(v, _)| *v == n)
            .map(|(_, path)| format!("https://github.com/{path}")),
    }
}

/// The payset rule of the consensus version string `proto` (see the module docs).
pub(crate) fn rule(proto: &[u8]) -> Rule {
    let version = if let Some(n) = proto
        .strip_prefix(b"v")
        .and_then(|d| std::str::from_utf8(d).ok())
        .filter(|d| !d.starts_with('0') && d.len() <= 2)
        .and_then(|d| d.parse::<u32>().ok())
    {
        n
    } else if let Some(path) = proto.strip_prefix(b"https://github.com/") {
        match SPEC_COMMITS.iter().find(|(_, p)| p.as_bytes() == path) {
            Some((n, _)) => *n,
            None => return Rule::FromHeader,
        }
    } else {
        // alphanet and FNet protocols: go-algorand copies a vN's parameters for each.
        match proto {
            b"alpha1" | b"alpha2" => 32,
            b"alpha3" => 33,
            b"alpha4" => 34,
            b"alpha5" => 36,
            b"fnet1" | b"fnet2" | b"fnet3" | b"fnet4" => 39,
            b"fnet5" => 41,
            _ => return Rule::FromHeader,
        }
    };
    match version {
        0..=10 => Rule::Unsupported,
        11..=25 => Rule::Known {
            merkle: false,
            sha256: false,
            sha512: false,
        },
        26..=42 => Rule::Known {
            merkle: true,
            sha256: version >= 34,
            sha512: version >= 41,
        },
        _ => Rule::FromHeader,
    }
}

/// Which commitments to compute.
#[derive(Debug, Clone, Copy, Default)]
struct Need {
    flat: bool,
    trees: Trees,
}

/// Commitments computed from a payset (each only when needed), and its txids when an entry walk
/// ran. An all-zero root is `None` (go-algorand omits it).
#[derive(Debug, Default)]
struct Computed {
    flat: Option<[u8; 32]>,
    merkle: Option<[u8; 32]>,
    sha256: Option<[u8; 32]>,
    sha512: Option<[u8; 64]>,
    txids: Option<Vec<Txid>>,
    /// Payset entries walked (0 when no tree was needed).
    entries: usize,
}

fn nonzero<const N: usize>(d: [u8; N]) -> Option<[u8; N]> {
    (d != [0; N]).then_some(d)
}

/// Computes the commitments `need` asks for over the payset `located` found in `bytes`.
///
/// `known`: the payset's txids as decoded from these bytes. The trees take the leaves computed
/// while those txids were decoded when there are (`located.leaves`, one per txid, for the trees
/// needed); otherwise the entries are walked here. The SHA-512/256 Merkle leaves take the txids
/// as they are (the root commits to them, and to every byte of each entry beside them), so
/// the walk does not decode the entries again: it scans them, and for `txn256`/`txn512`
/// completes each `txn` and hashes it with SHA-256 only. Without `known` every entry is decoded
/// and its txids recomputed.
fn compute(
    bytes: &[u8],
    located: &Located<'_>,
    genesis_id: &[u8],
    genesis_hash: &[u8; 32],
    need: Need,
    known: Option<&[Txid]>,
) -> Result<Computed, DecodeError> {
    let mut out = Computed::default();
    if need.flat {
        out.flat = Some(located.flat_digest());
    }
    if !need.trees.any() {
        return Ok(out);
    }
    let roots = match (&located.leaves, known) {
        (Some(leaves), Some(known))
            if leaves.trees.covers(need.trees) && leaves.len() == known.len() =>
        {
            out.entries = leaves.len();
            #[cfg(feature = "parallel")]
            if located.tree_split.is_some_and(|min| leaves.len() >= min) {
                super::parallel::roots_split(leaves, need.trees)
                    .unwrap_or_else(|| roots(leaves, need.trees))
            } else {
                roots(leaves, need.trees)
            }
            #[cfg(not(feature = "parallel"))]
            roots(leaves, need.trees)
        }
        _ => {
            let walked = walk(
                bytes,
                located,
                (genesis_id, genesis_hash),
                need.trees,
                known,
                &mut out,
            )?;
            roots(&walked, need.trees)
        }
    };
    out.merkle = roots.merkle.and_then(|d| nonzero(d.into()));
    out.sha256 = roots.sha256.and_then(|d| nonzero(d.into()));
    out.sha512 = roots.sha512.and_then(|d| nonzero(d.into()));
    Ok(out)
}

/// The walk of [`compute`] over the payset's entries: their leaves for `trees`; sets
/// `out.entries` and, without `known`, `out.txids`.
fn walk(
    bytes: &[u8],
    located: &Located<'_>,
    (genesis_id, genesis_hash): (&[u8], &[u8; 32]),
    trees: Trees,
    known: Option<&[Txid]>,
    out: &mut Computed,
) -> Result<Leaves, DecodeError> {
    let round = Some(located.round);
    let payset = located.payset;
    let mut leaves = Leaves::new(trees, 0);
    let mut txids = Vec::new();
    if !payset.is_empty() {
        // `payset` is a subslice of `bytes` (from `locate_payset`): its offset in it.
        let base = payset.as_ptr() as usize - bytes.as_ptr() as usize;
        let mut r = Reader::span(bytes, base, base + payset.len());
        let n = read_payset_len(&mut r, round)? as usize;
        // A count is bounded by the bytes it claims, not trusted for an allocation.
        let cap = n.min(payset.len());
        if known.is_none() {
            txids.reserve(cap);
        }
        // Leaves take 128 bytes per entry for three trees: room for what a block usually holds.
        leaves = Leaves::new(trees, cap.min(4096));
        let genesis = Genesis::new(genesis_id, genesis_hash);
        let mut scratch = TxnMap::default();
        let raw = |e| DecodeError::raw(e, round);
        for intra in 0..n {
            let start = r.pos();
            let (txid, entry_scan) = if known.is_none() {
                let (txn, _) = decode_entry(
                    &mut r,
                    located.payset_depth,
                    &genesis,
                    intra,
                    &mut scratch,
                    round,
                )?;
                let scan = Reader::span(bytes, start, r.pos())
                    .scan(located.payset_depth + 1)
                    .map_err(raw)?;
                (txn.txid, scan)
            } else {
                let scan = r.scan(located.payset_depth + 1).map_err(raw)?;
                if trees.sha256 || trees.sha512 {
                    complete_txn(
                        bytes,
                        (start, r.pos()),
                        located.payset_depth,
                        &genesis,
                        intra,
                        &mut scratch,
                        round,
                    )?;
                }
                // A count that differs from the decoded block's fails in `Block::computed`.
                let txid = known
                    .and_then(|k| k.get(intra))
                    .copied()
                    .unwrap_or_default();
                (txid, scan)
            };
            leaves
                .push(
                    bytes,
                    (start, r.pos()),
                    entry_scan.canonical,
                    located.payset_depth,
                    &txid,
                    &scratch,
                )
                .map_err(raw)?;
            if known.is_none() {
                txids.push(txid);
            }
        }
        out.entries = n;
    }
    out.txids = known.is_none().then_some(txids);
    Ok(leaves)
}

/// Fills `scratch` with the completed canonical `txn` map of the payset entry at
/// `bytes[span.0..span.1]` (`gen` when the entry has `hgi`, `gh` always: go-algorand
/// `BlockHeader.DecodeSignedTxn`), without hashing it.
fn complete_txn<'a: 'm, 'm>(
    bytes: &'a [u8],
    span: (usize, usize),
    payset_depth: usize,
    genesis: &'m Genesis<'_>,
    intra: usize,
    scratch: &mut TxnMap<'m>,
    round: Option<Round>,
) -> Result<(), DecodeError> {
    let raw = |e| DecodeError::raw(e, round);
    let mut r = Reader::span(bytes, span.0, span.1);
    let m = read_map_len(&mut r, round, "txns[]", "a SignedTxnInBlock map")?;
    let mut hgi = false;
    let mut txn = None;
    for _ in 0..m {
        let key = read_key(&mut r, round)?;
        let (s, e, _) = r.scan_span(payset_depth + 2).map_err(raw)?;
        match key {
            b"hgi" => {
                hgi = matches!(
                    Reader::span(bytes, s, e).token(),
                    Ok((Token::Bool(true), _))
                );
            }
            b"txn" => txn = Some((s, e)),
            _ => {}
        }
    }
    let (s, e) = txn.ok_or(DecodeError::MissingField {
        round,
        field: "txns[].txn",
    })?;
    let completion = genesis.completion(hgi, intra);
    read_txn_map(
        &mut Reader::span(bytes, s, e),
        payset_depth + 2,
        Some(&completion),
        scratch,
        round,
    )?;
    Ok(())
}

/// A header's `txn`, `txn256` and `txn512`, each `None` when absent.
#[cfg(any(test, feature = "synth"))]
pub(crate) type HeaderCommitments = (Option<[u8; 32]>, Option<[u8; 32]>, Option<[u8; 64]>);

/// The commitments of the payset of a synthetic block under `rule`: (`txn`, `txn256`,
/// `txn512`), each `None` when absent. `payset` is the payset's msgpack bytes (empty: none).
#[cfg(any(test, feature = "synth"))]
pub(crate) fn synth_commitments(
    payset: &[u8],
    genesis_id: &[u8],
    genesis_hash: &[u8; 32],
    merkle: bool,
    sha256: bool,
    sha512: bool,
) -> Result<HeaderCommitments, DecodeError> {
    let located = Located {
        round: 0,
        payset,
        payset_depth: 2,
        flat: None,
        leaves: None,
        tree_split: None,
    };
    let c = compute(
        payset,
        &located,
        genesis_id,
        genesis_hash,
        Need {
            flat: !merkle,
            trees: Trees {
                merkle,
                sha256,
                sha512,
            },
        },
        None,
    )?;
    Ok((if merkle { c.merkle } else { c.flat }, c.sha256, c.sha512))
}

impl Block {
    /// Verifies the block against the bytes it was decoded from and what the caller expects:
    /// the round, the network (genesis id and hash) when [`Expected`] names them, then every
    /// payset commitment the block's protocol defines (see the [`codec`](super) docs for the rules,
    /// what they cover and what they do not). A block that passes has txids its header commits
    /// to.
    ///
    /// Cost: one SHA-512/256 pass over the payset for the flat kind; for the Merkle kinds each
    /// entry is walked again (its txid, and its SHA-256 txid for `txn256`/`txn512`) and hashed
    /// once per tree, and about one inner node per leaf per tree. [`decode_for_verify`] then
    /// [`DecodedBlock::verify`] hash the entries as they are decoded instead of walking them
    /// again.
    ///
    /// # Errors
    ///
    /// [`VerifyError`]: the first check that failed, naming the round.
    ///
    /// # Examples
    ///
    /// ```
    /// use txgate_algorand::codec::{Expected, VerifyError, decode_block};
    /// use txgate_algorand::synth::{SynthTxn, encode_block};
    ///
    /// let txn = SynthTxn::payment([7; 32], 10, 1010);
    /// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &[txn]);
    /// let block = decode_block(&bytes)?;
    /// let network = Expected::round(11).with_genesis("testnet-v1.0", [1; 32]);
    /// block.verify(&bytes, &network)?;
    /// assert!(matches!(
    ///     block.verify(&bytes, &Expected::round(12)),
    ///     Err(VerifyError::Round { expected: 12, found: 11 })
    /// ));
    /// // One bit of a transaction flipped: the txids decode, the commitment refuses them.
    /// let mut bad = bytes.clone();
    /// let at = bad.len() - 20;
    /// bad[at] ^= 1;
    /// let damaged = decode_block(&bad)?;
    /// assert!(matches!(damaged.verify(&bad, &network), Err(VerifyError::Mismatch { round: 11, .. })));
    /// # Ok::<(), VerifyError>(())
    /// ```
    pub fn verify(&self, bytes: &[u8], expected: &Expected) -> Result<(), VerifyError> {
        self.check_expected(expected)?;
        let round = self.round;
        let located = locate_payset(bytes)?;
        if located.round != round {
            return Err(VerifyError::OtherBlock {
                round,
                what: format!("round {}", located.round),
            });
        }
        self.verify_payset_at(bytes, &located, expected)
    }

    /// The round and the network against what the caller expects.
    fn check_expected(&self, expected: &Expected) -> Result<(), VerifyError> {
        let round = self.round;
        if let Some(want) = expected.round
            && want != round
        {
            return Err(VerifyError::Round {
                expected: want,
                found: round,
            });
        }
        if let Some(id) = &expected.genesis_id
            && *id != self.genesis_id
        {
            return Err(VerifyError::GenesisId {
                round,
                expected: id.clone(),
                found: self.genesis_id.clone(),
            });
        }
        if let Some(gh) = expected.genesis_hash
            && gh != self.genesis_hash
        {
            return Err(VerifyError::GenesisHash {
                round,
                expected: gh,
                found: self.genesis_hash,
            });
        }
        Ok(())
    }

    /// The payset checks of [`verify`](Self::verify), the payset found at `located` in `bytes`.
    fn verify_payset_at(
        &self,
        bytes: &[u8],
        located: &Located<'_>,
        expected: &Expected,
    ) -> Result<(), VerifyError> {
        let round = self.round;
        let header_txn = self.txn_commitment.and_then(nonzero);
        let header_256 = self.txn256_commitment.and_then(nonzero);
        let header_512 = self.txn512_commitment.and_then(nonzero);
        let uncommitted = header_txn.is_none() && header_256.is_none() && header_512.is_none();
        if uncommitted && expected.allow_uncommitted {
            return Ok(());
        }
        let (merkle, sha256, sha512) = match rule(&self.protocol) {
            Rule::Unsupported => {
                return Err(VerifyError::UnsupportedProtocol {
                    round,
                    protocol: self.protocol.clone(),
                });
            }
            Rule::Known {
                merkle,
                sha256,
                sha512,
            } => (merkle, sha256, sha512),
            Rule::FromHeader => {
                if uncommitted {
                    // Even over an empty payset: a damaged header can lose both the payset
                    // and the commitment.
                    return Err(VerifyError::NoCommitment {
                        round,
                        txns: self.txns.len(),
                    });
                }
                if header_256.is_none() && header_512.is_none() {
                    // `txn` alone: the flat hash or the Merkle root.
                    let flat = located.flat_digest();
                    if Some(flat) == header_txn {
                        return Ok(());
                    }
                    let c = self.computed(
                        bytes,
                        located,
                        Need {
                            flat: false,
                            trees: Trees {
                                merkle: true,
                                ..Trees::default()
                            },
                        },
                    )?;
                    if c.merkle == header_txn {
                        return Ok(());
                    }
                    return Err(mismatch(round, Commitment::Flat, header_txn, Some(flat)));
                }
                (true, header_256.is_some(), header_512.is_some())
            }
        };
        let c = self.computed(
            bytes,
            located,
            Need {
                flat: !merkle,
                trees: Trees {
                    merkle,
                    sha256,
                    sha512,
                },
            },
        )?;
        if uncommitted && (c.flat.is_some() || c.merkle.is_some() || c.sha256.is_some()) {
            return Err(VerifyError::NoCommitment {
                round,
                txns: self.txns.len(),
            });
        }
        let (kind, native) = if merkle {
            (Commitment::Merkle, c.merkle)
        } else {
            (Commitment::Flat, c.flat)
        };
        if native != header_txn {
            return Err(mismatch(round, kind, header_txn, native));
        }
        if c.sha256 != header_256 {
            return Err(mismatch(round, Commitment::Sha256, header_256, c.sha256));
        }
        if c.sha512 != header_512 {
            return Err(mismatch(round, Commitment::Sha512, header_512, c.sha512));
        }
        Ok(())
    }

    /// [`compute`] over this block's payset in `bytes`, checking that a walk of the entries
    /// gives this block's txids.
    fn computed(
        &self,
        bytes: &[u8],
        located: &Located<'_>,
        need: Need,
    ) -> Result<Computed, VerifyError> {
        let known: Vec<Txid> = self.txns.iter().map(|t| t.txid).collect();
        let c = compute(
            bytes,
            located,
            &self.genesis_id,
            &self.genesis_hash,
            need,
            Some(&known),
        )?;
        let tree = need.trees.any();
        if (tree && c.entries != self.txns.len())
            || c.txids.as_ref().is_some_and(|txids| *txids != known)
        {
            return Err(VerifyError::OtherBlock {
                round: self.round,
                what: "other txids".to_owned(),
            });
        }
        Ok(c)
    }
}

/// Decodes the block in `bytes` ([`decode_block`](super::decode_block)) and verifies it against
/// them ([`Block::verify`]) in one walk: the payset is found while decoding, not looked for
/// again ([`decode_for_verify`], then [`DecodedBlock::verify`]). The same block on success, the
/// same errors (bytes that do not decode are [`VerifyError::Decode`]).
///
/// # Errors
///
/// [`VerifyError`]: the decode error, or the first check that failed, naming the round.
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::{Expected, VerifyError, decode_block, decode_verified_block};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txn = SynthTxn::payment([7; 32], 10, 1010);
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &[txn]);
/// let block = decode_verified_block(&bytes, &Expected::round(11))?;
/// assert_eq!(block, decode_block(&bytes)?);
/// let mut bad = bytes.clone();
/// let at = bad.len() - 20;
/// bad[at] ^= 1;
/// assert!(matches!(
///     decode_verified_block(&bad, &Expected::round(11)),
///     Err(VerifyError::Mismatch { round: 11, .. })
/// ));
/// # Ok::<(), VerifyError>(())
/// ```
pub fn decode_verified_block(bytes: &[u8], expected: &Expected) -> Result<Block, VerifyError> {
    let decoded = decode_for_verify(bytes)?;
    decoded.verify(expected)?;
    Ok(decoded.into_block())
}

/// A block decoded from `bytes` together with where its payset is in them, for
/// [`DecodedBlock::verify`] without a second walk. It borrows the bytes, so it can only be
/// verified against the bytes it was decoded from.
#[derive(Debug)]
pub struct DecodedBlock<'a> {
    block: Block,
    bytes: &'a [u8],
    located: Located<'a>,
}

/// Decodes the block in `bytes` as [`decode_block`](super::decode_block) does (the same block,
/// the same errors), keeping where its payset is, so that [`DecodedBlock::verify`] does not
/// look for it again. When the header's protocol commits to the payset with trees (v26 and
/// later, or a protocol txgate does not know whose header has `txn256` or `txn512`), each
/// entry's leaves are hashed as it is decoded, so that `verify` only builds the trees: the
/// hashing moves from `verify` to the decode, and the second walk over the entries is saved.
///
/// # Errors
///
/// [`DecodeError`] as [`decode_block`](super::decode_block).
///
/// # Examples
///
/// ```
/// use txgate_algorand::codec::{Expected, decode_block, decode_for_verify};
/// use txgate_algorand::synth::{SynthTxn, encode_block};
///
/// let txn = SynthTxn::payment([7; 32], 10, 1010);
/// let bytes = encode_block(11, "testnet-v1.0", &[1; 32], 1_700_000_000, &[txn]);
/// let decoded = decode_for_verify(&bytes)?;
/// decoded.verify(&Expected::round(11))?;
/// assert!(decoded.verify(&Expected::round(12)).is_err());
/// assert_eq!(decoded.into_block(), decode_block(&bytes)?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn decode_for_verify(bytes: &[u8]) -> Result<DecodedBlock<'_>, DecodeError> {
    decoded_for_verify(bytes, Split::ONE)
}

/// [`decode_for_verify`] with the payset's entries decoded on the calling thread and a helper,
/// as [`decode_block_parallel`](super::decode_block_parallel) does (its costs: a copy of
/// `bytes`, about 8 bytes per entry for the helper's walk): the same block, the same errors.
/// When the header's protocol commits to the payset flat (or is one txgate does not know, with
/// only a `txn` commitment), a helper that reaches the payset while the caller still has
/// entries to take also hashes that commitment, and [`DecodedBlock::verify`] takes it instead
/// of hashing the payset again; otherwise `verify` hashes it, as after [`decode_for_verify`].
/// When it commits with trees, each thread hashes the leaves of the entries it decodes, as
/// [`decode_for_verify`] does on one, and `verify` builds each tree as its two subtrees, which
/// the calling thread and the helper take from the two ends of the list of them: the same
/// roots.
///
/// # Errors
///
/// [`DecodeError`] as [`decode_block`](super::decode_block).
#[cfg(feature = "parallel")]
pub fn decode_for_verify_parallel(bytes: &[u8]) -> Result<DecodedBlock<'_>, DecodeError> {
    decoded_for_verify(bytes, Split::PARALLEL)
}

/// [`decode_verified_block`] with the payset decoded as
/// [`decode_block_split`](super::decode_block_split) decodes it (paysets of at least
/// `min_entries` entries split over a helper, `chunk` entries claimed at a time), so that the
/// fuzzer's small paysets are split too. Only in fuzzing builds.
///
/// # Errors
///
/// As [`decode_verified_block`].
#[cfg(all(feature = "parallel", fuzzing))]
pub fn decode_verified_block_split(
    bytes: &[u8],
    expected: &Expected,
    min_entries: usize,
    chunk: u32,
) -> Result<Block, VerifyError> {
    let decoded = decoded_for_verify(bytes, Split::small(min_entries, chunk))?;
    decoded.verify(expected)?;
    Ok(decoded.into_block())
}

fn decoded_for_verify(bytes: &[u8], split: Split) -> Result<DecodedBlock<'_>, DecodeError> {
    let (block, located) = decode_located(bytes, split.for_verify())?;
    Ok(DecodedBlock {
        block,
        bytes,
        located,
    })
}

/// [`decode_verified_block`] with the decode split as `split` says (for tests of the split).
#[cfg(test)]
pub(super) fn decode_verify_split(
    bytes: &[u8],
    split: Split,
    expected: &Expected,
) -> Result<(Block, Option<[u8; 32]>), VerifyError> {
    let (block, located) = decode_located(bytes, split)?;
    let decoded = DecodedBlock {
        block,
        bytes,
        located,
    };
    decoded.verify(expected)?;
    Ok((decoded.block, decoded.located.flat))
}

impl DecodedBlock<'_> {
    /// The decoded block.
    pub fn block(&self) -> &Block {
        &self.block
    }

    /// The decoded block, taken out.
    pub fn into_block(self) -> Block {
        self.block
    }

    /// [`Block::verify`] of the block against the bytes it was decoded from: the same checks,
    /// the same errors.
    ///
    /// # Errors
    ///
    /// [`VerifyError`]: the first check that failed, naming the round.
    pub fn verify(&self, expected: &Expected) -> Result<(), VerifyError> {
        self.block.check_expected(expected)?;
        self.block
            .verify_payset_at(self.bytes, &self.located, expected)
    }
}

fn mismatch<const N: usize>(
    round: Round,
    commitment: Commitment,
    header: Option<[u8; N]>,
    computed: Option<[u8; N]>,
) -> VerifyError {
    VerifyError::Mismatch {
        round,
        commitment,
        header: header.map(|h| h.to_vec()),
        computed: computed.map(|c| c.to_vec()),
    }
}

#[cfg(test)]
mod tests;
