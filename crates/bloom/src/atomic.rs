//! [`AtomicBlockedBloom`]: the blocked bloom filter with concurrent inserts through `&self`.

use std::hash::Hash;

use crate::api::{Filter, Hashed, Key};
use crate::block::{Block256, fingerprint};
use crate::builder::try_alloc;
use crate::error::{BuildError, LoadError, ShapeError};
use crate::filter::BlockedBloom;
use crate::format;
use crate::geometry::Geometry;
use crate::kernels::{Backend, Kernel, PREFETCH_AHEAD, prefetch};
use crate::layout::{BlockLayout, Layout};
use txgate_sync::sync::Ordering;

/// A blocked bloom filter that many threads insert into at once, through `&self`. The block is
/// held as `AtomicU64`s: a [`Block256`]'s eight 32-bit words as four (two words each), a
/// [`Block512`](crate::Block512)'s as its eight. Each gets its share of the key's bits with one
/// `fetch_or`, skipped when a plain load shows they are already set (the common case once the
/// filter fills, and it keeps the line shared instead of bouncing it between cores): at most
/// four (256-bit) or eight (512-bit) read-modify-writes per insert. Same bits, hashes and
/// serialized form as [`BlockedBloom`].
///
/// # Concurrency
/// - Every insert that happens-before a query (a thread join, a channel, a Release store read by
///   an Acquire load, ...) is seen by it: no false negatives. A query racing an insert of the same
///   key may see some of its bits and not others, and answer either way.
/// - [`insert`](Self::insert) returns `true` iff its load of the block found at least one of
///   the key's bits clear (it then sets them with `fetch_or`); alone, that is exactly "the key
///   was new". When several threads insert the same new key at the same time, **at least one of
///   them returns `true`** (each bit is set by some `fetch_or`, and a call that finds every bit
///   already set performs none), and more than one may (several can load before any sets).
///   This assumes the key's clear bits are set only by those racing inserts: if inserts of
///   other keys set them meanwhile, every insert of this key may return `false`, which is the
///   same thing as the key being a false positive.
///   Code that needs exactly one winner per key needs a lock or a set, not a bloom filter.
/// - Words are atomics with `Relaxed` ordering: the filter publishes no other memory through
///   its bits, so it asks for no ordering beyond each word's own modification order.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use txgate_bloom::{BloomBuilder, Filter};
/// let seen = Arc::new(BloomBuilder::with_false_positive_rate(10_000, 0.001).build_atomic()?);
/// let handles: Vec<_> = (0..4u64)
///     .map(|t| {
///         let seen = Arc::clone(&seen);
///         std::thread::spawn(move || for i in 0..100u64 { seen.insert(&(t * 1000 + i)); })
///     })
///     .collect();
/// for h in handles { h.join().unwrap(); }
/// assert!((0..4u64).all(|t| (0..100u64).all(|i| seen.contains(&(t * 1000 + i)))));
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
pub struct AtomicBlockedBloom<B: BlockLayout = Block256> {
    // Invariant: blocks.len() == geometry.num_blocks() > 0.
    blocks: Box<[B::Atomic]>,
    geometry: Geometry,
}

impl<B: BlockLayout> std::fmt::Debug for AtomicBlockedBloom<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.geometry
            .fmt_debug(f, "AtomicBlockedBloom", Some(B::LAYOUT))
    }
}

impl<B: BlockLayout> AtomicBlockedBloom<B> {
    pub(crate) fn from_parts(
        num_blocks: u64,
        seed: u64,
        kernel: Kernel,
    ) -> Result<Self, BuildError> {
        let blocks = try_alloc(num_blocks, || B::to_atomic(B::ZERO))?;
        Ok(Self::from_blocks(blocks, seed, kernel))
    }

    fn from_blocks(blocks: Box<[B::Atomic]>, seed: u64, kernel: Kernel) -> Self {
        debug_assert!(!blocks.is_empty());
        AtomicBlockedBloom {
            geometry: Geometry::new(blocks.len() as u64, seed, kernel),
            blocks,
        }
    }

