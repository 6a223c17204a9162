//! AVX2 kernels of both layouts: a [`Block256`] is one 256-bit register, a [`Block512`] two.
//!
//! Two forms, both needing AVX2, the queries BMI2 too (the [`Kernel`](super::Kernel) token proves
//! both for the dispatch in [`kernels`](super)):
//! - `#[target_feature(enable = "avx2")]` functions with intrinsics: inserts, the atomic
//!   filter's masks and the batch loops (one call per batch, the kernel inlined into its loop).
//! - The one-key queries as inline assembly: the native filters' ([`contains_hash256_asm`],
//!   [`contains_hash512_asm`]), which compute the block index too (BMI2's `mulx`), and the
//!   [`Sbbf`](crate::Sbbf)'s ([`contains256_asm`], one given block). A
//!   `target_feature` function cannot be inlined into a caller compiled without the feature (the
//!   usual case: a crate built for baseline x86-64), so a query through it costs a call and a
//!   return per key; an `asm!` block is inlined like any code. Under callgrind the call, return
//!   and argument moves are 4 of the 26 instructions of a 256-bit query in a counting loop
//!   (`bloom_iai`'s `contains_hit`: 26,521 instructions per 1,000 queries with the call, 22,517
//!   without).

use core::arch::x86_64::{
    __m256i, _mm256_andnot_si256, _mm256_load_si256, _mm256_mullo_epi32, _mm256_or_si256,
    _mm256_set1_epi32, _mm256_set1_epi64x, _mm256_setr_epi32, _mm256_setzero_si256,
    _mm256_sllv_epi32, _mm256_sllv_epi64, _mm256_srli_epi32, _mm256_store_si256,
    _mm256_storeu_si256, _mm256_testc_si256, _mm256_testz_si256, _mm256_unpackhi_epi32,
    _mm256_unpacklo_epi32,
};

use crate::block::{BIT_SHIFT, Block256, SALT};
use crate::block512::{BIT_SHIFT512, Block512};
use crate::kernels::{ONE32, ONE64, SALT_UNPACK_ORDER, SALT32, SALT32_UNPACK};

/// The 256-bit block mask for `x`: bit `x * SALT[i] mod 2^32 >> 27` in 32-bit lane `i`: one
/// `vpmulld`, one `vpsrld`, one `vpsllvd`.
///
/// # Safety
/// A safe `#[target_feature]` function: callable without `unsafe` only from code compiled with
/// AVX2 enabled (the kernels here); anywhere else the caller must know the CPU has it.
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
pub(super) unsafe fn mask_pairs256(x: u32) -> [u64; 4] {
    let mut pairs = [0u64; 4];
    // SAFETY: `pairs` is 32 writable bytes: one unaligned 32-byte store covers it exactly.
    unsafe { _mm256_storeu_si256(pairs.as_mut_ptr().cast::<__m256i>(), mask256(x)) };
    pairs
}

/// Whether every bit of fingerprint `x` is set in `block`.
///
/// # Safety
/// The CPU must support AVX2.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn contains256(block: &Block256, x: u32) -> bool {
    // SAFETY: `block` is 32 readable bytes at a 32-byte-aligned address (`Block256` is
    // `align(32)`): one aligned 32-byte load covers it exactly.
    let b = unsafe { _mm256_load_si256(block.0.as_ptr().cast::<__m256i>()) };
    // testc(b, m) is 1 iff (!b & m) == 0: every mask bit is set in the block.
    _mm256_testc_si256(b, mask256(x)) != 0
}

/// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
///
/// # Safety
/// The CPU must support AVX2.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn insert256(block: &mut Block256, x: u32) -> bool {
    let m = mask256(x);
    let p = block.0.as_mut_ptr().cast::<__m256i>();
    // SAFETY: `block` is 32 bytes at a 32-byte-aligned address that we hold exclusively
    // (`&mut`): one aligned load and one aligned store cover it exactly.
    unsafe {
        let b = _mm256_load_si256(p);
        _mm256_store_si256(p, _mm256_or_si256(b, m));
        _mm256_testc_si256(b, m) == 0
    }
}

