//! The kernels, by instruction set, and the one place that picks among them.
//!
//! - [`scalar`]: the split block's portable operations over its eight words, shared by both
//!   layouts; always compiled, and the only path under miri and off x86-64.
//! - `avx2` (x86-64, AVX2 and BMI2): a [`Block256`] is one 256-bit register, a [`Block512`] two.
//! - `avx512` (x86-64, AVX-512F, AVX-512VL and BMI2): a [`Block512`] is one 512-bit register;
//!   a [`Block256`] query is one 256-bit register with the EVEX forms (its other operations run
//!   the AVX2 kernels). A native filter's one-key query computes the block index in the kernel
//!   too (`mulx`), and answers with a mask register's missing lanes (`kmovw`).
//!
//! A filter picks its [`Backend`] once, when it is built or loaded, and holds it as a [`Kernel`]:
//! a token that proves the CPU was checked. The `impl Kernel` below is the only dispatch: every
//! operation of both layouts matches on the backend there (one predictable branch, hoisted out
//! of loops by the compiler) and calls the kernel of that instruction set. The layouts
//! (`block.rs`, `block512.rs`) hold the rules (salts, shifts, block index) and call these.
//!
//! Which kernel each layout runs:
//!
//! | backend | [`Block256`] | [`Block512`] |
//! |---|---|---|
//! | [`Backend::Scalar`] | eight 32-bit shifts | eight 64-bit shifts |
//! | [`Backend::Avx2`] | one 256-bit vector | two 256-bit halves |
//! | [`Backend::Avx512`] | one 256-bit vector (queries: EVEX forms in ymm16-17, no `vzeroupper`, the block index in the kernel; the rest the AVX2 kernel) | one 512-bit vector (zmm16-17; queries: no `vzeroupper`, the block index in the kernel) |
//!
//! On x86-64 a one-key query is inline assembly (so that it inlines into the caller's loop; see
//! the `avx2` module), everything else `#[target_feature]` functions with intrinsics. Both
//! forms are tested against one naive oracle for every backend this CPU has.
//!
//! Prefetching ([`prefetch`], [`PREFETCH_AHEAD`]) and the batch query loop live here too.

use crate::block::{BIT_SHIFT, Block256, block_index, fingerprint, to_pairs};
use crate::block512::{BIT_SHIFT512, Block512};

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx2;
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx512;
pub(crate) mod scalar;

/// The salts as a 32-byte-aligned vector of `u32` lanes, for the inline-assembly kernels.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static SALT32: Aligned<[u32; 8]> = Aligned(crate::block::SALT);

/// The salts as a 64-byte-aligned vector of `u64` lanes, for the inline-assembly kernels.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static SALT64: Aligned<[u64; 8]> = Aligned({
    let mut wide = [0u64; 8];
    let mut i = 0;
    while i < 8 {
        wide[i] = crate::block::SALT[i] as u64;
        i += 1;
    }
    wide
});

/// The salts in the `u32` lane order that lets the 512-bit AVX2 query widen its eight bit
/// indices into two vectors of `u64` lanes by unpacking with zero: `vpunpckldq` takes dword
/// lanes 0, 1, 4, 5 (words 0..4) and `vpunpckhdq` lanes 2, 3, 6, 7 (words 4..8).
#[cfg(all(target_arch = "x86_64", not(miri)))]
const SALT_UNPACK_ORDER: [u32; 8] = {
    let s = crate::block::SALT;
    [s[0], s[1], s[4], s[5], s[2], s[3], s[6], s[7]]
};

/// [`SALT_UNPACK_ORDER`] as an aligned vector, for the inline-assembly kernels.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static SALT32_UNPACK: Aligned<[u32; 8]> = Aligned(SALT_UNPACK_ORDER);

/// 1 as a `u32`, broadcast by the inline-assembly kernels.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static ONE32: u32 = 1;
/// 1 as a `u64`, broadcast by the inline-assembly kernels.
#[cfg(all(target_arch = "x86_64", not(miri)))]
static ONE64: u64 = 1;

/// A query's answer (0 or 1 in a 64-bit register, from the AVX2 assembly or a scalar kernel) as a
/// `bool`, with the range told to the compiler: a caller that counts answers then adds the
/// register as is, where a plain `!= 0` of an unknown byte costs a compare and a
/// subtract-with-borrow per query (and a 32-bit value a zero-extending move). The dispatch
/// applies it after its match, so that the arms meet as one 64-bit value. (The AVX-512 queries
/// answer with a mask of missing lanes instead, compared with 0 in their arm.)
///
/// # Safety
/// `flag` must be 0 or 1.
#[inline(always)]
unsafe fn answer(flag: u64) -> bool {
    // SAFETY: the caller guarantees `flag <= 1`.
    unsafe { core::hint::assert_unchecked(flag <= 1) };
    flag != 0
}

