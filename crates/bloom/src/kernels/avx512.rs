//! AVX-512F kernels of the 512-bit layout: a [`Block512`] is one 512-bit register; and the
//! AVX-512VL queries of the 256-bit layout (a [`Block256`] is one 256-bit register, as in the
//! AVX2 kernel; the `Avx512` backend runs the AVX2 kernels for the 256-bit layout's other
//! operations).
//!
//! The native filters' one-key queries ([`contains_hash512_asm`], [`contains_hash256_asm`]) are
//! inline assembly that takes the filter's blocks and the key's hash: the block index (with
//! BMI2's `mulx`), the mask and the test in one block, answering with the mask register of the
//! lanes that miss their bit. They write only registers 16-31 and k1, which need no
//! `vzeroupper` after them (see [`contains_hash512_asm`]); with a `vptestnmd` compare and a
//! broadcast straight from the general-purpose register, the 256-bit query is shorter than the
//! AVX2 one. [`contains256_asm`] is the 256-bit query of one given block, for the
//! [`Sbbf`](crate::Sbbf) (whose block rule differs).
//!
//! Every function here needs AVX-512F (which implies AVX2), the 256-bit queries AVX-512VL too
//! and the native queries BMI2 (the backend requires all three): callers must know the CPU has
//! them, which the [`Kernel`](super::Kernel) token proves for the dispatch in
//! [`kernels`](super). As in the `avx2` module, the one-key queries are inline assembly and the
//! rest `#[target_feature]` functions with intrinsics.
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

/// A native filter's query of the 512-bit layout as inline assembly, inlined into the caller
/// (for why, see the `avx2` module's docs): the block index, the mask and the test in one
/// block. Returns the lanes that miss their bit, as a mask: 0 if every bit is set (the key may be
/// in the filter), else not 0.
///
/// What it saves per query on the form that computes the block in Rust and tests with
/// `kortestw`/`sete` (that form: 0.86x sbbf-rs-safe on an AMD Zen 4; this one 0.75x, the 256-bit
/// one 0.70x, from 0.80x). A counting loop of these queries takes as long per key with the filter
/// in L1 as with it in L2 and L3 on that core, so it is bound by instruction throughput (Zen 4
/// dispatches at most six macro-ops per cycle), and every macro-op saved counts:
/// - The block: `mulx` (BMI2) takes the hash in `rdx`, where the caller's load of the key can
///   put it, and only reads it, where `mul` needs a `mov` into `rax` and overwrites `rdx`; with
///   both destinations the same register it writes only the high half, the index (Intel SDM,
///   MULX); the byte offset's add folds into the test's address.
/// - The answer: `kmovw` of the missing lanes, one macro-op, where `xor`, `kortestw` and `sete`
///   are three; the caller's `== 0` folds into its own use (a `cmp` and `adc` when counting).
///
/// It uses only zmm16 and zmm17 (and k1), which EVEX encodings alone reach, so it needs no
/// closing `vzeroupper`: the state that makes a later legacy-SSE instruction slow (a "dirty"
/// upper half) is tracked for ymm0-15/zmm0-15 only, which this never writes (Intel 64 and
/// IA-32 Architectures Optimization Reference Manual, on mixing AVX and SSE code; glibc's
/// `*-evex` string functions use ymm16-31 for the same reason).
///
/// # Safety
/// The CPU must support AVX-512F and BMI2, and `blocks` must not be empty (the block read is
/// `blocks[(hash * blocks.len()) >> 64]`, in bounds only then).
#[inline(always)]
pub(super) unsafe fn contains_hash512_asm(blocks: &[Block512], hash: u64) -> u32 {
    const { assert!(BIT_SHIFT512 == 26 && size_of::<Block512>() == 64) };
    let missing: u32;
    // SAFETY: the caller guarantees AVX-512F and BMI2 (`mulx`), the only instruction sets used
    // beyond x86-64's baseline. Memory: reads the 64 bytes of block `(hash * len) >> 64` of
    // `blocks`, which is below `len` (the high half of a product of `len` and a number below
    // 2^64) and so in the slice, which the caller guarantees is not empty; each block is 64-byte
    // aligned (`Block512` is `align(64)`); and the statics. Writes no memory. Registers: writes
    // `offset`, `missing`, zmm16, zmm17 and k1, all declared (each `zmm` clobber covers the
    // whole register); `rdx` (the hash) is only read; the flags are clobbered by `shl` (no
    // `preserves_flags`). zmm0-15 are untouched, so their upper halves stay as the compiler left
    // them.
    unsafe {
        core::arch::asm!(
            // The block's byte offset: ((hash * len) >> 64) * 64.
            "mulx {offset}, {offset}, {len}",
            "shl {offset}, 6",
            // Mask: lane i = 1 rotated left by ((x * SALT[i]) >> 26), x the low 32 bits of the
            // hash; the rotate takes its count mod 64, which keeps exactly bits 26..32 of the
            // product.
            "vpbroadcastd zmm16, edx",
            "vpmuludq zmm16, zmm16, zmmword ptr [rip + {salt}]",
            "vpsrlq zmm16, zmm16, 26",
            "vpbroadcastq zmm17, qword ptr [rip + {one}]",
            "vprolvq zmm16, zmm17, zmm16",
            // k1 lane i = (mask & block == 0): lane i misses its one bit.
            "vptestnmq k1, zmm16, zmmword ptr [{base} + {offset}]",
            "kmovw {missing:e}, k1",
            // The hash in `rdx`, `mulx`'s implicit operand (only read: a caller's load of the
            // key can target it directly).
            in("rdx") hash,
            len = in(reg) blocks.len(),
            base = in(reg) blocks.as_ptr(),
            offset = out(reg) _,
            missing = lateout(reg) missing,
            salt = sym SALT64,
            one = sym ONE64,
            out("k1") _, out("zmm16") _, out("zmm17") _,
            options(pure, readonly, nostack),
        );
    }
    missing
}

