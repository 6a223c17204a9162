//! The synchronization primitives txgate shares between threads: `std`'s, or loom's
//! model-checked ones under `cfg(loom)`.
//!
//! Every word that txgate's threads coordinate through goes through this module, so that
//! `--cfg loom` explores every interleaving of them (tokio's `loom` module and crossbeam-epoch's
//! `primitive` module follow the same pattern).

#[cfg(loom)]
pub use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub use loom::sync::{Arc, Condvar, Mutex};
#[cfg(not(loom))]
pub use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(not(loom))]
pub use std::sync::{Arc, Condvar, Mutex};

/// Threads: `std::thread`, or `loom::thread` under `cfg(loom)`.
pub mod thread {
    #[cfg(loom)]
    pub use loom::thread::{JoinHandle, spawn, yield_now};
    #[cfg(not(loom))]
    pub use std::thread::{JoinHandle, spawn, yield_now};
}

/// A hint that the caller is spinning on a value another thread will change: `std`'s
/// `spin_loop` hint, or a loom yield (a spinning loom thread must let the others run).
#[inline]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
