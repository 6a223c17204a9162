//! The plumbing every txgate crate shares: one loom shim ([`sync`]), one memory reclamation
//! wrapper ([`reclaim`]) with one loom stand-in for it, and the CPU vendor check of the SIMD
//! paths ([`cpu`]).
//!
//! Normal builds re-export `std`'s atomics and use [seize](https://docs.rs/seize/0.5) for
//! reclamation. Built with `RUSTFLAGS="--cfg loom"`, [`sync`] re-exports
//! [loom](https://docs.rs/loom)'s model-checked types instead, and [`reclaim`] becomes a stand-in
//! that adds no synchronization of its own and flags any access to memory that a real collector
//! could already have freed. Crates route every shared word through [`sync`], so one cfg name
//! (`loom`) checks the whole workspace.
//!
//! # Modules
//! - [`sync`]: the atomics, `Arc`, `Mutex` and `Condvar` every crate uses: `std`'s, or loom's
//!   under `cfg(loom)`.
//! - [`claims`]: [`Claims`](claims::Claims), a run of work items two threads take in chunks
//!   from its two ends, lock-free.
//! - [`split`]: [`split`](split::split), such a run shared by the calling thread and one helper,
//!   with the helper's handover of its work (not waited for when it took nothing).
//! - [`pair`]: [`AtomicPair`](pair::AtomicPair), two 64-bit words loaded and
//!   compare-and-swapped as one 16-byte atomic (a key beside its state), with loom and
//!   ThreadSanitizer stand-ins.
//! - [`reclaim`]: [`Collector`](reclaim::Collector) and [`Guard`](reclaim::Guard), seize's
//!   reclamation, or under `cfg(loom)` a stand-in that flags any access to memory a real
//!   collector could already have freed.
//! - [`cpu`]: the CPU's [`Vendor`](cpu::Vendor), read once, for the SIMD paths whose faster
//!   form differs between Intel and AMD cores.
//!
//! # Example
//!
//! ```
//! use txgate_sync::reclaim::Collector;
//! use txgate_sync::sync::{AtomicPtr, Ordering};
//!
//! let collector = Collector::new(64);
//! let slot = AtomicPtr::new(Box::into_raw(Box::new(7u64)));
//! let guard = collector.enter();
//! let old = slot.swap(Box::into_raw(Box::new(8u64)), Ordering::AcqRel);
//! // SAFETY: `old` came from `Box::into_raw`, is retired once, and no thread that enters after
//! // the swap can load it.
//! unsafe { guard.retire_box(old) };
//! let now = guard.protect(&slot, Ordering::Acquire);
//! // SAFETY: loaded through `guard`, which keeps it allocated.
//! assert_eq!(unsafe { *now }, 8);
//! drop(guard);
//! # let last = slot.load(Ordering::Relaxed);
//! # // SAFETY: the collector no longer sees `last`; we own it.
//! # drop(unsafe { Box::from_raw(last) });
//! ```

pub mod claims;
pub mod cpu;
pub mod pair;
pub mod reclaim;
pub mod split;
pub mod sync;

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
