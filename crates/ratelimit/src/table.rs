//! The unsafe core: one shard's lock-free, fixed-capacity table of key nodes.
//!
//! # Shape
//!
//! A shard is exactly `capacity` slots, each an atomic pointer to a heap [`Node`] that holds one
//! key (immutable), its packed [state word](crate::state) and its recency stamp. A key's *window*
//! is the `min(PROBE_WINDOW, capacity)` slots starting at its home slot (wrapping). Slots fill in
//! probe order and never return to null, so a lookup stops at the first null slot of the window.
//! When the window has no null slot, a new key replaces the best eviction candidate of the window
//! in place (dead first, then stale, then least recently used) with one compare-and-swap, and the
//! replaced node is retired through [`crate::reclaim`]. Probe chains never break, the table never
//! holds more than `capacity` nodes, and nothing on the hit path allocates.
//!
//! # Insertion protocol (no duplicate keys without a lock)
//!
//! Two threads that miss the same key at once may publish two nodes for it in different slots
//! (each replacing a different victim). Counting admissions on both would admit up to `2 L`, so a
//! node is published *Tentative* and counts nothing until it is promoted *Live*:
//!
//! 1. After publishing, and whenever a lookup meets a Tentative node of its key, a thread runs
//!    [`Shard::resolve`]: a `SeqCst` fence, then a scan of the key's window.
//! 2. If the scan sees a Live node of the key, every Tentative node of the key it saw is killed
//!    (compare-and-swap Tentative -> Dead).
//! 3. Otherwise the first Tentative node in probe order survives: the others are killed, and if
//!    all kills succeed the survivor is promoted (Tentative -> Live); if a kill fails because
//!    that node became Live meanwhile, the survivor is killed instead.
//!
//! Live and Dead are terminal, and every transition is a CAS on the node's state word, so at most
//! one Live node of a key is reachable: if threads `a` and `b` promote nodes `A` and `B`, each
//! fenced after the insertion of its node and before its scan; by the fence rule of the C++20
//! model (which Rust adopts), the thread whose fence is later in the total order of `SeqCst`
//! operations sees the other's node in its scan (or sees it already replaced), and then it kills
//! that node or its own instead of promoting. Dead nodes are free slots to the next insertion.
//! Every step is a bounded scan plus CAS, and the first Tentative node in probe order always
//! survives unless a Live one exists, so some thread always completes: the table is lock-free.

use crate::reclaim::Guard;
use crate::state::{self, Counts, Instant, Life, Limits};
use crate::sync::{AtomicPtr, AtomicU64, Ordering, fence};

/// Slots a key may live in, starting at its home slot: the eviction candidate set of large
/// shards (sampled LRU over 8 candidates). Shards of at most this many slots are searched
/// whole, which makes their eviction exact LRU.
pub(crate) const PROBE_WINDOW: usize = 8;

/// One tracked key.
pub(crate) struct Node {
    /// The key's 64-bit salted hash. Invariant: immutable after publication.
    key: u64,
    /// Packed life tag and counts (see [`crate::state`]). Invariant: only changed by CAS; once
    /// Live or Dead, the life tag never changes again.
    state: AtomicU64,
    /// Shard tick of the last access (bigger = more recent).
    last: AtomicU64,
    /// Loom test oracle: set by the reclamation stand-in when real reclamation could have freed
    /// the node. Not shared state of the algorithm, so a plain std atomic.
    #[cfg(loom)]
    poisoned: std::sync::atomic::AtomicBool,
}

