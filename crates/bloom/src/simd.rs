//! Kernel backends: a scalar path that is always compiled (and the only one under miri), and
//! AVX2 and AVX-512 paths on x86-64, picked once when a filter is built.
//!
//! Which kernel each layout runs:
//!
//! | backend | [`Block256`](crate::Block256) | [`Block512`](crate::Block512) |
//! |---|---|---|
//! | [`Backend::Scalar`] | eight 32-bit shifts | eight 64-bit shifts |
//! | [`Backend::Avx2`] | one 256-bit vector | two 256-bit halves |
//! | [`Backend::Avx512`] | the AVX2 kernel | one 512-bit vector, one compare |

use crate::error::BuildError;

/// The instruction set a filter's kernels use.
///
/// A filter picks [`Backend::detect`] unless told otherwise; every backend gives bit-for-bit the
/// same filter (tested against one naive oracle), so the choice affects speed only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable scalar code. Always available.
    Scalar,
    /// x86-64 AVX2: a 256-bit block is one vector, its mask one `vpmulld`, one `vpsrld` and one
    /// `vpsllvd`; a 512-bit block is two 256-bit halves.
    Avx2,
    /// x86-64 AVX-512F (with AVX2): a 512-bit block is one vector, its mask one `vpmuludq`, one
    /// `vpsrlq` and one `vprolvq`, a query one `vpcmpeqq`. 256-bit blocks run the AVX2 kernel.
    Avx512,
}

impl Backend {
    /// The fastest backend this CPU supports (checked at run time with
    /// `is_x86_feature_detected!`); [`Backend::Scalar`] under miri and on other architectures.
    pub fn detect() -> Backend {
        if Backend::Avx512.is_available() {
            Backend::Avx512
        } else if Backend::Avx2.is_available() {
            Backend::Avx2
        } else {
            Backend::Scalar
        }
    }

    /// Whether this CPU can run the backend.
    pub fn is_available(self) -> bool {
        match self {
            Backend::Scalar => true,
            Backend::Avx2 => avx2_available(),
            Backend::Avx512 => avx2_available() && avx512_available(),
        }
    }

    /// Every backend this CPU can run, scalar first.
    pub fn available() -> Vec<Backend> {
        [Backend::Scalar, Backend::Avx2, Backend::Avx512]
            .into_iter()
            .filter(|b| b.is_available())
            .collect()
    }
}

/// A [`Backend`] this CPU was checked to support: the only way to reach the kernels, so the
/// `unsafe` calls into SIMD code rest on a type invariant rather than on every caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(
    // Invariant: self.0.is_available().
    Backend,
);

impl Kernel {
    /// The kernel of `backend`, if this CPU can run it.
    pub(crate) fn new(backend: Backend) -> Result<Kernel, BuildError> {
        if backend.is_available() {
            Ok(Kernel(backend))
        } else {
            Err(BuildError::BackendUnavailable(backend))
        }
    }

    /// The kernel of [`Backend::detect`].
    pub(crate) fn detect() -> Kernel {
        Kernel(Backend::detect())
    }

    /// The backend behind the kernel (available on this CPU).
    #[inline(always)]
    pub(crate) fn backend(self) -> Backend {
        self.0
    }
}

/// How many keys ahead the batch operations prefetch. The rule: far enough ahead that a DRAM
/// miss completes before the key's turn, i.e. at least the memory latency divided by the time per
/// key, and no further than needed (a longer distance only holds more lines in flight). 32 is
/// where the bloom bench's batch query of a filter much larger than the caches stops improving
/// (README, bench section).
pub const PREFETCH_AHEAD: usize = 32;

/// The batch query loop, generic over the block kernel so that each backend gets its own copy
/// with the kernel inlined: `out[i]` = whether `blocks` holds `hashes[i]`, prefetching the block
/// of the key [`PREFETCH_AHEAD`] places on.
#[inline(always)]
pub(crate) fn contains_many_with<B>(
    blocks: &[B],
    hashes: &[u64],
    out: &mut [bool],
    contains: impl Fn(&B, u32) -> bool,
) {
    let num_blocks = blocks.len() as u64;
    for (i, (&hash, answer)) in hashes.iter().zip(out.iter_mut()).enumerate() {
        if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
            prefetch(&blocks[crate::block::block_index(ahead, num_blocks) as usize]);
        }
        let block = &blocks[crate::block::block_index(hash, num_blocks) as usize];
        *answer = contains(block, crate::block::fingerprint(hash));
    }
}

