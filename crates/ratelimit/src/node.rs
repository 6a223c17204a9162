//! A tracked key: its node and the compare-and-swap loops on its state word.

use txgate_sync::reclaim::{Guard, Reclaim};
use txgate_sync::sync::{AtomicU64, Ordering};

use crate::group;
use crate::state::{self, Counts, EVICTED, MARKER, TOUCHED};

/// One tracked key. Nodes live on the heap, are published in one slot of their set's table and
/// retired through the collector once an eviction replaced them.
pub(crate) struct Node {
    /// The key's 64-bit salted hash. Invariant: immutable after publication.
    pub(crate) key: u64,
    /// Packed counts and flags ([`crate::state`]). Invariant: changed only by compare-and-swap;
    /// once `EVICTED` it never changes again; a `MARKER` word is replaced only by its group
    /// operation's resolution. A node an eviction took out of the table keeps that eviction's
    /// marker until a thread that still reaches it resolves it to `EVICTED` (or never).
    pub(crate) state: AtomicU64,
    /// The way of its set that this node's insertion claims. Invariant: written before the
    /// insertion is published, never after.
    pub(crate) way: u8,
    /// Whether the insertion fills an empty way (a new key in the shard) rather than replacing
    /// an evicted one. Invariant: as `way`.
    pub(crate) adds: bool,
}

/// What a CLOCK sweep found at a node ([`Node::sweep`]).
pub(crate) enum Swept {
    /// Its reference bit was set; the sweep cleared it.
    Cleared,
    /// Its bit was clear in this word: the key had no access since a sweep last passed it (a
    /// victim).
    Victim(u64),
    /// The node is evicted.
    Evicted,
    /// An eviction's marker (the record, and the marker word as loaded): to help.
    Eviction(*mut group::GroupOp, u64),
}

/// The result of an update of a node's counts.
pub(crate) enum Update<T> {
    /// The update ran on the node's current counts and returned this.
    Done(T),
    /// The node was evicted (its final counts): look the key up again.
    Evicted(Counts),
}

#[cfg(not(loom))]
thread_local! {
    /// Nodes reclaimed on this thread, for reuse, so that evicting admissions do not call the
    /// allocator in steady state.
    static POOL: crate::pool::Pool<Node> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Reclaim for Node {
    unsafe fn reclaim(ptr: *mut Self) {
        // SAFETY: the trait's contract: the node came from `Box::into_raw` and no thread can
        // reach it any more.
        let node = unsafe { Box::from_raw(ptr) };
        #[cfg(not(loom))]
        crate::pool::give(&POOL, node);
        #[cfg(loom)]
        drop(node);
    }
}

impl Node {
    /// A node of `key` whose state starts at `counts`.
    pub(crate) fn new(key: u64, counts: Counts) -> Self {
        Self {
            key,
            state: AtomicU64::new(state::pack(counts)),
            way: 0,
            adds: false,
        }
    }

    /// A node of `key` whose state starts at `counts`, boxed, from this thread's reclaimed nodes when
    /// it has one.
    pub(crate) fn boxed(key: u64, counts: Counts) -> Box<Self> {
        let fresh = Self::new(key, counts);
        #[cfg(not(loom))]
        if let Some(mut node) = crate::pool::take(&POOL) {
            *node = fresh;
            return node;
        }
        Box::new(fresh)
    }

    /// Loads the state word. SeqCst, as seize's `protect`: the word may be a group operation's
    /// marker, a pointer to a reclaimable record, and seize's guarantee that a record retired
    /// before this thread's guard registered cannot still be seen here rests on the load taking
    /// part in the single total order with its barriers (C++20 [atomics.order] p4). It also
    /// acquires the record's fields, published by the marker's Release install. (On x86-64 and
    /// AArch64 a SeqCst load costs what an Acquire one does.)
    #[inline]
    pub(crate) fn load(&self) -> u64 {
        self.state.load(Ordering::SeqCst)
    }

    /// Applies `f` to the node's counts with a compare-and-swap loop: `f` returns the new counts
    /// (`None`: leave them) and a result. A write sets the reference bit (`TOUCHED`); a word that
    /// would not change is not written. A group operation in flight on the node is resolved
    /// first (decided or aborted, see [`crate::group`]), so `f` always sees counts that no
    /// in-flight operation can take back.
    #[inline]
    pub(crate) fn update<T>(
        &self,
        guard: &Guard<'_>,
        mut f: impl FnMut(Counts) -> (Option<Counts>, T),
    ) -> Update<T> {
        let mut word = self.load();
        loop {
            if word & MARKER != 0 {
                group::resolve(self, word, guard);
                word = self.load();
                continue;
            }
            if word & EVICTED != 0 {
                return Update::Evicted(state::counts(word));
            }
            let (next, out) = f(state::counts(word));
            // An access: the reference bit set in the same write.
            let Some(next) = next
                .map(|c| state::pack(c) | TOUCHED)
                .filter(|&next| next != word)
            else {
                // Nothing to change (`None`, or the counts as they are, already touched): no
                // write.
                return Update::Done(out);
            };
            // Release on success: every abort of a group that this thread performed before this
            // write (its AcqRel decision) happens before whatever a thread that acquires this
            // word does next. A group's drop no longer reads its own status after a key's word
            // (it is decided on a validated snapshot, `group::decide_drop`, which needs only the
            // words' modification orders), so this is kept as a margin, not cited by a rule.
            // The counts themselves need only the atomicity of the CAS. SeqCst on failure: the
            // newer word may be a marker (see `load`).
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::Release, Ordering::SeqCst)
            {
                Ok(_) => return Update::Done(out),
                Err(now) => word = now,
            }
        }
    }

    /// A CLOCK sweep passing the node: clears its reference bit, resolving a group operation on
    /// it first; an eviction's marker it hands back ([`Swept::Eviction`]: the caller helps that
    /// eviction instead of aborting it).
    pub(crate) fn sweep(&self, guard: &Guard<'_>) -> Swept {
        let mut word = self.load();
        loop {
            if word & MARKER != 0 {
                if let Some(op) = group::eviction_of(word, guard) {
                    return Swept::Eviction(op, word);
                }
                group::resolve(self, word, guard);
                word = self.load();
                continue;
            }
            if word & EVICTED != 0 {
                return Swept::Evicted;
            }
            if word & TOUCHED == 0 {
                return Swept::Victim(word);
            }
            // Relaxed on success: the bit publishes nothing, and a group's drop decision does
            // not depend on it: the counts a sweep leaves were written before it, by a write
            // that is Release if it came after an abort (`update`), which this read-modify-write
            // continues (its release sequence, C++20 [intro.races] p5). SeqCst on failure: as in
            // `update`.
            match self.state.compare_exchange_weak(
                word,
                word & !TOUCHED,
                Ordering::Relaxed,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Swept::Cleared,
                Err(now) => word = now,
            }
        }
    }

    /// The node's counts, resolving a group operation in flight (tests, the validator and
    /// eviction ranking). Also returns whether it is evicted.
    pub(crate) fn counts(&self, guard: &Guard<'_>) -> (Counts, bool) {
        match self.update(guard, |c| (None, c)) {
            Update::Done(c) => (c, false),
            Update::Evicted(c) => (c, true),
        }
    }
}
