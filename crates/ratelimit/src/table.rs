//! The unsafe core: one shard's lock-free, set-associative table of key nodes.
//!
//! # Shape
//!
//! A shard of capacity `C` is `S` sets of `W` ways; a key lives only in its set (the high bits of
//! its hash pick it), in one of the set's ways. Each way is a slot: an atomic pointer to a heap
//! [`Node`] (key, packed counts), with the key's low 16 bits kept in the pointer's unused top 16
//! bits as a tag, so a scan dereferences only nodes whose tag matches. Ways fill in order and are
//! never emptied again (an eviction replaces a node in place), so a set's nodes are a prefix of
//! its ways and a scan stops at the first empty way.
//!
//! - Shards of up to [`SMALL_SHARD`] keys are one set of `W = C` ways, searched whole: a new key
//!   evicts only when the shard holds `C` keys, and the victim is exactly the model's (a stale
//!   key first, then the least recently used, by a per-way recency stamp).
//! - Larger shards have `W = 32` and two ways per key of capacity (`S = ceil(2 C / 32)`). Each set
//!   may always hold one key; beyond that a new key takes a unit of the shard's spare room (`C -
//!   S` units). A new key evicts when no unit is left, or when its set's 32 ways are all taken
//!   while units remain (an early eviction: a set with twice the mean load; measured by the
//!   `bytes_per_key` example). The victim is chosen by CLOCK (second chance) over the set's ways:
//!   a reference bit per way is set on access (only when clear, so hits rarely write) and cleared
//!   as the hand passes.
//!
//! # Insertion: one claim per set
//!
//! Every change of a set's membership goes through the set's *claim word*. While no insertion is
//! in flight it holds `free(X)`, the address of the last insertion's node `X` with its low bit
//! set (or `free(null)`); an insertion publishes itself by replacing that word with its new node
//! `N` (compare-and-swap), then places `N` in its way, then frees the word (`free(N)`).
//!
//! A thread that misses a key reads the claim word, and if it is free it scans the set and plans:
//! the way (the first empty one, or a victim) and the node. Its compare-and-swap of the claim
//! word succeeds only if the word still holds the `free(X)` it read, i.e. no insertion into the
//! set completed or began since: the scan it planned on is still the set's state, so the key is
//! still missing and the plan still valid. Two insertions of one key cannot both succeed (the
//! second's claim fails, and its rescan finds the first's node): duplicates cannot arise.
//! `free(X)` cannot recur while the planner's guard is alive: `X` is in the table while it is
//! the last insertion, so it is retired only after the planner entered, and its address is not
//! reused before the planner's guard drops.
//!
//! The plan is carried out by whoever meets the claim: the owner, or any thread that needs the
//! set (it completes the insertion before planning its own), so no thread waits for another.
//! Completing reads the way's slot `v` and then checks that the claim word still holds `N`; if
//! so, `v` is the victim (or empty) of `N`'s plan, or `N` itself. The victim is marked evicted
//! (terminal: a stale reader's later compare-and-swap on it fails, and it looks the key up
//! again), the slot is switched from `v` to `N` (one thread succeeds, and it retires `v`), and
//! the claim word is freed. Every step is a compare-and-swap that succeeds at most once, so a
//! late helper changes nothing.
//!
//! A new node is born holding its key's first admission (or penalty), so a single-key admission
//! of a new key costs the claim, the slot switch and the release of the claim.
//!
//! Nothing on the hit path allocates.

use txgate_sync::reclaim::Guard;
use txgate_sync::sync::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::node::Node;
use crate::state::{self, Counts, Instant};

/// Shards of at most this many keys are one set searched whole (exact LRU, never an early
/// eviction).
pub(crate) const SMALL_SHARD: usize = 64;
/// Ways per set of a larger shard.
const WAYS: usize = 32;
/// Ways per key of capacity in a larger shard.
const WAYS_PER_KEY: usize = 2;

