//! The entry points every native filter shares: the kinds of key ([`Key`]: `Hash` values,
//! [`Bytes`], [`Hashed`]), each hashed one way, and the [`Filter`] trait (hash, query, sizes,
//! serialized form) that [`BlockedBloom`](crate::BlockedBloom),
//! [`AtomicBlockedBloom`](crate::AtomicBlockedBloom) and [`AnyBloom`](crate::AnyBloom)
//! implement. Inserts stay inherent, because the plain filters insert through `&mut self` and
//! the atomic one through `&self`; they take the same keys.

use std::hash::{Hash, Hasher};

use crate::kernels::Backend;
use crate::layout::Layout;

/// A key a native filter can hash to its 64-bit hash `h` (which picks the block and the bits;
/// see the crate docs). One kind per hash rule, each written once:
///
/// | key | hash | portable |
/// |---|---|---|
/// | `&T` for any `T: Hash` (`&42u64`, `"txid-1"`, `&(app, origin)`) | wyhash (v1) keyed by the filter's seed, fed by `T`'s `Hash` impl | as `T`'s `Hash` impl: integers' byte order and `usize` width vary, and std makes no promise across versions |
/// | [`Bytes`]`(&[u8; N])` (a txid), [`Bytes`]`(&[u8])` | XXH3-64 keyed by the seed (Collet, xxHash specification) | yes: fixed by the serialized format |
/// | [`Hashed`]`(u64)` | none: the value is `h` and must already be well mixed | yes |
///
/// The kinds hash differently: a key inserted as `&txid` (by `Hash`) is not found as
/// `Bytes(&txid)`. `Bytes(&id)` and `Bytes(&id[..])` hash alike; the array form lets XXH3 take
/// its fixed-length path (inlined for 17 to 128 bytes). Sealed: the hash rules are part of the
/// serialized format's meaning.
///
/// # Examples
/// ```
/// use txgate_bloom::{BloomBuilder, Bytes, Filter, Hashed};
/// let mut f = BloomBuilder::with_false_positive_rate(100, 0.01).seed(1).build()?;
/// let txid = [7u8; 32];
/// f.insert(Bytes(&txid));
/// assert!(f.contains(Bytes(&txid[..])));
/// assert!(f.contains(Hashed(f.hash(Bytes(&txid)))));
/// let slice_key = Bytes(&txid[..]);
/// let (a, b) = (slice_key, slice_key); // keys are `Copy`, slices included
/// assert_eq!(f.hash(a), f.hash(b));
/// f.insert(&1001u64);
/// assert!(f.contains(&1001u64));
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
pub trait Key: sealed::Sealed {}

/// A byte key, hashed with the format's portable XXH3-64 keyed by the filter's seed: an id of
/// `N` bytes (`Bytes(&txid)`, `T = [u8; N]`) or a byte string (`Bytes(&bytes[..])`, `T = [u8]`).
/// See [`Key`].
#[derive(Debug)]
pub struct Bytes<'a, T: ?Sized = [u8]>(pub &'a T);

// By hand: a derive would ask `T: Clone`, which `[u8]` is not; the key only holds a reference.
impl<T: ?Sized> Clone for Bytes<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Bytes<'_, T> {}

/// A key given by its 64-bit hash, used as is: it must already be well mixed (all 64 bits
/// uniformly random), or the false-positive rate will be worse than the formula's. See [`Key`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hashed(pub u64);

impl<T: Hash + ?Sized> Key for &T {}
impl<const N: usize> Key for Bytes<'_, [u8; N]> {}
impl Key for Bytes<'_, [u8]> {}
impl Key for Hashed {}

pub(crate) mod sealed {
    use super::{Bytes, Hash, Hashed, Hasher};

    /// How a [`Key`](super::Key) becomes a filter's 64-bit hash.
    pub trait Sealed {
        /// The key's 64-bit hash in a filter with hash seed `seed`.
        fn key_hash(self, seed: u64) -> u64;
    }

    impl<T: Hash + ?Sized> Sealed for &T {
        /// wyhash (v1) keyed with the seed, fed by `T`'s `Hash` impl.
        #[inline]
        fn key_hash(self, seed: u64) -> u64 {
            let mut hasher = wyhash::WyHash::with_seed(seed);
            self.hash(&mut hasher);
            hasher.finish()
        }
    }

    impl<const N: usize> Sealed for Bytes<'_, [u8; N]> {
        /// XXH3-64 with the seed. For a known length XXH3 takes one fixed path (for 17 to 128
        /// bytes, a 32-byte txid or a 64-byte signature, one that inlines into the lookup).
        ///
        /// Like every fast non-cryptographic hash, it does not resist someone who knows the
        /// seed and searches for colliding ids; keep seeds of filters that face adversarial ids
        /// private (the serialized form contains the seed).
        #[inline(always)]
        fn key_hash(self, seed: u64) -> u64 {
            xxhash_rust::xxh3::xxh3_64_with_seed(self.0, seed)
        }
    }

    impl Sealed for Bytes<'_, [u8]> {
        /// XXH3-64 with the seed, the same function as for arrays (so `Bytes(&id[..])` and
        /// `Bytes(&id)` hash alike), specified bit for bit (Collet, xxHash specification).
        #[inline]
        fn key_hash(self, seed: u64) -> u64 {
            xxhash_rust::xxh3::xxh3_64_with_seed(self.0, seed)
        }
    }

    impl Sealed for Hashed {
        #[inline(always)]
        fn key_hash(self, _seed: u64) -> u64 {
            self.0
        }
    }
}