/// The 256-bit layout's form of [`contains_hash512_asm`] (AVX-512VL): the AVX2 kernel's mask
/// (`vpmulld`, `vpsrld`, `vpsllvd`) in the EVEX forms, the fingerprint broadcast straight from
/// its general-purpose register, the test one `vptestnmd` into a mask register, and the block
/// index, the answer and the registers as there. Returns the lanes that miss their bit: 0 if
/// every bit is set.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512VL and BMI2, and `blocks` must not be empty.
#[inline(always)]
pub(super) unsafe fn contains_hash256_asm(blocks: &[Block256], hash: u64) -> u32 {
    const { assert!(BIT_SHIFT == 27 && size_of::<Block256>() == 32) };
    let missing: u32;
    // SAFETY: as in `contains_hash512_asm`, with AVX-512VL for the EVEX forms on ymm registers:
    // reads the 32 bytes (32-byte aligned) of block `(hash * len) >> 64 < len` of the non-empty
    // `blocks` and the statics; writes `offset`, `missing`, ymm16, ymm17 and k1, all declared.
    unsafe {
        core::arch::asm!(
            // The block's byte offset: ((hash * len) >> 64) * 32.
            "mulx {offset}, {offset}, {len}",
            "shl {offset}, 5",
            // Mask: lane i = 1 << ((x * SALT[i]) mod 2^32 >> 27).
            "vpbroadcastd ymm16, edx",
            "vpmulld ymm16, ymm16, ymmword ptr [rip + {salt}]",
            "vpsrld ymm16, ymm16, 27",
            "vpbroadcastd ymm17, dword ptr [rip + {one}]",
            "vpsllvd ymm16, ymm17, ymm16",
            // k1 lane i = (mask & block == 0): lane i misses its one bit (bits 8-15 of k1 are
            // zeroed by the 256-bit form).
            "vptestnmd k1, ymm16, ymmword ptr [{base} + {offset}]",
            "kmovw {missing:e}, k1",
            // The hash in `rdx`, `mulx`'s implicit operand (only read: a caller's load of the
            // key can target it directly).
            in("rdx") hash,
            len = in(reg) blocks.len(),
            base = in(reg) blocks.as_ptr(),
            offset = out(reg) _,
            missing = lateout(reg) missing,
            salt = sym SALT32,
            one = sym ONE32,
            out("k1") _, out("zmm16") _, out("zmm17") _,
            options(pure, readonly, nostack),
        );
    }
    missing
}

