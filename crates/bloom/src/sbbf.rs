//! [`Sbbf`]: the Parquet split-block bloom filter, bit-compatible with parquet-mr, arrow-rs and
//! arrow C++.
//!
//! Rules, all from the Parquet specification (apache/parquet-format, BloomFilter.md): values are
//! hashed with XXH64, seed 0, over their plain encoding (a byte array's bytes, an integer's
//! little-endian bytes); 256-bit blocks of eight `u32` words; block
//! `((h >> 32) * num_blocks) >> 32`; in word `i`, bit `(h as u32 * SALT[i]) mod 2^32 >> 27` for
//! the spec's eight salts; the bitset is stored as little-endian words. In a Parquet file the
//! bitset follows a Thrift compact-protocol `BloomFilterHeader`, which
//! [`Sbbf::from_parquet`] and [`Sbbf::to_parquet`] read and write.

use crate::block::{BLOCK_BYTES as SBBF_BLOCK_BYTES, Block256 as SbbfBlock};
use crate::builder::try_alloc;
use crate::error::{BuildError, LoadError};
use crate::geometry::Geometry;
use crate::kernels::{Backend, Kernel};
use crate::layout::Layout;
use crate::layout::sealed::Sealed;

/// The Thrift compact encoding of a `BloomFilterHeader` after its `numBytes` field: algorithm =
/// BLOCK (split block), hash = XXHASH, compression = UNCOMPRESSED, then the struct's stop byte.
/// Each union is `1c` (field 1, struct) holding an empty struct (`00`), closed by `00`.
const HEADER_TAIL: [u8; 13] = [
    0x1c, 0x1c, 0x00, 0x00, 0x1c, 0x1c, 0x00, 0x00, 0x1c, 0x1c, 0x00, 0x00, 0x00,
];
/// Thrift compact field header: field id delta 1, type i32 (`numBytes`).
const NUM_BYTES_FIELD: u8 = 0x15;
/// The XXH64 seed of the specification: every SBBF hashes with it.
const SBBF_SEED: u64 = 0;

/// The SBBF block of hash `h`: the spec's `((h >> 32) * num_blocks) >> 32` (so at most 2^32
/// blocks), not the native filters' 64-bit rule (`Geometry::index`).
#[inline(always)]
fn block_index(hash: u64, num_blocks: u64) -> u64 {
    ((hash >> 32) * num_blocks) >> 32
}

/// A Parquet split-block bloom filter (SBBF).
///
/// # Examples
/// ```
/// use txgate_bloom::Sbbf;
/// let mut filter = Sbbf::with_ndv_fpp(1000, 0.01)?;
/// filter.insert(b"hello");
/// assert!(filter.contains(b"hello"));
/// let bytes = filter.to_parquet();
/// let (loaded, used) = Sbbf::from_parquet(&bytes).unwrap();
/// assert_eq!(used, bytes.len());
/// assert!(loaded.contains(b"hello"));
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Clone)]
pub struct Sbbf {
    // Invariant: 0 < blocks.len() == geometry.num_blocks(), num_blocks * 32 <= i32::MAX,
    // geometry.seed() == SBBF_SEED.
    blocks: Box<[SbbfBlock]>,
    geometry: Geometry,
}

impl std::fmt::Debug for Sbbf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.geometry.fmt_debug(f, "Sbbf", None)
    }
}

impl Sbbf {
    /// The largest bitset Parquet's sizing rule produces (arrow-rs and parquet-mr
    /// `BLOOM_FILTER_MAX_BYTES`): 128 MiB.
    pub const MAX_OPTIMAL_BYTES: u64 = 128 * 1024 * 1024;

    /// An empty filter with a bitset of `num_bytes` bytes and the detected backend.
    ///
    /// # Errors
    /// [`BuildError::InvalidSbbfSize`] unless `num_bytes` is a positive multiple of 32 no larger
    /// than `i32::MAX` (the header's field type); [`BuildError::AllocationFailed`].
    pub fn new(num_bytes: u64) -> Result<Self, BuildError> {
        let num_blocks = Self::check_size(num_bytes)?;
        let blocks = try_alloc(num_blocks, || SbbfBlock::ZERO)?;
        Ok(Self::from_blocks(blocks))
    }

    /// A filter over `blocks` (at least one, at most `i32::MAX` bytes) with the detected backend.
    fn from_blocks(blocks: Box<[SbbfBlock]>) -> Self {
        Sbbf {
            geometry: Geometry::new(blocks.len() as u64, SBBF_SEED, Kernel::detect()),
            blocks,
        }
    }

    fn check_size(num_bytes: u64) -> Result<u64, BuildError> {
        if num_bytes == 0
            || !num_bytes.is_multiple_of(SBBF_BLOCK_BYTES as u64)
            || num_bytes > i32::MAX as u64
        {
            return Err(BuildError::InvalidSbbfSize(num_bytes));
        }
        Ok(num_bytes / SBBF_BLOCK_BYTES as u64)
    }