/// What every native filter answers: [`BlockedBloom<B>`](crate::BlockedBloom),
/// [`AtomicBlockedBloom<B>`](crate::AtomicBlockedBloom) and [`AnyBloom`](crate::AnyBloom) (the
/// latter forwards each call with one branch on its layout). Each filter also has an inherent
/// `insert` taking the same [`Key`]s (`&mut self` for the plain filters, `&self` for the atomic
/// one), `from_bytes` and, for the typed ones, `union`, `intersect` and `clear`.
///
/// There are no false negatives for a key queried as it was inserted (the same [`Key`] kind);
/// false positives occur at about
/// [`expected_false_positive_rate`](Filter::expected_false_positive_rate).
///
/// # Examples
/// ```
/// use txgate_bloom::{AnyBloom, BloomBuilder, Bytes, Filter, Layout};
/// fn seen(filter: &impl Filter, txid: &[u8; 32]) -> bool {
///     filter.contains(Bytes(txid))
/// }
/// let mut round = BloomBuilder::with_false_positive_rate(1000, 0.001).build()?;
/// round.insert(Bytes(&[3; 32]));
/// assert!(seen(&round, &[3; 32]));
/// let any: AnyBloom = round.into();
/// assert!(seen(&any, &[3; 32]) && any.layout() == Layout::Block256);
/// assert_eq!(any.num_bits(), any.num_blocks() * 256);
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
pub trait Filter {
    /// The 64-bit hash this filter uses for `key` (the [`Key`] table): what
    /// [`Hashed`] takes, and what the batch methods (`contains_many`, `insert_many`) take.
    fn hash<K: Key>(&self, key: K) -> u64;

    /// Whether `key` may be in the filter (no false negatives; false positives at the rate of
    /// [`expected_false_positive_rate`](Filter::expected_false_positive_rate)).
    fn contains<K: Key>(&self, key: K) -> bool;

    /// Answers [`contains`](Filter::contains)`(Hashed(hashes[i]))` into `out[i]` for every
    /// hash, while prefetching the cache lines of the keys
    /// [`PREFETCH_AHEAD`](crate::PREFETCH_AHEAD) (32) places ahead: on a filter larger than the
    /// caches this keeps many DRAM reads in flight at once.
    ///
    /// # Panics
    /// Panics if `out.len() != hashes.len()`.
    fn contains_many(&self, hashes: &[u64], out: &mut [bool]);

    /// The block layout.
    fn layout(&self) -> Layout;

    /// Blocks in the filter (at least one).
    fn num_blocks(&self) -> u64;

    /// The hash seed.
    fn seed(&self) -> u64;

    /// The kernel backend in use.
    fn backend(&self) -> Backend;

    /// Bits set in the whole filter.
    fn count_ones(&self) -> u64;

    /// The serialized form (see the [`format`](crate::format) module): a 32-byte versioned
    /// header naming the layout, the blocks as little-endian words, and an XXH3-64 checksum;
    /// [`format::encoded_len`](crate::format::encoded_len) bytes. The same bits give the same
    /// bytes whichever filter type holds them.
    fn to_bytes(&self) -> Vec<u8>;

    /// Bits in the filter: `num_blocks` times [`Layout::bits_per_block`] (256 or 512).
    fn num_bits(&self) -> u64 {
        self.num_blocks() * self.layout().bits_per_block()
    }

    /// Bytes of filter memory: `num_blocks` times [`Layout::block_bytes`] (32 or 64), aligned to
    /// the block size.
    fn memory_bytes(&self) -> u64 {
        self.num_blocks() * self.layout().block_bytes() as u64
    }

    /// The false-positive rate the formula expects after `items` distinct inserts
    /// ([`Layout::false_positive_rate`]: Putze, Sanders and Singler).
    fn expected_false_positive_rate(&self, items: u64) -> f64 {
        self.layout().false_positive_rate(items, self.num_blocks())
    }

    /// An estimate of the distinct keys inserted, from the bits set.
    ///
    /// In both layouts each key sets one bit in each of the 8 word positions, and within a
    /// position every bit of every block is equally likely, so the filter behaves like 8
    /// interleaved classic filters of `m / 8` bits with one hash each; the estimator of
    /// Swamidass and Baldi (2007), `n ≈ -(m / k) ln(1 - X / m)`, applies with `k = 8`
    /// ([`Layout::BITS_SET_PER_KEY`]). A full filter gives `f64::INFINITY`.
    fn estimated_len(&self) -> f64 {
        crate::filter::estimate_len(self.count_ones(), self.num_bits())
    }
}
