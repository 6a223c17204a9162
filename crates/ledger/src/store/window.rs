//! The in-memory window of the last rounds' blooms, read lock-free.
//!
//! A ring of `capacity` slots (MaxTxnLife + 1 for the ledger): round `r` lives in slot
//! `r % capacity`, as an [`RoundEntry`] (the round number and its value) behind an `AtomicPtr`.
//! One writer publishes rounds in order: it swaps the new entry into its slot, which replaces
//! the entry of round `r - capacity` (the round that just left the window), stores the new
//! latest round with `Release`, and only then retires the old entry through
//! [`txgate_sync::reclaim`] (seize; a strict stand-in under loom). A reader loads the latest
//! round with `Acquire`, so every slot it then loads holds that round's entry or a newer one; it
//! checks the entry's round against the one it wants, so a slot that a newer round took over
//! reads as "outside the window", never as the wrong round. Every access to an entry goes
//! through [`Guard::check`], which under loom fails the model if a collector could already have
//! freed the entry.

use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::RwLock;

use txgate_sync::reclaim::{Collector, Guard};
use txgate_sync::sync::{AtomicPtr, AtomicU64, Ordering};

use crate::Round;

/// Retired entries per thread before seize tries to free a batch (seize's own default is
/// max(32, CPUs)): a replaced bloom is freed at most a batch of rounds late, which bounds the
/// memory held beyond the window.
const RECLAIM_BATCH: usize = 32;

/// One round of the window: its number and its value (the ledger's bloom).
pub(crate) struct RoundEntry<T> {
    round: Round,
    value: T,
}

/// The ring of published rounds. One writer at a time calls [`Window::publish`] (the ledger's
/// writer lock); any number of readers call [`Window::reader`] concurrently without blocking.
pub(crate) struct Window<T> {
    // Invariant: a non-null slot `i` points at a `Box`-allocated entry of a round `r` with
    // `r % capacity == i` and `r <= latest`, owned by the window until swapped out and retired.
    slots: Box<[AtomicPtr<RoundEntry<T>>]>,
    // Invariant: 0 while nothing is published, else the latest published round + 1. Only
    // increases.
    published: AtomicU64,
    // Dropped after the slots' entries (`Drop` below): it frees what was retired but not yet
    // freed.
    collector: Collector,
    // Entries are read through `&T` on any thread and dropped on whichever thread reclaims them:
    // the window is `Sync` only for `T: Send + Sync` and `Send` only for `T: Send`, which is
    // exactly what `RwLock<T>` requires of `T` for the same two traits.
    _values: PhantomData<RwLock<T>>,
}

/// What a reader finds for a round.
pub(crate) enum Probe<'r, T> {
    /// The round is in the window; its value.
    Hit(EntryRef<'r, T>),
    /// The round is after the latest published one (`None`: nothing published yet).
    Beyond(Option<Round>),
    /// The round was published but has left the window (or was never in it: before the first
    /// published round).
    Outside,
}

/// A window entry that a reader's guard keeps alive.
pub(crate) struct EntryRef<'r, T> {
    entry: &'r RoundEntry<T>,
    guard: &'r Guard<'r>,
}

impl<T> Deref for EntryRef<'_, T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.guard.check(self.entry);
        &self.entry.value
    }
}

/// A read-side critical section over the window: the entries it returns stay allocated while
/// it lives. Hold one per query (or per window scan), not for long: replaced entries are freed
/// only after every reader that could have loaded them is gone.
pub(crate) struct Reader<'w, T> {
    window: &'w Window<T>,
    guard: Guard<'w>,
}