    #[inline(always)]
    fn block(&self, hash: u64) -> &B::Atomic {
        let index = self.geometry.index(hash);
        debug_assert!(index < self.blocks.len());
        // SAFETY: `Geometry::index` is below `num_blocks`, which equals `blocks.len()`
        // (invariant).
        unsafe { self.blocks.get_unchecked(index) }
    }

    /// Inserts `key` (any [`Key`], as [`BlockedBloom::insert`]); returns `true` iff this call
    /// found one of the key's bits clear (and set it). See the type docs for what racing inserts
    /// of one key return.
    #[inline(always)]
    pub fn insert<K: Key>(&self, key: K) -> bool {
        let hash = self.geometry.hash(key);
        let block = B::atomic_words(self.block(hash));
        let masks = B::atomic_masks(self.geometry.kernel(), fingerprint(hash));
        let mut saw_clear = false;
        for (word, &mask) in block.iter().zip(masks.as_ref()) {
            // Relaxed (load and fetch_or): bits publish nothing else; only each word's own
            // modification order matters. The result of fetch_or is not used, so x86 emits a
            // plain `lock or` rather than a compare-exchange loop.
            if word.load(Ordering::Relaxed) & mask != mask {
                word.fetch_or(mask, Ordering::Relaxed);
                saw_clear = true;
            }
        }
        saw_clear
    }

    /// Inserts every key of `hashes` (pre-hashed: [`Filter::hash`] values, as [`Hashed`]),
    /// prefetching the blocks of the keys [`PREFETCH_AHEAD`] (32) places
    /// ahead, so that the atomic read-modify-writes
    /// (which on x86 wait for every earlier load) find their lines in cache; returns how many
    /// this call reported new (see the type docs for races).
    pub fn insert_many(&self, hashes: &[u64]) -> usize {
        let mut new = 0;
        for (i, &hash) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(self.block(ahead));
            }
            new += usize::from(self.insert(Hashed(hash)));
        }
        new
    }

    /// Adds every key of `other` (bitwise OR, word by word with `fetch_or`), concurrently with
    /// other inserts.
    ///
    /// # Errors
    /// [`ShapeError`] when the filters differ in blocks or seed; nothing changes then.
    pub fn union(&self, other: &BlockedBloom<B>) -> Result<(), ShapeError> {
        self.geometry.check_shape(other.geometry())?;
        for (ours, theirs) in self.blocks.iter().zip(other.blocks()) {
            for (word, &bits) in B::atomic_words(ours)
                .iter()
                .zip(B::atomic_bits(theirs).as_ref())
            {
                if bits != 0 {
                    // Relaxed: as in insert.
                    word.fetch_or(bits, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    /// Keeps only bits also set in `other` (bitwise AND). Needs `&mut self`: a concurrent insert
    /// could otherwise lose its bits.
    ///
    /// # Errors
    /// [`ShapeError`] when the filters differ in blocks or seed; nothing changes then.
    pub fn intersect(&mut self, other: &BlockedBloom<B>) -> Result<(), ShapeError> {
        self.geometry.check_shape(other.geometry())?;
        for (ours, theirs) in self.blocks.iter_mut().zip(other.blocks()) {
            let mut current = B::load_atomic(ours);
            current.and_assign(theirs);
            *ours = B::to_atomic(current);
        }
        Ok(())
    }

    /// Removes every key (`&mut self`: no insert can race it).
    pub fn clear(&mut self) {
        for block in self.blocks.iter_mut() {
            *block = B::to_atomic(B::ZERO);
        }
    }

    /// Loads a filter of layout `B` written by any filter type's `to_bytes`: the one loader
    /// for every layout, named by the type (`AtomicBlockedBloom::<Block512>::from_layout_bytes`);
    /// [`AtomicBlockedBloom::from_bytes`] is this for the default layout.
    ///
    /// # Errors
    /// As [`BlockedBloom::from_layout_bytes`].
    pub fn from_layout_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        let (header, mut blocks) = format::decode::<B>(bytes)?;
        let loaded = try_alloc(header.num_blocks, || {
            B::to_atomic(blocks.next().unwrap_or(B::ZERO))
        })?;
        Ok(Self::from_blocks(loaded, header.seed, Kernel::detect()))
    }

    /// A plain copy of the current bits (for SIMD queries once inserts are done).
    ///
    /// # Errors
    /// [`BuildError::AllocationFailed`] when the copy cannot be allocated.
    pub fn to_plain(&self) -> Result<BlockedBloom<B>, BuildError> {
        let mut it = self.blocks.iter();
        let blocks = try_alloc(self.geometry.num_blocks(), || {
            it.next().map_or(B::ZERO, B::load_atomic)
        })?;
        Ok(BlockedBloom::from_raw(blocks, self.geometry))
    }
}

/// Inserts every key by its `std::hash::Hash` impl, as [`AtomicBlockedBloom::insert`]`(&key)`
/// does. Such keys are found by `contains(&key)`, not as [`Bytes`](crate::Bytes) (another hash).
/// `Extend` takes `&mut self`; threads that share the filter insert through `&self` with
/// [`insert`](AtomicBlockedBloom::insert). There is no `FromIterator` (see
/// [`BloomBuilder::build`](crate::BloomBuilder::build)).
impl<B: BlockLayout, T: Hash> Extend<T> for AtomicBlockedBloom<B> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, keys: I) {
        for key in keys {
            self.insert(&key);
        }
    }
}

impl<B: BlockLayout> From<BlockedBloom<B>> for AtomicBlockedBloom<B> {
    fn from(plain: BlockedBloom<B>) -> Self {
        let atomic: Box<[B::Atomic]> = plain.blocks().iter().map(|&b| B::to_atomic(b)).collect();
        let geometry = plain.geometry();
        AtomicBlockedBloom::from_blocks(atomic, geometry.seed(), geometry.kernel())
    }
}

/// The default layout's loader, here so that `AtomicBlockedBloom::from_bytes(&bytes)` needs no
/// type annotation.
impl AtomicBlockedBloom {
    /// Loads a 256-bit-block filter written by any filter type's `to_bytes`:
    /// [`from_layout_bytes`](AtomicBlockedBloom::from_layout_bytes) of the default layout.
    ///
    /// # Errors
    /// As [`BlockedBloom::from_layout_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        Self::from_layout_bytes(bytes)
    }
}

