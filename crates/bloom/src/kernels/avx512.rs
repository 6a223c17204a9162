//! AVX-512F kernels of the 512-bit layout: a [`Block512`] is one 512-bit register; and the
//! AVX-512VL query of the 256-bit layout ([`contains256_asm`]: a [`Block256`] is one 256-bit
//! register, as in the AVX2 kernel; the `Avx512` backend runs the AVX2 kernels for the 256-bit
//! layout's other operations).
//!
//! The one-key queries write only registers 16-31 and k1, which need no `vzeroupper` after
//! them (see [`contains512_asm`]); with a `vptestnmd` compare and a broadcast straight from the
//! general-purpose register, the 256-bit query is three instructions shorter than the AVX2 one.
//!
//! Every function here needs AVX-512F (which implies AVX2), [`contains256_asm`] AVX-512VL too
//! (the backend requires both): callers must know the CPU has it,
//! which the [`Kernel`](super::Kernel) token proves for the dispatch in [`kernels`](super). As
//! in the `avx2` module, the one-key query is inline assembly ([`contains512_asm`]) and the rest
//! `#[target_feature]` functions with intrinsics.
//!
//! A block's mask is one `vpmuludq`, one `vpsrlq` and one `vprolvq` (a rotate takes its count
//! mod 64, so no mask is needed to drop the product's bits above the index); the test is one
//! `vptestnmq` (lanes where `mask & block == 0`, i.e. a missing bit) into a mask register.

use core::arch::x86_64::{
    __m512i, _mm512_load_si512, _mm512_mul_epu32, _mm512_or_si512, _mm512_rolv_epi64,
    _mm512_set1_epi64, _mm512_setr_epi64, _mm512_srli_epi64, _mm512_store_si512,
    _mm512_storeu_si512, _mm512_testn_epi64_mask,
};

use crate::block::{BIT_SHIFT, Block256, SALT};
use crate::block512::{BIT_SHIFT512, Block512};
use crate::kernels::{ONE32, ONE64, SALT32, SALT64};

/// The 512-bit block mask for `x`: bit `x * SALT[i] mod 2^32 >> 26` in 64-bit lane `i`.
/// `vpmuludq` gives the full 64-bit product of the low 32 bits of each lane; its bits 26..32 are
/// the index, and a rotate (which takes its count mod 64) needs no mask to drop the bits above.
///
/// # Safety
/// A safe `#[target_feature]` function: callable without `unsafe` only from code compiled with
/// AVX-512F enabled (the kernels here); anywhere else the caller must know the CPU has it.
#[inline]
#[target_feature(enable = "avx512f")]
fn mask512(x: u32) -> __m512i {
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

/// The 512-bit mask as eight words, for the atomic filter.
///
/// # Safety
/// The CPU must support AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn masks512(x: u32) -> [u64; 8] {
    let mut words = [0u64; 8];
    // SAFETY: `words` is 64 writable bytes: one unaligned 64-byte store covers it exactly.
    unsafe { _mm512_storeu_si512(words.as_mut_ptr().cast::<__m512i>(), mask512(x)) };
    words
}

/// Whether every bit of fingerprint `x` is set in `block`.
///
/// # Safety
/// The CPU must support AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn contains512(block: &Block512, x: u32) -> bool {
    // SAFETY: `block` is 64 readable bytes at a 64-byte-aligned address (`Block512` is
    // `align(64)`): one aligned 64-byte load covers it exactly.
    let b = unsafe { _mm512_load_si512(block.0.as_ptr().cast::<__m512i>()) };
    // Each mask lane has exactly one bit: a lane with `mask & block == 0` misses its bit.
    _mm512_testn_epi64_mask(mask512(x), b) == 0
}

/// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
///
/// # Safety
/// The CPU must support AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn insert512(block: &mut Block512, x: u32) -> bool {
    let m = mask512(x);
    let p = block.0.as_mut_ptr().cast::<__m512i>();
    // SAFETY: `block` is 64 bytes at a 64-byte-aligned address that we hold exclusively
    // (`&mut`): one aligned 64-byte load and one store cover it exactly.
    unsafe {
        let b = _mm512_load_si512(p);
        _mm512_store_si512(p, _mm512_or_si512(b, m));
        _mm512_testn_epi64_mask(m, b) != 0
    }
}

/// The batch query loop with the 512-bit kernel inlined.
///
/// # Safety
/// The CPU must support AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn contains_many512(blocks: &[Block512], hashes: &[u64], out: &mut [bool]) {
    super::contains_many_with(blocks, hashes, out, |block, x| {
        // SAFETY: this function's own precondition.
        unsafe { contains512(block, x) }
    });
}

