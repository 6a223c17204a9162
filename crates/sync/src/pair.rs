//! [`AtomicPair`]: two 64-bit words read and compare-and-swapped as one 16-byte atomic.
//!
//! A lock-free table that keeps a key beside its state (a hash and a counts word, say) can change
//! both, or change one while checking the other, in one step: a compare-and-swap of the pair
//! fails if either word differs from what the caller read. That is the double-width
//! compare-and-swap of the lock-free literature (IA-32 and x86-64 `cmpxchg8b`/`cmpxchg16b`;
//! AArch64 `casp` or a load/store-exclusive pair), which needs no reclamation of what it holds:
//! nothing is reached through the pair.
//!
//! # Backends
//!
//! - **Normal builds**: [`portable_atomic::AtomicU128`]. On x86-64 that is `lock cmpxchg16b`
//!   (every x86-64 CPU since 2008 has it; portable-atomic detects it at run time unless the build
//!   enables the `cmpxchg16b` target feature), and loads are a 16-byte `vmovdqa` on CPUs with AVX
//!   (which Intel and AMD document as atomic when aligned), else a `cmpxchg16b` that writes back
//!   the value it read. Other targets get what portable-atomic provides for them, a lock-based
//!   fallback where the CPU has no 16-byte atomics ([`AtomicPair::is_lock_free`] tells).
//! - **`cfg(loom)`**: a model-checked stand-in. Loom has no 128-bit atomic, so the pair is the
//!   index of its current value in a list of values written to it (never changed once written),
//!   held in a loom `AtomicUsize`: each load and compare-and-swap of the pair is one of that
//!   word with the caller's orderings, so loom explores the same interleavings and orders as for
//!   a real 16-byte word. The list itself sits behind a `std` mutex that loom does not see (it
//!   adds no ordering to the model).
//! - **`cfg(txgate_tsan)`**: a `std` mutex around the value. ThreadSanitizer does not see
//!   portable-atomic's inline assembly, so it would miss the ordering the pair gives (and report
//!   races on what the pair publishes); the mutex orders at least as much as a real pair does.
//!
//! # Example
//!
//! ```
//! use txgate_sync::pair::AtomicPair;
//! use txgate_sync::sync::Ordering;
//!
//! // A key's hash beside its counts: an update must fail if the key changed in between.
//! let entry = AtomicPair::new([0xfeed, 3]);
//! let [key, count] = entry.load(Ordering::Acquire);
//! assert_eq!(
//!     entry.compare_exchange([key, count], [key, count + 1], Ordering::AcqRel, Ordering::Acquire),
//!     Ok([0xfeed, 3])
//! );
//! // A compare-and-swap from a stale pair fails and returns the pair as it is.
//! assert_eq!(
//!     entry.compare_exchange([key, count], [key, 9], Ordering::AcqRel, Ordering::Acquire),
//!     Err([0xfeed, 4])
//! );
//! ```

use crate::sync::Ordering;

/// Two 64-bit words, `[first, second]`, read and compare-and-swapped together (16 bytes,
/// aligned to 16).
///
/// See the [module docs](self) for the instructions behind it and its loom and
/// ThreadSanitizer stand-ins.
#[repr(C, align(16))]
pub struct AtomicPair {
    #[cfg(not(any(loom, txgate_tsan)))]
    inner: portable_atomic::AtomicU128,
    #[cfg(loom)]
    inner: standin::Pair,
    #[cfg(all(txgate_tsan, not(loom)))]
    inner: std::sync::Mutex<[u64; 2]>,
}

impl std::fmt::Debug for AtomicPair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AtomicPair")
            .field(&self.load(Ordering::Relaxed))
            .finish()
    }
}

/// `[first, second]` as one `u128`: `first` in the low 64 bits.
#[cfg(not(any(loom, txgate_tsan)))]
#[inline(always)]
fn join([first, second]: [u64; 2]) -> u128 {
    u128::from(first) | (u128::from(second) << 64)
}

