//! Sizing, seeding and allocating a filter: [`BloomBuilder`].

use std::hash::{BuildHasher, Hash, Hasher};
use std::marker::PhantomData;

use crate::any::AnyBloom;
use crate::block::Block256;
use crate::block512::Block512;
use crate::error::BuildError;
use crate::kernels::{Backend, Kernel};
use crate::layout::{BlockLayout, Layout};
use crate::{AtomicBlockedBloom, BlockedBloom};

/// The shape, seed, backend and block layout of a filter to build; [`BlockedBloom`],
/// [`AtomicBlockedBloom`] and [`AnyBloom`] are built from one.
///
/// The constructors size a filter of the default layout, [`Block256`];
/// [`layout`](Self::layout) switches to another one and sizes it again from the same request.
///
/// # Examples
/// ```
/// use txgate_bloom::{Block512, BloomBuilder};
/// // Room for 10,000 txids at a 0.1 % false-positive rate, with a reproducible seed.
/// let mut filter = BloomBuilder::with_false_positive_rate(10_000, 0.001)?.seed(7).build()?;
/// filter.insert_id(&[0xab; 32]);
/// assert!(filter.contains_id(&[0xab; 32]));
/// // The same request in 512-bit blocks needs fewer bytes.
/// let wide = BloomBuilder::with_false_positive_rate(10_000, 0.001)?.layout::<Block512>()?;
/// assert!(wide.num_blocks() * 64 < filter.memory_bytes());
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BloomBuilder<B: BlockLayout = Block256> {
    request: Request,
    // Invariant: num_blocks == request.num_blocks(B::LAYOUT), which is Ok.
    num_blocks: u64,
    seed: Option<u64>,
    backend: Option<Backend>,
    layout: PhantomData<B>,
}

/// How the size of a filter was asked for, kept so that a change of layout can size it again.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Request {
    /// The fewest blocks for `items` keys at or below rate `fpr`.
    FalsePositiveRate { items: u64, fpr: f64 },
    /// At least this many bits.
    Bits(u64),
    /// Exactly this many blocks.
    Blocks(u64),
}

impl Request {
    fn num_blocks(self, layout: Layout) -> Result<u64, BuildError> {
        match self {
            Request::FalsePositiveRate { items, fpr } => layout.num_blocks_for(items, fpr),
            Request::Bits(bits) => layout.num_blocks_for_bits(bits),
            Request::Blocks(0) => Err(BuildError::ZeroSize),
            Request::Blocks(n) if n > layout.max_blocks() => Err(BuildError::TooLarge {
                bits: u128::from(n) * u128::from(layout.bits_per_block()),
            }),
            Request::Blocks(n) => Ok(n),
        }
    }
}

impl BloomBuilder {
    /// The smallest 256-bit-block filter that holds `items` keys at or below false-positive rate
    /// `fpr`, by the blocked-filter formula of Putze et al. ([`Layout::num_blocks_for`]).
    ///
    /// # Errors
    /// [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpr < 1`; [`BuildError::TooLarge`].
    pub fn with_false_positive_rate(items: u64, fpr: f64) -> Result<Self, BuildError> {
        Self::request(Request::FalsePositiveRate { items, fpr })
    }

    /// A filter of at least `bits` bits (rounded up to whole blocks).
    ///
    /// # Errors
    /// [`BuildError::ZeroSize`] for 0 bits; [`BuildError::TooLarge`].
    pub fn with_num_bits(bits: u64) -> Result<Self, BuildError> {
        Self::request(Request::Bits(bits))
    }

    /// A filter of exactly `num_blocks` blocks (of whichever layout it is built in).
    ///
    /// # Errors
    /// [`BuildError::ZeroSize`] for 0 blocks; [`BuildError::TooLarge`] past
    /// [`Layout::max_blocks`].
    pub fn with_num_blocks(num_blocks: u64) -> Result<Self, BuildError> {
        Self::request(Request::Blocks(num_blocks))
    }
}

impl<B: BlockLayout> BloomBuilder<B> {
    fn request(request: Request) -> Result<Self, BuildError> {
        Ok(BloomBuilder {
            num_blocks: request.num_blocks(B::LAYOUT)?,
            request,
            seed: None,
            backend: None,
            layout: PhantomData,
        })
    }

