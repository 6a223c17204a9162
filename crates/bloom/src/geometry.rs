//! [`Geometry`]: what a filter is besides its bits (how many blocks, the hash seed, the kernel),
//! and the rules every filter type derives from it: the hash of a key, the block a hash picks,
//! whether two filters can be combined, the sizes and the `Debug` form.
//!
//! [`BlockedBloom`](crate::BlockedBloom) and [`AtomicBlockedBloom`](crate::AtomicBlockedBloom)
//! hold one beside their blocks and answer through it, so the two agree by construction on every
//! hash, index and size; [`Sbbf`](crate::Sbbf) holds one with the seed the Parquet
//! specification fixes (0) and keeps its own block rule, which the specification also fixes.

use std::fmt;
use std::hash::{Hash, Hasher};

use crate::block::block_index;
use crate::error::ShapeError;
use crate::kernels::{Backend, Kernel};
use crate::layout::Layout;

/// The shape, seed and kernel of one filter.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Geometry {
    // Invariant: num_blocks > 0, and it equals the length of the owning filter's block slice
    // (the owners index that slice unchecked with `index`).
    num_blocks: u64,
    seed: u64,
    kernel: Kernel,
}

impl Geometry {
    /// The geometry of a filter of `num_blocks` blocks (which must be its slice's length).
    #[inline]
    pub(crate) fn new(num_blocks: u64, seed: u64, kernel: Kernel) -> Self {
        debug_assert!(num_blocks > 0);
        Geometry {
            num_blocks,
            seed,
            kernel,
        }
    }

    /// The same shape and seed with another kernel.
    pub(crate) fn with_kernel(self, kernel: Kernel) -> Self {
        Geometry { kernel, ..self }
    }

    /// Blocks in the filter.
    #[inline(always)]
    pub(crate) fn num_blocks(self) -> u64 {
        self.num_blocks
    }

    /// The hash seed.
    #[inline(always)]
    pub(crate) fn seed(self) -> u64 {
        self.seed
    }

    /// The kernel (a backend this CPU was checked to run).
    #[inline(always)]
    pub(crate) fn kernel(self) -> Kernel {
        self.kernel
    }

    /// The kernel's backend.
    pub(crate) fn backend(self) -> Backend {
        self.kernel.backend()
    }

    /// The native filters' block for `hash`, in `0..num_blocks` ([`block_index`]: Lemire's
    /// multiply-shift, in 128-bit arithmetic).
    #[inline(always)]
    pub(crate) fn index(self, hash: u64) -> usize {
        block_index(hash, self.num_blocks) as usize
    }

    /// The 64-bit hash of a `Hash` key: wyhash (v1) keyed with the seed.
    #[inline]
    pub(crate) fn hash_key<T: Hash + ?Sized>(self, key: &T) -> u64 {
        let mut hasher = wyhash::WyHash::with_seed(self.seed);
        key.hash(&mut hasher);
        hasher.finish()
    }

    /// The 64-bit hash of an id of `N` bytes: XXH3-64 with the seed. For a known length XXH3
    /// takes one fixed path (for 17 to 128 bytes, a 32-byte txid or a 64-byte signature, one that
    /// inlines into the lookup; the general-length wyhash stays a call and a loop).
    ///
    /// Like every fast non-cryptographic hash, it does not resist someone who knows the seed and
    /// searches for colliding ids; keep seeds of filters that face adversarial ids private (the
    /// serialized form contains the seed).
    #[inline(always)]
    pub(crate) fn hash_id<const N: usize>(self, id: &[u8; N]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(id, self.seed)
    }

