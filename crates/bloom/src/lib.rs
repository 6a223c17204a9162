//! Cache-line-aligned blocked bloom filters with SIMD kernels, for "is this txid in round R?"
//! questions that are nearly free when the answer is no.
//!
//! # What it is
//! A bloom filter answers "maybe present" or "certainly absent" for a key, in a fixed number of
//! bits per key, with no false negatives. A *blocked* filter (Putze, Sanders and Singler, 2007)
//! puts all of a key's bits in one block that fits one cache line, so an insert or a query costs
//! one memory access instead of `k`. Every block here is a split block (Parquet's SBBF): eight
//! words, and a key sets exactly one bit in each, so a query is one vector's worth of work on
//! x86-64 (AVX2 or AVX-512, chosen at run time) and a handful of scalar instructions elsewhere.
//! Two block layouts, chosen when a filter is built and recorded in its serialized form:
//!
//! - [`Block256`] (the default): eight 32-bit words, 32 bytes, one AVX2 register.
//! - [`Block512`]: eight 64-bit words, one whole 64-byte cache line (64-byte-aligned storage),
//!   one AVX-512 register; 12-31 % fewer false positives at equal memory from 8 to 16 bits per
//!   key (see [`layout`]).
//!
//! Types:
//! - [`BlockedBloom<B>`]: insert through `&mut self`; SIMD inserts and queries; union,
//!   intersect, batch queries with prefetching, serialization.
//! - [`AtomicBlockedBloom<B>`]: insert through `&self` from many threads (`fetch_or`, skipped
//!   when the bits are already set); the same layout and serialized form.
//! - [`AnyBloom`]: a plain filter of either layout, picked at run time; loads either.
//! - [`Filter`]: what the three answer alike (hash, `contains`, batch queries, sizes, expected
//!   rate, serialized form); each also has one inherent `insert`. [`Key`]: the kinds of key,
//!   each hashed one way: `&T` for `T: Hash`, [`Bytes`] (ids and byte strings, portable),
//!   [`Hashed`] (pre-hashed).
//! - [`BloomBuilder`]: size (false-positive target, bits or blocks), seed, backend and layout;
//!   checked once, when built.
//! - [`Sbbf`]: the Parquet split-block bloom filter (256-bit blocks, XXH64), bit-compatible with
//!   Parquet writers and readers.
//! - [`Layout`] (with [`Layout::false_positive_rate`], [`Layout::num_blocks_for`],
//!   [`Layout::max_blocks`], ...) and [`Sizing`]: the blocked-filter formula of Putze et al. and
//!   the sizing built on it, for both layouts ("which layout and how many bytes for n keys at
//!   rate p?"). (The classic `(1 - e^(-kn/m))^k` undersizes blocked filters.)
//!
//! # Example
//! ```
//! use txgate_bloom::{AnyBloom, Block512, BlockedBloom, BloomBuilder, Bytes, Filter, Layout, Sizing};
//!
//! // One round's txids at a 0.1 % false-positive rate, with a fixed seed for reproducibility.
//! let txids: Vec<[u8; 32]> = (0u8..200).map(|i| [i; 32]).collect();
//! let mut round = BloomBuilder::with_false_positive_rate(txids.len() as u64, 0.001).seed(42).build()?;
//! for txid in &txids {
//!     round.insert(Bytes(txid));
//! }
//! assert!(txids.iter().all(|t| round.contains(Bytes(t))));
//! assert!(round.expected_false_positive_rate(200) <= 0.001);
//!
//! // Ship it: a versioned header, the blocks and a checksum, checked on load.
//! let bytes = round.to_bytes();
//! let g = BlockedBloom::from_bytes(&bytes)?;
//! assert!(g.contains(Bytes(&txids[7])));
//!
//! // The 512-bit layout for the same target needs fewer bytes; AnyBloom loads either.
//! assert!(Sizing::new(Layout::Block512, 200, 0.001)?.bytes <= round.memory_bytes());
//! let wide = BloomBuilder::with_false_positive_rate(200, 0.001).layout::<Block512>().build()?;
//! assert_eq!(AnyBloom::from_bytes(&wide.to_bytes())?.layout(), Layout::Block512);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layout and hashing
//! A key is hashed once to 64 bits `h` ([`Key`]): `Hash` keys with wyhash keyed by the filter's
//! seed, [`Bytes`] (ids `[u8; N]` and byte strings) with seeded XXH3-64 (portable: fixed by the
//! format), or pre-hashed by the caller ([`Hashed`]; the hash must be well mixed). The block is
//! `(h * num_blocks) >> 64` in 128-bit arithmetic, so filters of more than 2^32 bits or blocks
//! index every block. The low 32 bits `x` set bit
//! `(x * SALT[i]) mod 2^32 >> 27` (256-bit blocks) or `>> 26` (512-bit blocks) of word `i`, for
//! eight odd salts (Parquet's).
//!
//! # Guarantees and costs
//! - No false negatives. The false-positive rate after `n` distinct keys in `B` blocks is
//!   [`Layout::false_positive_rate`]`(n, B)`; tests hold the measured rate to within 10 % of it
//!   at 8, 10 and 16 bits per key, for both layouts.
//! - One cache line per insert or query; memory is `32 * num_blocks` bytes (32-byte aligned) or
//!   `64 * num_blocks` bytes (64-byte aligned).
//! - No panics on bad input: sizing, building and loading return typed errors
//!   ([`BuildError`], [`ShapeError`], [`LoadError`]); a damaged serialized filter fails its
//!   XXH3-64 checksum ([`LoadError::ChecksumMismatch`]).
//! - `unsafe` is limited to the SIMD kernels (intrinsics, and inline assembly for the one-key
//!   queries, so that they inline into the caller), prefetch hints, unchecked block indexing on
//!   the hot path and the byte view of [`BlockedBloom::as_bytes`]; each block states why it
//!   holds, and miri (tree borrows) runs the scalar path and the byte view.
//!
//! # Modules
//! - `api`: [`Key`] and its kinds [`Bytes`] and [`Hashed`], and the [`Filter`] trait.
//! - `filter`: [`BlockedBloom`], the single-writer filter.
//! - `atomic`: [`AtomicBlockedBloom`], concurrent inserts through `&self`.
//! - `any`: [`AnyBloom`], a plain filter of a layout chosen at run time.
//! - `geometry`: what the filter types share besides their bits (blocks, seed, kernel) and the
//!   rules derived from it: key hash, block index, shape check, `Debug`.
//! - `builder`: [`BloomBuilder`] (sizing request, seed, backend, layout) and fallible allocation.
//! - [`layout`]: [`Layout`] and [`BlockLayout`], the two native layouts and their trade-off.
//! - `block`: [`Block256`], the block index and fingerprint rules, the Parquet salts.
//! - `block512`: [`Block512`], one 64-byte cache line of eight `u64` words.
//! - `kernels`: the kernels by instruction set (`scalar`, `avx2`, `avx512`) and the one
//!   dispatch among them; [`Backend`] detection, the checked-backend token, prefetching,
//!   [`PREFETCH_AHEAD`], the batch query loop.
//! - `sizing`: the Putze-Sanders-Singler false-positive formula, [`Sizing`], and the sizing
//!   methods of [`Layout`].
//! - [`format`](mod@format): the serialized form (header, blocks, XXH3-64 checksum), versions 1 and 2.
//! - `sbbf`: [`Sbbf`], Parquet's split-block bloom filter and its Thrift header.
//! - `error`: [`BuildError`], [`ShapeError`], [`LoadError`].
//! - `serde_impl` (feature `serde`): every filter as its serialized bytes, `Layout` by name.

