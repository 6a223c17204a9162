//! [`BlockedBloom`]: the single-writer blocked bloom filter.

use std::hash::Hash;

use crate::api::{Filter, Hashed, Key};
use crate::block::{Block256, fingerprint};
use crate::builder::try_alloc;
use crate::error::{BuildError, LoadError, ShapeError};
use crate::format;
use crate::geometry::Geometry;
use crate::kernels::{Backend, Kernel, PREFETCH_AHEAD, prefetch};
use crate::layout::{BlockLayout, Layout};

/// A blocked bloom filter: every key sets 8 bits inside one block that lies in one cache line,
/// so an insert or a query touches exactly one line. The block layout is the type parameter:
/// [`Block256`] (the default: eight 32-bit words) or [`Block512`](crate::Block512) (eight
/// 64-bit words, a whole line; fewer false positives at equal memory). Insert needs `&mut self`;
/// see [`AtomicBlockedBloom`] for concurrent inserts through `&self`, and
/// [`AnyBloom`](crate::AnyBloom) for a filter whose layout is chosen at run time.
///
/// A key is hashed once to 64 bits (see [`Key`]: `Hash` keys with wyhash, [`Bytes`] with XXH3,
/// both keyed with the filter's seed, or [`Hashed`] values used as is); the hash picks the block
/// and the bits (see the crate docs for the layout). Queries, sizes and the serialized form are
/// the [`Filter`] trait's. There are no false negatives for a key queried as the same [`Key`]
/// kind it was inserted as: the kinds hash differently, so `&txid` (by `Hash`) is not found as
/// `Bytes(&txid)`.
///
/// [`AtomicBlockedBloom`]: crate::AtomicBlockedBloom
/// [`Bytes`]: crate::Bytes
///
/// # Examples
/// ```
/// use txgate_bloom::{Block512, BloomBuilder, Filter};
/// let mut seen = BloomBuilder::with_false_positive_rate(1000, 0.01).build()?;
/// assert!(seen.insert("txid-1"));   // new
/// assert!(!seen.insert("txid-1"));  // already there
/// assert!(seen.contains("txid-1"));
///
/// // The same with 512-bit blocks: the builder picks the layout.
/// let mut wide = BloomBuilder::with_false_positive_rate(1000, 0.01).layout::<Block512>().build()?;
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

/// Inserts every key by its `std::hash::Hash` impl, as [`BlockedBloom::insert`]`(&key)` does
/// (keys by value hash as their references do). Such keys are found by `contains(&key)`, not as
/// [`Bytes`](crate::Bytes) (another hash): insert txids with
/// `ids.iter().for_each(|id| { f.insert(Bytes(id)); })`. There is no `FromIterator` (see
/// [`BloomBuilder::build`](crate::BloomBuilder::build) for why).
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

/// The default layout's loader, here so that `BlockedBloom::from_bytes(&bytes)` needs no type
/// annotation (as `HashMap::new` lives in the impl of the default hasher).
impl BlockedBloom {
    /// Loads a 256-bit-block filter written by `to_bytes`: [`from_layout_bytes`] of the default
    /// layout ([`Block256`]), which is the one way for every layout.
    ///
    /// # Errors
    /// As [`from_layout_bytes`]: a [`LoadError`], never a panic.
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::{BlockedBloom, BloomBuilder, Bytes, Filter, LoadError};
    /// let mut filter = BloomBuilder::with_num_blocks(4).seed(1).build()?;
    /// filter.insert(Bytes(&[1; 32]));
    /// let mut bytes = filter.to_bytes();
    /// let g = BlockedBloom::from_bytes(&bytes)?;
    /// assert!(g.contains(Bytes(&[1; 32])));
    /// bytes[16] ^= 1; // one bit of the seed
    /// assert!(matches!(
    ///     BlockedBloom::from_bytes(&bytes),
    ///     Err(LoadError::ChecksumMismatch { .. })
    /// ));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`from_layout_bytes`]: BlockedBloom::from_layout_bytes
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        Self::from_layout_bytes(bytes)
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

