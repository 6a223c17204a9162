//! Sizing, seeding and allocating a filter: [`BloomBuilder`].

use std::hash::{BuildHasher, Hasher};
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
/// Every step is infallible and the request is checked once, in the `build*` method that ends
/// the chain: `BloomBuilder::with_false_positive_rate(n, p).build()?`. The constructors ask for
/// a filter of the default layout, [`Block256`]; [`layout`](Self::layout) switches to another
/// one, which the same request then sizes.
///
/// # Examples
/// ```
/// use txgate_bloom::{Block512, BloomBuilder, BuildError, Bytes, Filter};
/// // Room for 10,000 txids at a 0.1 % false-positive rate, with a reproducible seed.
/// let mut filter = BloomBuilder::with_false_positive_rate(10_000, 0.001).seed(7).build()?;
/// filter.insert(Bytes(&[0xab; 32]));
/// assert!(filter.contains(Bytes(&[0xab; 32])));
/// // The same request in 512-bit blocks needs fewer bytes.
/// let wide = BloomBuilder::with_false_positive_rate(10_000, 0.001).layout::<Block512>().build()?;
/// assert!(wide.memory_bytes() < filter.memory_bytes());
/// // A bad request fails where it is built.
/// assert!(matches!(
///     BloomBuilder::with_false_positive_rate(10, 1.5).build(),
///     Err(BuildError::InvalidFalsePositiveRate(_))
/// ));
/// # Ok::<(), txgate_bloom::BuildError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct BloomBuilder<B: BlockLayout = Block256> {
    request: Request,
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

/// The constructors live in the impl of the default layout, so that
/// `BloomBuilder::with_false_positive_rate(n, p).build()?` needs no type annotation; chain
/// [`layout`](BloomBuilder::layout) for another one.
impl BloomBuilder {
    /// The smallest filter that holds `items` keys at or below false-positive rate `fpr`, by
    /// the blocked-filter formula of Putze, Sanders and Singler ([`Layout::num_blocks_for`]).
    /// Checked when built: [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpr < 1`;
    /// [`BuildError::TooLarge`].
    pub fn with_false_positive_rate(items: u64, fpr: f64) -> Self {
        Self::request(Request::FalsePositiveRate { items, fpr })
    }

    /// A filter of at least `bits` bits (rounded up to whole blocks). Checked when built:
    /// [`BuildError::ZeroSize`] for 0 bits; [`BuildError::TooLarge`].
    pub fn with_num_bits(bits: u64) -> Self {
        Self::request(Request::Bits(bits))
    }

    /// A filter of exactly `num_blocks` blocks (of whichever layout it is built in). Checked when
    /// built: [`BuildError::ZeroSize`] for 0 blocks; [`BuildError::TooLarge`] past
    /// [`Layout::max_blocks`].
    pub fn with_num_blocks(num_blocks: u64) -> Self {
        Self::request(Request::Blocks(num_blocks))
    }
}

impl<B: BlockLayout> BloomBuilder<B> {
    fn request(request: Request) -> Self {
        BloomBuilder {
            request,
            seed: None,
            backend: None,
            layout: PhantomData,
        }
    }

    /// The same request (size, seed, backend) in block layout `C`, sized for it when built: a
    /// false-positive target gets the fewest blocks of `C` that meet it, a bit count is rounded
    /// up to whole blocks of `C`, a block count stays.
    pub fn layout<C: BlockLayout>(self) -> BloomBuilder<C> {
        BloomBuilder {
            request: self.request,
            seed: self.seed,
            backend: self.backend,
            layout: PhantomData,
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

    /// Checks the request for layout `layout` and resolves the number of blocks, seed and
    /// backend.
    fn parts(&self, layout: Layout) -> Result<(u64, u64, Kernel), BuildError> {
        let num_blocks = self.request.num_blocks(layout)?;
        let backend = self.backend.unwrap_or_else(Backend::detect);
        let kernel = Kernel::new(backend).ok_or(BuildError::BackendUnavailable(backend))?;
        Ok((num_blocks, self.seed.unwrap_or_else(random_seed), kernel))
    }

    /// Checks the request and allocates an empty [`BlockedBloom`] of layout `B`. Fill it with
    /// `insert` or [`Extend::extend`].
    ///
    /// The filters implement `Extend` but not `FromIterator`, which would have to choose what
    /// this builder is told: a size (an iterator gives no count without being collected first,
    /// and a count still needs a false-positive target) and a seed (a random one makes two
    /// filters of the same keys unequal and a run unreproducible; a fixed one gives every
    /// filter the same bit positions, which an adversary who knows it can aim at).
    ///
    /// # Errors
    /// The request's: [`BuildError::InvalidFalsePositiveRate`] unless `0 < fpr < 1`;
    /// [`BuildError::ZeroSize`] for 0 bits or blocks; [`BuildError::TooLarge`] past
    /// [`Layout::max_blocks`] of `B`. Then [`BuildError::BackendUnavailable`] when a backend this
    /// CPU lacks was asked for, and [`BuildError::AllocationFailed`] when the memory is not
    /// available.
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::{BloomBuilder, Filter};
    /// let apps = [1001u64, 1002, 1003];
    /// let builder = BloomBuilder::with_false_positive_rate(apps.len() as u64, 0.001).seed(1);
    /// let mut filter = builder.build()?;
    /// filter.extend(&apps);
    /// assert!(apps.iter().all(|app| filter.contains(app)));
    /// // The same as inserting them one by one into a filter of the same seed.
    /// let mut one_by_one = builder.build()?;
    /// for app in &apps {
    ///     one_by_one.insert(app);
    /// }
    /// assert_eq!(filter, one_by_one);
    /// # Ok::<(), txgate_bloom::BuildError>(())
    /// ```
    pub fn build(&self) -> Result<BlockedBloom<B>, BuildError> {
        let (num_blocks, seed, kernel) = self.parts(B::LAYOUT)?;
        BlockedBloom::from_parts(num_blocks, seed, kernel)
    }

    /// Checks the request and allocates an empty [`AtomicBlockedBloom`] of layout `B`.
    ///
    /// # Errors
    /// As [`BloomBuilder::build`].
    pub fn build_atomic(&self) -> Result<AtomicBlockedBloom<B>, BuildError> {
        let (num_blocks, seed, kernel) = self.parts(B::LAYOUT)?;
        AtomicBlockedBloom::from_parts(num_blocks, seed, kernel)
    }

    /// Checks the request and allocates an empty plain filter of the layout named at run time
    /// (sized for it, as [`layout`](Self::layout) does).
    ///
    /// # Errors
    /// As [`BloomBuilder::build`], for `layout`.
    ///
    /// # Examples
    /// ```
    /// use txgate_bloom::{BloomBuilder, Bytes, Filter, Layout};
    /// let mut f = BloomBuilder::with_false_positive_rate(100, 0.01).build_any(Layout::Block512)?;
    /// f.insert(Bytes(&[3; 32]));
    /// assert!(f.contains(Bytes(&[3; 32])));
    /// assert_eq!(f.layout(), Layout::Block512);
    /// # Ok::<(), txgate_bloom::BuildError>(())
    /// ```
    pub fn build_any(&self, layout: Layout) -> Result<AnyBloom, BuildError> {
        Ok(match layout {
            Layout::Block256 => AnyBloom::Block256(self.clone().layout::<Block256>().build()?),
            Layout::Block512 => AnyBloom::Block512(self.clone().layout::<Block512>().build()?),
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
