//! [`Block512`]: one 64-byte cache line as eight 64-bit words.
//!
//! Layout: a key's 64-bit hash `h` picks one block (as for [`Block256`](crate::Block256):
//! `(h * num_blocks) >> 64`), and its low 32 bits `x` set exactly one bit in each of the eight
//! words: bit `(x * SALT[i]) mod 2^32 >> 26` of word `i` (the top 6 bits of the 32-bit product,
//! with Parquet's salts). This is the block of Boost.Bloom's `fast_multiblock64<8>`. A block is 64
//! bytes at a 64-byte-aligned address (the storage is a slice of this type), so "one cache line
//! per operation" holds by construction.
//!
//! Kernels: with AVX-512F the mask is one 64-bit multiply (`vpmuludq`), one shift and one
//! variable rotate of a 512-bit register, and a query is one 512-bit compare; with AVX2 the same
//! work runs in two 256-bit halves; the scalar path is eight shifts.

use crate::block::WORDS_PER_BLOCK;
use crate::layout::{BlockLayout, Layout, sealed::Sealed};
use crate::simd::{Backend, Kernel};
use txgate_sync::sync::{AtomicU64, Ordering};

/// Bytes in one [`Block512`]: one cache line.
pub(crate) const BLOCK512_BYTES: usize = 64;
/// Right shift that keeps the top 6 bits of a 32-bit product: a bit index in `0..64`.
pub(crate) const BIT_SHIFT512: u32 = 32 - 6;

/// The 512-bit block layout ([`Layout::Block512`]): eight 64-bit words, one bit per key in each,
/// one 64-byte cache line at a 64-byte-aligned address.
///
/// At equal memory it has 12-31 % fewer false positives than [`Block256`](crate::Block256)
/// between 8 and 16 bits per key (see [`Layout`]).
///
/// # Examples
/// ```
/// use txgate_bloom::{Block512, BlockedBloom, BloomBuilder};
/// let mut round: BlockedBloom<Block512> =
///     BloomBuilder::with_false_positive_rate(1_000, 0.001)?.layout::<Block512>()?.build()?;
/// round.insert_id(&[7; 32]);
/// assert!(round.contains_id(&[7; 32]));
/// assert_eq!(round.memory_bytes(), 64 * round.num_blocks());
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub struct Block512(pub(crate) [u64; WORDS_PER_BLOCK]);

const _: () =
    assert!(size_of::<Block512>() == BLOCK512_BYTES && align_of::<Block512>() == BLOCK512_BYTES);

/// A [`Block512`] as eight atomic 64-bit words, 64-byte aligned like the block.
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub struct AtomicBlock512([AtomicU64; WORDS_PER_BLOCK]);

const _: () = assert!(size_of::<AtomicBlock512>() == BLOCK512_BYTES);

impl BlockLayout for Block512 {
    const LAYOUT: Layout = Layout::Block512;
}

impl Sealed for Block512 {
    const ZERO: Self = Block512([0; WORDS_PER_BLOCK]);
    const SHIFT: u32 = BIT_SHIFT512;
    type Word = u64;
    type Atomic = AtomicBlock512;
    type Masks = [u64; WORDS_PER_BLOCK];

    fn from_words(words: [u64; WORDS_PER_BLOCK]) -> Self {
        Block512(words)
    }

    fn words(&self) -> &[u64; WORDS_PER_BLOCK] {
        &self.0
    }

    fn words_mut(&mut self) -> &mut [u64; WORDS_PER_BLOCK] {
        &mut self.0
    }

