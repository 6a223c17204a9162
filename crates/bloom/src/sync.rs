//! The atomics the crate uses: `std`'s, or loom's model-checked ones under `cfg(loom)`.
//!
//! Everything that is shared between threads goes through this module, so that `--cfg loom`
//! checks every interleaving of it.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, Ordering};