/// Bit position of the key tag in a slot pointer (64-bit targets: user-space addresses are below
/// 2^48 on x86-64, AArch64 and the other 64-bit targets Rust supports without pointer tagging).
#[cfg(target_pointer_width = "64")]
const TAG_SHIFT: u32 = 48;

/// The slot value of `node` (key `key`): the pointer with the key's tag in its top bits.
#[inline]
fn tagged(node: *mut Node, key: u64) -> *mut Node {
    #[cfg(target_pointer_width = "64")]
    {
        node.map_addr(|a| a | ((key as u16 as usize) << TAG_SHIFT))
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        let _ = key;
        node
    }
}

/// The node pointer of a slot value.
#[inline]
fn untag(slot: *mut Node) -> *mut Node {
    #[cfg(target_pointer_width = "64")]
    {
        slot.map_addr(|a| a & ((1 << TAG_SHIFT) - 1))
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        slot
    }
}

/// Whether a slot value may hold `key` (its tag matches; always, without tags).
#[inline]
fn may_hold(slot: *mut Node, key: u64) -> bool {
    #[cfg(target_pointer_width = "64")]
    {
        slot.addr() >> TAG_SHIFT == key as u16 as usize
    }
    #[cfg(not(target_pointer_width = "64"))]
    {
        let _ = (slot, key);
        true
    }
}

/// `free(x)`: the claim word of a set whose last insertion was `x`.
#[inline]
fn free(x: *mut Node) -> *mut Node {
    x.map_addr(|a| a | 1)
}

/// Whether a claim word is an insertion in flight (an untagged node pointer) rather than free.
#[inline]
fn is_claim(word: *mut Node) -> bool {
    word.addr() & 1 == 0
}

/// One set's claim word and replacement state.
struct Set {
    /// `N` while node `N`'s insertion is in flight, else `free(X)` (module docs). Invariant:
    /// every change of the set's slots happens while it holds the claim of that change.
    claim: AtomicPtr<Node>,
    /// CLOCK reference bits of larger shards, bit `w` for way `w` (a heuristic: races only
    /// perturb the victim choice).
    referenced: AtomicU64,
    /// CLOCK hand of larger shards: the way the next victim search starts at.
    hand: AtomicU32,
}

/// What [`Shard::get_or_insert`] found.
pub(crate) struct Got<'g> {
    /// The key's node.
    pub(crate) node: &'g Node,
    /// Whether this call inserted it (born with the `born` counts).
    pub(crate) inserted: bool,
    /// The node this call's own insertion replaced, if any (it is evicted).
    pub(crate) victim: Option<*const Node>,
    /// Nodes this call marked evicted (its own insertion's victim, or one of an insertion it
    /// completed for another thread).
    pub(crate) evicted: u32,
}

/// One shard: `sets x ways` slots, the claim words, room accounting and recency.
pub(crate) struct Shard {
    /// Invariants: a node is published in one slot, once, and retired exactly once, by the
    /// thread whose compare-and-swap took it out of that slot; each set's non-null slots are a
    /// prefix of its ways.
    slots: Box<[AtomicPtr<Node>]>,
    sets: Box<[Set]>,
    /// Ways per set.
    ways: usize,
    /// Most keys the shard holds (`max_size / shards`, at least 2).
    capacity: usize,
    /// Larger shards: units of room beyond each set's first key. Taken before an insertion that
    /// adds a key to a set that has one; given back if that insertion's claim fails; never given
    /// back otherwise (keys are only ever replaced). Invariant (quiescent): `spare == capacity -
    /// sets - sum over sets of max(0, keys - 1)`.
    spare: AtomicUsize,
    /// Keys tracked (exact when no insertion is in flight).
    entries: AtomicUsize,
    /// Small shards: the recency stamp of each way (the shard clock at its last access).
    stamps: Box<[AtomicU64]>,
    /// Small shards: the recency clock.
    tick: AtomicU64,
}