impl<T> Window<T> {
    /// An empty window of `capacity` rounds.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 (the ledger validates its configuration before).
    pub(crate) fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a window holds at least one round");
        Self {
            slots: (0..capacity)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            published: AtomicU64::new(0),
            collector: Collector::new(RECLAIM_BATCH),
            _values: PhantomData,
        }
    }

    /// Rounds the window holds.
    pub(crate) fn capacity(&self) -> u64 {
        self.slots.len() as u64
    }

    /// The latest published round.
    pub(crate) fn latest(&self) -> Option<Round> {
        // Acquire: pairs with the Release store in `publish`, so a caller that goes on to read
        // the slot of the returned round sees its entry.
        self.published.load(Ordering::Acquire).checked_sub(1)
    }

    fn slot(&self, round: Round) -> &AtomicPtr<RoundEntry<T>> {
        // The index is below `slots.len()`, so it fits in usize.
        &self.slots[(round % self.capacity()) as usize]
    }

    /// Publishes `round` with its value: it becomes the latest round, and the round that leaves
    /// the window (`round - capacity`) is retired.
    ///
    /// Callers serialize publications (one writer at a time) and publish rounds in order:
    /// `round` is the latest + 1, or any round when nothing is published yet. Breaking this is a
    /// logic error caught by a debug assertion, never memory unsafety.
    pub(crate) fn publish(&self, round: Round, value: T) {
        debug_assert!(
            self.latest()
                .is_none_or(|latest| latest.checked_add(1) == Some(round)),
            "round {round} published out of order after {:?}",
            self.latest()
        );
        let Some(published) = round.checked_add(1) else {
            // u64::MAX cannot be encoded as published round + 1; no Algorand chain gets there.
            debug_assert!(false, "round u64::MAX published");
            return;
        };
        let entry = Box::into_raw(Box::new(RoundEntry { round, value }));
        // AcqRel: Release publishes the entry's fields to readers that load it; Acquire orders
        // the old entry's fields (written by the writer that published it) before we retire it.
        let old = self.slot(round).swap(entry, Ordering::AcqRel);
        // Release: a reader that Acquire-loads this value also sees the slot store above, so the
        // latest round is never visible before its entry.
        self.published.store(published, Ordering::Release);
        if !old.is_null() {
            let guard = self.collector.enter();
            // SAFETY: (1) every non-null slot value came from `Box::into_raw` above and was
            // swapped out exactly once, here; (2) the slot now holds `entry`, so no load that
            // starts after the swap returns `old`.
            unsafe { guard.retire_box(old) };
        }
    }

    /// Enters a read-side critical section.
    pub(crate) fn reader(&self) -> Reader<'_, T> {
        Reader {
            window: self,
            guard: self.collector.enter(),
        }
    }
}

impl<'w, T> Reader<'w, T> {
    /// The latest published round, as of now.
    pub(crate) fn latest(&self) -> Option<Round> {
        self.window.latest()
    }

    /// The window's entry of `round`.
    pub(crate) fn get(&self, round: Round) -> Probe<'_, T> {
        let latest = match self.window.latest() {
            Some(latest) if round <= latest => latest,
            latest => return Probe::Beyond(latest),
        };
        if latest - round >= self.window.capacity() {
            return Probe::Outside;
        }
        // Acquire: pairs with the AcqRel swap in `publish`, so the entry's fields are visible.
        let entry = self
            .guard
            .protect(self.window.slot(round), Ordering::Acquire);
        if entry.is_null() {
            return Probe::Outside;
        }
        self.guard.check(entry);
        // SAFETY: the guard protects what `protect` returned until the guard drops, which
        // outlives the borrow of `self` that the returned reference carries; a non-null slot
        // value points at a live `Box`-allocated entry (the field invariant).
        let entry = unsafe { &*entry };
        // The slot holds `round` or, if the writer published `capacity` more rounds since we read
        // `latest`, a newer round: then `round` has left the window.
        if entry.round == round {
            Probe::Hit(EntryRef {
                entry,
                guard: &self.guard,
            })
        } else {
            debug_assert!(entry.round > round, "slot of {round} holds {}", entry.round);
            Probe::Outside
        }
    }
}

