//! Kernel backends: a scalar path that is always compiled (and the only one under miri), and an
//! AVX2 path on x86-64, picked once when a filter is built.
//!
//! AVX-512 is not offered: a block is one 256-bit register, so a wider register does not make a
//! single query cheaper, and the machines this crate was measured on have no AVX-512 on which to
//! show that a batched AVX-512 path pays.

use crate::block::{self, Block, WORDS_PER_BLOCK};
use crate::error::BuildError;

/// The instruction set a filter's kernels use.
///
/// A filter picks [`Backend::detect`] unless told otherwise; every backend gives bit-for-bit the
/// same filter (tested against one naive oracle), so the choice affects speed only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable scalar code on 32-bit words. Always available.
    Scalar,
    /// x86-64 AVX2: a block is one 256-bit vector; its mask is one `vpmulld`, one `vpsrld` and
    /// one `vpsllvd`.
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
}

/// A [`Backend`] this CPU was checked to support: the only way to reach the kernels, so the
/// `unsafe` calls into AVX2 code below rest on a type invariant rather than on every caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Kernel(
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

    /// The backend behind the kernel.
    pub(crate) fn backend(self) -> Backend {
        self.0
    }

    /// Whether every bit of fingerprint `x` is set in `block`.
    #[inline(always)]
    pub(crate) fn contains(self, block: &Block, x: u32) -> bool {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a `Kernel` holds `Backend::Avx2` only if `is_available` said yes (invariant).
                unsafe { avx2::contains(block, x) }
            }
            _ => block::contains_scalar(block, x),
        }
    }

    /// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
    #[inline(always)]
    pub(crate) fn insert(self, block: &mut Block, x: u32) -> bool {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a `Kernel` holds `Backend::Avx2` only if `is_available` said yes (invariant).
                unsafe { avx2::insert(block, x) }
            }
            _ => block::insert_scalar(block, x),
        }
    }
}

/// How many keys ahead the batch operations prefetch: far enough that a DRAM miss (about 100 ns)
/// completes before the key's turn at ~15 ns per key. Measured on the 256 MiB bench filter here:
/// 8 ahead 19.0 ns per key, 32 ahead 14.9, 64 ahead 15.0.
pub(crate) const PREFETCH_AHEAD: usize = 32;

/// The batch query loop, generic over the block kernel so that each backend gets its own copy
/// with the kernel inlined: `out[i]` = whether `blocks` holds `hashes[i]`, prefetching the block
/// of the key [`PREFETCH_AHEAD`] places on.
#[inline(always)]
fn contains_many_with(
    blocks: &[Block],
    hashes: &[u64],
    out: &mut [bool],
    contains: impl Fn(&Block, u32) -> bool,
) {
    let num_blocks = blocks.len() as u64;
    for (i, (&hash, answer)) in hashes.iter().zip(out.iter_mut()).enumerate() {
        if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
            prefetch(&blocks[block::block_index(ahead, num_blocks) as usize]);
        }
        let block = &blocks[block::block_index(hash, num_blocks) as usize];
        *answer = contains(block, block::fingerprint(hash));
    }
}

impl Kernel {
    /// The batch query of [`BlockedBloom::contains_many`](crate::BlockedBloom::contains_many):
    /// one dispatch per batch, so that the AVX2 kernel inlines into the loop.
    pub(crate) fn contains_many(self, blocks: &[Block], hashes: &[u64], out: &mut [bool]) {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a `Kernel` holds `Backend::Avx2` only if `is_available` said yes.
                unsafe { avx2::contains_many(blocks, hashes, out) }
            }
            _ => contains_many_with(blocks, hashes, out, block::contains_scalar),
        }
    }

    /// The key's masks as four 64-bit pairs of words ([`block::to_pairs`]), for the atomic
    /// filter's `fetch_or`s.
    #[inline(always)]
    pub(crate) fn mask_pairs(self, x: u32) -> [u64; WORDS_PER_BLOCK / 2] {
        match self.0 {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx2 => {
                debug_assert!(avx2_available());
                // SAFETY: a `Kernel` holds `Backend::Avx2` only if `is_available` said yes (invariant).
                unsafe { avx2::mask_pairs(x) }
            }
            _ => block::to_pairs(block::masks(x)),
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
        __m256i, _mm256_andnot_si256, _mm256_loadu_si256, _mm256_mullo_epi32, _mm256_or_si256,
        _mm256_set1_epi32, _mm256_setr_epi32, _mm256_sllv_epi32, _mm256_srli_epi32,
        _mm256_storeu_si256, _mm256_testc_si256, _mm256_testz_si256,
    };

    use crate::block::{BIT_SHIFT, Block, SALT};

    /// The block mask for `x`: bit `x * SALT[i] mod 2^32 >> 27` in 32-bit lane `i`.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn mask(x: u32) -> __m256i {
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
    pub(super) unsafe fn mask_pairs(x: u32) -> [u64; 4] {
        let mut pairs = [0u64; 4];
        // SAFETY: `pairs` is 32 writable bytes: one unaligned 32-byte store covers it exactly.
        unsafe { _mm256_storeu_si256(pairs.as_mut_ptr().cast::<__m256i>(), mask(x)) };
        pairs
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn contains(block: &Block, x: u32) -> bool {
        // SAFETY: `block.0` is 32 readable bytes: one unaligned 32-byte load covers it exactly.
        let b = unsafe { _mm256_loadu_si256(block.0.as_ptr().cast::<__m256i>()) };
        // testc(b, m) is 1 iff (!b & m) == 0: every mask bit is set in the block.
        _mm256_testc_si256(b, mask(x)) != 0
    }

    /// The batch query loop with the AVX2 kernel inlined.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn contains_many(blocks: &[Block], hashes: &[u64], out: &mut [bool]) {
        super::contains_many_with(blocks, hashes, out, |block, x| {
            // SAFETY: this function's own precondition: the CPU supports AVX2.
            unsafe { contains(block, x) }
        });
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn insert(block: &mut Block, x: u32) -> bool {
        let m = mask(x);
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