/// A 64-byte-aligned value (one cache line; aligned loads of vectors up to 512 bits).
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[repr(C, align(64))]
struct Aligned<T>(T);

/// The instruction set a filter's kernels use.
///
/// A filter picks [`Backend::detect`] unless told otherwise; every backend gives bit-for-bit the
/// same filter (tested against one naive oracle), so the choice affects speed only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Backend {
    /// Portable scalar code. Always available.
    Scalar,
    /// x86-64 AVX2 and BMI2 (which came with it: every AVX2 CPU has both): a 256-bit block is
    /// one vector, its mask one `vpmulld`, one `vpsrld` and one `vpsllvd`; a 512-bit block is two
    /// 256-bit halves. The native filters' queries compute the block index in the kernel
    /// (BMI2's `mulx`).
    Avx2,
    /// x86-64 AVX-512F, AVX-512VL and BMI2 (with AVX2): a 512-bit block is one vector, its mask one
    /// `vpmuludq`, one `vpsrlq` and one `vprolvq`, a query one `vptestnmq` (on AMD CPUs with
    /// AVX512_BITALG, one `vpshufbitqmb` of the block by the shifted products, which needs no
    /// one-hot mask: faster on an AMD Zen 4, slower on an Intel Xeon). A 256-bit block's
    /// query is the AVX2 kernel's mask in the EVEX forms (broadcast from the general-purpose
    /// register, test by one `vptestnmd`), in registers 16-31 so that it needs no
    /// `vzeroupper`; its inserts and batch queries run the AVX2 kernel. Every AVX-512 CPU but
    /// the Xeon Phi (Knights Landing, Knights Mill) has AVX-512VL; those get
    /// [`Backend::Avx2`]. Every AVX-512 CPU has BMI2 (`mulx`, for the native filters' block
    /// index in the query kernels); it is checked all the same.
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
pub struct Kernel {
    // Invariant: backend.is_available().
    backend: Backend,
    // Invariant: true only if the backend is `Avx512` and the CPU has AVX-512BW, AVX512_BITALG
    // and BMI1 (`bitalg_available`): the 512-bit layout's query then tests with
    // `vpshufbitqmb` (see `avx512::contains_hash512_bitalg_asm`). Chosen by `checked` where
    // that query measured faster (`bitalg_preferred`); tests build the other form too.
    // Not a `Backend` of its own: the same backend and the same filter, one query kernel or
    // another chosen by what else the CPU has and by its vendor.
    bitalg: bool,
}

impl Kernel {
    /// The kernel of `backend`, if this CPU can run it.
    pub(crate) fn new(backend: Backend) -> Option<Kernel> {
        backend.is_available().then(|| Kernel::checked(backend))
    }

    /// The kernel of [`Backend::detect`].
    pub(crate) fn detect() -> Kernel {
        Kernel::checked(Backend::detect())
    }

    /// The kernel of `backend`, which must be available, with the optional kernels this CPU
    /// can run.
    fn checked(backend: Backend) -> Kernel {
        debug_assert!(backend.is_available());
        Kernel {
            backend,
            bitalg: backend == Backend::Avx512 && bitalg_available() && bitalg_preferred(),
        }
    }

    /// Every form of this kernel's queries this CPU can run: itself, and the same backend with
    /// its optional query kernel switched the other way where the CPU can run both, to test
    /// both on a CPU that has it, whichever `checked` chose.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn forms(self) -> Vec<Kernel> {
        let mut forms = vec![self];
        if self.backend == Backend::Avx512 && bitalg_available() {
            forms.push(Kernel {
                bitalg: !self.bitalg,
                ..self
            });
        }
        forms
    }

    /// The backend behind the kernel (available on this CPU).
    #[inline(always)]
    pub(crate) fn backend(self) -> Backend {
        self.backend
    }
}