/// The 512-bit block mask for `x` as two halves (words 0-3, words 4-7): bit
/// `x * SALT[i] mod 2^32 >> 26` of word `i`. As in [`contains_hash512_asm`]: the eight indices
/// from one `vpmulld` and one `vpsrld` in 32-bit lanes, widened to 64-bit lanes by unpacking
/// with zero, then one `vpsllvq` per half.
///
/// # Safety
/// A safe `#[target_feature]` function: callable without `unsafe` only from code compiled with
/// AVX2 enabled (the kernels here); anywhere else the caller must know the CPU has it.
#[inline]
#[target_feature(enable = "avx2")]
fn mask512(x: u32) -> (__m256i, __m256i) {
    const { assert!(BIT_SHIFT512 == 26) };
    let s = SALT_UNPACK_ORDER;
    let salt = _mm256_setr_epi32(
        s[0] as i32,
        s[1] as i32,
        s[2] as i32,
        s[3] as i32,
        s[4] as i32,
        s[5] as i32,
        s[6] as i32,
        s[7] as i32,
    );
    let index = _mm256_srli_epi32::<26>(_mm256_mullo_epi32(_mm256_set1_epi32(x as i32), salt));
    let zero = _mm256_setzero_si256();
    let one = _mm256_set1_epi64x(1);
    (
        _mm256_sllv_epi64(one, _mm256_unpacklo_epi32(index, zero)),
        _mm256_sllv_epi64(one, _mm256_unpackhi_epi32(index, zero)),
    )
}

/// Whether every bit of fingerprint `x` is set in `block`.
///
/// # Safety
/// The CPU must support AVX2.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn contains512(block: &Block512, x: u32) -> bool {
    let (m0, m1) = mask512(x);
    let p = block.0.as_ptr().cast::<__m256i>();
    // SAFETY: `block` is 64 readable bytes at a 64-byte-aligned address (`Block512` is
    // `align(64)`): two aligned 32-byte loads at offsets 0 and 32 cover it exactly.
    let (b0, b1) = unsafe { (_mm256_load_si256(p), _mm256_load_si256(p.add(1))) };
    let missing = _mm256_or_si256(_mm256_andnot_si256(b0, m0), _mm256_andnot_si256(b1, m1));
    _mm256_testz_si256(missing, missing) != 0
}

/// Sets every bit of fingerprint `x` in `block`; whether any was clear before.
///
/// # Safety
/// The CPU must support AVX2.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn insert512(block: &mut Block512, x: u32) -> bool {
    let (m0, m1) = mask512(x);
    let p = block.0.as_mut_ptr().cast::<__m256i>();
    // SAFETY: `block` is 64 bytes at a 64-byte-aligned address that we hold exclusively
    // (`&mut`): two aligned 32-byte loads and stores at offsets 0 and 32 cover it exactly.
    unsafe {
        let (b0, b1) = (_mm256_load_si256(p), _mm256_load_si256(p.add(1)));
        let missing = _mm256_or_si256(_mm256_andnot_si256(b0, m0), _mm256_andnot_si256(b1, m1));
        _mm256_store_si256(p, _mm256_or_si256(b0, m0));
        _mm256_store_si256(p.add(1), _mm256_or_si256(b1, m1));
        _mm256_testz_si256(missing, missing) == 0
    }
}

/// The batch query loop with the 256-bit kernel inlined.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn contains_many256(blocks: &[Block256], hashes: &[u64], out: &mut [bool]) {
    super::contains_many_with(blocks, hashes, out, |block, x| {
        // SAFETY: this function's own precondition: the CPU supports AVX2.
        unsafe { contains256(block, x) }
    });
}

/// The batch query loop with the 512-bit kernel inlined.
///
/// # Safety
/// The CPU must support AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn contains_many512(blocks: &[Block512], hashes: &[u64], out: &mut [bool]) {
    super::contains_many_with(blocks, hashes, out, |block, x| {
        // SAFETY: this function's own precondition: the CPU supports AVX2.
        unsafe { contains512(block, x) }
    });
}

/// [`contains256`] as inline assembly, inlined into the caller (see the module docs).
///
/// Returns 1 if every bit is set, else 0 (for [`answer`](super::answer)).
///
/// # Safety
/// The CPU must support AVX2.
#[inline(always)]
pub(super) unsafe fn contains256_asm(block: &Block256, x: u32) -> u64 {
    const { assert!(BIT_SHIFT == 27) };
    let all_set: u64;
    // SAFETY: the caller guarantees AVX2, the only instruction set used here beyond x86-64's
    // baseline. Memory: the asm reads the 32 bytes of `block` (32-byte aligned, as `vmovdqa`
    // needs) and the two statics, and writes none (`readonly`, `nostack`). Registers: it
    // writes ymm0 and ymm1, declared clobbered (each `xmm` clobber covers the whole ymm/zmm
    // register), and ends with `vzeroupper`, which zeroes bits 128 and up of ymm0-15 (zmm0-15):
    // all sixteen are declared clobbered, so no value the compiler keeps in them survives
    // unseen. zmm16-31 and the mask registers are untouched.
    unsafe {
        core::arch::asm!(
            // The answer's register, zeroed before any flag is computed (a zero idiom; the
            // 32-bit form clears all 64 bits).
            "xor {all_set:e}, {all_set:e}",
            // Mask: lane i = 1 << ((x * SALT[i]) mod 2^32 >> 27).
            "vmovd xmm0, {x:e}",
            "vpbroadcastd ymm0, xmm0",
            "vpmulld ymm0, ymm0, ymmword ptr [rip + {salt}]",
            "vpsrld ymm0, ymm0, 27",
            "vpbroadcastd ymm1, dword ptr [rip + {one}]",
            "vpsllvd ymm0, ymm1, ymm0",
            // CF = ((!block & mask) == 0): every mask bit is set in the block.
            "vmovdqa ymm1, ymmword ptr [{block}]",
            "vptest ymm1, ymm0",
            "setb {all_set:l}",
            "vzeroupper",
            x = in(reg) x,
            block = in(reg) block,
            salt = sym SALT32,
            one = sym ONE32,
            all_set = out(reg) all_set,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(pure, readonly, nostack),
        );
    }
    // 0 or 1: the asm zeroed `all_set` and then wrote only its low byte, with a `setcc`.
    all_set
}

