//! The block: one 64-byte cache line of eight 64-bit words, and where a hash lands in it.
//!
//! Layout (split-block style, as in Parquet's SBBF but with 64-bit words filling a whole line):
//! a key's 64-bit hash `h` picks one block with `((h as u128 * num_blocks) >> 64)` (Lemire's
//! multiply-shift range reduction, 64-bit so that filters past 2^32 bits and 2^32 blocks index
//! correctly), and its low 32 bits `x` set exactly one bit in each of the eight words: bit
//! `(x * SALT[i]) mod 2^32 >> 26` of word `i`. Eight bits per key, one per word, all in one line.

/// Bytes in one block: one x86-64 cache line.
pub const BLOCK_BYTES: usize = 64;
/// 64-bit words in one block.
pub const WORDS_PER_BLOCK: usize = 8;
/// Bits in one block.
pub const BITS_PER_BLOCK: u64 = 512;
/// Bits each key sets (and each query tests): one per word.
pub const BITS_PER_KEY: u32 = WORDS_PER_BLOCK as u32;
/// Right shift that keeps the top 6 bits of a 32-bit product: a bit index in `0..64`.
pub(crate) const BIT_SHIFT: u32 = 32 - 6;

/// The eight odd multipliers that spread a key's 32-bit fingerprint over the eight words.
///
/// These are the salts of the Parquet split-block bloom filter specification
/// (apache/parquet-format, BloomFilter.md); any eight odd constants with well-mixed bits work.
pub(crate) const SALT: [u32; 8] = [
    0x47b6_137b,
    0x4497_4d91,
    0x8824_ad5b,
    0xa2b7_289d,
    0x7054_95c7,
    0x2df1_424b,
    0x9efc_4947,
    0x5c6b_fb31,
];

/// One block: a 64-byte-aligned cache line of eight words.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [u64; WORDS_PER_BLOCK]);

const _: () = assert!(size_of::<Block>() == BLOCK_BYTES && align_of::<Block>() == BLOCK_BYTES);

impl Block {
    /// The empty block.
    pub(crate) const ZERO: Block = Block([0; WORDS_PER_BLOCK]);
}

/// The block that hash `h` maps to, in `0..num_blocks` (64-bit multiply-shift range reduction).
#[inline]
pub(crate) fn block_index(hash: u64, num_blocks: u64) -> u64 {
    ((u128::from(hash) * u128::from(num_blocks)) >> 64) as u64
}

/// The 32 bits of the hash that choose the bits inside the block (the bits `block_index` uses
/// least).
#[inline]
pub(crate) fn fingerprint(hash: u64) -> u32 {
    hash as u32
}

/// The one-bit mask of each word for fingerprint `x` (the scalar form of the SIMD kernels).
#[inline]
pub(crate) fn masks(x: u32) -> [u64; WORDS_PER_BLOCK] {
    core::array::from_fn(|i| 1u64 << (x.wrapping_mul(SALT[i]) >> BIT_SHIFT))
}

/// Scalar kernel: whether every bit of `x` is set in `block`.
#[inline]
pub(crate) fn contains_scalar(block: &Block, x: u32) -> bool {
    let masks = masks(x);
    let mut missing = 0;
    for (word, mask) in block.0.iter().zip(masks) {
        missing |= mask & !word;
    }
    missing == 0
}

/// Scalar kernel: set every bit of `x` in `block`; whether any of them was clear before.
#[inline]
pub(crate) fn insert_scalar(block: &mut Block, x: u32) -> bool {
    let masks = masks(x);
    let mut missing = 0;
    for (word, mask) in block.0.iter_mut().zip(masks) {
        missing |= mask & !*word;
        *word |= mask;
    }
    missing != 0
}