/// The inverse of [`join`].
#[cfg(not(any(loom, txgate_tsan)))]
#[inline(always)]
fn split(v: u128) -> [u64; 2] {
    [v as u64, (v >> 64) as u64]
}

impl AtomicPair {
    /// A pair holding `value`.
    #[inline]
    pub fn new(value: [u64; 2]) -> Self {
        Self {
            #[cfg(not(any(loom, txgate_tsan)))]
            inner: portable_atomic::AtomicU128::new(join(value)),
            #[cfg(loom)]
            inner: standin::Pair::new(value),
            #[cfg(all(txgate_tsan, not(loom)))]
            inner: std::sync::Mutex::new(value),
        }
    }

    /// Whether loads and compare-and-swaps of pairs are lock-free on this CPU (portable-atomic's
    /// answer, read at run time on x86-64; `true` under the loom stand-in, `false` under the
    /// ThreadSanitizer one).
    pub fn is_lock_free() -> bool {
        #[cfg(not(any(loom, txgate_tsan)))]
        return portable_atomic::AtomicU128::is_lock_free();
        #[cfg(loom)]
        return true;
        #[cfg(all(txgate_tsan, not(loom)))]
        return false;
    }

    /// Loads both words at one instant.
    ///
    /// # Panics
    ///
    /// If `order` is `Release` or `AcqRel` (as `AtomicU64::load`).
    #[inline]
    pub fn load(&self, order: Ordering) -> [u64; 2] {
        #[cfg(not(any(loom, txgate_tsan)))]
        return split(self.inner.load(order));
        #[cfg(loom)]
        return self.inner.load(order);
        #[cfg(all(txgate_tsan, not(loom)))]
        {
            assert!(
                !matches!(order, Ordering::Release | Ordering::AcqRel),
                "a load cannot be Release"
            );
            *self.inner.lock().unwrap_or_else(|e| e.into_inner())
        }
    }

    /// Stores `new` if the pair holds `current` (both words equal), as one atomic step: returns
    /// `Ok(current)` if it did, else `Err` of the pair as it was. Never fails spuriously.
    ///
    /// # Panics
    ///
    /// If `failure` is `Release` or `AcqRel` (as `AtomicU64::compare_exchange`).
    #[inline]
    pub fn compare_exchange(
        &self,
        current: [u64; 2],
        new: [u64; 2],
        success: Ordering,
        failure: Ordering,
    ) -> Result<[u64; 2], [u64; 2]> {
        #[cfg(not(any(loom, txgate_tsan)))]
        return self
            .inner
            .compare_exchange(join(current), join(new), success, failure)
            .map(split)
            .map_err(split);
        #[cfg(loom)]
        return self.inner.compare_exchange(current, new, success, failure);
        #[cfg(all(txgate_tsan, not(loom)))]
        {
            let _ = success;
            assert!(
                !matches!(failure, Ordering::Release | Ordering::AcqRel),
                "a failure ordering cannot be Release"
            );
            let mut held = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if *held == current {
                *held = new;
                Ok(current)
            } else {
                Err(*held)
            }
        }
    }

    /// The pair's value, read through exclusive access (no other thread can hold a reference).
    #[inline]
    pub fn get_mut(&mut self) -> [u64; 2] {
        #[cfg(not(any(loom, txgate_tsan)))]
        return split(*self.inner.get_mut());
        #[cfg(loom)]
        return self.inner.load(Ordering::Relaxed);
        #[cfg(all(txgate_tsan, not(loom)))]
        return *self.inner.get_mut().unwrap_or_else(|e| e.into_inner());
    }
}

/// The loom stand-in: the index of the pair's current value in a list of every value written
/// to it (see the module docs).
#[cfg(loom)]
mod standin {
    use crate::sync::{AtomicUsize, Ordering};