mod any;
mod api;
mod atomic;
mod block;
mod block512;
mod builder;
mod error;
mod filter;
pub mod format;
mod geometry;
mod kernels;
pub mod layout;
mod sbbf;
#[cfg(feature = "serde")]
mod serde_impl;
mod sizing;

pub use any::AnyBloom;
pub use api::{Bytes, Filter, Hashed, Key};
pub use atomic::AtomicBlockedBloom;
pub use block::Block256;
pub use block512::Block512;
pub use builder::BloomBuilder;
pub use error::{BuildError, LoadError, ShapeError};
pub use filter::BlockedBloom;
pub use kernels::{Backend, PREFETCH_AHEAD};
pub use layout::{BlockLayout, Layout};
pub use sbbf::Sbbf;
pub use sizing::Sizing;

#[cfg(all(test, not(loom)))]
mod tests;

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

// The atomic filter takes inserts from many threads through `&self`, and the plain ones are
// read from many threads once built: a change that made one lose `Send` or `Sync` fails to
// compile here rather than in a user's crate.
const _: () = {
    const fn shareable<T: Send + Sync>() {}
    shareable::<AtomicBlockedBloom>();
    shareable::<AtomicBlockedBloom<Block512>>();
    shareable::<BlockedBloom>();
    shareable::<BlockedBloom<Block512>>();
    shareable::<AnyBloom>();
    shareable::<Sbbf>();
};
