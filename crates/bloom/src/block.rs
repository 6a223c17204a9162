//! [`Block256`]: 256 bits as eight 32-bit words, and where a hash lands in a block.
//!
//! Layout (split block, the block of Parquet's SBBF): a key's 64-bit hash `h` picks one block
//! and its low 32 bits `x` set exactly one bit in each of the block's eight words: bit
//! `(x * SALT[i]) mod 2^32 >> 27` of word `i`. A block is 32 bytes at a 32-byte-aligned address,
//! so it never straddles a 64-byte cache line: one line per insert or query. On x86-64 a block is
//! one AVX2 register, and its mask is one multiply, one shift and one variable shift (the
//! kernels are in `kernels/`).
//!
//! The other native layout, [`Block512`](crate::Block512), fills the whole line (see the
//! [`layout`](crate::layout) module for the trade-off).

use crate::kernels::Kernel;
use crate::layout::{BlockLayout, Layout, sealed::Sealed};
use txgate_sync::sync::{AtomicU64, Ordering};

/// Bytes in one [`Block256`] ([`Layout::block_bytes`]).
pub(crate) const BLOCK_BYTES: usize = Layout::Block256.block_bytes();
/// 32-bit words in one [`Block256`] (and 64-bit words in one [`Block512`](crate::Block512)):
/// one per bit a key sets.
pub(crate) const WORDS_PER_BLOCK: usize = Layout::BITS_SET_PER_KEY as usize;
/// Right shift that keeps the top 5 bits of a 32-bit product: a bit index in `0..32`.
pub(crate) const BIT_SHIFT: u32 = 32 - 5;

/// The eight odd multipliers that spread a key's 32-bit fingerprint over the eight words.
///
/// These are the salts of the Parquet split-block bloom filter specification
/// (apache/parquet-format, BloomFilter.md), which [`Sbbf`](crate::Sbbf) must use; both native
/// layouts use them too.
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

/// The 256-bit block layout ([`Layout::Block256`]), the default `B` of
/// [`BlockedBloom<B>`](crate::BlockedBloom): eight 32-bit words, one bit per key in each, 32
/// bytes at a 32-byte-aligned address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct Block256(pub(crate) [u32; WORDS_PER_BLOCK]);

const _: () =
    assert!(size_of::<Block256>() == BLOCK_BYTES && align_of::<Block256>() == BLOCK_BYTES);

/// A [`Block256`] as four atomic 64-bit words (each holding two of the block's 32-bit words, see
/// [`to_pairs`]), 32-byte aligned like the block so that it lies inside one cache line.
#[derive(Debug, Default)]
#[repr(C, align(32))]
pub struct AtomicBlock256([AtomicU64; WORDS_PER_BLOCK / 2]);

const _: () = assert!(size_of::<AtomicBlock256>() == BLOCK_BYTES);

impl BlockLayout for Block256 {
    const LAYOUT: Layout = Layout::Block256;
}

impl Sealed for Block256 {
    const ZERO: Self = Block256([0; WORDS_PER_BLOCK]);
    const SHIFT: u32 = BIT_SHIFT;
    type Word = u32;
    type Atomic = AtomicBlock256;
    type Masks = [u64; WORDS_PER_BLOCK / 2];

    fn from_words(words: [u32; WORDS_PER_BLOCK]) -> Self {
        Block256(words)
    }

    fn words(&self) -> &[u32; WORDS_PER_BLOCK] {
        &self.0
    }

    fn words_mut(&mut self) -> &mut [u32; WORDS_PER_BLOCK] {
        &mut self.0
    }

    #[inline(always)]
    unsafe fn contains(kernel: Kernel, blocks: &[Self], hash: u64) -> bool {
        // SAFETY: the caller guarantees `blocks` is not empty.
        unsafe { kernel.contains_hash256(blocks, hash) }
    }

    #[inline(always)]
    fn insert(kernel: Kernel, block: &mut Self, x: u32) -> bool {
        kernel.insert256(block, x)
    }

    fn contains_many(kernel: Kernel, blocks: &[Self], hashes: &[u64], out: &mut [bool]) {
        kernel.contains_many256(blocks, hashes, out);
    }

    fn to_atomic(block: Self) -> AtomicBlock256 {
        AtomicBlock256(to_pairs(block.0).map(AtomicU64::new))
    }

    fn load_atomic(block: &AtomicBlock256) -> Self {
        // Relaxed: a snapshot for serialization or counting; words are independent and callers
        // order it against inserts with their own synchronisation (as for `contains`).
        Block256(from_pairs(core::array::from_fn(|j| {
            block.0[j].load(Ordering::Relaxed)
        })))
    }

    fn atomic_words(block: &AtomicBlock256) -> &[AtomicU64] {
        &block.0
    }

    #[inline(always)]
    fn atomic_masks(kernel: Kernel, x: u32) -> [u64; WORDS_PER_BLOCK / 2] {
        kernel.mask_pairs256(x)
    }

    fn atomic_bits(block: &Self) -> [u64; WORDS_PER_BLOCK / 2] {
        to_pairs(block.0)
    }
}

/// The native filter's block for hash `h`, in `0..num_blocks`: `(h * num_blocks) >> 64` in
/// 128-bit arithmetic (Lemire's multiply-shift range reduction), so that filters of more than
/// 2^32 bits or blocks index every block. Both native layouts use it.
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