/// One 256-bit block's query with AVX-512VL, as inline assembly (for the [`Sbbf`](crate::Sbbf),
/// whose block rule is the Parquet specification's): [`contains_hash256_asm`] without the block
/// index. Returns the lanes that miss their bit: 0 if every bit is set.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512VL (the EVEX forms of 256-bit instructions).
#[inline(always)]
pub(super) unsafe fn contains256_asm(block: &Block256, x: u32) -> u32 {
    const { assert!(BIT_SHIFT == 27) };
    let missing: u32;
    // SAFETY: the caller guarantees AVX-512F and AVX-512VL (every EVEX form on ymm registers
    // here is AVX-512VL, `kmovw` AVX-512F). Memory: reads the 32 bytes of `block` (32-byte
    // aligned) and the statics, writes none. Registers: writes `missing`, ymm16, ymm17 and k1,
    // all declared (as whole zmm registers). zmm0-15 are untouched.
    unsafe {
        core::arch::asm!(
            // Mask: lane i = 1 << ((x * SALT[i]) mod 2^32 >> 27).
            "vpbroadcastd ymm16, {x:e}",
            "vpmulld ymm16, ymm16, ymmword ptr [rip + {salt}]",
            "vpsrld ymm16, ymm16, 27",
            "vpbroadcastd ymm17, dword ptr [rip + {one}]",
            "vpsllvd ymm16, ymm17, ymm16",
            // k1 lane i = (mask & block == 0): lane i misses its one bit.
            "vptestnmd k1, ymm16, ymmword ptr [{block}]",
            "kmovw {missing:e}, k1",
            x = in(reg) x,
            block = in(reg) block,
            salt = sym SALT32,
            one = sym ONE32,
            missing = lateout(reg) missing,
            out("k1") _, out("zmm16") _, out("zmm17") _,
            options(pure, readonly, nostack, preserves_flags),
        );
    }
    missing
}

/// [`contains_hash512_asm`] with the test by AVX512_BITALG's `vpshufbitqmb`, taken on AMD CPUs that
/// have it (the kernel's `bitalg_preferred`): per byte `j` of the index operand, mask bit `j` = bit
/// `(byte j) mod 64` of the data operand's 64-bit lane `j / 8` (Intel SDM, VPSHUFBITQMB). After the
/// shift, byte 0 of lane `i` holds the lane's bit index in its low six bits (bits 26..32 of the
/// product), so with the block as the data the mask's bit `8i` is block word `i`'s bit: the mask is
/// the test itself, and the `vpbroadcastq` of the 1s and the `vprolvq` that make the one-hot mask
/// are gone (the block takes a load of its own, which the other form folds into `vptestnmq`). The
/// other seven bytes of each lane index bits the query ignores: `andn` with the constant that keeps
/// bits `8i` (a general-purpose register the caller keeps across its loop) leaves the lanes that
/// miss their bit. On an AMD Zen 4 this query takes 0.92x the time of the other form (a probe of
/// both on one filter); on an Intel Xeon (family 6, model 207) 1.10x, so Intel CPUs keep the other
/// form.
///
/// Returns the missing lanes' bits (0 if every bit is set).
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW (`kmovq`), AVX512_BITALG, BMI1 (`andn`) and BMI2
/// (`mulx`), and `blocks` must not be empty.
#[inline(always)]
pub(super) unsafe fn contains_hash512_bitalg_asm(blocks: &[Block512], hash: u64) -> u64 {
    const { assert!(BIT_SHIFT512 == 26 && size_of::<Block512>() == 64) };
    /// Bit 0 of each byte-lane group of eight: mask bit `8i`, the one of block word `i`.
    const WORD_BITS: u64 = 0x0101_0101_0101_0101;
    let missing: u64;
    // SAFETY: the caller guarantees every instruction set used here. Memory: reads the 64 bytes
    // of block `(hash * len) >> 64 < len` of the non-empty `blocks` (64-byte aligned, as
    // `vmovdqa64` needs) and the salts; writes none. Registers: writes `offset`, `missing`,
    // zmm16, zmm17 and k1, all declared; `rdx` (the hash) is only read; the flags are clobbered
    // (`shl`, `andn`). zmm0-15 are untouched (no `vzeroupper` needed, as in
    // `contains_hash512_asm`).
    unsafe {
        core::arch::asm!(
            // The block's byte offset: ((hash * len) >> 64) * 64.
            "mulx {offset}, {offset}, {len}",
            "shl {offset}, 6",
            // Lane i, byte 0 = (x * SALT[i]) >> 26 in its low six bits.
            "vpbroadcastd zmm16, edx",
            "vpmuludq zmm16, zmm16, zmmword ptr [rip + {salt}]",
            "vpsrlq zmm16, zmm16, 26",
            // k1 bit 8i = block word i's bit (x * SALT[i]) >> 26.
            "vmovdqa64 zmm17, zmmword ptr [{base} + {offset}]",
            "vpshufbitqmb k1, zmm17, zmm16",
            // The bits 8i that are clear: the lanes that miss their bit.
            "kmovq {missing}, k1",
            "andn {missing}, {missing}, {word_bits}",
            in("rdx") hash,
            len = in(reg) blocks.len(),
            base = in(reg) blocks.as_ptr(),
            word_bits = in(reg) WORD_BITS,
            offset = out(reg) _,
            // `out`, not `lateout`: written by `kmovq` before `andn` reads `word_bits`.
            missing = out(reg) missing,
            salt = sym SALT64,
            out("k1") _, out("zmm16") _, out("zmm17") _,
            options(pure, readonly, nostack),
        );
    }
    missing
}
