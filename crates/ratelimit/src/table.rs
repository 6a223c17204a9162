//! The unsafe core: one shard's lock-free, fixed-capacity table of key nodes.
//!
//! # Shape
//!
//! A shard holds at most `capacity` keys in `SLOTS_PER_KEY x capacity` slots, each an atomic
//! pointer to a heap [`Node`] that holds one key (immutable), its packed [state
//! word](crate::state) and its recency stamp. A key's *window* is the `min(PROBE_WINDOW, slots)`
//! slots starting at its home slot (wrapping); a key lives only in its window, and lookups scan
//! the whole window (null slots do not end a scan, so taking a node out never hides another).
//! A count of the nodes in the table (`occupied`), reserved before a null slot is filled, keeps
//! the shard at `capacity` nodes at most. A new key:
//!
//! - takes a null slot of its window if it can reserve room, so eviction waits until the shard
//!   is full (except when all 16 window slots are taken while half the shard's slots are free:
//!   rare, and measured by the `bytes_per_key` example);
//! - else replaces the best eviction candidate of its window in place (dead first, then stale,
//!   then least recently used) with one compare-and-swap; the replaced node is retired through
//!   [`crate::reclaim`];
//! - if the shard is full and its window holds no node, first takes the best candidate of the
//!   following nodes out of the table, then retries; if the table holds no node at all (all
//!   its room is reserved by insertions in flight), the key is decided on a node that is never
//!   published (as a new key, forgotten at once) rather than waiting for those threads.
//!
//! Nothing on the hit path allocates.
//!
//! # Insertion protocol (no duplicate keys without a lock)
//!
//! Two threads that miss the same key at once may publish two nodes for it in different slots.
//! Counting admissions on both would admit up to `2 L`, so a node is published *Tentative* and
//! counts nothing until it is promoted *Live*:
//!
//! 1. After publishing, and whenever a lookup meets a Tentative node of its key, a thread runs
//!    [`Shard::resolve`]: a `SeqCst` fence, then a scan of the key's window.
//! 2. If the scan sees a Live node of the key, every Tentative node of the key it saw is killed
//!    (compare-and-swap Tentative -> Dead) and taken out of its slot.
//! 3. Otherwise the first Tentative node in probe order is the survivor. A thread may promote
//!    only a node it loaded (or published) *before its latest fence*; if the survivor is not
//!    such a node, the thread fences again and rescans (the survivor is then known). It kills
//!    the others, and if all kills succeed it promotes the survivor (Tentative -> Live); if a
//!    kill fails because that node became Live meanwhile, it kills the survivor instead.
//!
//! Live and Dead are terminal, and every transition is a CAS on the node's state word, so at most
//! one Live node of a key is reachable. Suppose threads `x` and `y` promote nodes `X` and `Y`;
//! `X`'s publication happens before `x`'s last fence `Fx` (step 3), likewise for `Y` and `Fy`;
//! say `Fx` precedes `Fy` in the total order of `SeqCst` operations. By the fence rule of the
//! C++20 model (\[atomics.order\] p4.4, which Rust adopts), `y`'s scan after `Fy` reads `X`'s
//! slot at or after `X`'s publication: it sees `X` (Tentative: `y` kills `X` or, failing, `Y`;
//! Live: `y` kills `Y`; Dead: `X` is never promoted) or sees `X` already taken out of the table.
//! So `X` and `Y` are never both Live in the table. (The first version let a thread promote a
//! survivor published *after* its fence, for which this argument fails with three threads; the
//! `three_threads_insert_one_key` loom model races three insertions of one key in one window.)
//! Every step is a bounded scan plus CAS. A rescan happens only after another thread published a
//! node of the key; the Tentative node first in probe order is promoted by whichever thread
//! resolves it with the node known, unless it is evicted (another key's insertion, which
//! completed), so some thread always completes: the table is lock-free.

use crate::reclaim::Guard;
use crate::state::{self, Counts, Instant, Life, Limits};
use crate::sync::{AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence};

/// Slots a key may live in, starting at its home slot: the eviction candidate set of large
/// shards (sampled LRU over the nodes of 16 slots, about 8 when the shard is full). Shards of at
/// most this many slots (capacity 8) are searched whole, which makes their eviction exact LRU.
pub(crate) const PROBE_WINDOW: usize = 16;

/// Slots per key of capacity. At most half the slots hold nodes, so a new key's window almost
/// always has a null slot while its shard has room: eviction happens when the shard is full
/// (measured by the `bytes_per_key` example: see the crate docs). Costs 8 bytes per key.
pub(crate) const SLOTS_PER_KEY: usize = 2;

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
    /// The first Tentative node of the key in probe order: run the protocol, then look again.
    Tentative(*mut Node),
    /// No node of the key: the first null slot of the window (if any) and the best eviction
    /// candidate of the window (if any node is there).
    Missing {
        free: Option<usize>,
        victim: Option<(usize, *mut Node)>,
    },
}