/// The one dispatch: each operation of each layout, on the backend the kernel holds.
impl Kernel {
    /// Whether the native filter of `blocks` may hold the key of `hash`: every bit of
    /// fingerprint [`fingerprint`]`(hash)` set in block [`block_index`]`(hash, blocks.len())`.
    ///
    /// # Safety
    /// `blocks` must not be empty.
    #[inline(always)]
    pub(crate) unsafe fn contains_hash256(self, blocks: &[Block256], hash: u64) -> bool {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX-512F, AVX-512VL and BMI2; the caller guarantees `blocks` is not empty.
            Backend::Avx512 => unsafe { avx512::contains_hash256_asm(blocks, hash) == 0 },
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX2 and BMI2; the caller guarantees `blocks` is not empty. The result is
            // 0 or 1 (the kernel's stated result).
            Backend::Avx2 => unsafe { answer(avx2::contains_hash256_asm(blocks, hash)) },
            // SAFETY: the caller guarantees `blocks` is not empty.
            _ => self.contains256(unsafe { block_at(blocks, hash) }, fingerprint(hash)),
        }
    }

    /// Whether every bit of fingerprint `x` is set in `block` (the [`Sbbf`](crate::Sbbf)'s
    /// query, and the native filters' with the backends that do not index in the kernel).
    #[inline(always)]
    pub(crate) fn contains256(self, block: &Block256, x: u32) -> bool {
        let flag = match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX-512F and AVX-512VL.
            Backend::Avx512 => return unsafe { avx512::contains256_asm(block, x) == 0 },
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: as above: the CPU has AVX2.
            Backend::Avx2 => unsafe { avx2::contains256_asm(block, x) },
            _ => u64::from(scalar::contains(&block.0, scalar::masks(x, BIT_SHIFT))),
        };
        // SAFETY: every arm gives 0 or 1 (the assembly kernel's stated result, or a `bool`).
        unsafe { answer(flag) }
    }

    /// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
    #[inline(always)]
    pub(crate) fn insert256(self, block: &mut Block256, x: u32) -> bool {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): both
            // backends imply AVX2.
            Backend::Avx2 | Backend::Avx512 => unsafe { avx2::insert256(block, x) },
            _ => scalar::insert(&mut block.0, scalar::masks(x, BIT_SHIFT)),
        }
    }

    /// Fingerprint `x`'s 256-bit mask as four 64-bit pairs of words
    /// ([`to_pairs`]), for the atomic filter.
    #[inline(always)]
    pub(crate) fn mask_pairs256(self, x: u32) -> [u64; 4] {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): both
            // backends imply AVX2.
            Backend::Avx2 | Backend::Avx512 => unsafe { avx2::mask_pairs256(x) },
            _ => to_pairs(scalar::masks(x, BIT_SHIFT)),
        }
    }

    /// `out[i]` = whether `blocks` holds `hashes[i]` (one dispatch per batch, so that the
    /// kernel inlines into the loop).
    pub(crate) fn contains_many256(self, blocks: &[Block256], hashes: &[u64], out: &mut [bool]) {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): both
            // backends imply AVX2.
            Backend::Avx2 | Backend::Avx512 => unsafe {
                avx2::contains_many256(blocks, hashes, out)
            },
            _ => contains_many_with(blocks, hashes, out, |block, x| {
                scalar::contains(&block.0, scalar::masks(x, BIT_SHIFT))
            }),
        }
    }

    /// Whether the native filter of `blocks` may hold the key of `hash`: every bit of
    /// fingerprint [`fingerprint`]`(hash)` set in block [`block_index`]`(hash, blocks.len())`.
    ///
    /// # Safety
    /// `blocks` must not be empty.
    #[inline(always)]
    pub(crate) unsafe fn contains_hash512(self, blocks: &[Block512], hash: u64) -> bool {
        let flag = match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            Backend::Avx512 if self.bitalg => {
                // SAFETY: the kernel's invariants (`backend` passed `is_available`, `bitalg`
                // only with `bitalg_available`): the CPU has AVX-512F, AVX-512BW,
                // AVX512_BITALG, BMI1 and BMI2; the caller guarantees `blocks` is not empty.
                return unsafe { avx512::contains_hash512_bitalg_asm(blocks, hash) == 0 };
            }
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX-512F and BMI2; the caller guarantees `blocks` is not empty.
            Backend::Avx512 => return unsafe { avx512::contains_hash512_asm(blocks, hash) == 0 },
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX2 and BMI2; the caller guarantees `blocks` is not empty.
            Backend::Avx2 => unsafe { avx2::contains_hash512_asm(blocks, hash) },
            _ => {
                // SAFETY: the caller guarantees `blocks` is not empty.
                let block = unsafe { block_at(blocks, hash) };
                u64::from(scalar::contains(
                    &block.0,
                    scalar::masks(fingerprint(hash), BIT_SHIFT512),
                ))
            }
        };
        // SAFETY: every arm gives 0 or 1 (the assembly kernel's stated result, or a `bool`).
        unsafe { answer(flag) }
    }

    /// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
    #[inline(always)]
    pub(crate) fn insert512(self, block: &mut Block512, x: u32) -> bool {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX-512F.
            Backend::Avx512 => unsafe { avx512::insert512(block, x) },
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: as above: the CPU has AVX2.
            Backend::Avx2 => unsafe { avx2::insert512(block, x) },
            _ => scalar::insert(&mut block.0, scalar::masks(x, BIT_SHIFT512)),
        }
    }

    /// Fingerprint `x`'s 512-bit mask as its eight words, for the atomic filter (the AVX2 form
    /// of this mask is two registers, no faster than the scalar one once stored).
    #[inline(always)]
    pub(crate) fn masks512(self, x: u32) -> [u64; 8] {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX-512F.
            Backend::Avx512 => unsafe { avx512::masks512(x) },
            _ => scalar::masks(x, BIT_SHIFT512),
        }
    }

    /// `out[i]` = whether `blocks` holds `hashes[i]` (one dispatch per batch).
    pub(crate) fn contains_many512(self, blocks: &[Block512], hashes: &[u64], out: &mut [bool]) {
        match self.backend {
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: the kernel's backend passed `is_available` (the token's invariant): the
            // CPU has AVX-512F.
            Backend::Avx512 => unsafe { avx512::contains_many512(blocks, hashes, out) },
            #[cfg(all(target_arch = "x86_64", not(miri)))]
            // SAFETY: as above: the CPU has AVX2.
            Backend::Avx2 => unsafe { avx2::contains_many512(blocks, hashes, out) },
            _ => contains_many_with(blocks, hashes, out, |block, x| {
                scalar::contains(&block.0, scalar::masks(x, BIT_SHIFT512))
            }),
        }
    }
}

