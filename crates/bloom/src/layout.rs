//! The two native block layouts: [`Layout`] names one at run time, [`BlockLayout`] at compile
//! time ([`Block256`](crate::Block256) and [`Block512`](crate::Block512) are its only
//! implementations).
//!
//! Both are split blocks (Parquet's SBBF and Boost.Bloom's `fast_multiblock32<8>` /
//! `fast_multiblock64<8>`): a block of eight words, and a key sets exactly one bit in each word,
//! bit `(x * SALT[i]) mod 2^32 >> (32 - log2(word bits))` of word `i`, where `x` is the low 32
//! bits of the key's hash. They differ in the word:
//!
//! | layout | block | words | bits per word | k | FPR at 10 bits/key | at 16 |
//! |---|---|---|---|---|---|---|
//! | [`Layout::Block256`] | 32 bytes, 32-byte aligned | 8 x u32 | 32 | 8 | 1.26 % | 0.132 % |
//! | [`Layout::Block512`] | 64 bytes, 64-byte aligned (one cache line) | 8 x u64 | 64 | 8 | 1.05 % | 0.091 % |
//!
//! (Rates from [`Layout::false_positive_rate`], the Poisson-mixture formula of Putze, Sanders
//! and Singler; the tests hold measured rates to within 10 % of it.) The 512-bit block spreads a
//! key's 8 bits over twice the bits, so at equal memory it has fewer false positives: 12 % fewer
//! at 8 bits per key, 17 % at 10, 31 % at 16 (and needs 4-10 % fewer bytes for the same rate
//! between 1 % and 0.01 %). It costs a 512-bit vector (or two 256-bit halves) per query instead
//! of one 256-bit one, and an atomic insert may need eight 64-bit read-modify-writes instead of
//! four.

use crate::kernels::Kernel;

/// A native block layout, as a value (the type-level form is [`BlockLayout`]).
///
/// Recorded in byte 10 of the serialized header ([`Layout::code`]); see the
/// [module table](crate::layout) for the shapes and rates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum Layout {
    /// 256-bit blocks of eight `u32` words, one bit per word: [`Block256`](crate::Block256).
    Block256,
    /// 512-bit blocks of eight `u64` words, one bit per word, one block per 64-byte cache line:
    /// [`Block512`](crate::Block512).
    Block512,
}

impl Layout {
    /// Every layout, in code order.
    pub const ALL: [Layout; 2] = [Layout::Block256, Layout::Block512];

    /// Bits each key sets (and each query tests), in every layout: one in each of the block's
    /// eight words (Parquet's split block). This is the `k` of the bloom filter literature, not
    /// the memory per key (`m / n`, "bits per key").
    pub const BITS_SET_PER_KEY: u32 = 8;

    /// The layout's code in the serialized header (1 or 2).
    pub const fn code(self) -> u8 {
        match self {
            Layout::Block256 => 1,
            Layout::Block512 => 2,
        }
    }

    /// The layout with header code `code`, if there is one.
    pub const fn from_code(code: u8) -> Option<Layout> {
        match code {
            1 => Some(Layout::Block256),
            2 => Some(Layout::Block512),
            _ => None,
        }
    }

    /// Bytes in one block: 32 or 64.
    pub const fn block_bytes(self) -> usize {
        match self {
            Layout::Block256 => 32,
            Layout::Block512 => 64,
        }
    }

    /// Bits in one block: 256 or 512.
    pub const fn bits_per_block(self) -> u64 {
        self.block_bytes() as u64 * 8
    }

    /// Bits in one of the block's eight words: 32 or 64.
    pub const fn word_bits(self) -> u32 {
        match self {
            Layout::Block256 => 32,
            Layout::Block512 => 64,
        }
    }

    /// The most blocks a filter of this layout may have: its bytes must fit an `isize`.
    pub const fn max_blocks(self) -> u64 {
        (isize::MAX as u64) / self.block_bytes() as u64
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Layout::Block256 => "256-bit blocks (8 x u32)",
            Layout::Block512 => "512-bit blocks (8 x u64)",
        })
    }
}