    #[inline(always)]
    fn contains(kernel: Kernel, block: &Self, x: u32) -> bool {
        match kernel.backend() {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx512 => {
                debug_assert!(Backend::Avx512.is_available());
                // SAFETY: a `Kernel` holds a backend that `is_available` approved (its
                // invariant): here AVX-512F.
                unsafe { avx512::contains512(block, x) }
            }
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(Backend::Avx2.is_available());
                // SAFETY: as above: here AVX2.
                unsafe { avx2::contains512(block, x) }
            }
            _ => block.contains_scalar(x),
        }
    }

    #[inline(always)]
    fn insert(kernel: Kernel, block: &mut Self, x: u32) -> bool {
        match kernel.backend() {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx512 => {
                debug_assert!(Backend::Avx512.is_available());
                // SAFETY: as in `contains`: AVX-512F is available.
                unsafe { avx512::insert512(block, x) }
            }
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(Backend::Avx2.is_available());
                // SAFETY: as in `contains`: AVX2 is available.
                unsafe { avx2::insert512(block, x) }
            }
            _ => block.insert_scalar(x),
        }
    }

    fn contains_many(kernel: Kernel, blocks: &[Self], hashes: &[u64], out: &mut [bool]) {
        match kernel.backend() {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx512 => {
                debug_assert!(Backend::Avx512.is_available());
                // SAFETY: as in `contains`: AVX-512F is available.
                unsafe { avx512::contains_many512(blocks, hashes, out) }
            }
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(Backend::Avx2.is_available());
                // SAFETY: as in `contains`: AVX2 is available.
                unsafe { avx2::contains_many512(blocks, hashes, out) }
            }
            _ => crate::block::contains_many_with(blocks, hashes, out, Block512::contains_scalar),
        }
    }

    fn to_atomic(block: Self) -> AtomicBlock512 {
        AtomicBlock512(block.0.map(AtomicU64::new))
    }

    fn load_atomic(block: &AtomicBlock512) -> Self {
        // Relaxed: a snapshot for serialization or counting; words are independent and callers
        // order it against inserts with their own synchronisation (as for `contains`).
        Block512(core::array::from_fn(|j| block.0[j].load(Ordering::Relaxed)))
    }

    fn atomic_words(block: &AtomicBlock512) -> &[AtomicU64] {
        &block.0
    }

    #[inline(always)]
    fn atomic_masks(kernel: Kernel, x: u32) -> [u64; WORDS_PER_BLOCK] {
        match kernel.backend() {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx512 => {
                debug_assert!(Backend::Avx512.is_available());
                // SAFETY: as in `contains`: AVX-512F is available.
                unsafe { avx512::masks512(x) }
            }
            _ => Block512::masks(x),
        }
    }

    fn atomic_bits(block: &Self) -> [u64; WORDS_PER_BLOCK] {
        block.0
    }
}

/// AVX2 kernels for [`Block512`]: two 256-bit halves.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_mul_epu32,
        _mm256_or_si256, _mm256_set1_epi64x, _mm256_setr_epi64x, _mm256_sllv_epi64,
        _mm256_srli_epi64, _mm256_storeu_si256, _mm256_testz_si256,
    };

    use super::{BIT_SHIFT512, Block512};
    use crate::block::SALT;

    /// The 512-bit block mask for `x` as two halves (words 0-3, words 4-7): bit
    /// `x * SALT[i] mod 2^32 >> 26` in 64-bit lane `i`. `vpmuludq` gives the full 64-bit
    /// product of the low 32 bits of each lane, whose bits 26..32 are that index.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mask512(x: u32) -> (__m256i, __m256i) {
        const { assert!(BIT_SHIFT512 == 26) };
        let x = _mm256_set1_epi64x(i64::from(x));
        let lo = _mm256_setr_epi64x(
            i64::from(SALT[0]),
            i64::from(SALT[1]),
            i64::from(SALT[2]),
            i64::from(SALT[3]),
        );
        let hi = _mm256_setr_epi64x(
            i64::from(SALT[4]),
            i64::from(SALT[5]),
            i64::from(SALT[6]),
            i64::from(SALT[7]),
        );
        let (one, low6) = (_mm256_set1_epi64x(1), _mm256_set1_epi64x(63));
        let bit = |product| {
            _mm256_sllv_epi64(
                one,
                _mm256_and_si256(_mm256_srli_epi64::<26>(product), low6),
            )
        };
        (bit(_mm256_mul_epu32(x, lo)), bit(_mm256_mul_epu32(x, hi)))
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn contains512(block: &Block512, x: u32) -> bool {
        let (m0, m1) = mask512(x);
        let p = block.0.as_ptr().cast::<__m256i>();
        // SAFETY: `block.0` is 64 readable bytes: two unaligned 32-byte loads at offsets 0 and
        // 32 cover it exactly.
        let (b0, b1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        let missing = _mm256_or_si256(_mm256_andnot_si256(b0, m0), _mm256_andnot_si256(b1, m1));
        _mm256_testz_si256(missing, missing) != 0
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn insert512(block: &mut Block512, x: u32) -> bool {
        let (m0, m1) = mask512(x);
        let p = block.0.as_mut_ptr().cast::<__m256i>();
        // SAFETY: `block.0` is 64 bytes we hold exclusively (`&mut`): two unaligned 32-byte
        // loads and stores at offsets 0 and 32 cover it exactly.
        unsafe {
            let (b0, b1) = (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)));
            let missing = _mm256_or_si256(_mm256_andnot_si256(b0, m0), _mm256_andnot_si256(b1, m1));
            _mm256_storeu_si256(p, _mm256_or_si256(b0, m0));
            _mm256_storeu_si256(p.add(1), _mm256_or_si256(b1, m1));
            _mm256_testz_si256(missing, missing) == 0
        }
    }

    /// The batch query loop with the 512-bit AVX2 kernel inlined.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn contains_many512(blocks: &[Block512], hashes: &[u64], out: &mut [bool]) {
        crate::block::contains_many_with(blocks, hashes, out, |block, x| {
            // SAFETY: this function's own precondition: the CPU supports AVX2.
            unsafe { contains512(block, x) }
        });
    }
}