impl<T> Drop for Window<T> {
    fn drop(&mut self) {
        for slot in self.slots.iter() {
            // Relaxed: `&mut self`, no other thread can access the window.
            let entry = slot.swap(std::ptr::null_mut(), Ordering::Relaxed);
            if !entry.is_null() {
                // SAFETY: `&mut self`: no reader holds a guard (guards borrow the window), and a
                // slot's entry came from `Box::into_raw` and was never retired (the invariant).
                drop(unsafe { Box::from_raw(entry) });
            }
        }
        // Retired entries are freed when `self.collector` drops, after this.
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn value(p: &Probe<'_, u64>) -> Option<u64> {
        match p {
            Probe::Hit(v) => Some(**v),
            _ => None,
        }
    }

    #[test]
    fn empty_window_is_beyond_everything() {
        let w: Window<u64> = Window::new(3);
        let r = w.reader();
        assert!(matches!(r.get(0), Probe::Beyond(None)));
        assert_eq!(r.latest(), None);
    }

    #[test]
    fn ring_keeps_the_last_capacity_rounds() {
        let w: Window<u64> = Window::new(3);
        for round in 10..20 {
            w.publish(round, round * 7);
            let r = w.reader();
            assert_eq!(r.latest(), Some(round));
            for probe in 0..25 {
                let got = r.get(probe);
                if probe > round {
                    assert!(matches!(got, Probe::Beyond(Some(l)) if l == round));
                } else if probe >= 10 && round - probe < 3 {
                    assert_eq!(value(&got), Some(probe * 7), "round {round} probe {probe}");
                } else {
                    assert!(matches!(got, Probe::Outside), "round {round} probe {probe}");
                }
            }
        }
    }

    #[test]
    fn replaced_entries_are_dropped() {
        use std::sync::Arc;
        let marker = Arc::new(());
        {
            let w: Window<Arc<()>> = Window::new(2);
            for round in 0..100 {
                w.publish(round, marker.clone());
            }
            assert!(Arc::strong_count(&marker) >= 3);
        }
        assert_eq!(Arc::strong_count(&marker), 1);
    }

    #[test]
    fn readers_on_other_threads_see_whole_entries() {
        let w: Window<[u64; 8]> = Window::new(4);
        // Miri runs this about 10^4 times slower: fewer rounds still wrap the ring 50 times.
        let rounds: u64 = if cfg!(miri) { 200 } else { 20_000 };
        std::thread::scope(|s| {
            s.spawn(|| {
                for round in 0..rounds {
                    w.publish(round, [round; 8]);
                }
            });
            for _ in 0..2 {
                s.spawn(|| {
                    let mut seen = 0;
                    while seen < rounds - 1 {
                        let r = w.reader();
                        let Some(latest) = r.latest() else { continue };
                        for round in latest.saturating_sub(5)..=latest + 1 {
                            if let Probe::Hit(v) = r.get(round) {
                                assert_eq!(*v, [round; 8]);
                            }
                        }
                        seen = latest;
                    }
                });
            }
        });
    }
}

/// loom models (run with `RUSTFLAGS="--cfg loom" cargo test -p txgate-ledger --release --lib
/// store::window`): the window with `txgate_sync`'s loom stand-in of the collector, which adds
/// no happens-before edge of its own and poisons a retired entry as soon as every guard alive at
/// its retirement has dropped.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;
    use loom::thread;

    /// A value whose contents loom tracks: reading it without a happens-before edge to its
    /// construction is reported as a data race.
    struct Tracked(UnsafeCell<u64>);

    impl Tracked {
        fn new(v: u64) -> Self {
            Self(UnsafeCell::new(v))
        }
        fn get(&self) -> u64 {
            // SAFETY: nothing writes the cell after construction; loom checks that this read
            // happens after it.
            self.0.with(|p| unsafe { *p })
        }
    }

    /// A reader racing the publication of round 1 sees it wholly (its entry, with the value
    /// written before publication) or not at all (beyond latest).
    #[test]
    fn reader_sees_a_published_round_wholly_or_not_at_all() {
        loom::model(|| {
            let w = Arc::new(Window::<Tracked>::new(2));
            w.publish(0, Tracked::new(100));
            let writer = {
                let w = w.clone();
                thread::spawn(move || w.publish(1, Tracked::new(101)))
            };
            let r = w.reader();
            match r.get(1) {
                Probe::Hit(v) => assert_eq!(v.get(), 101),
                Probe::Beyond(latest) => assert_eq!(latest, Some(0)),
                Probe::Outside => panic!("round 1 cannot be outside a 2-round window"),
            }
            match r.get(0) {
                Probe::Hit(v) => assert_eq!(v.get(), 100),
                _ => panic!("round 0 stays in a 2-round window until round 2"),
            }
            drop(r);
            writer.join().unwrap();
        });
    }

    /// The writer publishes rounds 2 and 3 into a 2-round window, replacing (and retiring) the
    /// entries of rounds 0 and 1 while a reader looks them up: the reader gets the right value
    /// or "outside", and never touches an entry after it could have been reclaimed.
    #[test]
    fn slot_replacement_racing_lookup_never_touches_a_reclaimed_entry() {
        loom::model(|| {
            let w = Arc::new(Window::<Tracked>::new(2));
            w.publish(0, Tracked::new(100));
            w.publish(1, Tracked::new(101));
            let writer = {
                let w = w.clone();
                thread::spawn(move || {
                    w.publish(2, Tracked::new(102));
                    w.publish(3, Tracked::new(103));
                })
            };
            for round in [0, 1] {
                let r = w.reader();
                match r.get(round) {
                    Probe::Hit(v) => assert_eq!(v.get(), 100 + round),
                    Probe::Outside => {}
                    Probe::Beyond(_) => panic!("round {round} was published before the race"),
                }
            }
            writer.join().unwrap();
            let r = w.reader();
            assert!(matches!(r.get(1), Probe::Outside));
            assert!(matches!(r.get(3), Probe::Hit(ref v) if v.get() == 103));
        });
    }
}