impl Node {
    fn new(key: u64, at: Instant, tick: u64) -> Self {
        let counts = Counts {
            interval: at.interval,
            prev: 0,
            cur: 0,
        };
        Self {
            key,
            state: AtomicU64::new(state::pack(Life::Tentative, counts)),
            last: AtomicU64::new(tick),
            #[cfg(loom)]
            poisoned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Marks the node as reclaimed (loom stand-in only).
    #[cfg(loom)]
    pub(crate) fn poison(&self) {
        // SeqCst: a test oracle; loom runs one thread at a time, any ordering is exact here.
        self.poisoned
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Applies `f` to a Live node's counts with a CAS loop; `None` from `f` leaves it unchanged.
    /// Returns the words before and after the successful CAS.
    #[inline]
    fn update(&self, mut f: impl FnMut(Counts) -> Option<Counts>) -> Option<Reservation> {
        // Relaxed: the word is self-contained (no other memory is published through it); the
        // exactness of the counts needs only the atomicity of the CAS on this one location.
        let mut word = self.state.load(Ordering::Relaxed);
        loop {
            debug_assert_eq!(
                state::life(word),
                Life::Live,
                "counts change only on Live nodes"
            );
            let next = state::pack(Life::Live, f(state::counts(word))?);
            // Relaxed (success and failure): as above; a failed CAS returns the newer word.
            match self
                .state
                .compare_exchange_weak(word, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => {
                    return Some(Reservation {
                        before: word,
                        after: next,
                    });
                }
                Err(now) => word = now,
            }
        }
    }

    /// Counts one admission at `at` if the window allows it (FIX 2: check and increment are one
    /// CAS); returns the reservation, for [`Node::unadmit`].
    #[inline]
    pub(crate) fn try_admit(&self, at: Instant, limits: &Limits) -> Option<Reservation> {
        self.update(|c| state::admit(c, at, limits))
    }

    /// Takes back one admission (rollback of a dropped group, FIX 1). If nothing changed the word
    /// since, it gets back exactly its old value (the roll is undone too, so staleness is kept);
    /// else the admission is subtracted from wherever it now sits.
    pub(crate) fn unadmit(&self, r: Reservation) {
        // Relaxed (success and failure): as in `update`.
        if self
            .state
            .compare_exchange(r.after, r.before, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            let interval = state::counts(r.after).interval;
            self.update(|c| Some(state::unadmit(c, interval)));
        }
    }

    /// Adds one penalty at `at`.
    pub(crate) fn penalize(&self, at: Instant, limits: &Limits) {
        self.update(|c| Some(state::penalize(c, at, limits)));
    }

    /// The current counts (tests and the model comparison).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn counts(&self) -> Counts {
        // Relaxed: a snapshot of one self-contained word.
        state::counts(self.state.load(Ordering::Relaxed))
    }

    /// Kills a Tentative node. Returns `false` if the node is (or became) Live.
    fn kill(&self) -> bool {
        // Relaxed: the life tag is changed only by CAS, whose atomicity decides races; the
        // ordering with slot contents comes from the fence in `resolve`.
        let mut word = self.state.load(Ordering::Relaxed);
        loop {
            match state::life(word) {
                Life::Live => return false,
                Life::Dead => return true,
                Life::Tentative => {}
            }
            // Relaxed (success and failure): as above.
            match self.state.compare_exchange(
                word,
                state::with_life(word, Life::Dead),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => word = now,
            }
        }
    }

    /// Promotes a Tentative node to Live; fails harmlessly if another thread killed it.
    fn promote(&self) {
        // Relaxed: as in `kill`.
        let mut word = self.state.load(Ordering::Relaxed);
        while state::life(word) == Life::Tentative {
            // Relaxed (success and failure): as in `kill`.
            match self.state.compare_exchange(
                word,
                state::with_life(word, Life::Live),
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(now) => word = now,
            }
        }
    }
}

/// One admission counted on a node: the state words before and after its CAS.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Reservation {
    before: u64,
    after: u64,
}

/// What a window scan found for a key.
enum Found<'g> {
    /// The key's Live node.
    Live(&'g Node),
    /// A Tentative node of the key: run the protocol, then look again.
    Tentative,
    /// No node of the key: `slot` is where a new node goes, replacing `expected` (null, or the
    /// best eviction candidate of the window).
    Missing { slot: usize, expected: *mut Node },
}

/// One shard: a fixed-capacity table plus its recency clock and statistics.
pub(crate) struct Shard {
    /// Invariants: `slots.len() == capacity >= 2`; a slot never returns to null once filled; a
    /// node is published in one slot, once, and retired exactly once, by the thread whose CAS
    /// replaced it.
    slots: Box<[AtomicPtr<Node>]>,
    /// `min(PROBE_WINDOW, capacity)`.
    window: usize,
    /// Recency clock: every access takes the next tick (exact LRU order within the shard when
    /// single-threaded).
    tick: AtomicU64,
    /// Nodes evicted from this shard.
    pub(crate) evicted: AtomicU64,
}

impl Shard {
    /// An empty shard of `capacity` slots.
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!(capacity >= 2);
        Self {
            slots: (0..capacity)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            window: capacity.min(PROBE_WINDOW),
            tick: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    /// The key's home slot: the high bits of `key * capacity` (keys are uniform blake2b output).
    #[inline]
    fn home(&self, key: u64) -> usize {
        ((u128::from(key) * self.slots.len() as u128) >> 64) as usize
    }

    /// The next recency tick.
    ///
    /// A load and a store, not a read-modify-write: single-threaded the ticks are distinct and
    /// increasing (exact LRU); racing threads may draw the same tick, which only makes their
    /// keys' recency tie (LRU under concurrency is approximate anyway), and keeps a locked
    /// instruction on a line every thread of the shard writes off the hit path.
    #[inline]
    fn next_tick(&self) -> u64 {
        // Relaxed (load and store): no memory is published through the tick; only its own
        // per-location order matters.
        let tick = self.tick.load(Ordering::Relaxed) + 1;
        self.tick.store(tick, Ordering::Relaxed);
        tick
    }

    /// Turns a pointer loaded through `guard` into a reference that lives as long as the guard.
    ///
    /// # Safety
    ///
    /// `ptr` is non-null and was loaded through `guard` from a slot of this table.
    #[inline]
    unsafe fn deref<'g>(&self, ptr: *mut Node, _guard: &'g Guard<'_>) -> &'g Node {
        // SAFETY: (1) published nodes come from `Box::into_raw` and are only freed by the
        // collector after being retired; (2) the caller loaded `ptr` through `guard`, so the
        // collector frees it only after `guard` (and so `'g`) ends; (3) nodes are only accessed
        // through shared references and atomics after publication.
        let node = unsafe { &*ptr };
        #[cfg(loom)]
        assert!(
            !node.poisoned.load(std::sync::atomic::Ordering::SeqCst),
            "touched a node after reclamation could have freed it"
        );
        node
    }

    /// Scans `key`'s window once.
    fn find<'g>(&self, key: u64, home: usize, at: Instant, guard: &'g Guard<'_>) -> Found<'g> {
        let len = self.slots.len();
        let mut best: Option<(usize, *mut Node, (u8, u64))> = None;
        let mut slot = home;
        for _ in 0..self.window {
            // Acquire: pairs with the Release of the CAS that published the node, so its key and
            // initial state are visible before we read them.
            let ptr = guard.protect(&self.slots[slot], Ordering::Acquire);
            if ptr.is_null() {
                return Found::Missing {
                    slot,
                    expected: ptr,
                };
            }
            // SAFETY: non-null, loaded through `guard` from our slot.
            let node = unsafe { self.deref(ptr, guard) };
            // Relaxed: the life tag and counts are a self-contained word.
            let word = node.state.load(Ordering::Relaxed);
            let life = state::life(word);
            if node.key == key {
                match life {
                    Life::Live => return Found::Live(node),
                    Life::Tentative => return Found::Tentative,
                    Life::Dead => {}
                }
            }
            // Eviction rank: dead nodes are free; then stale keys (interval older than the
            // previous one, their state is worth nothing); then the least recently used.
            let rank = match life {
                Life::Dead => (0, 0),
                // Relaxed: recency is a heuristic stamp; no memory is published through it.
                _ if state::is_stale(state::counts(word), at) => {
                    (1, node.last.load(Ordering::Relaxed))
                }
                // Relaxed: as above.
                _ => (2, node.last.load(Ordering::Relaxed)),
            };
            if best.is_none_or(|(_, _, r)| rank < r) {
                best = Some((slot, ptr, rank));
            }
            slot += 1;
            if slot == len {
                slot = 0;
            }
        }
        let (slot, expected, _) = best.expect("the window has at least two slots");
        Found::Missing { slot, expected }
    }

    /// Returns `key`'s Live node, inserting it (evicting if its window is full) if missing, and
    /// refreshes its recency.
    pub(crate) fn get_or_insert<'g>(
        &self,
        key: u64,
        at: Instant,
        guard: &'g Guard<'_>,
    ) -> &'g Node {
        let home = self.home(key);
        // A node allocated for an insertion whose CAS failed, reused by the retry.
        let mut spare: Option<Box<Node>> = None;
        loop {
            match self.find(key, home, at, guard) {
                Found::Live(node) => {
                    // Relaxed: recency is a heuristic stamp; no memory is published through it.
                    node.last.store(self.next_tick(), Ordering::Relaxed);
                    return node;
                }
                Found::Tentative => self.resolve(key, home, guard),
                Found::Missing { slot, expected } => {
                    let fresh = Node::new(key, at, self.next_tick());
                    let boxed = match spare.take() {
                        Some(mut b) => {
                            *b = fresh;
                            b
                        }
                        None => Box::new(fresh),
                    };
                    let new = Box::into_raw(boxed);
                    // AcqRel on success: Release publishes the node's key and initial state to
                    // the Acquire loads in `find`; Acquire orders our later reads of `expected`
                    // after its own publication. Relaxed on failure: we only retry.
                    match self.slots[slot].compare_exchange(
                        expected,
                        new,
                        Ordering::AcqRel,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => {
                            if !expected.is_null() {
                                // SAFETY: non-null, loaded through `guard` in `find`.
                                let old = unsafe { self.deref(expected, guard) };
                                // Relaxed: a statistic (was the victim a real key?).
                                if state::life(old.state.load(Ordering::Relaxed)) != Life::Dead {
                                    // Relaxed: a statistic.
                                    self.evicted.fetch_add(1, Ordering::Relaxed);
                                }
                                // SAFETY: (1) `expected` was published from `Box::into_raw` and
                                // our CAS is the one that unlinked it, so it is retired once;
                                // (2) slots never hold a node twice, so after the CAS no thread
                                // entering later can load it.
                                unsafe { guard.defer_retire(expected) };
                            }
                            self.resolve(key, home, guard);
                        }
                        Err(_) => {
                            // SAFETY: the CAS failed, so `new` was never published: the box is
                            // still ours alone.
                            spare = Some(unsafe { Box::from_raw(new) });
                        }
                    }
                }
            }
        }
    }