/// Eviction rank of a node (smaller = evicted first): dead nodes are free; then stale keys
/// (interval older than the previous one: their state is worth nothing); then the least recently
/// used.
#[inline]
fn eviction_rank(node: &Node, word: u64, at: Instant) -> (u8, u64) {
    match state::life(word) {
        Life::Dead => (0, 0),
        // Relaxed: recency is a heuristic stamp; no memory is published through it.
        _ if state::is_stale(state::counts(word), at) => (1, node.last.load(Ordering::Relaxed)),
        // Relaxed: as above.
        _ => (2, node.last.load(Ordering::Relaxed)),
    }
}

/// One shard: a fixed table of `SLOTS_PER_KEY x capacity` slots, the count of nodes in it, its
/// recency clock and statistics.
pub(crate) struct Shard {
    /// Invariants: `slots.len() == SLOTS_PER_KEY * capacity`; a node is published in one slot,
    /// once, and retired exactly once, by the thread whose CAS took it out of its slot.
    slots: Box<[AtomicPtr<Node>]>,
    /// Most nodes the shard holds (`max_size / shards`, at least 2).
    capacity: usize,
    /// `min(PROBE_WINDOW, slots.len())`.
    window: usize,
    /// Nodes in slots, of any life, plus insertions that reserved room and have not published
    /// yet. Reserved (`reserve`) before a node fills a null slot, released after one is taken
    /// out of its slot or when the insertion's CAS fails. Invariant: `capacity >= occupied >=`
    /// the number of non-null slots, so the table never holds more than `capacity` nodes (and
    /// so never more than `capacity` Live keys).
    occupied: AtomicUsize,
    /// Recency clock: every access takes the next tick (exact LRU order within the shard when
    /// single-threaded).
    tick: AtomicU64,
    /// Nodes evicted from this shard.
    pub(crate) evicted: AtomicU64,
}

