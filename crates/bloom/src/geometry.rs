//! [`Geometry`]: what a filter is besides its bits (how many blocks, the hash seed, the kernel),
//! and the rules every filter type derives from it: the hash of a key, the block a hash picks,
//! whether two filters can be combined, the sizes and the `Debug` form.
//!
//! [`BlockedBloom`](crate::BlockedBloom) and [`AtomicBlockedBloom`](crate::AtomicBlockedBloom)
//! hold one beside their blocks and answer through it, so the two agree by construction on every
//! hash, index and size; [`Sbbf`](crate::Sbbf) holds one with the seed the Parquet
//! specification fixes (0) and keeps its own block rule, which the specification also fixes.

use std::fmt;

use crate::api::Key;
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

    /// The 64-bit hash of `key` in a filter of this seed (the rules are [`Key`]'s).
    #[inline(always)]
    pub(crate) fn hash<K: Key>(self, key: K) -> u64 {
        key.key_hash(self.seed)
    }

    /// Whether a filter of geometry `other` can be unioned or intersected into this one: the
    /// same number of blocks, then the same seed (the kernel may differ). The layout is the
    /// callers' type parameter, so it matches already.
    pub(crate) fn check_shape(self, other: Geometry) -> Result<(), ShapeError> {
        ShapeError::check((self.num_blocks, self.seed), (other.num_blocks, other.seed))
    }

    /// Bytes of block memory when its blocks are of `layout`.
    pub(crate) fn memory_bytes(self, layout: Layout) -> u64 {
        self.num_blocks * layout.block_bytes() as u64
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
