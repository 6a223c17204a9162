//! [`BlockedBloom`]: the single-writer blocked bloom filter.

use std::hash::Hash;

use crate::block::{BITS_SET_PER_KEY, Block256, fingerprint};
use crate::builder::{BloomBuilder, try_alloc};
use crate::error::{BuildError, LoadError, ShapeError};
use crate::format;
use crate::geometry::{Geometry, native_accessors};
use crate::kernels::{Backend, Kernel, PREFETCH_AHEAD, prefetch};
use crate::layout::BlockLayout;

/// A blocked bloom filter: every key sets 8 bits inside one block that lies in one cache line,
/// so an insert or a query touches exactly one line. The block layout is the type parameter:
/// [`Block256`] (the default: eight 32-bit words) or [`Block512`](crate::Block512) (eight
/// 64-bit words, a whole line; fewer false positives at equal memory). Insert needs `&mut self`;
/// see [`AtomicBlockedBloom`] for concurrent inserts through `&self`, and
/// [`AnyBloom`](crate::AnyBloom) for a filter whose layout is chosen at run time.
///
/// A key is hashed once to 64 bits (`Hash` keys with wyhash, ids and byte strings with XXH3,
/// both keyed with the filter's seed, or pre-hashed by the caller); the hash picks the block and
/// the bits (see the crate docs for the layout). There are no false negatives for a key queried
/// the way it was inserted: `insert`/`contains`, `insert_id`/`contains_id` (or the `*_bytes`
/// pair, which hashes the same), `insert_hash`/`contains_hash`. The two hash families differ, so
/// a key inserted with `insert` is not found by `contains_id`.
///
/// [`AtomicBlockedBloom`]: crate::AtomicBlockedBloom
///
/// # Examples
/// ```
/// use txgate_bloom::{Block512, BlockedBloom, BloomBuilder};
/// let mut seen = BlockedBloom::with_false_positive_rate(1000, 0.01)?;
/// assert!(seen.insert("txid-1"));   // new
/// assert!(!seen.insert("txid-1"));  // already there
/// assert!(seen.contains("txid-1"));
///
/// // The same with 512-bit blocks: the builder picks the layout.
/// let mut wide: BlockedBloom<Block512> =
///     BloomBuilder::with_false_positive_rate(1000, 0.01)?.layout()?.build()?;
/// assert!(wide.insert("txid-1"));
/// assert!(wide.memory_bytes() < seen.memory_bytes());
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Clone)]
pub struct BlockedBloom<B: BlockLayout = Block256> {
    // Invariant: blocks.len() == geometry.num_blocks() > 0.
    blocks: Box<[B]>,
    geometry: Geometry,
}

/// Two filters are equal when they have the same number of blocks, the same seed and the same
/// bits, so they answer alike for every key; the backend, which only changes speed, is not
/// compared. (Filters with other seeds are unequal even when both are empty.)
impl<B: BlockLayout> PartialEq for BlockedBloom<B> {
    fn eq(&self, other: &Self) -> bool {
        self.geometry.num_blocks() == other.geometry.num_blocks()
            && self.geometry.seed() == other.geometry.seed()
            && self.blocks == other.blocks
    }
}

impl<B: BlockLayout> Eq for BlockedBloom<B> {}

/// Inserts every key, as [`BlockedBloom::insert`] does: by its `std::hash::Hash` impl. Such keys
/// are found by [`contains`](BlockedBloom::contains), not by `contains_id` or `contains_bytes`
/// (another hash): extend a filter of txids with `ids.iter().for_each(|id| { f.insert_id(id); })`.
/// A new filter of given keys is [`BloomBuilder::build_from`]; there is no `FromIterator` (the
/// builder's docs say why).
impl<B: BlockLayout, T: Hash> Extend<T> for BlockedBloom<B> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, keys: I) {
        for key in keys {
            self.insert(&key);
        }
    }
}

impl<B: BlockLayout> std::fmt::Debug for BlockedBloom<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.geometry.fmt_debug(f, "BlockedBloom", Some(B::LAYOUT))
    }
}