/// A native filter's 256-bit query as inline assembly with the block index in the kernel, for
/// CPUs with BMI2: [`contains256_asm`] on block `(hash * blocks.len()) >> 64`, its fingerprint
/// the low 32 bits of `hash`. `mulx` takes the hash in `rdx`, where the caller's load of the key
/// can put it, and only reads it (`mul` needs a `mov` into `rax` and overwrites `rdx`); with
/// both destinations the same register it writes only the high half, the index (Intel SDM,
/// MULX); and the byte offset's add folds into the block's load. Two macro-ops fewer per query
/// than the block computed in Rust; on an AMD Zen 4 it takes 0.9x the time of that form (a
/// probe of both on one filter), and under callgrind 20.5 instructions per query in
/// `bloom_iai`'s `contains_hit` against 22.5.
///
/// Returns 1 if every bit is set, else 0 (for [`answer`](super::answer)).
///
/// # Safety
/// The CPU must support AVX2 and BMI2, and `blocks` must not be empty (the block read is
/// `blocks[(hash * blocks.len()) >> 64]`, in bounds only then).
#[inline(always)]
pub(super) unsafe fn contains_hash256_asm(blocks: &[Block256], hash: u64) -> u64 {
    const { assert!(BIT_SHIFT == 27 && size_of::<Block256>() == 32) };
    let all_set: u64;
    // SAFETY: the caller guarantees AVX2 and BMI2 (`mulx`), the only instruction sets used here
    // beyond x86-64's baseline. Memory: reads the 32 bytes of block `(hash * len) >> 64` of
    // `blocks`, which is below `len` (the high half of a product of `len` and a number below
    // 2^64) and so in the slice, which the caller guarantees is not empty; each block is 32-byte
    // aligned (`Block256` is `align(32)`, as `vmovdqa` needs); and the two statics. Writes no
    // memory. Registers: writes `offset`, `all_set` and ymm0-1, and ends with `vzeroupper`, which
    // zeroes bits 128 and up of ymm0-15: all sixteen are declared clobbered, as in
    // `contains256_asm`; `rdx` (the hash) is only read; the flags are clobbered.
    unsafe {
        core::arch::asm!(
            // The block's byte offset: ((hash * len) >> 64) * 32.
            "mulx {offset}, {offset}, {len}",
            "shl {offset}, 5",
            // The answer's register, zeroed before any flag is computed (a zero idiom).
            "xor {all_set:e}, {all_set:e}",
            // Mask: lane i = 1 << ((x * SALT[i]) mod 2^32 >> 27).
            "vmovd xmm0, edx",
            "vpbroadcastd ymm0, xmm0",
            "vpmulld ymm0, ymm0, ymmword ptr [rip + {salt}]",
            "vpsrld ymm0, ymm0, 27",
            "vpbroadcastd ymm1, dword ptr [rip + {one}]",
            "vpsllvd ymm0, ymm1, ymm0",
            // CF = ((!block & mask) == 0): every mask bit is set in the block.
            "vmovdqa ymm1, ymmword ptr [{base} + {offset}]",
            "vptest ymm1, ymm0",
            "setb {all_set:l}",
            "vzeroupper",
            in("rdx") hash,
            len = in(reg) blocks.len(),
            base = in(reg) blocks.as_ptr(),
            offset = out(reg) _,
            // `out`: written (zeroed) while `base` is still to be read.
            all_set = out(reg) all_set,
            salt = sym SALT32,
            one = sym ONE32,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(pure, readonly, nostack),
        );
    }
    // 0 or 1: the asm zeroed `all_set` and then wrote only its low byte, with a `setcc`.
    all_set
}