/// A block layout as a type: the `B` of [`BlockedBloom<B>`](crate::BlockedBloom) and
/// [`AtomicBlockedBloom<B>`](crate::AtomicBlockedBloom). Implemented by
/// [`Block256`](crate::Block256) (the default) and [`Block512`](crate::Block512) only (sealed).
pub trait BlockLayout: sealed::Sealed {
    /// The layout as a value.
    const LAYOUT: Layout;
}

pub(crate) mod sealed {
    use super::Kernel;
    use crate::kernels::scalar::{self as words, Word, Words};

    /// What the filters need from a block type. Sealed: the kernels' safety rests on these
    /// implementations. The scalar operations are written once, here, over the block's eight
    /// words.
    pub trait Sealed:
        Copy + Default + PartialEq + Eq + std::fmt::Debug + Send + Sync + 'static
    {
        /// The block with no bit set.
        const ZERO: Self;
        /// Right shift of `x * SALT[i]` (32 bits) that leaves a bit index of the word.
        const SHIFT: u32;
        /// The word: `u32` or `u64`.
        type Word: Word;
        /// The block as atomic words, for [`AtomicBlockedBloom`](crate::AtomicBlockedBloom).
        type Atomic: Send + Sync + std::fmt::Debug;
        /// A key's bits as the atomic block's 64-bit words, one mask per atomic word.
        type Masks: AsRef<[u64]>;

        /// The block of these words.
        fn from_words(words: Words<Self::Word>) -> Self;
        /// The block's words.
        fn words(&self) -> &Words<Self::Word>;
        /// The block's words, to change.
        fn words_mut(&mut self) -> &mut Words<Self::Word>;

        /// The one-bit mask of each word for fingerprint `x` (the scalar form of the kernels).
        #[inline(always)]
        fn masks(x: u32) -> Words<Self::Word> {
            words::masks(x, Self::SHIFT)
        }
        /// Reads a block from its little-endian bytes (`bytes.len()` is the block size).
        fn read_le(bytes: &[u8]) -> Self {
            Self::from_words(words::read_le(bytes))
        }
        /// Appends the block's little-endian bytes.
        fn write_le(&self, out: &mut Vec<u8>) {
            words::write_le(self.words(), out);
        }
        /// Bitwise OR of `other` into `self`.
        fn or_assign(&mut self, other: &Self) {
            words::or(self.words_mut(), other.words());
        }
        /// Bitwise AND of `other` into `self`.
        fn and_assign(&mut self, other: &Self) {
            words::and(self.words_mut(), other.words());
        }
        /// Bits set.
        fn count_ones(&self) -> u32 {
            words::count_ones(self.words())
        }

        /// Whether the native filter of `blocks` may hold the key of `hash`: every bit of its
        /// fingerprint set in its block (`block_index(hash, blocks.len())`).
        ///
        /// # Safety
        /// `blocks` must not be empty.
        unsafe fn contains(kernel: Kernel, blocks: &[Self], hash: u64) -> bool;
        /// Sets every bit of fingerprint `x`; whether any was clear before.
        fn insert(kernel: Kernel, block: &mut Self, x: u32) -> bool;
        /// `out[i]` = whether `blocks` holds `hashes[i]`, prefetching ahead (one dispatch per
        /// batch, so that the kernel inlines into the loop).
        fn contains_many(kernel: Kernel, blocks: &[Self], hashes: &[u64], out: &mut [bool]);

        /// The atomic form of `block`.
        fn to_atomic(block: Self) -> Self::Atomic;
        /// A snapshot of an atomic block (each word read on its own, `Relaxed`).
        fn load_atomic(block: &Self::Atomic) -> Self;
        /// The atomic block's words.
        fn atomic_words(block: &Self::Atomic) -> &[txgate_sync::sync::AtomicU64];
        /// Fingerprint `x`'s bits laid out as [`atomic_words`](Sealed::atomic_words).
        fn atomic_masks(kernel: Kernel, x: u32) -> Self::Masks;
        /// `block`'s bits laid out as [`atomic_words`](Sealed::atomic_words).
        fn atomic_bits(block: &Self) -> Self::Masks;
    }
}