impl BlockedBloom {
    /// An empty 256-bit-block filter sized for `items` keys at false-positive rate `fpr`, with a
    /// random seed and the detected backend. Shorthand for
    /// [`BloomBuilder::with_false_positive_rate`]`(items, fpr)?.build()` (the builder also
    /// chooses other layouts).
    ///
    /// # Errors
    /// As [`BloomBuilder::with_false_positive_rate`] and [`BloomBuilder::build`].
    pub fn with_false_positive_rate(items: u64, fpr: f64) -> Result<Self, BuildError> {
        BloomBuilder::with_false_positive_rate(items, fpr)?.build()
    }

    /// An empty 256-bit-block filter of at least `bits` bits, with a random seed and the
    /// detected backend.
    ///
    /// # Errors
    /// As [`BloomBuilder::with_num_bits`] and [`BloomBuilder::build`].
    pub fn with_num_bits(bits: u64) -> Result<Self, BuildError> {
        BloomBuilder::with_num_bits(bits)?.build()
    }
}

impl<B: BlockLayout> BlockedBloom<B> {
    pub(crate) fn from_parts(
        num_blocks: u64,
        seed: u64,
        kernel: Kernel,
    ) -> Result<Self, BuildError> {
        let blocks = try_alloc(num_blocks, || B::ZERO)?;
        Ok(Self::from_blocks(blocks, seed, kernel))
    }

    fn from_blocks(blocks: Box<[B]>, seed: u64, kernel: Kernel) -> Self {
        debug_assert!(!blocks.is_empty());
        BlockedBloom {
            geometry: Geometry::new(blocks.len() as u64, seed, kernel),
            blocks,
        }
    }

    #[inline(always)]
    fn block(&self, hash: u64) -> &B {
        let index = self.geometry.index(hash);
        debug_assert!(index < self.blocks.len());
        // SAFETY: `Geometry::index` is below `num_blocks`, which equals `blocks.len()`
        // (invariant).
        unsafe { self.blocks.get_unchecked(index) }
    }

    #[inline(always)]
    fn block_mut(&mut self, hash: u64) -> &mut B {
        let index = self.geometry.index(hash);
        debug_assert!(index < self.blocks.len());
        // SAFETY: `Geometry::index` is below `num_blocks`, which equals `blocks.len()`
        // (invariant).
        unsafe { self.blocks.get_unchecked_mut(index) }
    }

    /// The 64-bit hash this filter uses for `key` (for the `*_hash` entry points).
    #[inline]
    pub fn hash<T: Hash + ?Sized>(&self, key: &T) -> u64 {
        self.geometry.hash_key(key)
    }

    /// The 64-bit hash this filter uses for an id of `N` bytes (a 32-byte txid, a 64-byte
    /// signature): seeded XXH3-64, as [`hash_bytes`](Self::hash_bytes) of the same bytes.
    #[inline]
    pub fn hash_id<const N: usize>(&self, id: &[u8; N]) -> u64 {
        self.geometry.hash_id(id)
    }

    /// The 64-bit hash this filter uses for a byte string: XXH3-64 keyed by the filter's seed,
    /// fixed by the serialized format, so a loaded filter answers the same for the same bytes on
    /// any platform and Rust version. (Keys given through [`insert`](Self::insert) are hashed
    /// with their `std::hash::Hash` impl, which is only as portable as that impl: integers'
    /// byte order and `usize` width vary, and std makes no promise across versions.)
    #[inline]
    pub fn hash_bytes(&self, bytes: &[u8]) -> u64 {
        self.geometry.hash_bytes(bytes)
    }

