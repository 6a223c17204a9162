//! Unit tests: every backend of both layouts against one naive oracle, the false-positive rate
//! against the formula, serialization (both format versions, the checksum) and its rejections,
//! set operations, and the atomic insert rule.
//!
//! - This file: the naive [`Oracle`] and the builders and helpers the others share.
//! - `kernels`: every backend against the oracle, batch operations, racing atomic inserts.
//! - `rates`: false-positive rates against the formula, sizing, block index reach, estimates.
//! - `format`: serialization round trips, version 1, the checksum, malformed headers.
//! - `api`: union, intersect and clear; the builder's checks; seeds; the id hash.

mod api;
mod format;
mod kernels;
mod rates;

use crate::error::{BuildError, LoadError, ShapeError};
use crate::format::{CHECKSUM_BYTES, HEADER_BYTES};
use crate::layout::BlockLayout;
use crate::{
    AnyBloom, AtomicBlockedBloom, Backend, Block256, Block512, BlockedBloom, BloomBuilder, Bytes,
    Filter, Hashed, Layout, Sbbf,
};
// SplitMix64 (Steele, Lea and Flood 2014): independent streams of well-mixed test hashes.
use txgate_testkit::rng::SplitMix64 as SplitMix;

/// Scale for miri, which interprets the scalar path orders of magnitude slower than native code.
const MIRI: bool = cfg!(miri);

/// The salts of the Parquet SBBF spec, written out again for the oracle.
const SPEC_SALT: [u64; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

/// A naive bloom filter: one `bool` per bit, positions computed in plain u64/u128 arithmetic
/// straight from the layouts' definition: blocks of 8 words of `w` bits (32 or 64), bit
/// `(x * salt_i mod 2^32) >> (32 - log2 w)` of word `i`. The native layouts and Parquet's differ
/// only in the word width and the block index: `(h * n) >> 64` in 128 bits, or the spec's
/// `((h >> 32) * n) >> 32`.
struct Oracle {
    bits: Vec<bool>,
    num_blocks: u64,
    word_bits: u64,
    sbbf: bool,
}

impl Oracle {
    fn native(layout: Layout, num_blocks: u64) -> Self {
        let word_bits = match layout {
            Layout::Block256 => 32,
            _ => 64,
        };
        Oracle {
            bits: vec![false; (num_blocks * 8 * word_bits) as usize],
            num_blocks,
            word_bits,
            sbbf: false,
        }
    }

    fn sbbf(num_blocks: u64) -> Self {
        Oracle {
            sbbf: true,
            ..Oracle::native(Layout::Block256, num_blocks)
        }
    }

    fn positions(&self, h: u64) -> Vec<usize> {
        let x = h & 0xffff_ffff;
        let block = if self.sbbf {
            ((h >> 32) * self.num_blocks) >> 32
        } else {
            ((u128::from(h) * u128::from(self.num_blocks)) >> 64) as u64
        };
        let shift = 32 - self.word_bits.trailing_zeros();
        (0..8u64)
            .map(|i| {
                let bit = ((x * SPEC_SALT[i as usize]) % (1 << 32)) >> shift;
                (block * 8 * self.word_bits + i * self.word_bits + bit) as usize
            })
            .collect()
    }

    fn insert(&mut self, h: u64) -> bool {
        let mut new = false;
        for p in self.positions(h) {
            new |= !self.bits[p];
            self.bits[p] = true;
        }
        new
    }

    fn contains(&self, h: u64) -> bool {
        self.positions(h).into_iter().all(|p| self.bits[p])
    }

    /// The oracle's bits as little-endian bytes (word order = bit order within the bitset).
    fn bytes(&self) -> Vec<u8> {
        self.bits
            .chunks(8)
            .map(|byte| {
                byte.iter()
                    .enumerate()
                    .fold(0u8, |acc, (i, &b)| acc | (u8::from(b) << i))
            })
            .collect()
    }
}

fn builder(blocks: u64) -> BloomBuilder {
    BloomBuilder::with_num_blocks(blocks).seed(0x5eed)
}

fn builder_of<B: BlockLayout>(blocks: u64) -> BloomBuilder<B> {
    builder(blocks).layout::<B>()
}

/// The blocks of a serialized filter (between the header and the checksum).
fn body(bytes: &[u8]) -> &[u8] {
    &bytes[HEADER_BYTES..bytes.len() - CHECKSUM_BYTES]
}