/// [`contains512`] as inline assembly, inlined into the caller (for why, see the `avx2`
/// module's docs).
///
/// It uses only zmm16 and zmm17 (and k1), which EVEX encodings alone reach, so it needs no
/// closing `vzeroupper`: the state that makes a later legacy-SSE instruction slow (a "dirty"
/// upper half) is tracked for ymm0-15/zmm0-15 only, which this never writes (Intel 64 and
/// IA-32 Architectures Optimization Reference Manual, on mixing AVX and SSE code; glibc's
/// `*-evex` string functions use ymm16-31 for the same reason). That saves the `vzeroupper` of
/// the AVX2 form on every query.
///
/// Returns 1 if every bit is set, else 0 (for [`answer`](super::answer)).
///
/// # Safety
/// The CPU must support AVX-512F.
#[inline(always)]
pub(super) unsafe fn contains512_asm(block: &Block512, x: u32) -> u64 {
    const { assert!(BIT_SHIFT512 == 26) };
    let all_set: u64;
    // SAFETY: the caller guarantees AVX-512F (`kortestw` and every EVEX form here are
    // AVX-512F). Memory: reads the 64 bytes of `block` (64-byte aligned) and the statics, writes
    // none. Registers: writes zmm16, zmm17 and k1, all declared clobbered (each `zmm` clobber
    // covers the whole register); the flags are clobbered (no `preserves_flags`). zmm0-15 are
    // untouched, so their upper halves stay as the compiler left them.
    unsafe {
        core::arch::asm!(
            // The answer's register, zeroed before any flag is computed (a zero idiom; the
            // 32-bit form clears all 64 bits).
            "xor {all_set:e}, {all_set:e}",
            // Mask: lane i = 1 rotated left by ((x * SALT[i]) >> 26); the rotate takes its
            // count mod 64, which keeps exactly bits 26..32 of the product.
            "vpbroadcastd zmm16, {x:e}",
            "vpmuludq zmm16, zmm16, zmmword ptr [rip + {salt}]",
            "vpsrlq zmm16, zmm16, 26",
            "vpbroadcastq zmm17, qword ptr [rip + {one}]",
            "vprolvq zmm16, zmm17, zmm16",
            // k1 lane i = (mask & block == 0): lane i misses its one bit.
            "vptestnmq k1, zmm16, zmmword ptr [{block}]",
            "kortestw k1, k1",
            "sete {all_set:l}",
            x = in(reg) x,
            block = in(reg) block,
            salt = sym SALT64,
            one = sym ONE64,
            all_set = out(reg) all_set,
            out("k1") _, out("zmm16") _, out("zmm17") _,
            options(pure, readonly, nostack),
        );
    }
    // 0 or 1: the asm zeroed `all_set` and then wrote only its low byte, with a `setcc`.
    all_set
}

/// The 256-bit block query with AVX-512VL, as inline assembly (inlined into the caller, see the
/// `avx2` module's docs): the same mask as the AVX2 kernel (`vpmulld`, `vpsrld`, `vpsllvd`),
/// with the fingerprint broadcast straight from its general-purpose register, the test one
/// `vptestnmd` into a mask register, and, as in [`contains512_asm`], only ymm16 and ymm17
/// written, so no closing `vzeroupper`. Returns 1 if every bit is set, else 0 (for
/// [`answer`](super::answer)).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL (the EVEX forms of 256-bit instructions).
#[inline(always)]
pub(super) unsafe fn contains256_asm(block: &Block256, x: u32) -> u64 {
    const { assert!(BIT_SHIFT == 27) };
    let all_set: u64;
    // SAFETY: the caller guarantees AVX-512F and AVX-512VL (every EVEX form on ymm registers
    // here is AVX-512VL, `kortestw` AVX-512F). Memory: reads the 32 bytes of `block` (32-byte
    // aligned) and the statics, writes none. Registers: writes ymm16, ymm17 and k1, all declared
    // clobbered (as whole zmm registers); the flags are clobbered. zmm0-15 are untouched.
    unsafe {
        core::arch::asm!(
            // The answer's register, zeroed before any flag is computed (a zero idiom; the
            // 32-bit form clears all 64 bits).
            "xor {all_set:e}, {all_set:e}",
            // Mask: lane i = 1 << ((x * SALT[i]) mod 2^32 >> 27).
            "vpbroadcastd ymm16, {x:e}",
            "vpmulld ymm16, ymm16, ymmword ptr [rip + {salt}]",
            "vpsrld ymm16, ymm16, 27",
            "vpbroadcastd ymm17, dword ptr [rip + {one}]",
            "vpsllvd ymm16, ymm17, ymm16",
            // k1 lane i = (mask & block == 0): lane i misses its one bit (bits 8-15 of k1 are
            // zeroed by the 256-bit form).
            "vptestnmd k1, ymm16, ymmword ptr [{block}]",
            "kortestw k1, k1",
            "sete {all_set:l}",
            x = in(reg) x,
            block = in(reg) block,
            salt = sym SALT32,
            one = sym ONE32,
            all_set = out(reg) all_set,
            out("k1") _, out("zmm16") _, out("zmm17") _,
            options(pure, readonly, nostack),
        );
    }
    // 0 or 1: the asm zeroed `all_set` and then wrote only its low byte, with a `setcc`.
    all_set
}
