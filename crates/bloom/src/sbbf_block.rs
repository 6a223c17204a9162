//! The Parquet split-block bloom filter block: 256 bits as eight little-endian `u32` words.
//!
//! Rules from the Parquet specification (apache/parquet-format, BloomFilter.md): the block of
//! hash `h` is `((h >> 32) * num_blocks) >> 32`; its low 32 bits `x` set bit
//! `(x * SALT[i]) mod 2^32 >> 27` of word `i`, for the spec's eight salts.

use crate::block::SALT;

/// Bytes in one SBBF block.
pub const SBBF_BLOCK_BYTES: usize = 32;

/// Right shift that keeps the top 5 bits of a 32-bit product: a bit index in `0..32`.
pub(crate) const SBBF_BIT_SHIFT: u32 = 32 - 5;

/// One SBBF block, 32-byte aligned so that a block never straddles a cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub(crate) struct SbbfBlock(pub(crate) [u32; 8]);

const _: () = assert!(
    size_of::<SbbfBlock>() == SBBF_BLOCK_BYTES && align_of::<SbbfBlock>() == SBBF_BLOCK_BYTES
);

impl SbbfBlock {
    /// The empty block.
    pub(crate) const ZERO: SbbfBlock = SbbfBlock([0; 8]);
}

/// The SBBF block of hash `h` (the spec's 32-bit rule; `num_blocks <= 2^32`).
#[inline]
pub(crate) fn block_index(hash: u64, num_blocks: u64) -> u64 {
    ((hash >> 32) * num_blocks) >> 32
}

/// The one-bit mask of each word for `x` (the scalar form of the SIMD kernel).
#[inline]
pub(crate) fn masks(x: u32) -> [u32; 8] {
    core::array::from_fn(|i| 1u32 << (x.wrapping_mul(SALT[i]) >> SBBF_BIT_SHIFT))
}

/// Scalar kernel: whether every bit of `x` is set in `block`.
#[inline]
pub(crate) fn contains_scalar(block: &SbbfBlock, x: u32) -> bool {
    let mut missing = 0;
    for (word, mask) in block.0.iter().zip(masks(x)) {
        missing |= mask & !word;
    }
    missing == 0
}

/// Scalar kernel: set every bit of `x` in `block`; whether any was clear before.
#[inline]
pub(crate) fn insert_scalar(block: &mut SbbfBlock, x: u32) -> bool {
    let mut missing = 0;
    for (word, mask) in block.0.iter_mut().zip(masks(x)) {
        missing |= mask & !*word;
        *word |= mask;
    }
    missing != 0
}
