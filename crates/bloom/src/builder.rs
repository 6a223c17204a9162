//! Sizing, seeding and allocating a filter: [`BloomBuilder`].

use std::hash::{BuildHasher, Hash, Hasher};

use crate::block::BITS_PER_BLOCK;
use crate::error::BuildError;
use crate::simd::{Backend, Kernel};
use crate::sizing::{MAX_BLOCKS, num_blocks_for, num_blocks_for_bits};
use crate::{AtomicBlockedBloom, BlockedBloom};

/// The shape, seed and backend of a filter to build; both [`BlockedBloom`] and
/// [`AtomicBlockedBloom`] are built from one.
///
/// # Examples
/// ```
/// use txgate_bloom::BloomBuilder;
/// // Room for 10,000 txids at a 0.1 % false-positive rate, with a reproducible seed.
/// let mut filter = BloomBuilder::with_false_positive_rate(10_000, 0.001)?.seed(7).build()?;
/// filter.insert_id(&[0xab; 32]);
/// assert!(filter.contains_id(&[0xab; 32]));
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloomBuilder {
    num_blocks: u64,
    seed: Option<u64>,
    backend: Option<Backend>,
}

impl BloomBuilder {
    /// The smallest filter that holds `items` keys at or below false-positive rate `fpr`, by the
    /// blocked-filter formula of Putze et al. ([`num_blocks_for`]).
    ///
    /// # Errors
    /// [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpr < 1`; [`BuildError::TooLarge`].
    pub fn with_false_positive_rate(items: u64, fpr: f64) -> Result<Self, BuildError> {
        Ok(Self::blocks(num_blocks_for(items, fpr)?))
    }

    /// A filter of at least `bits` bits (rounded up to whole 256-bit blocks).
    ///
    /// # Errors
    /// [`BuildError::ZeroSize`] for 0 bits; [`BuildError::TooLarge`].
    pub fn with_num_bits(bits: u64) -> Result<Self, BuildError> {
        Ok(Self::blocks(num_blocks_for_bits(bits)?))
    }

    /// A filter of exactly `num_blocks` blocks of 256 bits.
    ///
    /// # Errors
    /// [`BuildError::ZeroSize`] for 0 blocks; [`BuildError::TooLarge`] past
    /// [`MAX_BLOCKS`](crate::MAX_BLOCKS).
    pub fn with_num_blocks(num_blocks: u64) -> Result<Self, BuildError> {
        if num_blocks == 0 {
            return Err(BuildError::ZeroSize);
        }
        if num_blocks > MAX_BLOCKS {
            return Err(BuildError::TooLarge {
                bits: u128::from(num_blocks) * u128::from(BITS_PER_BLOCK),
            });
        }
        Ok(Self::blocks(num_blocks))
    }

    fn blocks(num_blocks: u64) -> Self {
        BloomBuilder {
            num_blocks,
            seed: None,
            backend: None,
        }
    }

    /// Hash keys with this seed (reproducible runs, or filters that will be unioned). Without
    /// it each filter draws a random seed from the OS-seeded `RandomState` of `std`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Use this kernel backend instead of [`Backend::detect`] (tests and benches).
    pub fn backend(mut self, backend: Backend) -> Self {
        self.backend = Some(backend);
        self
    }

    /// The number of blocks the filter will have.
    pub fn num_blocks(&self) -> u64 {
        self.num_blocks
    }

    /// Resolves seed and backend.
    pub(crate) fn parts(&self) -> Result<(u64, u64, Kernel), BuildError> {
        let kernel = Kernel::new(self.backend.unwrap_or_else(Backend::detect))?;
        Ok((
            self.num_blocks,
            self.seed.unwrap_or_else(random_seed),
            kernel,
        ))
    }

    /// Allocates an empty [`BlockedBloom`].
    ///
    /// # Errors
    /// [`BuildError::AllocationFailed`] when the memory is not available;
    /// [`BuildError::BackendUnavailable`] when a backend this CPU lacks was asked for.
    pub fn build(&self) -> Result<BlockedBloom, BuildError> {
        let (num_blocks, seed, kernel) = self.parts()?;
        BlockedBloom::from_parts(num_blocks, seed, kernel)
    }

    /// Allocates an empty [`AtomicBlockedBloom`].
    ///
    /// # Errors
    /// As [`BloomBuilder::build`].
    pub fn build_atomic(&self) -> Result<AtomicBlockedBloom, BuildError> {
        let (num_blocks, seed, kernel) = self.parts()?;
        AtomicBlockedBloom::from_parts(num_blocks, seed, kernel)
    }
}

/// A fresh 64-bit seed from `std`'s OS-seeded `RandomState` (no panic, no error path).
pub(crate) fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish()
}

/// Allocates `n` elements made by `make`, reporting allocation failure as an error instead of
/// aborting the process.
pub(crate) fn try_alloc<T>(n: u64, mut make: impl FnMut() -> T) -> Result<Box<[T]>, BuildError> {
    let bytes = n.saturating_mul(size_of::<T>() as u64);
    let len = usize::try_from(n).map_err(|_| BuildError::TooLarge {
        bits: u128::from(bytes) * 8,
    })?;
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| BuildError::AllocationFailed { bytes })?;
    v.extend((0..len).map(|_| make()));
    Ok(v.into_boxed_slice())
}

/// The 64-bit hash of a `Hash` key: wyhash (v1) keyed with the filter's seed.
#[inline]
pub(crate) fn hash_key<T: Hash + ?Sized>(seed: u64, key: &T) -> u64 {
    let mut hasher = wyhash::WyHash::with_seed(seed);
    key.hash(&mut hasher);
    hasher.finish()
}

/// The 64-bit hash of a 32-byte id: XXH3-64 with the filter's seed (its 17-128-byte path,
/// which inlines into the lookup; the general-length wyhash stays a call and a loop).
///
/// Like every fast non-cryptographic hash, it does not resist someone who knows the seed and
/// searches for colliding ids; keep seeds of filters that face adversarial ids private (the
/// serialized form contains the seed).
#[inline(always)]
pub(crate) fn hash_id(seed: u64, id: &[u8; 32]) -> u64 {
    xxhash_rust::xxh3::xxh3_64_with_seed(id, seed)
}