/// The 512-bit layout's form of [`contains_hash256_asm`]: [`contains512`] as inline assembly,
/// on block `(hash * blocks.len()) >> 64`, indexed in the kernel with `mulx` as there.
///
/// The mask takes the eight indices from one `vpmulld` and one `vpsrld` in 32-bit lanes (the
/// top 6 bits of each product's low 32 bits, the layout's rule), the salts in
/// [`SALT32_UNPACK`]'s lane order, and widens them to 64-bit lanes by unpacking with zero
/// (`vpunpckldq`, `vpunpckhdq`) for one `vpsllvq` per half: two instructions fewer than two
/// `vpmuludq` on 64-bit lanes, each product masked to 6 bits. On an AMD Zen 4 a query takes
/// 0.85x the time of that form (`bloom_ab`'s best passes: 2.2 against 2.6 ns; its ratio to
/// sbbf-rs-safe went from 1.12-1.32 to 1.05-1.11). Not measured on Intel, where `vpmulld` is two
/// micro-ops of 10 cycles' latency against one of 5 for `vpmuludq` (uops.info): a query whose
/// block is in L1 may take longer there.
///
/// Returns 1 if every bit is set, else 0 (for [`answer`](super::answer)).
///
/// # Safety
/// The CPU must support AVX2 and BMI2, and `blocks` must not be empty.
#[inline(always)]
pub(super) unsafe fn contains_hash512_asm(blocks: &[Block512], hash: u64) -> u64 {
    const { assert!(BIT_SHIFT512 == 26 && size_of::<Block512>() == 64) };
    let all_set: u64;
    // SAFETY: as in `contains_hash256_asm`: AVX2 and BMI2 by the caller; reads the 64 bytes
    // (64-byte aligned) of block `(hash * len) >> 64 < len` of the non-empty `blocks` and the
    // statics, writes no memory; `offset`, `all_set` and ymm0-3 written, all sixteen vector
    // registers declared clobbered for the closing `vzeroupper`; `rdx` only read.
    unsafe {
        core::arch::asm!(
            // The block's byte offset: ((hash * len) >> 64) * 64.
            "mulx {offset}, {offset}, {len}",
            "shl {offset}, 6",
            "xor {all_set:e}, {all_set:e}",
            // The eight indices in 32-bit lanes: (x * salt) mod 2^32 >> 26 (`vpmulld` keeps
            // the low 32 bits of each product; their top 6 bits are the index), the salts in
            // `SALT32_UNPACK`'s order; then widened to 64-bit lanes by unpacking with zero:
            // words 0..4 into ymm1, words 4..8 into ymm0.
            "vmovd xmm0, edx",
            "vpbroadcastd ymm0, xmm0",
            "vpmulld ymm0, ymm0, ymmword ptr [rip + {salt}]",
            "vpsrld ymm0, ymm0, 26",
            "vpxor xmm2, xmm2, xmm2",
            "vpunpckldq ymm1, ymm0, ymm2",
            "vpunpckhdq ymm0, ymm0, ymm2",
            "vpbroadcastq ymm2, qword ptr [rip + {one}]",
            "vpsllvq ymm1, ymm2, ymm1",
            "vpsllvq ymm0, ymm2, ymm0",
            // ZF = ((!block & mask) == 0) over both halves.
            "vmovdqa ymm2, ymmword ptr [{base} + {offset}]",
            "vmovdqa ymm3, ymmword ptr [{base} + {offset} + 32]",
            "vpandn ymm1, ymm2, ymm1",
            "vpandn ymm0, ymm3, ymm0",
            "vpor ymm0, ymm0, ymm1",
            "vptest ymm0, ymm0",
            "sete {all_set:l}",
            "vzeroupper",
            in("rdx") hash,
            len = in(reg) blocks.len(),
            base = in(reg) blocks.as_ptr(),
            offset = out(reg) _,
            all_set = out(reg) all_set,
            salt = sym SALT32_UNPACK,
            one = sym ONE64,
            out("xmm0") _, out("xmm1") _, out("xmm2") _, out("xmm3") _,
            out("xmm4") _, out("xmm5") _, out("xmm6") _, out("xmm7") _,
            out("xmm8") _, out("xmm9") _, out("xmm10") _, out("xmm11") _,
            out("xmm12") _, out("xmm13") _, out("xmm14") _, out("xmm15") _,
            options(pure, readonly, nostack),
        );
    }
    // 0 or 1: the asm zeroed `all_set` and then wrote only its low byte, with a `setcc`.
    all_set
}
