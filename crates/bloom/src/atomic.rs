//! [`AtomicBlockedBloom`]: the blocked bloom filter with concurrent inserts through `&self`.

use std::hash::Hash;

use crate::block::{
    BITS_PER_BLOCK, BLOCK_BYTES, Block, WORDS_PER_BLOCK, block_index, fingerprint, from_pairs,
    to_pairs,
};
use crate::builder::{hash_id, hash_key, try_alloc};
use crate::error::{BuildError, LoadError, ShapeError};
use crate::filter::{BlockedBloom, estimate_len};
use crate::simd::{Backend, Kernel, PREFETCH_AHEAD, prefetch};
use crate::sync::{AtomicU64, Ordering};
use crate::{format, sizing};

/// One block as four atomic 64-bit words (each holding two of the block's 32-bit words, see
/// [`to_pairs`]), 32-byte aligned like [`Block`] so that it lies inside one cache line.
#[derive(Debug, Default)]
#[repr(C, align(32))]
struct AtomicBlock([AtomicU64; WORDS_PER_BLOCK / 2]);

const _: () = assert!(size_of::<AtomicBlock>() == BLOCK_BYTES);

impl AtomicBlock {
    fn new(block: Block) -> Self {
        AtomicBlock(to_pairs(block.0).map(AtomicU64::new))
    }

    /// A snapshot of the words (each read on its own; see the type docs on concurrency).
    fn load(&self) -> Block {
        // Relaxed: a snapshot for serialization or counting; words are independent and callers
        // order it against inserts with their own synchronisation (as for `contains`).
        Block(from_pairs(core::array::from_fn(|j| {
            self.0[j].load(Ordering::Relaxed)
        })))
    }
}

/// A blocked bloom filter that many threads insert into at once, through `&self`. The block's
/// eight 32-bit words are held as four `AtomicU64`s; each gets the key's two bits with one
/// `fetch_or`, skipped when a plain load shows both are already set (the common case once the
/// filter fills, and it keeps the line shared instead of bouncing it between cores): at most four
/// read-modify-writes per insert. Same bits, hashes and serialized form as [`BlockedBloom`].
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
pub struct AtomicBlockedBloom {
    // Invariant: blocks.len() == num_blocks > 0.
    blocks: Box<[AtomicBlock]>,
    num_blocks: u64,
    seed: u64,
    kernel: Kernel,
}

impl std::fmt::Debug for AtomicBlockedBloom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicBlockedBloom")
            .field("num_blocks", &self.num_blocks)
            .field("seed", &self.seed)
            .field("backend", &self.kernel.backend())
            .finish_non_exhaustive()
    }
}

impl AtomicBlockedBloom {
    pub(crate) fn from_parts(
        num_blocks: u64,
        seed: u64,
        kernel: Kernel,
    ) -> Result<Self, BuildError> {
        let blocks = try_alloc(num_blocks, || AtomicBlock::new(Block::ZERO))?;
        Ok(Self::from_blocks(blocks, seed, kernel))
    }

    fn from_blocks(blocks: Box<[AtomicBlock]>, seed: u64, kernel: Kernel) -> Self {
        debug_assert!(!blocks.is_empty());
        AtomicBlockedBloom {
            num_blocks: blocks.len() as u64,
            blocks,
            seed,
            kernel,
        }
    }

    #[inline(always)]
    fn block(&self, hash: u64) -> &AtomicBlock {
        let index = block_index(hash, self.num_blocks) as usize;
        debug_assert!(index < self.blocks.len());
        // SAFETY: `block_index` is below `num_blocks`, which equals `blocks.len()` (invariant).
        unsafe { self.blocks.get_unchecked(index) }
    }

    /// The 64-bit hash this filter uses for `key`.
    #[inline]
    pub fn hash<T: Hash + ?Sized>(&self, key: &T) -> u64 {
        hash_key(self.seed, key)
    }

    /// The 64-bit hash this filter uses for a 32-byte id.
    #[inline]
    pub fn hash_id(&self, id: &[u8; 32]) -> u64 {
        hash_id(self.seed, id)
    }