impl Shard {
    /// An empty shard holding at most `capacity` keys.
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!(capacity >= 2);
        let len = capacity.saturating_mul(SLOTS_PER_KEY);
        Self {
            slots: (0..len)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            capacity,
            window: len.min(PROBE_WINDOW),
            occupied: AtomicUsize::new(0),
            tick: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    /// The key's home slot: the high bits of `key * slots` (keys are uniform blake2b output).
    #[inline]
    fn home(&self, key: u64) -> usize {
        ((u128::from(key) * self.slots.len() as u128) >> 64) as usize
    }

    /// The slot after `slot`, wrapping.
    #[inline]
    fn next(&self, slot: usize) -> usize {
        if slot + 1 == self.slots.len() {
            0
        } else {
            slot + 1
        }
    }

    /// The next recency tick.
    ///
    /// A load and a store, not a read-modify-write: single-threaded the ticks are distinct and
    /// increasing (exact LRU); racing threads may draw the same tick, and a stalled thread's
    /// store may even move the clock back, which only perturbs the LRU heuristic (LRU under
    /// concurrency is approximate anyway); in exchange no locked instruction hits a line every
    /// thread of the shard writes on the hit path.
    #[inline]
    fn next_tick(&self) -> u64 {
        // Relaxed (load and store): no memory is published through the tick; only its own
        // per-location order matters.
        let tick = self.tick.load(Ordering::Relaxed) + 1;
        self.tick.store(tick, Ordering::Relaxed);
        tick
    }

    /// Reserves room for one more node; `false` when the shard is full.
    #[inline]
    fn reserve(&self) -> bool {
        // Relaxed: the count publishes no memory; the atomicity of the read-modify-write alone
        // keeps `occupied <= capacity`.
        self.occupied
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < self.capacity).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives back a reservation, or the room of a node taken out of its slot.
    #[inline]
    fn release(&self) {
        // Relaxed: as in `reserve`.
        self.occupied.fetch_sub(1, Ordering::Relaxed);
    }

    /// A Live node for `key` that is not in the table (retired at once, so it lives exactly as
    /// long as `guard`): the answer when the shard is full of insertions still in flight. The
    /// key is decided as a new key and forgotten, as if evicted at once.
    #[cold]
    fn untracked<'g>(&self, key: u64, at: Instant, guard: &'g Guard<'_>) -> &'g Node {
        let node = Node::new(key, at, self.next_tick());
        // Relaxed: the node is ours alone until this function returns it.
        node.state.store(
            state::with_life(node.state.load(Ordering::Relaxed), Life::Live),
            Ordering::Relaxed,
        );
        let ptr = Box::into_raw(Box::new(node));
        // SAFETY: (1) `ptr` comes from `Box::into_raw` and is retired once, here; (2) it was
        // never published, so no thread can load it. The collector frees it only after `guard`
        // is dropped, so the reference below lives long enough.
        unsafe { guard.defer_retire(ptr) };
        // SAFETY: `ptr` is live until `guard` drops (above); nodes are only shared immutably.
        unsafe { &*ptr }
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

    /// Takes `ptr` out of `slot` (if it is still there), frees its room and retires it. Returns
    /// whether this call took it out.
    fn unlink(&self, slot: usize, ptr: *mut Node, guard: &Guard<'_>) -> bool {
        // AcqRel on success: Acquire orders our retirement after the node's publication; Release
        // is not needed by readers (null publishes nothing) but keeps the slot's history simple.
        // Relaxed on failure: someone else took the node out, and retires it.
        if self.slots[slot]
            .compare_exchange(
                ptr,
                std::ptr::null_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            return false;
        }
        self.release();
        // SAFETY: (1) `ptr` was published from `Box::into_raw` and our CAS is the one that took
        // it out of its only slot, so it is retired once; (2) a node is published in one slot,
        // once, so no thread entering after the CAS can load it.
        unsafe { guard.defer_retire(ptr) };
        true
    }

    /// Scans `key`'s whole window once.
    fn find<'g>(&self, key: u64, home: usize, at: Instant, guard: &'g Guard<'_>) -> Found<'g> {
        let mut free = None;
        let mut best: Option<(usize, *mut Node, (u8, u64))> = None;
        let mut slot = home;
        for _ in 0..self.window {
            // Acquire: pairs with the Release of the CAS that published the node, so its key and
            // initial state are visible before we read them.
            let ptr = guard.protect(&self.slots[slot], Ordering::Acquire);
            if ptr.is_null() {
                free = free.or(Some(slot));
            } else {
                // SAFETY: non-null, loaded through `guard` from our slot.
                let node = unsafe { self.deref(ptr, guard) };
                // Relaxed: the life tag and counts are a self-contained word.
                let word = node.state.load(Ordering::Relaxed);
                if node.key == key {
                    match state::life(word) {
                        Life::Live => return Found::Live(node),
                        Life::Tentative => return Found::Tentative(ptr),
                        Life::Dead => {}
                    }
                }
                let rank = eviction_rank(node, word, at);
                if best.is_none_or(|(_, _, r)| rank < r) {
                    best = Some((slot, ptr, rank));
                }
            }
            slot = self.next(slot);
        }
        Found::Missing {
            free,
            victim: best.map(|(slot, ptr, _)| (slot, ptr)),
        }
    }

    /// Takes one node out of a full shard whose new key found no node in its window: the best
    /// eviction candidate among the first `window` nodes from `home` on. Returns `false` if the
    /// table holds no node at all (its room is all reserved by insertions in flight).
    fn make_room(&self, home: usize, at: Instant, guard: &Guard<'_>) -> bool {
        loop {
            let mut best: Option<(usize, *mut Node, (u8, u64))> = None;
            let mut seen = 0;
            let mut slot = home;
            for _ in 0..self.slots.len() {
                // Acquire: as in `find`.
                let ptr = guard.protect(&self.slots[slot], Ordering::Acquire);
                if !ptr.is_null() {
                    // SAFETY: non-null, loaded through `guard` from our slot.
                    let node = unsafe { self.deref(ptr, guard) };
                    // Relaxed: as in `find`.
                    let word = node.state.load(Ordering::Relaxed);
                    let rank = eviction_rank(node, word, at);
                    if best.is_none_or(|(_, _, r)| rank < r) {
                        best = Some((slot, ptr, rank));
                    }
                    seen += 1;
                    if seen == self.window {
                        break;
                    }
                }
                slot = self.next(slot);
            }
            let Some((slot, ptr, rank)) = best else {
                return false;
            };
            if self.unlink(slot, ptr, guard) {
                if rank.0 != 0 {
                    // Relaxed: a statistic.
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                }
                return true;
            }
            // Another thread changed that slot: it made progress; look again.
        }
    }

    /// Returns `key`'s Live node, inserting it if missing (evicting only if the shard is full,
    /// or, rarely, if the key's whole window is taken), and refreshes its recency.
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
            let (slot, expected, reserved) = match self.find(key, home, at, guard) {
                Found::Live(node) => {
                    // Relaxed: recency is a heuristic stamp; no memory is published through it.
                    node.last.store(self.next_tick(), Ordering::Relaxed);
                    return node;
                }
                Found::Tentative(seen) => {
                    self.resolve(key, home, seen, guard);
                    continue;
                }
                Found::Missing { free, victim } => match (free, victim) {
                    (Some(slot), _) if self.reserve() => (slot, std::ptr::null_mut(), true),
                    (_, Some((slot, ptr))) => (slot, ptr, false),
                    // Full, and no node in the window: evict elsewhere, then look again.
                    _ if self.make_room(home, at, guard) => continue,
                    // Every counted place is an insertion still in flight (their nodes are not
                    // in the table yet): do not wait for them.
                    _ => return self.untracked(key, at, guard),
                },
            };
            let fresh = Node::new(key, at, self.next_tick());
            let boxed = match spare.take() {
                Some(mut b) => {
                    *b = fresh;
                    b
                }
                None => Box::new(fresh),
            };
            let new = Box::into_raw(boxed);
            // AcqRel on success: Release publishes the node's key and initial state to the
            // Acquire loads in `find`; Acquire orders our later reads of `expected` after its
            // own publication. Relaxed on failure: we only retry.
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
                        // SAFETY: (1) `expected` was published from `Box::into_raw` and our
                        // CAS is the one that took it out of its only slot, so it is retired
                        // once; (2) a node is published in one slot, once, so no thread
                        // entering after the CAS can load it.
                        unsafe { guard.defer_retire(expected) };
                    }
                    self.resolve(key, home, new, guard);
                }
                Err(_) => {
                    if reserved {
                        self.release();
                    }
                    // SAFETY: the CAS failed, so `new` was never published: the box is still
                    // ours alone.
                    spare = Some(unsafe { Box::from_raw(new) });
                }
            }
        }
    }

    /// Steps 1 to 3 of the insertion protocol (module docs) for `key`; `seen` is a Tentative
    /// node of the key that this thread published or loaded before calling.
    fn resolve(&self, key: u64, home: usize, seen: *mut Node, guard: &Guard<'_>) {
        // Nodes this thread loaded before its latest fence: the only ones it may promote.
        let mut known: [*mut Node; PROBE_WINDOW] = [std::ptr::null_mut(); PROBE_WINDOW];
        known[0] = seen;
        let mut known_len = 1;
        loop {
            // SeqCst fence: puts this scan after the publication of every node in `known` in
            // the single total order of SeqCst operations, so that of two threads promoting
            // different nodes of one key, the later one's scan sees the other node (module
            // docs).
            fence(Ordering::SeqCst);
            let mut tentative: [(usize, *mut Node); PROBE_WINDOW] =
                [(0, std::ptr::null_mut()); PROBE_WINDOW];
            let mut n = 0;
            let mut any_live = false;
            let mut slot = home;
            for _ in 0..self.window {
                // Acquire: as in `find`.
                let ptr = guard.protect(&self.slots[slot], Ordering::Acquire);
                if !ptr.is_null() {
                    // SAFETY: non-null, loaded through `guard` from our slot.
                    let node = unsafe { self.deref(ptr, guard) };
                    if node.key == key {
                        // Relaxed: the life tag is decided by CAS; see `kill`.
                        match state::life(node.state.load(Ordering::Relaxed)) {
                            Life::Live => any_live = true,
                            Life::Tentative => {
                                tentative[n] = (slot, ptr);
                                n += 1;
                            }
                            Life::Dead => {}
                        }
                    }
                }
                slot = self.next(slot);
            }
            let tentative = &tentative[..n];
            let kill = |&(slot, ptr): &(usize, *mut Node)| {
                // SAFETY: non-null, loaded through `guard` from our slot in the scan above.
                let killed = unsafe { self.deref(ptr, guard) }.kill();
                if killed {
                    self.unlink(slot, ptr, guard);
                }
                killed
            };
            if any_live {
                for t in tentative {
                    // A failed kill is not a duplicate: the scan is not atomic, so the Live node
                    // we saw may have been evicted since and this one promoted by a thread that
                    // fenced after that.
                    kill(t);
                }
                return;
            }
            let Some((survivor, others)) = tentative.split_first() else {
                return;
            };
            if !known[..known_len].contains(&survivor.1) {
                // The first Tentative node may have been published after our fence: promoting
                // it could race a promoter whose scan missed ours. Fence again: everything we
                // just loaded is then known.
                for (k, &(_, ptr)) in known.iter_mut().zip(tentative) {
                    *k = ptr;
                }
                known_len = n;
                continue;
            }
            let mut live_other = false;
            for other in others {
                // A failed kill: that node went Live after our scan, so ours must not; the
                // remaining ones are still killed, so that none is left Tentative behind a Live
                // node (where no lookup would reach it).
                live_other |= !kill(other);
            }
            if live_other {
                kill(survivor);
                return;
            }
            // SAFETY: non-null, loaded through `guard` from our slot in the scan above.
            unsafe { self.deref(survivor.1, guard) }.promote();
            return;
        }
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