    /// Inserts `key` (any [`Key`]: `&T` for `T: Hash`, [`Bytes`](crate::Bytes),
    /// [`Hashed`]); returns whether it was new (at least one of its bits was
    /// clear). A `false` for a key never inserted is a false positive.
    #[inline(always)]
    pub fn insert<K: Key>(&mut self, key: K) -> bool {
        let hash = self.geometry.hash(key);
        let kernel = self.geometry.kernel();
        B::insert(kernel, self.block_mut(hash), fingerprint(hash))
    }

    /// Inserts every key of `hashes` (pre-hashed: [`Filter::hash`] values, as
    /// [`Hashed`]), prefetching the blocks of the keys
    /// [`PREFETCH_AHEAD`] (32) places ahead; returns how many were new.
    pub fn insert_many(&mut self, hashes: &[u64]) -> usize {
        let mut new = 0;
        for (i, &hash) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(self.block(ahead));
            }
            new += usize::from(self.insert(Hashed(hash)));
        }
        new
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

    /// Loads a filter of layout `B` written by `to_bytes` (by any filter type; format version
    /// 2, or version 1 of the 256-bit layout), with the detected backend: the one loader for
    /// every layout, named by the type (`BlockedBloom::<Block512>::from_layout_bytes`).
    /// [`BlockedBloom::from_bytes`] is this for the default layout, and
    /// [`AnyBloom::from_bytes`](crate::AnyBloom::from_bytes) loads either layout.
    ///
    /// # Errors
    /// A [`LoadError`] for wrong magic, an unknown version or layout code, a filter of the other
    /// layout ([`LoadError::LayoutMismatch`]), non-zero reserved bytes, zero blocks, a length
    /// that does not match the header, or a checksum that does not match the bytes
    /// ([`LoadError::ChecksumMismatch`]); never a panic.
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::{Block512, BlockedBloom, BloomBuilder, Bytes, Filter, LoadError};
    /// let mut wide = BloomBuilder::with_num_blocks(4).layout::<Block512>().seed(1).build()?;
    /// wide.insert(Bytes(&[1; 32]));
    /// let bytes = wide.to_bytes();
    /// let loaded = BlockedBloom::<Block512>::from_layout_bytes(&bytes)?;
    /// assert!(loaded.contains(Bytes(&[1; 32])));
    /// assert!(matches!(BlockedBloom::from_bytes(&bytes), Err(LoadError::LayoutMismatch { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_layout_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
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

impl<B: BlockLayout> Filter for BlockedBloom<B> {
    #[inline(always)]
    fn hash<K: Key>(&self, key: K) -> u64 {
        self.geometry.hash(key)
    }

    #[inline(always)]
    fn contains<K: Key>(&self, key: K) -> bool {
        let hash = self.geometry.hash(key);
        // SAFETY: a filter has at least one block (the invariant of `Geometry`, whose
        // `num_blocks` is `blocks.len()`).
        unsafe { B::contains(self.geometry.kernel(), &self.blocks, hash) }
    }

    fn contains_many(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(
            hashes.len(),
            out.len(),
            "contains_many: one output per hash"
        );
        B::contains_many(self.geometry.kernel(), &self.blocks, hashes, out);
    }

    fn layout(&self) -> Layout {
        B::LAYOUT
    }

    fn num_blocks(&self) -> u64 {
        self.geometry.num_blocks()
    }

    fn seed(&self) -> u64 {
        self.geometry.seed()
    }

    fn backend(&self) -> Backend {
        self.geometry.backend()
    }

    fn count_ones(&self) -> u64 {
        self.blocks.iter().map(|b| u64::from(b.count_ones())).sum()
    }

    fn to_bytes(&self) -> Vec<u8> {
        format::encode(
            self.geometry.seed(),
            self.geometry.num_blocks(),
            self.blocks.iter().copied(),
        )
    }
}

/// Estimates the distinct keys in a filter of `num_bits` bits with `ones` bits set: the
/// estimator of Swamidass and Baldi (2007) with `k = 8` (see [`Filter::estimated_len`]). A full
/// filter (or `ones > num_bits`) gives `f64::INFINITY`.
pub(crate) fn estimate_len(ones: u64, num_bits: u64) -> f64 {
    if num_bits == 0 {
        return 0.0;
    }
    let m = num_bits as f64;
    let fill = (ones as f64 / m).min(1.0);
    -(m / f64::from(Layout::BITS_SET_PER_KEY)) * (1.0 - fill).ln()
}
