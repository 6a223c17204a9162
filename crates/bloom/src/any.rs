//! [`AnyBloom`]: a plain filter whose block layout is chosen at run time.

use std::hash::Hash;

use crate::block::Block256;
use crate::block512::Block512;
use crate::error::LoadError;
use crate::filter::BlockedBloom;
use crate::format;
use crate::kernels::Backend;
use crate::layout::Layout;

/// A [`BlockedBloom`] of either native layout, for code that picks the layout at run time (from
/// configuration) or loads stored filters of both: [`AnyBloom::from_bytes`] takes whichever
/// layout the bytes record. Every method forwards to the filter inside (one predictable branch
/// per call).
///
/// # Examples
/// ```
/// use txgate_bloom::{AnyBloom, BloomBuilder, Layout};
/// let mut round = BloomBuilder::with_false_positive_rate(1_000, 0.001)?.build_any(Layout::Block512)?;
/// round.insert_id(&[9; 32]);
/// let stored = round.to_bytes();
/// let loaded = AnyBloom::from_bytes(&stored)?;
/// assert_eq!(loaded.layout(), Layout::Block512);
/// assert!(loaded.contains_id(&[9; 32]));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum AnyBloom {
    /// 256-bit blocks.
    Block256(BlockedBloom<Block256>),
    /// 512-bit blocks.
    Block512(BlockedBloom<Block512>),
}

/// `f(filter)` on the filter inside, whatever its layout.
macro_rules! forward {
    ($self:expr, $f:ident => $body:expr) => {
        match $self {
            AnyBloom::Block256($f) => $body,
            AnyBloom::Block512($f) => $body,
        }
    };
}

impl AnyBloom {
    /// Loads a filter of either layout written by `to_bytes` of any filter type (see
    /// [`BlockedBloom::from_bytes`]).
    ///
    /// # Errors
    /// As [`BlockedBloom::from_bytes`], except that no layout is a mismatch.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, LoadError> {
        // The layout byte picks the loader, which validates everything (once). Bytes too short
        // for a layout byte, or with an unknown one, go to the 256-bit loader, whose checks
        // before the layout comparison report what is wrong with them.
        Ok(
            match bytes
                .get(format::LAYOUT_OFFSET)
                .copied()
                .and_then(Layout::from_code)
            {
                Some(Layout::Block512) => AnyBloom::Block512(BlockedBloom::from_bytes(bytes)?),
                _ => AnyBloom::Block256(BlockedBloom::from_bytes(bytes)?),
            },
        )
    }

    /// The block layout.
    pub fn layout(&self) -> Layout {
        forward!(self, f => f.layout())
    }

    /// The 64-bit hash of `key` ([`BlockedBloom::hash`]).
    #[inline]
    pub fn hash<T: Hash + ?Sized>(&self, key: &T) -> u64 {
        forward!(self, f => f.hash(key))
    }

    /// The 64-bit hash of an id of `N` bytes ([`BlockedBloom::hash_id`]).
    #[inline]
    pub fn hash_id<const N: usize>(&self, id: &[u8; N]) -> u64 {
        forward!(self, f => f.hash_id(id))
    }

    /// The 64-bit hash of a byte string ([`BlockedBloom::hash_bytes`]: portable, fixed by the
    /// format).
    #[inline]
    pub fn hash_bytes(&self, bytes: &[u8]) -> u64 {
        forward!(self, f => f.hash_bytes(bytes))
    }

    /// Inserts `key`; whether it was new ([`BlockedBloom::insert`]).
    #[inline]
    pub fn insert<T: Hash + ?Sized>(&mut self, key: &T) -> bool {
        forward!(self, f => f.insert(key))
    }

    /// Inserts an id of `N` bytes; whether it was new.
    #[inline]
    pub fn insert_id<const N: usize>(&mut self, id: &[u8; N]) -> bool {
        forward!(self, f => f.insert_id(id))
    }

    /// Inserts a byte string ([`BlockedBloom::insert_bytes`]); whether it was new.
    #[inline]
    pub fn insert_bytes(&mut self, bytes: &[u8]) -> bool {
        forward!(self, f => f.insert_bytes(bytes))
    }

    /// Inserts a key by its (well-mixed) 64-bit hash; whether it was new.
    #[inline]
    pub fn insert_hash(&mut self, hash: u64) -> bool {
        forward!(self, f => f.insert_hash(hash))
    }

    /// Whether `key` may be in the filter.
    #[inline]
    pub fn contains<T: Hash + ?Sized>(&self, key: &T) -> bool {
        forward!(self, f => f.contains(key))
    }

    /// Whether the id of `N` bytes may be in the filter.
    #[inline]
    pub fn contains_id<const N: usize>(&self, id: &[u8; N]) -> bool {
        forward!(self, f => f.contains_id(id))
    }

    /// Whether the byte string may be in the filter ([`BlockedBloom::contains_bytes`]).
    #[inline]
    pub fn contains_bytes(&self, bytes: &[u8]) -> bool {
        forward!(self, f => f.contains_bytes(bytes))
    }

    /// Whether the key with this 64-bit hash may be in the filter.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        forward!(self, f => f.contains_hash(hash))
    }

    /// Batch query with prefetching ([`BlockedBloom::contains_many`]).
    ///
    /// # Panics
    /// Panics if `out.len() != hashes.len()`.
    pub fn contains_many(&self, hashes: &[u64], out: &mut [bool]) {
        forward!(self, f => f.contains_many(hashes, out))
    }

    /// The false-positive rate the formula expects after `items` distinct inserts.
    pub fn expected_false_positive_rate(&self, items: u64) -> f64 {
        forward!(self, f => f.expected_false_positive_rate(items))
    }

    /// Bits set in the whole filter.
    pub fn count_ones(&self) -> u64 {
        forward!(self, f => f.count_ones())
    }

    /// Blocks in the filter.
    pub fn num_blocks(&self) -> u64 {
        forward!(self, f => f.num_blocks())
    }

    /// Bits in the filter.
    pub fn num_bits(&self) -> u64 {
        forward!(self, f => f.num_bits())
    }

    /// Bytes of filter memory.
    pub fn memory_bytes(&self) -> u64 {
        forward!(self, f => f.memory_bytes())
    }

    /// The hash seed.
    pub fn seed(&self) -> u64 {
        forward!(self, f => f.seed())
    }

    /// The kernel backend in use.
    pub fn backend(&self) -> Backend {
        forward!(self, f => f.backend())
    }

    /// The serialized form ([`BlockedBloom::to_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        forward!(self, f => f.to_bytes())
    }
}

/// Inserts every key, as [`AnyBloom::insert`] does: by its `std::hash::Hash` impl, into the filter
/// inside (one branch on the layout for the whole batch). Such keys are found by
/// [`contains`](AnyBloom::contains), not by `contains_id` or `contains_bytes` (another hash).
/// There is no `FromIterator` (see [`BloomBuilder::build_from`](crate::BloomBuilder::build_from)).
impl<T: Hash> Extend<T> for AnyBloom {
    fn extend<I: IntoIterator<Item = T>>(&mut self, keys: I) {
        forward!(self, f => f.extend(keys))
    }
}

impl From<BlockedBloom<Block256>> for AnyBloom {
    fn from(filter: BlockedBloom<Block256>) -> Self {
        AnyBloom::Block256(filter)
    }
}

impl From<BlockedBloom<Block512>> for AnyBloom {
    fn from(filter: BlockedBloom<Block512>) -> Self {
        AnyBloom::Block512(filter)
    }
}
