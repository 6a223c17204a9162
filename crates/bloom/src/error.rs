//! Typed errors: building, combining and loading filters.

use crate::kernels::Backend;
use crate::layout::Layout;

/// Why a filter could not be sized or built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The target false-positive rate is not strictly between 0 and 1 (or is NaN).
    #[error("false-positive rate must be in (0, 1), got {0}")]
    InvalidFalsePositiveRate(f64),
    /// A filter of zero bits or zero blocks was asked for.
    #[error("a filter needs at least one block")]
    ZeroSize,
    /// More bits than this machine can address (`isize::MAX` bytes) were asked for.
    #[error("a filter of {bits} bits is larger than this machine can address")]
    TooLarge {
        /// Bits asked for (when sizing from a false-positive rate: a lower bound).
        bits: u128,
    },
    /// The allocator could not provide the filter's memory.
    #[error("could not allocate {bytes} bytes for the filter")]
    AllocationFailed {
        /// Bytes asked for.
        bytes: u64,
    },
    /// The requested SIMD backend is not supported by this CPU.
    #[error("backend {0:?} is not available on this CPU")]
    BackendUnavailable(Backend),
    /// Parquet SBBF sizes are whole 32-byte blocks, and the Parquet header stores the size
    /// as an `i32`.
    #[error("SBBF bitset of {0} bytes is not a positive multiple of 32 bytes up to i32::MAX")]
    InvalidSbbfSize(u64),
}

/// Two filters cannot be combined: they differ in shape or hash seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// The filters have different numbers of blocks.
    #[error("filters differ in size: {ours} blocks vs {theirs} blocks")]
    Blocks {
        /// Blocks of the filter being changed.
        ours: u64,
        /// Blocks of the other filter.
        theirs: u64,
    },
    /// The filters hash keys with different seeds, so equal keys set different bits.
    #[error("filters use different hash seeds")]
    Seed,
}

impl ShapeError {
    /// `Ok` iff two filters, each given as `(num_blocks, seed)`, can be combined bit for bit.
    pub(crate) fn check(ours: (u64, u64), theirs: (u64, u64)) -> Result<(), ShapeError> {
        if ours.0 != theirs.0 {
            return Err(ShapeError::Blocks {
                ours: ours.0,
                theirs: theirs.0,
            });
        }
        if ours.1 != theirs.1 {
            return Err(ShapeError::Seed);
        }
        Ok(())
    }
}

/// Why serialized filter bytes were rejected. Loading never panics on any input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// Fewer bytes than the header.
    #[error("input of {len} bytes is shorter than the {header}-byte header")]
    TooShort {
        /// Bytes given.
        len: usize,
        /// Bytes the header needs.
        header: usize,
    },
    /// The magic bytes are not this crate's.
    #[error("not a txgate bloom filter (bad magic bytes)")]
    BadMagic,
    /// A format version this build does not read.
    #[error("unsupported format version {0}")]
    UnsupportedVersion(u16),
    /// The header's block layout code is none that its format version defines (version 1
    /// knows code 1, version 2 codes 1 and 2).
    #[error("unknown block layout code {code} for format version {version}")]
    UnknownLayout {
        /// The header's format version.
        version: u16,
        /// The header's layout code.
        code: u8,
    },
    /// The bytes hold a filter of another block layout than the type loading them (load them
    /// with that layout's type, or with [`AnyBloom`](crate::AnyBloom), which takes either).
    #[error("block layout mismatch: the bytes hold {found}, this filter type uses {expected}")]
    LayoutMismatch {
        /// The loading type's layout.
        expected: Layout,
        /// The layout in the header.
        found: Layout,
    },
    /// Reserved header bytes are not zero.
    #[error("reserved header bytes are not zero")]
    ReservedNotZero,
    /// The header declares zero blocks.
    #[error("the header declares zero blocks")]
    ZeroBlocks,
    /// The declared blocks cannot exist on this machine.
    #[error("the header declares {0} blocks, more than this machine can address")]
    TooManyBlocks(u64),
    /// The body length does not match the declared blocks.
    #[error("expected {expected} bytes for the declared blocks, got {actual}")]
    LengthMismatch {
        /// Total bytes the header implies.
        expected: u64,
        /// Total bytes given.
        actual: u64,
    },
    /// The stored XXH3-64 checksum (format version 2) does not match the header and blocks:
    /// the bytes were damaged.
    #[error("checksum mismatch: stored {stored:#018x}, computed {computed:#018x}")]
    ChecksumMismatch {
        /// The checksum in the bytes.
        stored: u64,
        /// XXH3-64 of the header and blocks as given.
        computed: u64,
    },
    /// A Parquet bloom filter header that is not the SBBF / XXH64 / uncompressed one.
    #[error("unsupported Parquet bloom filter header: {0}")]
    ParquetHeader(&'static str),
    /// The memory for the loaded filter could not be allocated.
    #[error(transparent)]
    Build(#[from] BuildError),
}