    /// A filter sized the way parquet-mr and arrow-rs size one for `ndv` distinct values at
    /// false-positive probability `fpp`: [`Sbbf::num_bits_for`] bits, then
    /// [`Sbbf::optimal_num_bytes`] of those bits / 8.
    ///
    /// # Errors
    /// [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpp < 1`; [`BuildError::TooLarge`]
    /// when `fpp` is so small that the formula has no finite answer (below about 1e-128);
    /// [`BuildError::AllocationFailed`].
    pub fn with_ndv_fpp(ndv: u64, fpp: f64) -> Result<Self, BuildError> {
        Self::new(Self::optimal_num_bytes(Self::num_bits_for(ndv, fpp)? / 8))
    }

    /// Bits for `ndv` values at `fpp` by the rule of parquet-mr and arrow-rs
    /// (`-8 * ndv / ln(1 - fpp^(1/8))`, truncated).
    ///
    /// # Errors
    /// [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpp < 1`; [`BuildError::TooLarge`]
    /// when `1 - fpp^(1/8)` rounds to 1 (fpp below about 1e-128), where the formula divides by
    /// zero.
    pub fn num_bits_for(ndv: u64, fpp: f64) -> Result<u64, BuildError> {
        if !(fpp > 0.0 && fpp < 1.0) {
            return Err(BuildError::InvalidFalsePositiveRate(fpp));
        }
        let bits = -8.0 * ndv as f64 / (1.0 - fpp.powf(1.0 / 8.0)).ln();
        if !bits.is_finite() {
            return Err(BuildError::TooLarge { bits: u128::MAX });
        }
        // Truncation, as the Parquet writers do (a float-to-int cast saturates).
        Ok(bits as u64)
    }

    /// The bitset size the Parquet writers use for `num_bytes`: the next power of two, clamped
    /// to 32 bytes .. 128 MiB.
    pub fn optimal_num_bytes(num_bytes: u64) -> u64 {
        num_bytes
            .clamp(SBBF_BLOCK_BYTES as u64, Self::MAX_OPTIMAL_BYTES)
            .next_power_of_two()
    }

    /// Uses this backend instead of the detected one.
    ///
    /// # Errors
    /// [`BuildError::BackendUnavailable`] when this CPU cannot run it.
    pub fn with_backend(mut self, backend: Backend) -> Result<Self, BuildError> {
        let kernel = Kernel::new(backend).ok_or(BuildError::BackendUnavailable(backend))?;
        self.geometry = self.geometry.with_kernel(kernel);
        Ok(self)
    }

    /// XXH64 with seed 0 of a value's plain encoding: the hash Parquet stores.
    pub fn hash(value: &[u8]) -> u64 {
        xxhash_rust::xxh64::xxh64(value, SBBF_SEED)
    }

    #[inline]
    fn index(&self, hash: u64) -> usize {
        let index = block_index(hash, self.geometry.num_blocks()) as usize;
        debug_assert!(index < self.blocks.len());
        index
    }

    /// Inserts a value by its plain-encoded bytes; returns whether a bit changed.
    pub fn insert(&mut self, value: &[u8]) -> bool {
        self.insert_hash(Self::hash(value))
    }