/// AVX-512F kernels for [`Block512`](crate::Block512).
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) mod avx512 {
    use core::arch::x86_64::{
        __m512i, _mm512_and_si512, _mm512_andnot_si512, _mm512_cmpeq_epi64_mask,
        _mm512_loadu_si512, _mm512_mul_epu32, _mm512_or_si512, _mm512_rolv_epi64,
        _mm512_set1_epi64, _mm512_setr_epi64, _mm512_srli_epi64, _mm512_storeu_si512,
        _mm512_test_epi64_mask,
    };

    use super::{BIT_SHIFT512, Block512};
    use crate::block::SALT;

    /// The block mask for `x`: bit `x * SALT[i] mod 2^32 >> 26` in 64-bit lane `i`. `vpmuludq`
    /// gives the full 64-bit product of the low 32 bits of each lane; its bits 26..32 are the
    /// index, and a rotate (which takes its count mod 64) needs no mask to drop the bits above.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn mask(x: u32) -> __m512i {
        const { assert!(BIT_SHIFT512 == 26) };
        let salt = _mm512_setr_epi64(
            i64::from(SALT[0]),
            i64::from(SALT[1]),
            i64::from(SALT[2]),
            i64::from(SALT[3]),
            i64::from(SALT[4]),
            i64::from(SALT[5]),
            i64::from(SALT[6]),
            i64::from(SALT[7]),
        );
        let product = _mm512_mul_epu32(_mm512_set1_epi64(i64::from(x)), salt);
        _mm512_rolv_epi64(_mm512_set1_epi64(1), _mm512_srli_epi64::<26>(product))
    }

    /// The mask as eight words, for the atomic filter.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn masks512(x: u32) -> [u64; 8] {
        let mut words = [0u64; 8];
        // SAFETY: `words` is 64 writable bytes: one unaligned 64-byte store covers it exactly.
        unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast::<__m512i>(), mask(x)) };
        words
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn contains512(block: &Block512, x: u32) -> bool {
        let m = mask(x);
        // SAFETY: `block.0` is 64 readable bytes: one unaligned 64-byte load covers it exactly.
        let b = unsafe { _mm512_loadu_si512(block.0.as_ptr().cast::<__m512i>()) };
        // One compare: every lane keeps all of its mask bit.
        _mm512_cmpeq_epi64_mask(_mm512_and_si512(b, m), m) == 0xff
    }

    /// # Safety
    /// The CPU must support AVX-512F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn insert512(block: &mut Block512, x: u32) -> bool {
        let m = mask(x);
        let p = block.0.as_mut_ptr().cast::<__m512i>();
        // SAFETY: `block.0` is 64 bytes we hold exclusively (`&mut`): one unaligned 64-byte load
        // and one store cover it exactly.
        unsafe {
            let b = _mm512_loadu_si512(p);
            let missing = _mm512_andnot_si512(b, m);
            _mm512_storeu_si512(p, _mm512_or_si512(b, m));
            _mm512_test_epi64_mask(missing, missing) != 0
        }
    }

    /// The batch query loop with the AVX-512 kernel inlined.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn contains_many512(blocks: &[Block512], hashes: &[u64], out: &mut [bool]) {
        crate::block::contains_many_with(blocks, hashes, out, |block, x| {
            // SAFETY: this function's own precondition: the CPU supports AVX-512F.
            unsafe { contains512(block, x) }
        });
    }
}
