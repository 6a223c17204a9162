//! The block: 256 bits as eight 32-bit words, and where a hash lands in it.
//!
//! Layout (split-block, the block of Parquet's SBBF): a key's 64-bit hash `h` picks one block
//! and its low 32 bits `x` set exactly one bit in each of the block's eight words: bit
//! `(x * SALT[i]) mod 2^32 >> 27` of word `i`. A block is 32 bytes at a 32-byte-aligned address,
//! so it never straddles a 64-byte cache line: one line per insert or query. On x86-64 a block is
//! one AVX2 register, and its mask is one multiply, one shift and one variable shift.
//!
//! Why 256-bit blocks and not a whole 512-bit line: at equal memory a 512-bit block of 8 x u64
//! has a 17-31 % lower false-positive rate (1.05 % vs 1.26 % at 10 bits per key, 0.091 % vs
//! 0.132 % at 16), but its
//! query takes twice the vector work, and on the machines measured here that made a query 1.3-1.5x
//! slower than a 256-bit one (the CPU keeps fewer queries in flight), and an atomic insert needs
//! eight 64-bit read-modify-writes instead of four. The speed of "no" is what this crate is for.

/// Bytes in one block.
pub const BLOCK_BYTES: usize = 32;
/// 32-bit words in one block.
pub const WORDS_PER_BLOCK: usize = 8;
/// Bits in one block.
pub const BITS_PER_BLOCK: u64 = 256;
/// Bits each key sets (and each query tests): one per word. This is the `k` of the bloom
/// filter literature, not the memory per key (`m / n`, "bits per key").
pub const BITS_SET_PER_KEY: u32 = WORDS_PER_BLOCK as u32;
/// Right shift that keeps the top 5 bits of a 32-bit product: a bit index in `0..32`.
pub(crate) const BIT_SHIFT: u32 = 32 - 5;

/// The eight odd multipliers that spread a key's 32-bit fingerprint over the eight words.
///
/// These are the salts of the Parquet split-block bloom filter specification
/// (apache/parquet-format, BloomFilter.md), which [`Sbbf`](crate::Sbbf) must use; the native
/// filter uses them too.
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

/// One block: eight words, 32-byte aligned so that it lies inside one cache line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub(crate) struct Block(pub(crate) [u32; WORDS_PER_BLOCK]);

const _: () = assert!(size_of::<Block>() == BLOCK_BYTES && align_of::<Block>() == BLOCK_BYTES);

impl Block {
    /// The empty block.
    pub(crate) const ZERO: Block = Block([0; WORDS_PER_BLOCK]);

    /// Reads a block from 32 bytes of little-endian words.
    pub(crate) fn from_le_bytes(bytes: &[u8; BLOCK_BYTES]) -> Block {
        Block(core::array::from_fn(|w| {
            u32::from_le_bytes([
                bytes[4 * w],
                bytes[4 * w + 1],
                bytes[4 * w + 2],
                bytes[4 * w + 3],
            ])
        }))
    }

    /// Appends the block as 32 bytes of little-endian words.
    pub(crate) fn write_le_bytes(&self, out: &mut Vec<u8>) {
        for word in self.0 {
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
}

/// The native filter's block for hash `h`, in `0..num_blocks`: `(h * num_blocks) >> 64` in
/// 128-bit arithmetic (Lemire's multiply-shift range reduction), so that filters of more than
/// 2^32 bits or blocks index every block.
#[inline(always)]
pub(crate) fn block_index(hash: u64, num_blocks: u64) -> u64 {
    ((u128::from(hash) * u128::from(num_blocks)) >> 64) as u64
}

/// The 32 bits of the hash that choose the bits inside the block (the bits `block_index` uses
/// least).
#[inline(always)]
pub(crate) fn fingerprint(hash: u64) -> u32 {
    hash as u32
}

/// The one-bit mask of each word for fingerprint `x` (the scalar form of the SIMD kernels).
#[inline(always)]
pub(crate) fn masks(x: u32) -> [u32; WORDS_PER_BLOCK] {
    core::array::from_fn(|i| 1u32 << (x.wrapping_mul(SALT[i]) >> BIT_SHIFT))
}

/// Scalar kernel: whether every bit of `x` is set in `block`.
#[inline]
pub(crate) fn contains_scalar(block: &Block, x: u32) -> bool {
    let mut missing = 0;
    for (word, mask) in block.0.iter().zip(masks(x)) {
        missing |= mask & !word;
    }
    missing == 0
}

/// Scalar kernel: set every bit of `x` in `block`; whether any of them was clear before.
#[inline]
pub(crate) fn insert_scalar(block: &mut Block, x: u32) -> bool {
    let mut missing = 0;
    for (word, mask) in block.0.iter_mut().zip(masks(x)) {
        missing |= mask & !*word;
        *word |= mask;
    }
    missing != 0
}

/// Words 2j and 2j + 1 of a block as one 64-bit value (word 2j in the low half): the unit the
/// atomic filter updates with one `fetch_or`. A logical pairing, independent of byte order.
#[inline(always)]
pub(crate) fn to_pairs(words: [u32; WORDS_PER_BLOCK]) -> [u64; WORDS_PER_BLOCK / 2] {
    core::array::from_fn(|j| u64::from(words[2 * j]) | (u64::from(words[2 * j + 1]) << 32))
}

/// The inverse of [`to_pairs`].
#[inline(always)]
pub(crate) fn from_pairs(pairs: [u64; WORDS_PER_BLOCK / 2]) -> [u32; WORDS_PER_BLOCK] {
    core::array::from_fn(|i| (pairs[i / 2] >> (32 * (i % 2))) as u32)
}