fn avx2_available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

fn avx512_available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// Hints the CPU to bring the cache line at `ptr` into L1 ahead of use. A no-op off x86-64 and
/// under miri.
#[inline(always)]
pub(crate) fn prefetch<T>(ptr: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        // SAFETY: a prefetch is only a hint: it never faults and reads nothing the program can
        // see, whatever the address; SSE is part of the x86-64 baseline.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(ptr.cast::<i8>()) }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        let _ = ptr;
    }
}

/// AVX2 kernels for both layouts.
#[cfg(all(target_arch = "x86_64", not(miri)))]
pub(crate) mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_mul_epu32,
        _mm256_mullo_epi32, _mm256_or_si256, _mm256_set1_epi32, _mm256_set1_epi64x,
        _mm256_setr_epi32, _mm256_setr_epi64x, _mm256_sllv_epi32, _mm256_sllv_epi64,
        _mm256_srli_epi32, _mm256_srli_epi64, _mm256_storeu_si256, _mm256_testc_si256,
        _mm256_testz_si256,
    };

    use crate::block::{BIT_SHIFT, Block256, SALT};
    use crate::block512::{BIT_SHIFT512, Block512};

    /// The 256-bit block mask for `x`: bit `x * SALT[i] mod 2^32 >> 27` in 32-bit lane `i`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn mask256(x: u32) -> __m256i {
        const { assert!(BIT_SHIFT == 27) };
        let salt = _mm256_setr_epi32(
            SALT[0] as i32,
            SALT[1] as i32,
            SALT[2] as i32,
            SALT[3] as i32,
            SALT[4] as i32,
            SALT[5] as i32,
            SALT[6] as i32,
            SALT[7] as i32,
        );
        let index = _mm256_srli_epi32::<27>(_mm256_mullo_epi32(_mm256_set1_epi32(x as i32), salt));
        _mm256_sllv_epi32(_mm256_set1_epi32(1), index)
    }

    /// The mask as four 64-bit pairs of words: x86-64 is little-endian, so storing the eight
    /// 32-bit lanes and reading them back as four `u64`s puts word `2j` in the low half of pair
    /// `j`, which is [`to_pairs`](crate::block::to_pairs).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn mask_pairs256(x: u32) -> [u64; 4] {
        let mut pairs = [0u64; 4];
        // SAFETY: `pairs` is 32 writable bytes: one unaligned 32-byte store covers it exactly.
        unsafe { _mm256_storeu_si256(pairs.as_mut_ptr().cast::<__m256i>(), mask256(x)) };
        pairs
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn contains256(block: &Block256, x: u32) -> bool {
        // SAFETY: `block.0` is 32 readable bytes: one unaligned 32-byte load covers it exactly.
        let b = unsafe { _mm256_loadu_si256(block.0.as_ptr().cast::<__m256i>()) };
        // testc(b, m) is 1 iff (!b & m) == 0: every mask bit is set in the block.
        _mm256_testc_si256(b, mask256(x)) != 0
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn insert256(block: &mut Block256, x: u32) -> bool {
        let m = mask256(x);
        let p = block.0.as_mut_ptr().cast::<__m256i>();
        // SAFETY: `block.0` is 32 bytes we hold exclusively (`&mut`): one unaligned load and
        // one store cover it exactly.
        unsafe {
            let b = _mm256_loadu_si256(p);
            let missing = _mm256_andnot_si256(b, m);
            _mm256_storeu_si256(p, _mm256_or_si256(b, m));
            _mm256_testz_si256(missing, missing) == 0
        }
    }

    /// The batch query loop with the 256-bit AVX2 kernel inlined.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(crate) unsafe fn contains_many256(blocks: &[Block256], hashes: &[u64], out: &mut [bool]) {
        super::contains_many_with(blocks, hashes, out, |block, x| {
            // SAFETY: this function's own precondition: the CPU supports AVX2.
            unsafe { contains256(block, x) }
        });
    }

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
        super::contains_many_with(blocks, hashes, out, |block, x| {
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

    use crate::block::SALT;
    use crate::block512::{BIT_SHIFT512, Block512};

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
        super::contains_many_with(blocks, hashes, out, |block, x| {
            // SAFETY: this function's own precondition: the CPU supports AVX-512F.
            unsafe { contains512(block, x) }
        });
    }
}