    pub(super) struct Pair {
        /// The index of the current value in `values`: the word loom checks.
        at: AtomicUsize,
        /// Every value written (or about to be); an entry never changes once pushed. A `std`
        /// mutex: loom does not see it, so it adds no ordering to the model.
        values: std::sync::Mutex<Vec<[u64; 2]>>,
    }

    impl Pair {
        pub(super) fn new(value: [u64; 2]) -> Self {
            Self {
                at: AtomicUsize::new(0),
                values: std::sync::Mutex::new(vec![value]),
            }
        }

        fn value(&self, i: usize) -> [u64; 2] {
            self.values.lock().unwrap_or_else(|e| e.into_inner())[i]
        }

        pub(super) fn load(&self, order: Ordering) -> [u64; 2] {
            self.value(self.at.load(order))
        }

        pub(super) fn compare_exchange(
            &self,
            current: [u64; 2],
            new: [u64; 2],
            success: Ordering,
            failure: Ordering,
        ) -> Result<[u64; 2], [u64; 2]> {
            // Only read-modify-writes of the index, as a real pair's compare-and-swap is one:
            // a load before it would be an extra step (loom then explores fewer orders of the
            // index's stores). The first attempt expects the last write of an equal value (or an
            // index no write has, so that it fails and reads the current one).
            let (mut expect, j) = {
                let mut values = self.values.lock().unwrap_or_else(|e| e.into_inner());
                let expect = values
                    .iter()
                    .rposition(|&v| v == current)
                    .unwrap_or(usize::MAX);
                values.push(new);
                (expect, values.len() - 1)
            };
            loop {
                match self.at.compare_exchange(expect, j, success, failure) {
                    Ok(_) => return Ok(current),
                    Err(now) => {
                        let seen = self.value(now);
                        if seen != current {
                            return Err(seen);
                        }
                        // Another write of a value equal to `current`: a real pair would have
                        // compared equal, so try again from it.
                        expect = now;
                    }
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_pair_is_sixteen_bytes_aligned_to_sixteen() {
        assert_eq!(std::mem::align_of::<AtomicPair>(), 16);
        #[cfg(not(txgate_tsan))]
        assert_eq!(std::mem::size_of::<AtomicPair>(), 16);
    }

    #[test]
    fn compare_exchange_compares_both_words() {
        let p = AtomicPair::new([1, 2]);
        let o = Ordering::SeqCst;
        assert_eq!(p.compare_exchange([1, 3], [7, 7], o, o), Err([1, 2]));
        assert_eq!(p.compare_exchange([0, 2], [7, 7], o, o), Err([1, 2]));
        assert_eq!(p.compare_exchange([1, 2], [u64::MAX, 5], o, o), Ok([1, 2]));
        assert_eq!(p.load(o), [u64::MAX, 5]);
        // The words keep their places: the first is not the high half.
        assert_eq!(
            p.compare_exchange([5, u64::MAX], [0, 0], o, o),
            Err([u64::MAX, 5])
        );
        let mut p = p;
        assert_eq!(p.get_mut(), [u64::MAX, 5]);
        assert_eq!(format!("{p:?}"), format!("AtomicPair([{}, 5])", u64::MAX));
    }

    /// Two threads count in both words of one pair with compare-and-swap loops, each word's
    /// count a function of the other's (`second = 3 * first + 1`): no update is lost, and no
    /// load ever sees the words of two different writes.
    #[test]
    fn no_lost_update_and_no_torn_read_across_threads() {
        let per_thread: u64 = if cfg!(miri) { 20 } else { 200_000 };
        let p = Arc::new(AtomicPair::new([0, 1]));
        let run = |p: Arc<AtomicPair>| {
            move || {
                let mut retries = 0u64;
                for _ in 0..per_thread {
                    let mut seen = p.load(Ordering::Acquire);
                    loop {
                        assert_eq!(seen[1], 3 * seen[0] + 1, "torn: {seen:?}");
                        let next = [seen[0] + 1, 3 * (seen[0] + 1) + 1];
                        match p.compare_exchange(seen, next, Ordering::AcqRel, Ordering::Acquire) {
                            Ok(_) => break,
                            Err(now) => {
                                retries += 1;
                                seen = now;
                            }
                        }
                    }
                }
                retries
            }
        };
        let other = std::thread::spawn(run(p.clone()));
        run(p.clone())();
        other.join().unwrap();
        let n = 2 * per_thread;
        assert_eq!(p.load(Ordering::Acquire), [n, 3 * n + 1]);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::{Arc, AtomicU64, thread};

    /// Two threads each add 1 to the first word with a compare-and-swap loop: both increments
    /// land, and the second word, which neither changes, is untouched.
    #[test]
    fn two_increments_both_land() {
        loom::model(|| {
            let p = Arc::new(AtomicPair::new([0, 42]));
            let add = |p: &AtomicPair| {
                let mut seen = p.load(Ordering::Relaxed);
                while let Err(now) = p.compare_exchange(
                    seen,
                    [seen[0] + 1, seen[1]],
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    seen = now;
                }
            };
            let other = {
                let p = p.clone();
                thread::spawn(move || add(&p))
            };
            add(&p);
            other.join().unwrap();
            assert_eq!(p.load(Ordering::Relaxed), [2, 42]);
        });
    }

    /// A value written again after a change (`A -> B -> A`) still compares equal: the stand-in
    /// compares values, not write indices, as a real pair does.
    #[test]
    fn a_value_written_again_compares_equal() {
        loom::model(|| {
            let p = AtomicPair::new([1, 1]);
            let o = Ordering::SeqCst;
            assert_eq!(p.compare_exchange([1, 1], [2, 2], o, o), Ok([1, 1]));
            assert_eq!(p.compare_exchange([2, 2], [1, 1], o, o), Ok([2, 2]));
            assert_eq!(p.compare_exchange([1, 1], [3, 3], o, o), Ok([1, 1]));
        });
    }

    /// Data written before a Release compare-and-swap of the pair is visible after an Acquire
    /// load that reads the new pair.
    #[test]
    fn release_publishes_to_acquire() {
        loom::model(|| {
            let (p, data) = (
                Arc::new(AtomicPair::new([0, 0])),
                Arc::new(AtomicU64::new(0)),
            );
            let writer = publish(&p, &data, Ordering::Release);
            if p.load(Ordering::Acquire) == [1, 0] {
                assert_eq!(data.load(Ordering::Relaxed), 7);
            }
            writer.join().unwrap();
        });
    }

    /// The stand-in adds no ordering of its own: with the pair written and read Relaxed, loom
    /// finds an execution that reads the new pair and the old data.
    #[test]
    fn relaxed_pairs_order_nothing() {
        let stale = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = stale.clone();
        loom::model(move || {
            let (p, data) = (
                Arc::new(AtomicPair::new([0, 0])),
                Arc::new(AtomicU64::new(0)),
            );
            let writer = publish(&p, &data, Ordering::Relaxed);
            if p.load(Ordering::Relaxed) == [1, 0] && data.load(Ordering::Relaxed) == 0 {
                seen.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            writer.join().unwrap();
        });
        assert!(stale.load(std::sync::atomic::Ordering::Relaxed));
    }

    /// A thread that stores 7 in `data` (Relaxed), then changes the pair from `[0, 0]` to
    /// `[1, 0]` with `order`.
    fn publish(
        p: &Arc<AtomicPair>,
        data: &Arc<AtomicU64>,
        order: Ordering,
    ) -> thread::JoinHandle<()> {
        let (p, data) = (p.clone(), data.clone());
        thread::spawn(move || {
            data.store(7, Ordering::Relaxed);
            p.compare_exchange([0, 0], [1, 0], order, Ordering::Relaxed)
                .unwrap();
        })
    }
}
