//! The serialized form of [`BlockedBloom`](crate::BlockedBloom) and
//! [`AtomicBlockedBloom`](crate::AtomicBlockedBloom) (the two share it), for either layout.
//!
//! ```text
//! offset      size  field
//!      0         8  magic b"TXGBLOOM"
//!      8         2  format version, u16 little-endian (this build writes 2, reads 1 and 2)
//!     10         1  block layout: 1 = 256-bit blocks of 8 x u32, 2 = 512-bit blocks of 8 x u64
//!                   (one bit per word, k = 8 in both; version 1 defines only 1)
//!     11         5  reserved, zero
//!     16         8  hash seed, u64 little-endian
//!     24         8  number of blocks n, u64 little-endian (> 0)
//!     32  n * size  the blocks (size 32 or 64 bytes), each 8 words little-endian
//! 32 + n * size  8  version 2 only: XXH3-64 (seed 0) of every byte before it, little-endian
//! ```
//!
//! What the bytes mean is part of the format, so a loaded filter answers the same on any
//! platform: a key's 64-bit hash `h` is XXH3-64 seeded with the header's seed for ids and byte
//! strings ([`Bytes`](crate::Bytes) keys; XXH3 as its specification defines it), its block is
//! `(h * n) >> 64` in 128-bit arithmetic, and the low 32 bits `x` set bit
//! `(x * SALT[i]) mod 2^32 >> 27` (256-bit blocks) or `>> 26` (512-bit blocks) of word `i`, with
//! Parquet's eight salts. Keys inserted through `std::hash::Hash` (wyhash over what the key's
//! `Hash` impl writes) are only as portable as that impl.
//!
//! Loading checks every field and the total length before allocating, then (version 2) the
//! checksum, and never panics. Version 1 has no checksum: a damaged seed or block of a version-1
//! filter loads silently (and a wrong seed answers "absent" for keys that are present), so store
//! version-1 bytes only where the storage itself checks integrity.

use crate::error::LoadError;
use crate::layout::{BlockLayout, Layout};

/// Magic bytes at the start of every serialized filter.
pub(crate) const MAGIC: [u8; 8] = *b"TXGBLOOM";
/// The format version this build writes (it also reads version 1).
pub const FORMAT_VERSION: u16 = 2;
/// The first format version, without a checksum (256-bit blocks only).
pub const FORMAT_VERSION_1: u16 = 1;
/// Offset of the layout code in the header.
pub(crate) const LAYOUT_OFFSET: usize = 10;
/// Bytes before the first block.
pub const HEADER_BYTES: usize = 32;
/// Bytes of the checksum after the last block (format version 2).
pub const CHECKSUM_BYTES: usize = 8;

/// A validated header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) layout: Layout,
    pub(crate) seed: u64,
    pub(crate) num_blocks: u64,
}

/// The serialized length of `num_blocks` blocks of `layout` in format version 2.
pub fn encoded_len(layout: Layout, num_blocks: u64) -> u64 {
    (HEADER_BYTES + CHECKSUM_BYTES) as u64 + num_blocks * layout.block_bytes() as u64
}

/// Writes the version-2 header, each block from `blocks` and the checksum into a new vector.
pub(crate) fn encode<B: BlockLayout>(
    seed: u64,
    num_blocks: u64,
    blocks: impl Iterator<Item = B>,
) -> Vec<u8> {
    let len = encoded_len(B::LAYOUT, num_blocks) as usize;
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(B::LAYOUT.code());
    out.extend_from_slice(&[0; 5]);
    out.extend_from_slice(&seed.to_le_bytes());
    out.extend_from_slice(&num_blocks.to_le_bytes());
    for block in blocks {
        block.write_le(&mut out);
    }
    let checksum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    debug_assert_eq!(out.len(), len);
    out
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut le = [0; 8];
    le.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(le)
}

/// Validates `bytes` (any layout) and returns the header and the blocks' bytes.
pub(crate) fn decode_any(bytes: &[u8]) -> Result<(Header, &[u8]), LoadError> {
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
    let layout = match (version, Layout::from_code(bytes[LAYOUT_OFFSET])) {
        (FORMAT_VERSION_1, Some(Layout::Block256)) => Layout::Block256,
        (FORMAT_VERSION, Some(layout)) => layout,
        (FORMAT_VERSION_1 | FORMAT_VERSION, _) => {
            return Err(LoadError::UnknownLayout {
                version,
                code: bytes[LAYOUT_OFFSET],
            });
        }
        _ => return Err(LoadError::UnsupportedVersion(version)),
    };
    if bytes[11..16].iter().any(|&b| b != 0) {
        return Err(LoadError::ReservedNotZero);
    }
    let seed = u64_at(bytes, 16);
    let num_blocks = u64_at(bytes, 24);
    if num_blocks == 0 {
        return Err(LoadError::ZeroBlocks);
    }
    if num_blocks > layout.max_blocks() {
        return Err(LoadError::TooManyBlocks(num_blocks));
    }
    let body = num_blocks * layout.block_bytes() as u64;
    let trailer = if version == FORMAT_VERSION {
        CHECKSUM_BYTES
    } else {
        0
    };
    let expected = HEADER_BYTES as u64 + body + trailer as u64;
    if bytes.len() as u64 != expected {
        return Err(LoadError::LengthMismatch {
            expected,
            actual: bytes.len() as u64,
        });
    }
    let end = bytes.len() - trailer;
    if trailer != 0 {
        let stored = u64_at(bytes, end);
        let computed = xxhash_rust::xxh3::xxh3_64(&bytes[..end]);
        if stored != computed {
            return Err(LoadError::ChecksumMismatch { stored, computed });
        }
    }
    let header = Header {
        layout,
        seed,
        num_blocks,
    };
    Ok((header, &bytes[HEADER_BYTES..end]))
}

/// Validates `bytes` as a filter of layout `B` and returns the header and an iterator over the
/// blocks.
pub(crate) fn decode<B: BlockLayout>(
    bytes: &[u8],
) -> Result<(Header, impl Iterator<Item = B> + '_), LoadError> {
    let (header, body) = decode_any(bytes)?;
    if header.layout != B::LAYOUT {
        return Err(LoadError::LayoutMismatch {
            expected: B::LAYOUT,
            found: header.layout,
        });
    }
    let blocks = body.chunks_exact(B::LAYOUT.block_bytes()).map(B::read_le);
    Ok((header, blocks))
}

/// The layout recorded in serialized bytes, after validating them as
/// [`AnyBloom::from_bytes`](crate::AnyBloom::from_bytes) does (length, checksum).
///
/// # Errors
/// Any [`LoadError`] of loading, except [`LoadError::LayoutMismatch`].
///
/// # Examples
/// ```
/// use txgate_bloom::{BloomBuilder, Block512, Filter, Layout, format};
/// let bytes = BloomBuilder::with_num_blocks(3).layout::<Block512>().build()?.to_bytes();
/// assert_eq!(format::layout_of(&bytes)?, Layout::Block512);
/// assert_eq!(bytes.len() as u64, format::encoded_len(Layout::Block512, 3));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn layout_of(bytes: &[u8]) -> Result<Layout, LoadError> {
    Ok(decode_any(bytes)?.0.layout)
}