    /// The 64-bit hash of a byte string: XXH3-64 with the seed, the same function as
    /// [`hash_id`](Self::hash_id) (so `hash_bytes(&id[..]) == hash_id(&id)`). Fixed by the
    /// serialized format: XXH3 is specified bit for bit (Collet, xxHash specification), so a
    /// filter built on any platform or Rust version answers the same for the same bytes.
    #[inline]
    pub(crate) fn hash_bytes(self, bytes: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.seed)
    }

    /// Whether a filter of geometry `other` can be unioned or intersected into this one: the
    /// same number of blocks, then the same seed (the kernel may differ). The layout is the
    /// callers' type parameter, so it matches already.
    pub(crate) fn check_shape(self, other: Geometry) -> Result<(), ShapeError> {
        ShapeError::check((self.num_blocks, self.seed), (other.num_blocks, other.seed))
    }

    /// Bits in the filter when its blocks are of `layout`.
    pub(crate) fn num_bits(self, layout: Layout) -> u64 {
        self.num_blocks * layout.bits_per_block()
    }

    /// Bytes of block memory when its blocks are of `layout`.
    pub(crate) fn memory_bytes(self, layout: Layout) -> u64 {
        self.num_blocks * layout.block_bytes() as u64
    }

    /// The formula's false-positive rate after `items` distinct keys in blocks of `layout`.
    pub(crate) fn expected_false_positive_rate(self, layout: Layout, items: u64) -> f64 {
        layout.false_positive_rate(items, self.num_blocks)
    }

    /// The `Debug` form of a filter type called `name`: `layout`, `num_blocks`, `seed` and
    /// `backend`, or, for a filter whose layout and seed a specification fixes (`layout` is
    /// `None`: the SBBF), only `num_blocks` and `backend`. Never the bits.
    pub(crate) fn fmt_debug(
        self,
        f: &mut fmt::Formatter<'_>,
        name: &str,
        layout: Option<Layout>,
    ) -> fmt::Result {
        let mut out = f.debug_struct(name);
        if let Some(layout) = layout {
            out.field("layout", &layout);
        }
        out.field("num_blocks", &self.num_blocks);
        if layout.is_some() {
            out.field("seed", &self.seed);
        }
        out.field("backend", &self.kernel.backend())
            .finish_non_exhaustive()
    }
}

/// The public size and shape accessors of a native filter type, written once for
/// [`BlockedBloom`](crate::BlockedBloom) and [`AtomicBlockedBloom`](crate::AtomicBlockedBloom):
/// expanded inside `impl<B: BlockLayout> Type<B>` of a type with a `geometry: Geometry` field
/// and a `count_ones(&self) -> u64` method, it answers every one from the geometry and `B`.
macro_rules! native_accessors {
    () => {
        /// An estimate of the distinct keys inserted, from the bits set (see
        /// [`estimate_len`](crate::estimate_len)).
        pub fn estimated_len(&self) -> f64 {
            $crate::estimate_len(self.count_ones(), self.num_bits())
        }

        /// The false-positive rate the formula expects after `items` distinct inserts
        /// ([`Layout::false_positive_rate`](crate::Layout::false_positive_rate)).
        pub fn expected_false_positive_rate(&self, items: u64) -> f64 {
            self.geometry.expected_false_positive_rate(B::LAYOUT, items)
        }

        /// The block layout ([`BlockLayout::LAYOUT`](crate::BlockLayout::LAYOUT)).
        pub fn layout(&self) -> $crate::Layout {
            B::LAYOUT
        }

        /// Blocks in the filter.
        pub fn num_blocks(&self) -> u64 {
            self.geometry.num_blocks()
        }

        /// Bits in the filter (`num_blocks * 256` or `* 512`).
        pub fn num_bits(&self) -> u64 {
            self.geometry.num_bits(B::LAYOUT)
        }

        /// Bytes of filter memory (`num_blocks * 32` or `* 64`), aligned to the block size.
        pub fn memory_bytes(&self) -> u64 {
            self.geometry.memory_bytes(B::LAYOUT)
        }

        /// The hash seed.
        pub fn seed(&self) -> u64 {
            self.geometry.seed()
        }
    };
}
pub(crate) use native_accessors;
