//! AVX-512F kernels of the 512-bit layout: a [`Block512`] is one 512-bit register. (A
//! [`Block256`](crate::Block256) is one AVX2 register: the `Avx512` backend runs the AVX2
//! kernels on it. Its AVX-512VL forms, a `vptestnmd` compare and a broadcast straight from the
//! general-purpose register, measured no faster in the bloom bench.)
//!
//! Every function here needs AVX-512F (which implies AVX2): callers must know the CPU has it,
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

use crate::block::SALT;
use crate::block512::{BIT_SHIFT512, Block512};
use crate::kernels::{ONE64, SALT64};

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
/// # Safety
/// The CPU must support AVX-512F.
#[inline(always)]
pub(super) unsafe fn contains512_asm(block: &Block512, x: u32) -> bool {
    const { assert!(BIT_SHIFT512 == 26) };
    let all_set: u8;
    // SAFETY: the caller guarantees AVX-512F (`kortestw` and every EVEX form here are
    // AVX-512F). Memory: reads the 64 bytes of `block` (64-byte aligned) and the statics, writes
    // none. Registers: writes zmm0, zmm1 and k1, declared clobbered (each `xmm` clobber covers
    // the whole zmm register); the closing `vzeroupper` zeroes bits 128 and up of zmm0-15, all
    // declared clobbered. zmm16-31 are untouched.
    unsafe {
        core::arch::asm!(
            // Mask: lane i = 1 rotated left by ((x * SALT[i]) >> 26); the rotate takes its
            // count mod 64, which keeps exactly bits 26..32 of the product.
            "vpbroadcastd zmm0, {x:e}",
            "vpmuludq zmm0, zmm0, zmmword ptr [rip + {salt}]",
            "vpsrlq zmm0, zmm0, 26",
            "vpbroadcastq zmm1, qword ptr [rip + {one}]",
            "vprolvq zmm0, zmm1, zmm0",
            // k1 lane i = (mask & block == 0): lane i misses its one bit.
            "vptestnmq k1, zmm0, zmmword ptr [{block}]",
            "kortestw k1, k1",
            "sete {all_set}",
            "vzeroupper",
            x = in(reg) x,
            block = in(reg) block,
            salt = sym SALT64,
            one = sym ONE64,
            all_set = lateout(reg_byte) all_set,
            out("k1") _,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(pure, readonly, nostack),
        );
    }
    all_set != 0
}