    /// Steps 1 to 3 of the insertion protocol (module docs) for `key`.
    fn resolve(&self, key: u64, home: usize, guard: &Guard<'_>) {
        // SeqCst fence: puts this scan after our own (or the helped thread's) publication in the
        // single total order of SeqCst operations, so that of two threads promoting different
        // nodes of one key, the later one's scan sees the other node (module docs).
        fence(Ordering::SeqCst);
        let len = self.slots.len();
        let mut nodes: [Option<&Node>; PROBE_WINDOW] = [None; PROBE_WINDOW];
        let mut n = 0;
        let mut any_live = false;
        let mut slot = home;
        for _ in 0..self.window {
            // Acquire: as in `find`.
            let ptr = guard.protect(&self.slots[slot], Ordering::Acquire);
            if ptr.is_null() {
                break;
            }
            // SAFETY: non-null, loaded through `guard` from our slot.
            let node = unsafe { self.deref(ptr, guard) };
            if node.key == key {
                // Relaxed: the life tag is decided by CAS; see `kill`.
                match state::life(node.state.load(Ordering::Relaxed)) {
                    Life::Live => any_live = true,
                    Life::Tentative => {
                        nodes[n] = Some(node);
                        n += 1;
                    }
                    Life::Dead => {}
                }
            }
            slot += 1;
            if slot == len {
                slot = 0;
            }
        }
        let mut tentative = nodes[..n].iter().flatten();
        if any_live {
            for node in tentative {
                // A failed kill is not a duplicate: the scan is not atomic, so the Live node we
                // saw may have been evicted since and this one promoted by its publisher.
                node.kill();
            }
            return;
        }
        let Some(survivor) = tentative.next() else {
            return;
        };
        for node in tentative {
            if !node.kill() {
                // That node went Live after our scan: ours must not.
                // (A failed kill here is legal for the same reason as above.)
                survivor.kill();
                return;
            }
        }
        survivor.promote();
    }

