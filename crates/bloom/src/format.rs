//! The serialized form of [`BlockedBloom`](crate::BlockedBloom) and
//! [`AtomicBlockedBloom`](crate::AtomicBlockedBloom) (the two share it).
//!
//! ```text
//! offset  size  field
//!      0     8  magic b"TXGBLOOM"
//!      8     2  format version, u16 little-endian (= 1)
//!     10     1  block layout (= 1: 256-bit blocks of 8 x u32 words, one bit per word, k = 8)
//!     11     5  reserved, zero
//!     16     8  hash seed, u64 little-endian
//!     24     8  number of blocks, u64 little-endian (> 0)
//!     32   32n  the blocks, each 8 words as u32 little-endian
//! ```
//! Loading checks every field and the total length before allocating, and never panics.

use crate::block::{BLOCK_BYTES, Block};
use crate::error::LoadError;
use crate::sizing::MAX_BLOCKS;

/// Magic bytes at the start of every serialized filter.
pub(crate) const MAGIC: [u8; 8] = *b"TXGBLOOM";
/// The format version this build writes and reads.
pub const FORMAT_VERSION: u16 = 1;
/// The layout code of 256-bit blocks of 8 x u32 words.
pub(crate) const LAYOUT_256_8X32: u8 = 1;
/// Bytes before the first block.
pub const HEADER_BYTES: usize = 32;

/// A validated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) seed: u64,
    pub(crate) num_blocks: u64,
}

/// Writes the header and then each block from `blocks` into a new vector.
pub(crate) fn encode(seed: u64, num_blocks: u64, blocks: impl Iterator<Item = Block>) -> Vec<u8> {
    let body = num_blocks as usize * BLOCK_BYTES;
    let mut out = Vec::with_capacity(HEADER_BYTES + body);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(LAYOUT_256_8X32);
    out.extend_from_slice(&[0; 5]);
    out.extend_from_slice(&seed.to_le_bytes());
    out.extend_from_slice(&num_blocks.to_le_bytes());
    for block in blocks {
        block.write_le_bytes(&mut out);
    }
    debug_assert_eq!(out.len(), HEADER_BYTES + body);
    out
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut le = [0; 8];
    le.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(le)
}

/// Validates `bytes` and returns the header and an iterator over the blocks it holds.
pub(crate) fn decode(
    bytes: &[u8],
) -> Result<(Header, impl Iterator<Item = Block> + '_), LoadError> {
    if bytes.len() < HEADER_BYTES {
        return Err(LoadError::TooShort {
            len: bytes.len(),
            header: HEADER_BYTES,
        });
    }
    if bytes[..8] != MAGIC {
        return Err(LoadError::BadMagic);
    }
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != FORMAT_VERSION {
        return Err(LoadError::UnsupportedVersion(version));
    }
    if bytes[10] != LAYOUT_256_8X32 {
        return Err(LoadError::ShapeMismatch {
            expected: LAYOUT_256_8X32,
            found: bytes[10],
        });
    }
    if bytes[11..16].iter().any(|&b| b != 0) {
        return Err(LoadError::ReservedNotZero);
    }
    let seed = u64_at(bytes, 16);
    let num_blocks = u64_at(bytes, 24);
    if num_blocks == 0 {
        return Err(LoadError::ZeroBlocks);
    }
    if num_blocks > MAX_BLOCKS {
        return Err(LoadError::TooManyBlocks(num_blocks));
    }
    let expected = HEADER_BYTES as u64 + num_blocks * BLOCK_BYTES as u64;
    if bytes.len() as u64 != expected {
        return Err(LoadError::LengthMismatch {
            expected,
            actual: bytes.len() as u64,
        });
    }
    let blocks = bytes[HEADER_BYTES..]
        .chunks_exact(BLOCK_BYTES)
        .map(|chunk| chunk.try_into().map_or(Block::ZERO, Block::from_le_bytes));
    Ok((Header { seed, num_blocks }, blocks))
}