    /// Inserts `key`; returns whether it was new (at least one of its bits was clear). A
    /// `false` for a key never inserted is a false positive.
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&mut self, key: &T) -> bool {
        self.insert_hash(self.hash(key))
    }

    /// Inserts an id of `N` bytes (a txid) by seeded XXH3-64 ([`hash_id`](Self::hash_id)); returns whether it was
    /// new.
    #[inline]
    pub fn insert_id<const N: usize>(&mut self, id: &[u8; N]) -> bool {
        self.insert_hash(self.hash_id(id))
    }

    /// Inserts a byte string by the format's portable hash ([`hash_bytes`](Self::hash_bytes));
    /// returns whether it was new.
    #[inline]
    pub fn insert_bytes(&mut self, bytes: &[u8]) -> bool {
        self.insert_hash(self.hash_bytes(bytes))
    }

    /// Inserts a key by its 64-bit hash, used as is: it must already be well mixed (all 64 bits
    /// uniformly random), or the false-positive rate will be worse than the formula's.
    #[inline(always)]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        let kernel = self.geometry.kernel();
        B::insert(kernel, self.block_mut(hash), fingerprint(hash))
    }

    /// Inserts every key of `hashes` (pre-hashed, as [`insert_hash`](Self::insert_hash)),
    /// prefetching the blocks of the keys 32 places ahead; returns how many were new.
    pub fn insert_many(&mut self, hashes: &[u64]) -> usize {
        let mut new = 0;
        for (i, &hash) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(self.block(ahead));
            }
            new += usize::from(self.insert_hash(hash));
        }
        new
    }

    /// Whether `key` may be in the filter (no false negatives; false positives at the rate of
    /// [`BlockedBloom::expected_false_positive_rate`]).
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, key: &T) -> bool {
        self.contains_hash(self.hash(key))
    }

    /// Whether the id of `N` bytes may be in the filter.
    #[inline]
    pub fn contains_id<const N: usize>(&self, id: &[u8; N]) -> bool {
        self.contains_hash(self.hash_id(id))
    }

    /// Whether the byte string may be in the filter ([`hash_bytes`](Self::hash_bytes)).
    #[inline]
    pub fn contains_bytes(&self, bytes: &[u8]) -> bool {
        self.contains_hash(self.hash_bytes(bytes))
    }

    /// Whether the key with this 64-bit hash may be in the filter.
    #[inline(always)]
    pub fn contains_hash(&self, hash: u64) -> bool {
        B::contains(self.geometry.kernel(), self.block(hash), fingerprint(hash))
    }

    /// Answers [`contains_hash`](Self::contains_hash) for every hash, writing `out[i]` for
    /// `hashes[i]`, while prefetching the cache lines of the keys 32 places ahead: on a filter
    /// larger than the caches this keeps many DRAM reads in flight at once.
    ///
    /// # Panics
    /// Panics if `out.len() != hashes.len()`.
    pub fn contains_many(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(
            hashes.len(),
            out.len(),
            "contains_many: one output per hash"
        );
        B::contains_many(self.geometry.kernel(), &self.blocks, hashes, out);
    }

    /// Adds every key of `other` (bitwise OR).
    ///
    /// # Errors
    /// [`ShapeError`] when the filters differ in blocks or seed; `self` is unchanged then.
    pub fn union(&mut self, other: &BlockedBloom<B>) -> Result<(), ShapeError> {
        self.geometry.check_shape(other.geometry)?;
        for (ours, theirs) in self.blocks.iter_mut().zip(other.blocks.iter()) {
            ours.or_assign(theirs);
        }
        Ok(())
    }

    /// Keeps only bits set in both filters (bitwise AND): a filter that answers "maybe" for
    /// every key in both, with a false-positive rate at most that of either.
    ///
    /// # Errors
    /// [`ShapeError`] when the filters differ in blocks or seed; `self` is unchanged then.
    pub fn intersect(&mut self, other: &BlockedBloom<B>) -> Result<(), ShapeError> {
        self.geometry.check_shape(other.geometry)?;
        for (ours, theirs) in self.blocks.iter_mut().zip(other.blocks.iter()) {
            ours.and_assign(theirs);
        }
        Ok(())
    }

    /// Removes every key.
    pub fn clear(&mut self) {
        self.blocks.fill(B::ZERO);
    }

    /// The filter's bits as they lie in memory, borrowed: `num_blocks * block_bytes` bytes, the
    /// blocks in order, each block's words in the target's byte order. On little-endian targets
    /// this is exactly the block section of [`to_bytes`](Self::to_bytes) (after its 32-byte
    /// header, before the checksum); use `to_bytes` for a portable form.
    pub fn as_bytes(&self) -> &[u8] {
        // The block type is exactly its layout's bytes (no padding), checked at compile time.
        const { assert!(std::mem::size_of::<B>() == B::LAYOUT.block_bytes()) };
        let len = std::mem::size_of_val::<[B]>(&self.blocks);
        // SAFETY: `B` is `Block256` or `Block512` (the trait is sealed): `#[repr(C)]` arrays of
        // `u32` or `u64` whose size equals their alignment, so they have no padding and every
        // byte is initialized; the slice covers exactly the `len` bytes of `self.blocks`, which
        // stays borrowed (and so unchanged) for the returned lifetime; `u8` has alignment 1.
        unsafe { std::slice::from_raw_parts(self.blocks.as_ptr().cast::<u8>(), len) }
    }

    /// Whether no bit is set.
    pub fn is_empty(&self) -> bool {
        self.blocks.iter().all(|b| *b == B::ZERO)
    }

    /// Bits set in the whole filter.
    pub fn count_ones(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    native_accessors!();

    /// The kernel backend in use.
    pub fn backend(&self) -> Backend {
        self.geometry.backend()
    }

    /// The serialized form (see the [`format`](crate::format) module): a 32-byte versioned
    /// header naming the layout, the blocks as little-endian words, and an XXH3-64 checksum;
    /// [`format::encoded_len`] bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        format::encode(
            self.geometry.seed(),
            self.geometry.num_blocks(),
            self.blocks.iter().copied(),
        )
    }

    /// Loads a filter of layout `B` written by [`to_bytes`](Self::to_bytes) (by either filter
    /// type; format version 2, or version 1 of the 256-bit layout), with the detected backend.
    /// The type names the layout: `BlockedBloom::<Block512>::from_bytes`, or a binding typed
    /// `BlockedBloom` for the default; [`AnyBloom::from_bytes`](crate::AnyBloom::from_bytes)
    /// loads either.
    ///
    /// # Errors
    /// A [`LoadError`] for wrong magic, an unknown version or layout code, a filter of the other
    /// layout ([`LoadError::LayoutMismatch`]), non-zero reserved bytes, zero blocks, a length
    /// that does not match the header, or a checksum that does not match the bytes
    /// ([`LoadError::ChecksumMismatch`]); never a panic.
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::{Block512, BlockedBloom, BloomBuilder, LoadError};
    /// let mut filter = BloomBuilder::with_num_blocks(4)?.seed(1).build()?;
    /// filter.insert_id(&[1; 32]);
    /// let mut bytes = filter.to_bytes();
    /// let loaded: BlockedBloom = BlockedBloom::from_bytes(&bytes)?;
    /// assert!(loaded.contains_id(&[1; 32]));
    /// assert!(matches!(
    ///     BlockedBloom::<Block512>::from_bytes(&bytes),
    ///     Err(LoadError::LayoutMismatch { .. })
    /// ));
    /// bytes[16] ^= 1; // one bit of the seed
    /// assert!(matches!(
    ///     BlockedBloom::<txgate_bloom::Block256>::from_bytes(&bytes),
    ///     Err(LoadError::ChecksumMismatch { .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        let (header, mut blocks) = format::decode::<B>(bytes)?;
        let loaded = try_alloc(header.num_blocks, || blocks.next().unwrap_or(B::ZERO))?;
        Ok(Self::from_blocks(loaded, header.seed, Kernel::detect()))
    }

    pub(crate) fn blocks(&self) -> &[B] {
        &self.blocks
    }

    pub(crate) fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// A filter over `blocks` (at least one) with `geometry`'s seed and kernel.
    pub(crate) fn from_raw(blocks: Box<[B]>, geometry: Geometry) -> Self {
        Self::from_blocks(blocks, geometry.seed(), geometry.kernel())
    }
}

/// Estimates the distinct keys in a filter of `num_bits` bits with `ones` bits set.
///
/// In both layouts each key sets one bit in each of the 8 word positions, and within a position
/// every bit of every block is equally likely, so the filter behaves like 8 interleaved classic
/// filters of `m / 8` bits with one hash each; the estimator of Swamidass and Baldi (2007),
/// `n ≈ -(m / k) ln(1 - X / m)`, applies with `k = 8`. A full filter (or `ones > num_bits`)
/// gives `f64::INFINITY`.
pub fn estimate_len(ones: u64, num_bits: u64) -> f64 {
    if num_bits == 0 {
        return 0.0;
    }
    let m = num_bits as f64;
    let fill = (ones as f64 / m).min(1.0);
    -(m / f64::from(BITS_SET_PER_KEY)) * (1.0 - fill).ln()
}
