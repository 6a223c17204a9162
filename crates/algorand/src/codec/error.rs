//! The codec's errors: [`DecodeError`] (bytes that are not a block or a message) and
//! [`PaysetError`] (a payset that does not match its header's commitment).

use super::msgpack::{RawError, RawErrorKind};
use crate::ids::Round;

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
    /// For decoders that wrap other decoders (the ledger's and the handler's pluggable
    /// decoders take this type); this codec reports every failure through the variants above
    /// and never returns it.
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
        self.clone().round_slot().and_then(|r| *r)
    }

    /// Sets the round of an error that does not name one yet.
    pub(super) fn set_round_if_unknown(&mut self, r: Round) {
        if let Some(round) = self.round_slot() {
            round.get_or_insert(r);
        }
    }

    /// The `round` field of the variants that have one.
    fn round_slot(&mut self) -> Option<&mut Option<Round>> {
        match self {
            Self::Truncated { round, .. }
            | Self::ReservedMarker { round, .. }
            | Self::TooDeep { round, .. }
            | Self::WrongType { round, .. }
            | Self::MissingField { round, .. }
            | Self::DuplicateKey { round, .. }
            | Self::BadKey { round, .. }
            | Self::TrailingBytes { round, .. }
            | Self::GenesisInBlockTxn { round, .. } => Some(round),
            Self::EmptyMessage | Self::Malformed(_) => None,
        }
    }

    /// A msgpack-level error of the input, in the block of `round` when known.
    pub(super) fn raw(e: RawError, round: Option<Round>) -> Self {
        let offset = e.offset;
        match e.kind {
            RawErrorKind::Truncated => Self::Truncated { round, offset },
            RawErrorKind::ReservedMarker => Self::ReservedMarker { round, offset },
            RawErrorKind::TooDeep => Self::TooDeep { round, offset },
            RawErrorKind::DuplicateKey => Self::DuplicateKey { round, offset },
            RawErrorKind::BadKey => Self::BadKey { round, offset },
        }
    }

    /// `field` at byte `offset` is not `expected` (every type check of the codec).
    pub(super) fn wrong_type(
        round: Option<Round>,
        offset: usize,
        field: &'static str,
        expected: &'static str,
    ) -> Self {
        Self::WrongType {
            round,
            offset,
            field,
            expected,
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
