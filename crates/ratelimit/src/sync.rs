//! The atomics the crate shares between threads: `std`'s, or loom's model-checked ones under
//! `cfg(loom)`.
//!
//! Every shared word of the table (slot pointers, node state, recency, counters) goes through
//! this module, so `--cfg loom` explores every interleaving of them. The one exception is the
//! loom-only poison flag of [`crate::table::Node`], which is a test oracle, not shared state.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};
