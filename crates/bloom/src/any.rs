//! [`AnyBloom`]: a plain filter whose block layout is chosen at run time.

use std::hash::Hash;

use crate::api::{Filter, Key};
use crate::block::Block256;
use crate::block512::Block512;
use crate::error::LoadError;
use crate::filter::BlockedBloom;
use crate::format;
use crate::kernels::Backend;
use crate::layout::Layout;

/// A [`BlockedBloom`] of either native layout, for code that picks the layout at run time (from
/// configuration) or loads stored filters of both: [`AnyBloom::from_bytes`] takes whichever
/// layout the bytes record. `insert` and every [`Filter`] method forward to the filter inside
/// (one predictable branch per call).
///
/// # Examples
/// ```
/// use txgate_bloom::{AnyBloom, BloomBuilder, Bytes, Filter, Layout};
/// let mut round = BloomBuilder::with_false_positive_rate(1_000, 0.001).build_any(Layout::Block512)?;
/// round.insert(Bytes(&[9; 32]));
/// let stored = round.to_bytes();
/// let loaded = AnyBloom::from_bytes(&stored)?;
/// assert_eq!(loaded.layout(), Layout::Block512);
/// assert!(loaded.contains(Bytes(&[9; 32])));
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
                Some(Layout::Block512) => {
                    AnyBloom::Block512(BlockedBloom::from_layout_bytes(bytes)?)
                }
                _ => AnyBloom::Block256(BlockedBloom::from_bytes(bytes)?),
            },
        )
    }

    /// Inserts `key` (any [`Key`]) into the filter inside; whether it was new
    /// ([`BlockedBloom::insert`]).
    #[inline]
    pub fn insert<K: Key>(&mut self, key: K) -> bool {
        forward!(self, f => f.insert(key))
    }
}

impl Filter for AnyBloom {
    #[inline]
    fn hash<K: Key>(&self, key: K) -> u64 {
        forward!(self, f => f.hash(key))
    }

    #[inline]
    fn contains<K: Key>(&self, key: K) -> bool {
        forward!(self, f => f.contains(key))
    }

    fn contains_many(&self, hashes: &[u64], out: &mut [bool]) {
        forward!(self, f => f.contains_many(hashes, out))
    }

    fn layout(&self) -> Layout {
        forward!(self, f => f.layout())
    }

    fn num_blocks(&self) -> u64 {
        forward!(self, f => f.num_blocks())
    }

    fn seed(&self) -> u64 {
        forward!(self, f => f.seed())
    }

    fn backend(&self) -> Backend {
        forward!(self, f => f.backend())
    }

    fn count_ones(&self) -> u64 {
        forward!(self, f => f.count_ones())
    }

    fn to_bytes(&self) -> Vec<u8> {
        forward!(self, f => f.to_bytes())
    }
}

/// Inserts every key by its `std::hash::Hash` impl, as [`AnyBloom::insert`]`(&key)` does, into
/// the filter inside (one branch on the layout for the whole batch). Such keys are found by
/// `contains(&key)`, not as [`Bytes`](crate::Bytes) (another hash). There is no `FromIterator`
/// (see [`BloomBuilder::build`](crate::BloomBuilder::build)).
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