    /// Inserts by XXH64 hash; returns whether a bit changed.
    #[inline(always)]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        let index = self.index(hash);
        let kernel = self.geometry.kernel();
        // Indexing (not get_unchecked): the block index is below num_blocks by the spec's rule,
        // and this path is not the crate's hot one.
        SbbfBlock::insert(kernel, &mut self.blocks[index], hash as u32)
    }

    /// Whether a value (plain-encoded bytes) may be in the filter.
    pub fn contains(&self, value: &[u8]) -> bool {
        self.contains_hash(Self::hash(value))
    }

    /// Whether the value with this XXH64 hash may be in the filter.
    #[inline(always)]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.geometry
            .kernel()
            .contains256(&self.blocks[self.index(hash)], hash as u32)
    }

    /// Blocks of 256 bits.
    pub fn num_blocks(&self) -> u64 {
        self.geometry.num_blocks()
    }

    /// Bytes of the bitset.
    pub fn num_bytes(&self) -> u64 {
        self.geometry.memory_bytes(Layout::Block256)
    }

    /// The bitset as Parquet stores it: each block's eight words as little-endian `u32`.
    pub fn bitset(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.num_bytes() as usize);
        self.blocks.iter().for_each(|b| b.write_le(&mut out));
        out
    }

    /// A filter over a Parquet bitset (no header).
    ///
    /// # Errors
    /// [`LoadError::ZeroBlocks`] for an empty input; [`LoadError::LengthMismatch`] when the
    /// length is not a multiple of 32 (the expected length given is the next multiple);
    /// [`LoadError::TooManyBlocks`] past `i32::MAX` bytes.
    pub fn from_bitset(bytes: &[u8]) -> Result<Self, LoadError> {
        let len = bytes.len() as u64;
        if len == 0 {
            return Err(LoadError::ZeroBlocks);
        }
        if !len.is_multiple_of(SBBF_BLOCK_BYTES as u64) {
            return Err(LoadError::LengthMismatch {
                expected: len.next_multiple_of(SBBF_BLOCK_BYTES as u64),
                actual: len,
            });
        }
        if len > i32::MAX as u64 {
            return Err(LoadError::TooManyBlocks(len / SBBF_BLOCK_BYTES as u64));
        }
        let mut chunks = bytes.chunks_exact(SBBF_BLOCK_BYTES);
        let blocks = try_alloc(len / SBBF_BLOCK_BYTES as u64, || {
            chunks.next().map_or(SbbfBlock::ZERO, SbbfBlock::read_le)
        })?;
        Ok(Self::from_blocks(blocks))
    }

    /// Reads a Thrift `BloomFilterHeader` (split block, XXH64, uncompressed) and the bitset
    /// after it, as stored in a Parquet file; returns the filter and the bytes consumed
    /// (header + bitset), so a caller can read on.
    ///
    /// # Errors
    /// [`LoadError::ParquetHeader`] for any other header (other algorithm, hash or compression,
    /// or a malformed varint); [`LoadError::LengthMismatch`] when fewer bytes follow than
    /// `numBytes`; the errors of [`Sbbf::from_bitset`].
    pub fn from_parquet(bytes: &[u8]) -> Result<(Self, usize), LoadError> {
        if bytes.first() != Some(&NUM_BYTES_FIELD) {
            return Err(LoadError::ParquetHeader(
                "first field is not numBytes (i32)",
            ));
        }
        let (zigzag, varint_len) =
            read_varint(&bytes[1..]).ok_or(LoadError::ParquetHeader("bad numBytes varint"))?;
        let num_bytes = i64::from((zigzag >> 1) as i32 ^ -((zigzag & 1) as i32));
        if num_bytes <= 0 || num_bytes % SBBF_BLOCK_BYTES as i64 != 0 {
            return Err(LoadError::ParquetHeader(
                "numBytes is not a positive multiple of 32",
            ));
        }
        let tail_at = 1 + varint_len;
        let body_at = tail_at + HEADER_TAIL.len();
        if bytes.get(tail_at..body_at) != Some(&HEADER_TAIL[..]) {
            return Err(LoadError::ParquetHeader(
                "not split-block / XXH64 / uncompressed",
            ));
        }
        let end = body_at as u64 + num_bytes as u64;
        if (bytes.len() as u64) < end {
            return Err(LoadError::LengthMismatch {
                expected: end,
                actual: bytes.len() as u64,
            });
        }
        let filter = Self::from_bitset(&bytes[body_at..end as usize])?;
        Ok((filter, end as usize))
    }

    /// Adds every value of `other` (bitwise OR): the filter of the union of both sets.
    ///
    /// # Errors
    /// [`ShapeError`](crate::ShapeError) when the bitsets differ in size; `self` is unchanged
    /// then.
    pub fn union(&mut self, other: &Sbbf) -> Result<(), crate::ShapeError> {
        self.geometry.check_shape(other.geometry)?;
        for (ours, theirs) in self.blocks.iter_mut().zip(other.blocks.iter()) {
            ours.or_assign(theirs);
        }
        Ok(())
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        self.blocks.fill(SbbfBlock::ZERO);
    }

    /// The Thrift header followed by the bitset, as a Parquet writer stores it.
    pub fn to_parquet(&self) -> Vec<u8> {
        let num_bytes = self.num_bytes() as i32; // invariant: fits
        let mut out = vec![NUM_BYTES_FIELD];
        let mut zigzag = ((num_bytes << 1) ^ (num_bytes >> 31)) as u32;
        loop {
            let byte = (zigzag & 0x7f) as u8;
            zigzag >>= 7;
            if zigzag == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        }
        out.extend_from_slice(&HEADER_TAIL);
        out.extend_from_slice(&self.bitset());
        out
    }
}

/// A minimal ULEB128 varint of at most 5 bytes (an i32's zigzag form); the value and bytes used.
fn read_varint(bytes: &[u8]) -> Option<(u32, usize)> {
    let mut value: u64 = 0;
    for (i, &byte) in bytes.iter().take(5).enumerate() {
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            // A zero final byte after the first is a non-minimal encoding: rejected, so that a
            // filter that loads writes the same header back.
            if byte == 0 && i > 0 {
                return None;
            }
            return u32::try_from(value).ok().map(|v| (v, i + 1));
        }
    }
    None
}