/// The batch query loop, generic over the block kernel so that each backend gets its own copy
/// with the kernel inlined: `out[i]` = whether `blocks` holds `hashes[i]`, prefetching the block
/// of the key [`PREFETCH_AHEAD`] places on.
#[inline(always)]
fn contains_many_with<B>(
    blocks: &[B],
    hashes: &[u64],
    out: &mut [bool],
    contains: impl Fn(&B, u32) -> bool,
) {
    let num_blocks = blocks.len() as u64;
    for (i, (&hash, answer)) in hashes.iter().zip(out.iter_mut()).enumerate() {
        if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
            prefetch(&blocks[block_index(ahead, num_blocks) as usize]);
        }
        let block = &blocks[block_index(hash, num_blocks) as usize];
        *answer = contains(block, fingerprint(hash));
    }
}

/// The native filter's block for `hash` in `blocks`: [`block_index`]`(hash, blocks.len())`.
///
/// # Safety
/// `blocks` must not be empty.
#[inline(always)]
unsafe fn block_at<B>(blocks: &[B], hash: u64) -> &B {
    let index = block_index(hash, blocks.len() as u64) as usize;
    debug_assert!(index < blocks.len());
    // SAFETY: `(hash * len) >> 64` is below `len` for every `hash` below 2^64 when `len` is not
    // zero, which the caller guarantees.
    unsafe { blocks.get_unchecked(index) }
}

/// How many keys ahead the batch operations prefetch. The rule: far enough ahead that a DRAM
/// miss completes before the key's turn, i.e. at least the memory latency divided by the time per
/// key, and no further than needed (a longer distance only holds more lines in flight). 32 is
/// where the bloom bench's batch query of a filter much larger than the caches stops improving
/// (the workspace's BENCHMARKS.md).
pub const PREFETCH_AHEAD: usize = 32;

/// AVX2, and BMI2 for the native filters' queries, which compute the block index in the kernel
/// with `mulx`. The two came together (Intel Haswell, AMD Excavator) and every CPU with AVX2 has
/// both.
fn avx2_available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("bmi2")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// What the 512-bit layout's AVX512_BITALG query needs beyond the `Avx512` backend:
/// `vpshufbitqmb` (AVX512_BITALG), `kmovq` (AVX-512BW) and `andn` (BMI1). Ice Lake and later
/// Intel cores and AMD Zen 4 and later have all three; Skylake-SP and Cascade Lake have no
/// AVX512_BITALG and keep the `vptestnmq` query.
pub(crate) fn bitalg_available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512bitalg")
            && std::is_x86_feature_detected!("bmi1")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// Whether the 512-bit layout's queries take the AVX512_BITALG form where the CPU can run it:
/// on AMD CPUs. On an AMD Zen 4 that form took 0.92x the time of the `vptestnmq` one (a probe
/// of both on one filter); on an Intel Xeon (family 6, model 207, 2026-12-04) 1.10x (1.67-1.70
/// against 1.52-1.54 ns per query over a 2^20-key filter, the two forms alternated in one
/// scratch program). Other vendors keep `vptestnmq` until measured.
fn bitalg_preferred() -> bool {
    txgate_sync::cpu::vendor() == txgate_sync::cpu::Vendor::Amd
}

fn avx512_available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl")
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
