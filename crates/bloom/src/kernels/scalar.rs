//! The split block's scalar operations, shared by both layouts: a block is eight words (`u32`
//! for [`Block256`](crate::Block256), `u64` for [`Block512`](crate::Block512)) and a key sets
//! one bit in each, bit `(x * SALT[i]) mod 2^32 >> shift` of word `i`.

use std::ops::{BitAnd, BitAndAssign, BitOr, BitOrAssign, Not};

use crate::block::{SALT, WORDS_PER_BLOCK};

/// A block word: `u32` or `u64`.
// Public because the sealed `BlockLayout` names it as an associated type's bound; Rust 1.89 (the
// MSRV) reports it as unreachable, newer compilers see it reached through that bound.
#[allow(unreachable_pub)]
pub trait Word:
    Copy
    + Eq
    + BitOr<Output = Self>
    + BitOrAssign
    + BitAnd<Output = Self>
    + BitAndAssign
    + Not<Output = Self>
{
    /// Bytes of the word.
    const BYTES: usize;
    /// No bit set.
    const ZERO: Self;
    /// The word with only bit `index` set (`index` below the word's bits).
    fn bit(index: u32) -> Self;
    /// Reads the word from `Self::BYTES` little-endian bytes.
    fn from_le(bytes: &[u8]) -> Self;
    /// Appends the word's little-endian bytes.
    fn put_le(self, out: &mut Vec<u8>);
    /// Bits set.
    fn ones(self) -> u32;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const BYTES: usize = size_of::<$t>();
            const ZERO: Self = 0;

            #[inline(always)]
            fn bit(index: u32) -> Self {
                1 << index
            }

            fn from_le(bytes: &[u8]) -> Self {
                let mut le = [0u8; size_of::<$t>()];
                le.copy_from_slice(bytes);
                <$t>::from_le_bytes(le)
            }

            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            fn ones(self) -> u32 {
                self.count_ones()
            }
        }
    };
}

word!(u32);
word!(u64);

/// Eight words.
pub(crate) type Words<W> = [W; WORDS_PER_BLOCK];

/// The one-bit mask of each word for fingerprint `x`: bit `(x * SALT[i]) mod 2^32 >> shift`
/// (the scalar form of the SIMD kernels).
#[inline(always)]
pub(crate) fn masks<W: Word>(x: u32, shift: u32) -> Words<W> {
    core::array::from_fn(|i| W::bit(x.wrapping_mul(SALT[i]) >> shift))
}

/// Whether every mask bit is set in `words`.
#[inline]
pub(crate) fn contains<W: Word>(words: &Words<W>, masks: Words<W>) -> bool {
    let mut missing = W::ZERO;
    for (&word, mask) in words.iter().zip(masks) {
        missing |= mask & !word;
    }
    missing == W::ZERO
}

/// Sets every mask bit in `words`; whether any was clear before.
#[inline]
pub(crate) fn insert<W: Word>(words: &mut Words<W>, masks: Words<W>) -> bool {
    let mut missing = W::ZERO;
    for (word, mask) in words.iter_mut().zip(masks) {
        missing |= mask & !*word;
        *word |= mask;
    }
    missing != W::ZERO
}

/// Reads eight words from their little-endian bytes (`bytes.len()` is `8 * W::BYTES`).
pub(crate) fn read_le<W: Word>(bytes: &[u8]) -> Words<W> {
    debug_assert_eq!(bytes.len(), WORDS_PER_BLOCK * W::BYTES);
    let mut words = [W::ZERO; WORDS_PER_BLOCK];
    for (word, le) in words.iter_mut().zip(bytes.chunks_exact(W::BYTES)) {
        *word = W::from_le(le);
    }
    words
}

/// Appends the words' little-endian bytes.
pub(crate) fn write_le<W: Word>(words: &Words<W>, out: &mut Vec<u8>) {
    for &word in words {
        word.put_le(out);
    }
}

/// `a |= b`, word by word.
pub(crate) fn or<W: Word>(a: &mut Words<W>, b: &Words<W>) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x |= y;
    }
}

/// `a &= b`, word by word.
pub(crate) fn and<W: Word>(a: &mut Words<W>, b: &Words<W>) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x &= y;
    }
}

/// Bits set in the words.
pub(crate) fn count_ones<W: Word>(words: &Words<W>) -> u32 {
    words.iter().map(|w| w.ones()).sum()
}