    /// Inserts `key`; returns `true` iff this call found one of the key's bits clear (and set
    /// it). See the type docs for what racing inserts of one key return.
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&self, key: &T) -> bool {
        self.insert_hash(self.hash(key))
    }

    /// Inserts a 32-byte id; returns as [`insert`](Self::insert).
    #[inline]
    pub fn insert_id(&self, id: &[u8; 32]) -> bool {
        self.insert_hash(self.hash_id(id))
    }

    /// Inserts a key by its 64-bit hash (which must already be well mixed); returns as
    /// [`insert`](Self::insert).
    #[inline(always)]
    pub fn insert_hash(&self, hash: u64) -> bool {
        let block = self.block(hash);
        let mut saw_clear = false;
        for (word, mask) in block
            .0
            .iter()
            .zip(self.kernel.mask_pairs(fingerprint(hash)))
        {
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

    /// Whether the 32-byte id may be in the filter.
    #[inline]
    pub fn contains_id(&self, id: &[u8; 32]) -> bool {
        self.contains_hash(self.hash_id(id))
    }

    /// Whether the key with this 64-bit hash may be in the filter.
    #[inline(always)]
    pub fn contains_hash(&self, hash: u64) -> bool {
        let block = self.block(hash);
        let mut missing = 0;
        for (word, mask) in block
            .0
            .iter()
            .zip(self.kernel.mask_pairs(fingerprint(hash)))
        {
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
    pub fn union(&self, other: &BlockedBloom) -> Result<(), ShapeError> {
        self.check_shape(other.num_blocks(), other.seed())?;
        for (ours, theirs) in self.blocks.iter().zip(other.blocks()) {
            for (word, bits) in ours.0.iter().zip(to_pairs(theirs.0)) {
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
    pub fn intersect(&mut self, other: &BlockedBloom) -> Result<(), ShapeError> {
        self.check_shape(other.num_blocks(), other.seed())?;
        for (ours, theirs) in self.blocks.iter_mut().zip(other.blocks()) {
            let current = ours.load();
            *ours = AtomicBlock::new(Block(core::array::from_fn(|i| current.0[i] & theirs.0[i])));
        }
        Ok(())
    }

    fn check_shape(&self, num_blocks: u64, seed: u64) -> Result<(), ShapeError> {
        ShapeError::check((self.num_blocks, self.seed), (num_blocks, seed))
    }

    /// Removes every key (`&mut self`: no insert can race it).
    pub fn clear(&mut self) {
        for block in self.blocks.iter_mut() {
            *block = AtomicBlock::new(Block::ZERO);
        }
    }

    /// Bits set in the whole filter (each word read once; concurrent inserts may or may not be
    /// counted).
    pub fn count_ones(&self) -> u64 {
        self.blocks
            .iter()
            .flat_map(|b| b.load().0)
            .map(|w| u64::from(w.count_ones()))
            .sum()
    }

    /// An estimate of the distinct keys inserted (see [`estimate_len`]).
    pub fn estimated_len(&self) -> f64 {
        estimate_len(self.count_ones(), self.num_bits())
    }

    /// The false-positive rate the formula expects after `items` distinct inserts.
    pub fn expected_false_positive_rate(&self, items: u64) -> f64 {
        sizing::false_positive_rate(items, self.num_blocks)
    }

    /// Blocks (cache lines) in the filter.
    pub fn num_blocks(&self) -> u64 {
        self.num_blocks
    }

    /// Bits in the filter (`num_blocks * 256`).
    pub fn num_bits(&self) -> u64 {
        self.num_blocks * BITS_PER_BLOCK
    }

    /// Bytes of filter memory (`num_blocks * 32`).
    pub fn memory_bytes(&self) -> u64 {
        self.num_blocks * BLOCK_BYTES as u64
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The backend that computes the key's bit masks (the words themselves are read and written
    /// only with scalar atomic operations: a vector load of atomics would race with `fetch_or`).
    pub fn backend(&self) -> Backend {
        self.kernel.backend()
    }

    /// The serialized form, identical to [`BlockedBloom::to_bytes`] of the same bits.
    pub fn to_bytes(&self) -> Vec<u8> {
        format::encode(
            self.seed,
            self.num_blocks,
            self.blocks.iter().map(AtomicBlock::load),
        )
    }

    /// Loads a filter written by either filter type's `to_bytes`.
    ///
    /// # Errors
    /// As [`BlockedBloom::from_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        let (header, mut blocks) = format::decode(bytes)?;
        let loaded = try_alloc(header.num_blocks, || {
            AtomicBlock::new(blocks.next().unwrap_or(Block::ZERO))
        })?;
        Ok(Self::from_blocks(loaded, header.seed, Kernel::detect()))
    }

    /// A plain copy of the current bits (for SIMD queries once inserts are done).
    ///
    /// # Errors
    /// [`BuildError::AllocationFailed`] when the copy cannot be allocated.
    pub fn to_plain(&self) -> Result<BlockedBloom, BuildError> {
        let mut it = self.blocks.iter();
        let blocks = try_alloc(self.num_blocks, || {
            it.next().map_or(Block::ZERO, AtomicBlock::load)
        })?;
        Ok(BlockedBloom::from_raw(blocks, self.seed, self.kernel))
    }
}

impl From<BlockedBloom> for AtomicBlockedBloom {
    fn from(plain: BlockedBloom) -> Self {
        let (blocks, seed, kernel) = plain.into_blocks();
        let atomic: Box<[AtomicBlock]> = blocks.iter().map(|b| AtomicBlock::new(*b)).collect();
        AtomicBlockedBloom::from_blocks(atomic, seed, kernel)
    }
}