/// Queries read each word with one `Relaxed` load (see the type docs); `backend` is the one that
/// computes the key's bit masks (the words themselves are read and written only with scalar
/// atomic operations: a vector load of atomics would race with `fetch_or`); `count_ones` and
/// `to_bytes` read each word once, so concurrent inserts may or may not be counted.
impl<B: BlockLayout> Filter for AtomicBlockedBloom<B> {
    #[inline(always)]
    fn hash<K: Key>(&self, key: K) -> u64 {
        self.geometry.hash(key)
    }

    #[inline(always)]
    fn contains<K: Key>(&self, key: K) -> bool {
        let hash = self.geometry.hash(key);
        let block = B::atomic_words(self.block(hash));
        let masks = B::atomic_masks(self.geometry.kernel(), fingerprint(hash));
        let mut missing = 0;
        for (word, &mask) in block.iter().zip(masks.as_ref()) {
            // Relaxed: see the type docs; inserts are ordered before this by the caller.
            missing |= mask & !word.load(Ordering::Relaxed);
        }
        missing == 0
    }

    fn contains_many(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(
            hashes.len(),
            out.len(),
            "contains_many: one output per hash"
        );
        for (i, (&hash, answer)) in hashes.iter().zip(out.iter_mut()).enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(self.block(ahead));
            }
            *answer = self.contains(Hashed(hash));
        }
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
        self.blocks
            .iter()
            .map(|b| u64::from(B::load_atomic(b).count_ones()))
            .sum()
    }

    fn to_bytes(&self) -> Vec<u8> {
        format::encode(
            self.geometry.seed(),
            self.geometry.num_blocks(),
            self.blocks.iter().map(B::load_atomic),
        )
    }
}
