//! The atomics the in-memory bloom window shares between threads: `std`'s, or loom's
//! model-checked ones under `cfg(loom)`.
//!
//! Every shared word of [`super::window`] (slot pointers, the published-round counter) goes
//! through this module, so `--cfg loom` explores every interleaving of them. The one exception is
//! the loom-only poison flag of a window entry, which is a test oracle, not shared state.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
