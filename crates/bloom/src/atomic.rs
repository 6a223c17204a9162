//! [`AtomicBlockedBloom`]: the blocked bloom filter with concurrent inserts through `&self`.

use std::hash::Hash;

use crate::block::{Block256, fingerprint};
use crate::builder::try_alloc;
use crate::error::{BuildError, LoadError, ShapeError};
use crate::filter::BlockedBloom;
use crate::format;
use crate::geometry::{Geometry, native_accessors};
use crate::kernels::{Backend, Kernel, PREFETCH_AHEAD, prefetch};
use crate::layout::BlockLayout;
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
/// use txgate_bloom::BloomBuilder;
/// let seen = Arc::new(BloomBuilder::with_false_positive_rate(10_000, 0.001)?.build_atomic()?);
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

    /// The 64-bit hash this filter uses for `key`.
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

    /// Inserts `key`; returns `true` iff this call found one of the key's bits clear (and set
    /// it). See the type docs for what racing inserts of one key return.
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&self, key: &T) -> bool {
        self.insert_hash(self.hash(key))
    }

    /// Inserts an id of `N` bytes; returns as [`insert`](Self::insert).
    #[inline]
    pub fn insert_id<const N: usize>(&self, id: &[u8; N]) -> bool {
        self.insert_hash(self.hash_id(id))
    }

    /// Inserts a byte string by the format's portable hash ([`hash_bytes`](Self::hash_bytes));
    /// returns as [`insert`](Self::insert).
    #[inline]
    pub fn insert_bytes(&self, bytes: &[u8]) -> bool {
        self.insert_hash(self.hash_bytes(bytes))
    }

    /// Inserts a key by its 64-bit hash (which must already be well mixed); returns as
    /// [`insert`](Self::insert).
    #[inline(always)]
    pub fn insert_hash(&self, hash: u64) -> bool {
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

    /// Inserts every key of `hashes` (pre-hashed, as [`insert_hash`](Self::insert_hash)),
    /// prefetching the blocks of the keys 32 places ahead, so that the atomic read-modify-writes
    /// (which on x86 wait for every earlier load) find their lines in cache; returns how many
    /// this call reported new (see the type docs for races).
    pub fn insert_many(&self, hashes: &[u64]) -> usize {
        let mut new = 0;
        for (i, &hash) in hashes.iter().enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(self.block(ahead));
            }
            new += usize::from(self.insert_hash(hash));
        }
        new
    }

    /// Whether `key` may be in the filter.
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
        let block = B::atomic_words(self.block(hash));
        let masks = B::atomic_masks(self.geometry.kernel(), fingerprint(hash));
        let mut missing = 0;
        for (word, &mask) in block.iter().zip(masks.as_ref()) {
            // Relaxed: see the type docs; inserts are ordered before this by the caller.
            missing |= mask & !word.load(Ordering::Relaxed);
        }
        missing == 0
    }

    /// Answers [`contains_hash`](Self::contains_hash) for every hash into `out`, prefetching
    /// lines 32 keys ahead (as [`BlockedBloom::contains_many`]).
    ///
    /// # Panics
    /// Panics if `out.len() != hashes.len()`.
    pub fn contains_many(&self, hashes: &[u64], out: &mut [bool]) {
        assert_eq!(
            hashes.len(),
            out.len(),
            "contains_many: one output per hash"
        );
        for (i, (&hash, answer)) in hashes.iter().zip(out.iter_mut()).enumerate() {
            if let Some(&ahead) = hashes.get(i + PREFETCH_AHEAD) {
                prefetch(self.block(ahead));
            }
            *answer = self.contains_hash(hash);
        }
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
                    // Relaxed: as in insert_hash.
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

    /// Bits set in the whole filter (each word read once; concurrent inserts may or may not be
    /// counted).
    pub fn count_ones(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| u64::from(B::load_atomic(b).count_ones()))
            .sum()
    }

    native_accessors!();

    /// The backend that computes the key's bit masks (the words themselves are read and written
    /// only with scalar atomic operations: a vector load of atomics would race with `fetch_or`).
    pub fn backend(&self) -> Backend {
        self.geometry.backend()
    }

    /// The serialized form, identical to [`BlockedBloom::to_bytes`] of the same bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        format::encode(
            self.geometry.seed(),
            self.geometry.num_blocks(),
            self.blocks.iter().map(B::load_atomic),
        )
    }

    /// Loads a filter of layout `B` written by either filter type's `to_bytes`.
    ///
    /// # Errors
    /// As [`BlockedBloom::from_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
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

/// Inserts every key, as [`AtomicBlockedBloom::insert`] does: by its `std::hash::Hash` impl. Such
/// keys are found by [`contains`](AtomicBlockedBloom::contains), not by `contains_id` or
/// `contains_bytes` (another hash). `Extend` takes `&mut self`; threads that share the filter
/// insert through `&self` with [`insert`](AtomicBlockedBloom::insert). There is no
/// `FromIterator` (see [`BloomBuilder::build_from`](crate::BloomBuilder::build_from)).
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