impl Shard {
    /// An empty shard holding at most `capacity` keys.
    pub(crate) fn new(capacity: usize) -> Self {
        debug_assert!(capacity >= 2);
        let (sets, ways) = if capacity <= SMALL_SHARD {
            (1, capacity)
        } else {
            ((capacity * WAYS_PER_KEY).div_ceil(WAYS), WAYS)
        };
        let small = sets == 1;
        Self {
            slots: (0..sets * ways)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            sets: (0..sets)
                .map(|_| Set {
                    claim: AtomicPtr::new(free(std::ptr::null_mut())),
                    referenced: AtomicU64::new(0),
                    hand: AtomicU32::new(0),
                })
                .collect(),
            ways,
            capacity,
            spare: AtomicUsize::new(if small { 0 } else { capacity - sets }),
            entries: AtomicUsize::new(0),
            stamps: (0..if small { ways } else { 0 })
                .map(|_| AtomicU64::new(0))
                .collect(),
            tick: AtomicU64::new(0),
        }
    }

    /// Keys tracked now (exact when no insertion is in flight).
    pub(crate) fn entries(&self) -> usize {
        // Relaxed: a statistic.
        self.entries.load(Ordering::Relaxed)
    }

    /// Bytes of the table (slots, sets, stamps), for the memory report.
    pub(crate) fn table_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
            + std::mem::size_of_val(&*self.sets)
            + std::mem::size_of_val(&*self.stamps)
    }

    #[inline]
    fn small(&self) -> bool {
        self.sets.len() == 1
    }

    /// The set of a key: the high bits of `key * sets` (keys are uniform BLAKE2b output; the tag
    /// uses the low bits).
    #[inline]
    fn set_of(&self, key: u64) -> usize {
        ((u128::from(key) * self.sets.len() as u128) >> 64) as usize
    }

    #[inline]
    fn slot(&self, set: usize, way: usize) -> &AtomicPtr<Node> {
        &self.slots[set * self.ways + way]
    }

    /// Dereferences a node loaded under `guard` from this table.
    ///
    /// # Safety
    ///
    /// `ptr` is an untagged node pointer loaded under `guard` from a slot or a claim word of this
    /// table.
    #[inline]
    unsafe fn deref<'g>(&self, ptr: *mut Node, guard: &'g Guard<'_>) -> &'g Node {
        guard.check(ptr);
        // SAFETY: (1) nodes come from `Box::into_raw` and are freed only by the collector after
        // being retired; (2) the caller loaded `ptr` through `guard` while the node was in the
        // table (or its insertion in flight), so it is retired after `guard` entered and freed
        // after `guard` (and so `'g`) ends; (3) after publication nodes are only accessed
        // through shared references and atomics.
        unsafe { &*ptr }
    }

    /// Scans a set for `key`: its way and node if present, and the number of nodes in the set.
    #[inline]
    fn scan<'g>(
        &self,
        set: usize,
        key: u64,
        guard: &'g Guard<'_>,
    ) -> (Option<(usize, &'g Node)>, usize) {
        for way in 0..self.ways {
            // Acquire: pairs with the Release of the compare-and-swap that placed the node, so
            // its key and counts are visible.
            let ptr = guard.protect(self.slot(set, way), Ordering::Acquire);
            if ptr.is_null() {
                return (None, way);
            }
            if may_hold(ptr, key) {
                // SAFETY: loaded under `guard` from our slot.
                let node = unsafe { self.deref(untag(ptr), guard) };
                if node.key == key {
                    return (Some((way, node)), way);
                }
            }
        }
        (None, self.ways)
    }

    /// Marks a way as just used.
    #[inline]
    fn touch(&self, set: usize, way: usize) {
        if self.small() {
            // Relaxed (load and store): the clock publishes no memory. A load and a store, not a
            // read-modify-write: single-threaded the ticks are distinct and increasing (exact
            // LRU); racing threads may draw the same tick, which only perturbs the order.
            let tick = self.tick.load(Ordering::Relaxed) + 1;
            self.tick.store(tick, Ordering::Relaxed);
            // Relaxed: a recency stamp publishes no memory.
            self.stamps[way].store(tick, Ordering::Relaxed);
        } else {
            let bit = 1 << way;
            let referenced = &self.sets[set].referenced;
            // Relaxed: a heuristic bit; write only when clear so that hits rarely write.
            if referenced.load(Ordering::Relaxed) & bit == 0 {
                // Relaxed: as above.
                referenced.fetch_or(bit, Ordering::Relaxed);
            }
        }
    }

    /// The node of `key` if tracked, refreshing its recency.
    #[inline]
    pub(crate) fn get<'g>(&self, key: u64, guard: &'g Guard<'_>) -> Option<&'g Node> {
        let set = self.set_of(key);
        let (found, _) = self.scan(set, key, guard);
        let (way, node) = found?;
        self.touch(set, way);
        Some(node)
    }

    /// Returns `key`'s node, inserting it with counts `born` if missing (evicting if the shard
    /// or the set is full), and refreshes its recency.
    pub(crate) fn get_or_insert<'g>(
        &self,
        key: u64,
        born: Counts,
        at: Instant,
        guard: &'g Guard<'_>,
    ) -> Got<'g> {
        let set = self.set_of(key);
        let mut evicted = 0;
        let claim = &self.sets[set].claim;
        // A node allocated for an insertion whose claim failed, reused by the retry.
        let mut spare: Option<Box<Node>> = None;
        loop {
            // Acquire: pairs with the Release that freed the claim word, so the scan below sees
            // every slot change of the insertions that completed before.
            let c = guard.protect(claim, Ordering::Acquire);

            if is_claim(c) {
                evicted += self.complete(set, c, guard);
                continue;
            }
            let (found, len) = self.scan(set, key, guard);
            if let Some((way, node)) = found {
                self.touch(set, way);
                return Got {
                    node,
                    inserted: false,
                    victim: None,
                    evicted,
                };
            }
            let (way, unit) = match self.room(len) {
                Some(unit) => (len, unit),
                None => (self.victim(set, len, at, guard), false),
            };
            let adds = way == len;
            // Relaxed: read only to name the victim to the caller; the claim below validates
            // the plan.
            let victim = (!adds).then(|| untag(self.slot(set, way).load(Ordering::Relaxed)));
            let mut node = match spare.take() {
                Some(mut b) => {
                    *b = Node::new(key, born);
                    b
                }
                None => Box::new(Node::new(key, born)),
            };
            node.way = way as u8;
            node.adds = adds;
            let ptr = Box::into_raw(node);
            #[cfg(target_pointer_width = "64")]
            assert!(
                ptr.addr() >> TAG_SHIFT == 0,
                "txgate-ratelimit needs heap addresses below 2^48 (key tags use the top 16 bits)"
            );
            // AcqRel on success: Release publishes the node (key, counts, plan) to whoever loads
            // the claim and completes it; Acquire keeps our completion after the claim. Relaxed
            // on failure: we only retry.
            match claim.compare_exchange(c, ptr, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => {
                    evicted += self.complete(set, ptr, guard);
                    return Got {
                        // SAFETY: our node, published in our set and not retired before our
                        // guard drops (it can only be evicted by a later insertion).
                        node: unsafe { self.deref(ptr, guard) },
                        inserted: true,
                        victim: victim.map(|v| v.cast_const()),
                        evicted,
                    };
                }
                Err(_) => {
                    if unit {
                        // Relaxed: a count of room; the claims order the slots themselves.
                        self.spare.fetch_add(1, Ordering::Relaxed);
                    }
                    // SAFETY: the claim failed, so the node was never published: still ours.
                    spare = Some(unsafe { Box::from_raw(ptr) });
                }
            }
        }
    }

    /// Completes whatever insertion holds `key`'s set now, so that a node found evicted (which
    /// only an insertion in flight does) is out of its slot before the caller looks again.
    /// Returns the nodes this call marked evicted.
    pub(crate) fn settle(&self, key: u64, guard: &Guard<'_>) -> u32 {
        let set = self.set_of(key);
        // Acquire: as in `get_or_insert`.
        let c = guard.protect(&self.sets[set].claim, Ordering::Acquire);
        if is_claim(c) {
            self.complete(set, c, guard)
        } else {
            0
        }
    }

    /// Room for a key joining a set of `len` nodes without eviction: `Some(took a spare unit)`,
    /// or `None` (evict).
    #[inline]
    fn room(&self, len: usize) -> Option<bool> {
        if len == self.ways {
            return None;
        }
        if self.small() {
            return (len < self.capacity).then_some(false);
        }
        if len == 0 {
            // Every set may hold one key without a unit.
            return Some(false);
        }
        // Relaxed: a count of room; the claim that uses the unit orders the slots.
        self.spare
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| s.checked_sub(1))
            .ok()
            .map(|_| true)
    }

    /// The way to evict in a full set of `len` nodes.
    fn victim(&self, set: usize, len: usize, at: Instant, guard: &Guard<'_>) -> usize {
        debug_assert!(len > 0);
        if self.small() {
            // Exact: a stale key first, then the least recently used (the reference model's
            // rule), over the whole shard.
            let mut best = (true, u64::MAX, 0);
            for way in 0..len {
                // Acquire: as in `scan`.
                let ptr = guard.protect(self.slot(set, way), Ordering::Acquire);
                // SAFETY: loaded under `guard` from our slot; the prefix is non-null.
                let node = unsafe { self.deref(untag(ptr), guard) };
                let (counts, _) = node.counts(guard);
                // Relaxed: a recency stamp.
                let stamp = self.stamps[way].load(Ordering::Relaxed);
                let rank = (!state::is_stale(counts, at), stamp, way);
                if rank < best {
                    best = rank;
                }
            }
            return best.2;
        }
        // CLOCK over the set's ways: the first way from the hand whose reference bit is clear;
        // the bits passed are cleared (second chance).
        let s = &self.sets[set];
        // Relaxed: a heuristic position and heuristic bits.
        let start = s.hand.load(Ordering::Relaxed) as usize % len;
        // Relaxed: as above.
        let bits = s.referenced.load(Ordering::Relaxed);
        let mut passed = 0u64;
        let mut way = start;
        for _ in 0..len {
            if bits & (1 << way) == 0 {
                break;
            }
            passed |= 1 << way;
            way = if way + 1 == len { 0 } else { way + 1 };
        }
        // All referenced: the loop came back to the hand, whose bit is cleared with the rest.
        if passed != 0 {
            // Relaxed: as above.
            s.referenced.fetch_and(!passed, Ordering::Relaxed);
        }
        // Relaxed: as above.
        s.hand.store((way + 1) as u32, Ordering::Relaxed);
        way
    }

    /// Carries out the insertion of `n`, the claim of `set` when the caller loaded it (steps in
    /// the module docs; every step is idempotent). Returns the nodes this call marked evicted.
    fn complete(&self, set: usize, n: *mut Node, guard: &Guard<'_>) -> u32 {
        // SAFETY: `n` was loaded under `guard` from the set's claim word.
        let node = unsafe { self.deref(n, guard) };
        let way = usize::from(node.way);
        let slot = self.slot(set, way);
        let claim = &self.sets[set].claim;
        let mut evicted = 0;
        loop {
            // Acquire: as in `scan`.
            let v = guard.protect(slot, Ordering::Acquire);
            // Acquire: if the claim still holds `n` (installed once, freed once), it held it
            // when `v` was loaded, so `v` is `n`'s victim, empty, or `n` itself. A later
            // insertion's slot change would have made this load see a later claim word.
            if claim.load(Ordering::Acquire) != n {
                return evicted;
            }
            if untag(v) == n {
                break;
            }
            if !v.is_null() {
                // SAFETY: loaded under `guard` from our slot.
                let victim = unsafe { self.deref(untag(v), guard) };
                evicted += u32::from(victim.mark_evicted(guard));
            }
            // AcqRel on success: Release publishes `n` to the Acquire loads of `scan`; Acquire
            // orders our retirement of `v` after its publication. Relaxed on failure: we look
            // again.
            if slot
                .compare_exchange(v, tagged(n, node.key), Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                if !v.is_null() {
                    // SAFETY: (1) `v` came from `Box::into_raw` and our compare-and-swap is the
                    // one that took it out of its only slot, so it is retired once; (2) a node
                    // is published once, so no thread entering after this can load it.
                    unsafe { guard.retire_box(untag(v)) };
                }
                break;
            }
        }
        self.touch(set, way);
        // Release on success: every change of this insertion happens before the next planner's
        // Acquire load of the freed word. Relaxed on failure: another thread freed it.
        if claim
            .compare_exchange(n, free(n), Ordering::Release, Ordering::Relaxed)
            .is_ok()
            && node.adds
        {
            // Relaxed: a statistic, counted once by the thread that freed the claim.
            self.entries.fetch_add(1, Ordering::Relaxed);
        }
        evicted
    }

    /// The hashes of the keys in this shard, in slot order.
    pub(crate) fn keys<'g>(&'g self, guard: &'g Guard<'_>) -> impl Iterator<Item = u64> + 'g {
        self.slots.iter().filter_map(move |slot| {
            // Acquire: as in `scan`.
            let ptr = guard.protect(slot, Ordering::Acquire);
            // SAFETY: loaded under `guard` from our slot.
            (!ptr.is_null()).then(|| unsafe { self.deref(untag(ptr), guard) }.key)
        })
    }

    /// Checks the shard's invariants; call only when no operation is in flight (after a stress
    /// trial, a fuzz step). Panics with the broken invariant.
    #[cfg(any(test, fuzzing, loom))]
    pub(crate) fn validate(&self, guard: &Guard<'_>) {
        let mut keys = std::collections::HashSet::new();
        let mut total = 0;
        let mut extra = 0;
        for (set, s) in self.sets.iter().enumerate() {
            // Relaxed: quiescent.
            let c = s.claim.load(Ordering::Relaxed);
            assert!(!is_claim(c), "set {set}: an insertion is still in flight");
            let mut len = 0;
            for way in 0..self.ways {
                // Relaxed: quiescent.
                let ptr = self.slot(set, way).load(Ordering::Relaxed);
                if ptr.is_null() {
                    break;
                }
                len += 1;
                // SAFETY: loaded under `guard` from our slot.
                let node = unsafe { self.deref(untag(ptr), guard) };
                assert!(may_hold(ptr, node.key), "set {set} way {way}: wrong tag");
                assert_eq!(
                    self.set_of(node.key),
                    set,
                    "way {way}: key in a foreign set"
                );
                // Relaxed: quiescent.
                let word = node.state.load(Ordering::Relaxed);
                assert_eq!(word & state::MARKER, 0, "a group operation left a marker");
                assert_eq!(
                    word & state::EVICTED,
                    0,
                    "an evicted node is still in a slot"
                );
                assert!(keys.insert(node.key), "key {:#x} tracked twice", node.key);
            }
            for way in len..self.ways {
                // Relaxed: quiescent.
                let ptr = self.slot(set, way).load(Ordering::Relaxed);
                assert!(ptr.is_null(), "set {set}: way {way} after an empty way");
            }
            total += len;
            extra += len.saturating_sub(1);
        }
        assert!(
            total <= self.capacity,
            "{total} keys over capacity {}",
            self.capacity
        );
        assert_eq!(self.entries(), total, "entries counter");
        if !self.small() {
            // Relaxed: quiescent.
            let spare = self.spare.load(Ordering::Relaxed);
            assert_eq!(spare, self.capacity - self.sets.len() - extra, "spare room");
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
                drop(unsafe { Box::from_raw(untag(ptr)) });
            }
        }
    }
}