    /// The same request (size, seed, backend) in block layout `C`, sized again for it: a
    /// false-positive target gets the fewest blocks of `C` that meet it, a bit count is rounded
    /// up to whole blocks of `C`, a block count stays.
    ///
    /// # Errors
    /// [`BuildError::TooLarge`] when the request does not fit layout `C`
    /// ([`Layout::max_blocks`]).
    pub fn layout<C: BlockLayout>(self) -> Result<BloomBuilder<C>, BuildError> {
        Ok(BloomBuilder {
            num_blocks: self.request.num_blocks(C::LAYOUT)?,
            request: self.request,
            seed: self.seed,
            backend: self.backend,
            layout: PhantomData,
        })
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
    fn parts(&self) -> Result<(u64, Kernel), BuildError> {
        let backend = self.backend.unwrap_or_else(Backend::detect);
        let kernel = Kernel::new(backend).ok_or(BuildError::BackendUnavailable(backend))?;
        Ok((self.seed.unwrap_or_else(random_seed), kernel))
    }

    /// Allocates an empty [`BlockedBloom`] of layout `B`.
    ///
    /// # Errors
    /// [`BuildError::AllocationFailed`] when the memory is not available;
    /// [`BuildError::BackendUnavailable`] when a backend this CPU lacks was asked for.
    pub fn build(&self) -> Result<BlockedBloom<B>, BuildError> {
        let (seed, kernel) = self.parts()?;
        BlockedBloom::from_parts(self.num_blocks, seed, kernel)
    }

    /// Allocates a [`BlockedBloom`] of layout `B` holding every key of `keys`: [`build`](Self::build)
    /// followed by [`Extend::extend`], so each key is inserted by its `std::hash::Hash` impl and
    /// found by `contains` (not by `contains_id`: insert ids with `insert_id`). The other filter
    /// types are filled the same way: `build_atomic()?` or `build_any(layout)?`, then `extend`.
    ///
    /// The filters implement `Extend` but not `FromIterator`, which would have to choose what
    /// this builder is told: a size (an iterator gives no count without being collected first,
    /// and a count still needs a false-positive target) and a seed (a random one makes two
    /// filters of the same keys unequal and a run unreproducible; a fixed one gives every
    /// filter the same bit positions, which an adversary who knows it can aim at).
    ///
    /// # Errors
    /// As [`build`](Self::build).
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::BloomBuilder;
    /// let apps = [1001u64, 1002, 1003];
    /// let builder = BloomBuilder::with_false_positive_rate(apps.len() as u64, 0.001)?.seed(1);
    /// let filter = builder.build_from(&apps)?;
    /// assert!(apps.iter().all(|app| filter.contains(app)));
    /// // The same as inserting them one by one into a filter of the same seed.
    /// let mut one_by_one = builder.build()?;
    /// for app in &apps {
    ///     one_by_one.insert(app);
    /// }
    /// assert_eq!(filter, one_by_one);
    /// // Keys by value hash as their references do.
    /// assert_eq!(builder.build_from(apps)?, filter);
    /// # Ok::<(), txgate_bloom::BuildError>(())
    /// ```
    pub fn build_from<T: Hash>(
        &self,
        keys: impl IntoIterator<Item = T>,
    ) -> Result<BlockedBloom<B>, BuildError> {
        let mut filter = self.build()?;
        filter.extend(keys);
        Ok(filter)
    }

    /// Allocates an empty [`AtomicBlockedBloom`] of layout `B`.
    ///
    /// # Errors
    /// As [`BloomBuilder::build`].
    pub fn build_atomic(&self) -> Result<AtomicBlockedBloom<B>, BuildError> {
        let (seed, kernel) = self.parts()?;
        AtomicBlockedBloom::from_parts(self.num_blocks, seed, kernel)
    }

    /// Allocates an empty plain filter of the layout named at run time (sized again for it, as
    /// [`layout`](Self::layout) does).
    ///
    /// # Errors
    /// As [`layout`](Self::layout) and [`BloomBuilder::build`].
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::{BloomBuilder, Layout};
    /// let mut f = BloomBuilder::with_false_positive_rate(100, 0.01)?.build_any(Layout::Block512)?;
    /// f.insert_id(&[3; 32]);
    /// assert!(f.contains_id(&[3; 32]));
    /// assert_eq!(f.layout(), Layout::Block512);
    /// # Ok::<(), txgate_bloom::BuildError>(())
    /// ```
    pub fn build_any(&self, layout: Layout) -> Result<AnyBloom, BuildError> {
        Ok(match layout {
            Layout::Block256 => AnyBloom::Block256(self.clone().layout::<Block256>()?.build()?),
            Layout::Block512 => AnyBloom::Block512(self.clone().layout::<Block512>()?.build()?),
        })
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
