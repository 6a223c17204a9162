//! The synchronisation primitives the handler shares between threads: `std`'s, or loom's
//! model-checked ones under `cfg(loom)` (the crate's one cfg name, as in `txgate-ratelimit`'s
//! `sync` module).
//!
//! Every word the handler's threads coordinate through (the shutdown gate,
//! the dedup generation, the outcome counters, and the loom stand-in of the backlog) goes through
//! this module, so `--cfg loom` explores their interleavings. Not covered: the dedup map itself
//! (dashmap's shard locks are not loom-instrumented; no loom operation runs while one is held, so
//! loom never switches threads inside it) and `crossbeam_queue::ArrayQueue`, which the loom build
//! replaces (see [`super::backlog`]).

#[cfg(loom)]
pub(crate) use loom::sync::Mutex;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;

#[cfg(not(loom))]
pub(crate) use std::sync::Mutex;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;
