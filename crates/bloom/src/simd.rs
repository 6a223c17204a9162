//! Kernel backends: a scalar path that is always compiled (and the only one under miri), and
//! AVX2 and AVX-512 paths on x86-64, picked once when a filter is built; the [`Kernel`] token
//! that proves a backend was checked; prefetching. The kernels themselves live with their block
//! layout (`block.rs`, `block512.rs`), which import this module and not the other way round.
//!
//! Which kernel each layout runs:
//!
//! | backend | [`Block256`](crate::Block256) | [`Block512`](crate::Block512) |
//! |---|---|---|
//! | [`Backend::Scalar`] | eight 32-bit shifts | eight 64-bit shifts |
//! | [`Backend::Avx2`] | one 256-bit vector | two 256-bit halves |
//! | [`Backend::Avx512`] | the AVX2 kernel | one 512-bit vector, one compare |

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
    pub(crate) fn new(backend: Backend) -> Option<Kernel> {
        backend.is_available().then_some(Kernel(backend))
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