    /// Live keys in this shard (a full scan: O(capacity)).
    pub(crate) fn entries(&self, guard: &Guard<'_>) -> usize {
        self.live_keys(guard).count()
    }

    /// The hashes of the Live keys in this shard, in slot order.
    pub(crate) fn live_keys<'g>(&'g self, guard: &'g Guard<'_>) -> impl Iterator<Item = u64> + 'g {
        self.slots.iter().filter_map(move |slot| {
            // Acquire: as in `find`.
            let ptr = guard.protect(slot, Ordering::Acquire);
            if ptr.is_null() {
                return None;
            }
            // SAFETY: non-null, loaded through `guard` from our slot.
            let node = unsafe { self.deref(ptr, guard) };
            // Relaxed: a snapshot of a self-contained word.
            (state::life(node.state.load(Ordering::Relaxed)) == Life::Live).then_some(node.key)
        })
    }

    /// The Live node of `key`, if tracked (no insertion, no recency refresh).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn get<'g>(&self, key: u64, guard: &'g Guard<'_>) -> Option<&'g Node> {
        let at = Instant {
            interval: 0,
            offset: 0,
        };
        match self.find(key, self.home(key), at, guard) {
            Found::Live(node) => Some(node),
            _ => None,
        }
    }
}

impl Drop for Shard {
    fn drop(&mut self) {
        for slot in self.slots.iter() {
            // Relaxed: `&mut self`, no other thread can touch the table any more.
            let ptr = slot.load(Ordering::Relaxed);
            if !ptr.is_null() {
                // SAFETY: `&mut self` means no guard of this limiter is alive; a node in a slot
                // was never retired (slot invariant), so this is its only owner.
                drop(unsafe { Box::from_raw(ptr) });
            }
        }
    }
}
