//! Kernel backends: a scalar path that is always compiled (and the only one under miri), and an
//! AVX2 path on x86-64, picked once when a filter is built.
//!
//! AVX-512 is not offered: the 512-bit block is two 256-bit halves in AVX2 already, and the
//! machines this crate was measured on have no AVX-512 to show that a third path pays.

use crate::block::{self, Block};
use crate::sbbf_block::{self, SbbfBlock};

/// The instruction set a filter's kernels use.
///
/// A filter picks [`Backend::detect`] unless told otherwise; every backend gives bit-for-bit the
/// same filter (tested against one naive oracle), so the choice affects speed only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable 64-bit scalar code. Always available.
    Scalar,
    /// x86-64 AVX2: a block is two 256-bit vectors; masks come from one `vpmulld` and
    /// `vpsllvq` per half.
    Avx2,
}

impl Backend {
    /// The fastest backend this CPU supports (checked at run time with
    /// `is_x86_feature_detected!`); [`Backend::Scalar`] under miri and on other architectures.
    pub fn detect() -> Backend {
        if Backend::Avx2.is_available() {
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
        }
    }

    /// Every backend this CPU can run, scalar first.
    pub fn available() -> Vec<Backend> {
        [Backend::Scalar, Backend::Avx2]
            .into_iter()
            .filter(|b| b.is_available())
            .collect()
    }

    /// Whether every bit of fingerprint `x` is set in `block`.
    ///
    /// Invariant (callers): `self.is_available()`, checked when the filter was built.
    #[inline]
    pub(crate) fn contains(self, block: &Block, x: u32) -> bool {
        match self {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a filter only holds `Backend::Avx2` after `is_available` said yes.
                unsafe { avx2::contains(block, x) }
            }
            _ => block::contains_scalar(block, x),
        }
    }

    /// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
    ///
    /// Invariant (callers): `self.is_available()`.
    #[inline]
    pub(crate) fn insert(self, block: &mut Block, x: u32) -> bool {
        match self {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a filter only holds `Backend::Avx2` after `is_available` said yes.
                unsafe { avx2::insert(block, x) }
            }
            _ => block::insert_scalar(block, x),
        }
    }

    /// Parquet SBBF: whether every bit of `x` is set in `block`.
    ///
    /// Invariant (callers): `self.is_available()`.
    #[inline]
    pub(crate) fn sbbf_contains(self, block: &SbbfBlock, x: u32) -> bool {
        match self {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a filter only holds `Backend::Avx2` after `is_available` said yes.
                unsafe { avx2::sbbf_contains(block, x) }
            }
            _ => sbbf_block::contains_scalar(block, x),
        }
    }

    /// Parquet SBBF: sets every bit of `x` in `block`; whether any was clear before.
    ///
    /// Invariant (callers): `self.is_available()`.
    #[inline]
    pub(crate) fn sbbf_insert(self, block: &mut SbbfBlock, x: u32) -> bool {
        match self {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a filter only holds `Backend::Avx2` after `is_available` said yes.
                unsafe { avx2::sbbf_insert(block, x) }
            }
            _ => sbbf_block::insert_scalar(block, x),
        }
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

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx2 {
    use core::arch::x86_64::{
        __m256i, _mm256_andnot_si256, _mm256_castsi256_si128, _mm256_cvtepu32_epi64,
        _mm256_extracti128_si256, _mm256_loadu_si256, _mm256_mullo_epi32, _mm256_or_si256,
        _mm256_set1_epi32, _mm256_set1_epi64x, _mm256_setr_epi32, _mm256_sllv_epi32,
        _mm256_sllv_epi64, _mm256_srli_epi32, _mm256_storeu_si256, _mm256_testc_si256,
        _mm256_testz_si256,
    };

    use crate::block::{BIT_SHIFT, Block, SALT};
    use crate::sbbf_block::{SBBF_BIT_SHIFT, SbbfBlock};

    /// `x * SALT[i] mod 2^32 >> shift` in each of eight 32-bit lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn bit_indexes<const SHIFT: i32>(x: u32) -> __m256i {
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
        _mm256_srli_epi32::<SHIFT>(_mm256_mullo_epi32(_mm256_set1_epi32(x as i32), salt))
    }

    /// The two 256-bit halves of the block mask for `x`: one bit in each 64-bit word.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn masks(x: u32) -> (__m256i, __m256i) {
        const { assert!(BIT_SHIFT == 26) };
        let idx = bit_indexes::<26>(x);
        let lo = _mm256_cvtepu32_epi64(_mm256_castsi256_si128(idx));
        let hi = _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(idx));
        let one = _mm256_set1_epi64x(1);
        (_mm256_sllv_epi64(one, lo), _mm256_sllv_epi64(one, hi))
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn contains(block: &Block, x: u32) -> bool {
        let (m0, m1) = masks(x);
        let p = block.0.as_ptr().cast::<__m256i>();
        // SAFETY: `block.0` is 64 readable bytes, so both 32-byte unaligned loads at offsets 0
        // and 32 stay inside it.
        let (b0, b1) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
        // testc(b, m) is 1 iff (!b & m) == 0: every mask bit is set in the block.
        (_mm256_testc_si256(b0, m0) & _mm256_testc_si256(b1, m1)) != 0
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn insert(block: &mut Block, x: u32) -> bool {
        let (m0, m1) = masks(x);
        let p = block.0.as_mut_ptr().cast::<__m256i>();
        // SAFETY: `block.0` is 64 bytes we hold exclusively (`&mut`); the loads and stores at
        // offsets 0 and 32 cover it exactly, unaligned access is allowed.
        unsafe {
            let (b0, b1) = (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1)));
            let missing = _mm256_or_si256(_mm256_andnot_si256(b0, m0), _mm256_andnot_si256(b1, m1));
            _mm256_storeu_si256(p, _mm256_or_si256(b0, m0));
            _mm256_storeu_si256(p.add(1), _mm256_or_si256(b1, m1));
            _mm256_testz_si256(missing, missing) == 0
        }
    }

    /// The SBBF block mask for `x`: one bit in each 32-bit word.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn sbbf_mask(x: u32) -> __m256i {
        const { assert!(SBBF_BIT_SHIFT == 27) };
        _mm256_sllv_epi32(_mm256_set1_epi32(1), bit_indexes::<27>(x))
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sbbf_contains(block: &SbbfBlock, x: u32) -> bool {
        let m = sbbf_mask(x);
        // SAFETY: `block.0` is 32 readable bytes: one unaligned 32-byte load.
        let b = unsafe { _mm256_loadu_si256(block.0.as_ptr().cast::<__m256i>()) };
        _mm256_testc_si256(b, m) != 0
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sbbf_insert(block: &mut SbbfBlock, x: u32) -> bool {
        let m = sbbf_mask(x);
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
}
