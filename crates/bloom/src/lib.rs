//! Cache-line-aligned blocked bloom filters with SIMD kernels, for "is this txid in round R?"
//! questions that are nearly free when the answer is no.
//!
//! # What it is
//! A bloom filter answers "maybe present" or "certainly absent" for a key, in a fixed number of
//! bits per key, with no false negatives. A *blocked* filter (Putze, Sanders and Singler, 2007)
//! puts all of a key's bits in one block that fits one cache line, so an insert or a query costs
//! one memory access instead of `k`. This crate's block is 256 bits of eight 32-bit words at a
//! 32-byte-aligned address (so inside one 64-byte line), and a key sets exactly one bit in each
//! word (the "split block" of Parquet's SBBF): a query is one AVX2 register's worth of work on
//! x86-64 (chosen at run time) and a handful of scalar instructions elsewhere.
//!
//! - [`BlockedBloom`]: insert through `&mut self`; SIMD inserts and queries; union, intersect,
//!   batch queries with prefetching, serialization.
//! - [`AtomicBlockedBloom`]: insert through `&self` from many threads (`fetch_or`, skipped when
//!   the bits are already set); the same layout and serialized form.
//! - [`Sbbf`]: the Parquet split-block bloom filter (256-bit blocks, XXH64), bit-compatible with
//!   Parquet writers and readers.
//! - [`false_positive_rate`] and [`num_blocks_for`]: the blocked-filter formula of Putze et al.
//!   and the sizing built on it. (The classic `(1 - e^(-kn/m))^k` undersizes blocked filters.)
//!
//! # Example
//! ```
//! use txgate_bloom::{BloomBuilder, false_positive_rate};
//!
//! // One round's txids at a 0.1 % false-positive rate, with a fixed seed for reproducibility.
//! let txids: Vec<[u8; 32]> = (0u8..200).map(|i| [i; 32]).collect();
//! let mut round = BloomBuilder::with_false_positive_rate(txids.len() as u64, 0.001)?.seed(42).build()?;
//! for txid in &txids {
//!     round.insert_id(txid);
//! }
//! assert!(txids.iter().all(|t| round.contains_id(t)));
//! assert!(false_positive_rate(200, round.num_blocks()) <= 0.001);
//!
//! // Ship it: a versioned header and the blocks.
//! let bytes = round.to_bytes();
//! let loaded = txgate_bloom::BlockedBloom::from_bytes(&bytes).unwrap();
//! assert!(loaded.contains_id(&txids[7]));
//! # Ok::<(), txgate_bloom::BuildError>(())
//! ```
//!
//! # Layout and hashing
//! A key is hashed once to 64 bits `h`: `Hash` keys with wyhash keyed by the filter's seed,
//! 32-byte ids with seeded XXH3-64, or pre-hashed by the caller (`*_hash` methods; the hash must
//! be well mixed). The block is `(h * num_blocks) >> 64` in 128-bit arithmetic, so filters of
//! more than 2^32 bits or blocks index every block. The low 32 bits `x` set bit
//! `(x * SALT[i]) mod 2^32 >> 27` of word `i` for eight odd salts (Parquet's). Why 256-bit and
//! not 512-bit blocks: see the `block` module source (speed of a query and of an atomic insert,
//! measured, against 21-45 % more false positives at equal memory).
//!
//! # Guarantees and costs
//! - No false negatives. The false-positive rate after `n` distinct keys in `B` blocks is
//!   [`false_positive_rate`]`(n, B)`; tests hold the measured rate to within 10 % of it at 8, 10
//!   and 16 bits per key.
//! - One cache line per insert or query; memory is `32 * num_blocks` bytes, 32-byte aligned.
//! - No panics on bad input: sizing, building and loading return typed errors
//!   ([`BuildError`], [`ShapeError`], [`LoadError`]).
//! - `unsafe` is limited to the SIMD kernels, prefetch hints and unchecked block indexing on the
//!   hot path; each block states why it holds, and miri (tree borrows) runs the scalar path.

mod atomic;
mod block;
mod builder;
mod error;
mod filter;
pub mod format;
mod sbbf;
mod simd;
mod sizing;
mod sync;

pub use atomic::AtomicBlockedBloom;
pub use block::{BITS_PER_BLOCK, BITS_SET_PER_KEY, BLOCK_BYTES, WORDS_PER_BLOCK};
pub use builder::BloomBuilder;
pub use error::{BuildError, LoadError, ShapeError};
pub use filter::{BlockedBloom, estimate_len};
pub use sbbf::{SBBF_MAX_OPTIMAL_BYTES, Sbbf};
pub use simd::Backend;
pub use sizing::{MAX_BLOCKS, false_positive_rate, num_blocks_for, num_blocks_for_bits};

#[cfg(test)]
mod tests;
