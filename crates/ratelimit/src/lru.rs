//! Exact-LRU shards: the eviction policy of shards of up to [`SMALL_SHARD`] keys, a plain table
//! behind a per-shard mutex.
//!
//! # The rule
//!
//! A shard of capacity `C <= 64` keeps up to `C` keys, each with its packed state word
//! ([`crate::state`]) and the value of the shard's access counter at its last access. Every
//! access (an admission, a dropped one, a penalty, a weighted admission, a group's lookup of
//! the key) rolls the key to the access's instant, stores it, and makes it the most recently
//! used: its last-access value becomes the counter's next value. A new key joins while the
//! shard has room; in a full shard it evicts a stale key first (its interval older than the
//! inserting caller's previous one, [`state::is_stale`]), the least recently used of those,
//! else the least recently used key of all. This is the rule of [`crate::model::Model`] for
//! shards searched whole, and the code below is that rule step for step.
//!
//! # The lock
//!
//! Every operation on a shard runs under the shard's [`Mutex`]. A single key's admission or
//! penalty is one critical section: lookup (insert, evict), decision and write. A group locks the
//! distinct shards of its keys, all of them, in ascending shard index, and then looks every key
//! up, decides and writes as one step: two groups that share shards take their locks in the same
//! order, so no cycle of waiting threads can form (the standard lock-ordering rule, e.g.
//! Silberschatz et al., *Operating System Concepts*, "deadlock prevention: circular wait"). A
//! group is therefore atomic: its lookups, its decision and its writes take effect at one
//! instant, while it holds every lock (a special case of E2 in the crate docs: lookups with
//! nothing between them and the decision). Each operation takes effect while it holds its locks,
//! so E0 and E1 hold with the order in which the critical sections run.
//!
//! # Why a lock
//!
//! Exact LRU needs each access to change the key's counts and its recency at one instant, in
//! one order across all the shard's keys: an eviction must see either both halves of an access
//! or neither. With a lock-free state word per key and a separate recency clock that means
//! changing two words atomically on every access, a multi-word compare-and-swap with a
//! descriptor per hit (restricted double-compare single-swap, Harris, Fraser and Pratt, DISC
//! 2002), which costs more than taking an uncontended lock. A shard of at most 64 keys is small
//! (a few cache lines), so the critical sections are short. go-algorand's own app rate limiter
//! (`appRateLimiter` in its `data` package) keeps each bucket as an LRU list behind a mutex: the
//! same design, with the bucket's lock held for a lookup and its admission. Larger shards (every
//! shard of the default geometry) keep the lock-free set-associative table of `table`, which
//! evicts by CLOCK.
//!
//! # Poisoning
//!
//! Nothing under the lock can panic (indices are bounded by the table's length, the window
//! arithmetic cannot overflow; the only allocations, a group of more than 16 keys or shards
//! spilling its buffers to the heap, abort the process on failure rather than unwind), and
//! every step writes whole entries, each a valid key. So a poisoned lock, which a panic
//! elsewhere under it would leave, still guards a consistent table: [`LruShard::lock`] takes it
//! as it is ([`std::sync::PoisonError::into_inner`]) rather than propagate a panic to every
//! later caller.

use std::collections::TryReserveError;

use crossbeam_utils::CachePadded;
use txgate_sync::sync::{Mutex, MutexGuard};

use crate::group::{INLINE, Outcome};
use crate::limiter::Member;
use crate::small_buf::SmallBuf;
use crate::state::{self, Counts, Instant, Limits};

/// Shards of at most this many keys keep exact LRU (one table searched whole, under a mutex);
/// larger ones are lock-free CLOCK tables.
pub(crate) const SMALL_SHARD: usize = 64;

/// Whether a shard of `capacity` keys keeps exact LRU: up to [`SMALL_SHARD`] keys, unless the
/// CLOCK test geometry (`Config::with_clock_ways`) was asked for.
pub(crate) fn exact(capacity: usize, clock_ways: Option<usize>) -> bool {
    clock_ways.is_none() && capacity <= SMALL_SHARD
}

/// One tracked key.
#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    /// The key's hash.
    hash: u64,
    /// Its packed counts ([`state::pack`], no flags).
    word: u64,
    /// The shard's access counter at its last access (distinct per entry; larger is more
    /// recent).
    last: u64,
}

/// A shard's table, as its lock guards it.
pub(crate) struct Table {
    /// `entries[..len]` are the tracked keys (distinct hashes), in the order they filled the
    /// table; an eviction replaces its victim in place. Fixed size: the shard's capacity.
    entries: Box<[Entry]>,
    /// Keys tracked.
    len: usize,
    /// Accesses so far: the recency order. A `u64` counted once per access does not wrap
    /// (2^64 accesses at 10^9 per second take 584 years).
    clock: u64,
    /// Under loom and in unit tests: the hashes of the keys evicted, in order, for the model
    /// checker.
    #[cfg(any(loom, test))]
    victims: Vec<u64>,
}

/// Where an access left its key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Touched {
    /// The key's index in the table (valid until the next access under the same lock).
    pub(crate) slot: usize,
    /// The key's counts as stored by the access: rolled to its instant (fresh if new).
    pub(crate) counts: Counts,
    /// Whether the access inserted the key by evicting another.
    pub(crate) evicted: bool,
}

impl Table {
    /// The model's access to `key` at `at`: a tracked key is rolled to `at` and stored; a
    /// missing one is inserted with fresh counts (evicting by the rule of the module docs if
    /// the table is full). Either way the key becomes the most recently used.
    pub(crate) fn touch(&mut self, key: u64, at: Instant) -> Touched {
        self.clock += 1;
        let tick = self.clock;
        let len = self.len;
        if let Some(slot) = self.entries[..len].iter().position(|e| e.hash == key) {
            let e = &mut self.entries[slot];
            let counts = state::roll(state::counts(e.word), at).0;
            e.word = state::pack(counts);
            e.last = tick;
            return Touched {
                slot,
                counts,
                evicted: false,
            };
        }
        let counts = Counts {
            interval: at.interval,
            prev: 0,
            cur: 0,
        };
        let entry = Entry {
            hash: key,
            word: state::pack(counts),
            last: tick,
        };
        if len < self.entries.len() {
            self.entries[len] = entry;
            self.len += 1;
            return Touched {
                slot: len,
                counts,
                evicted: false,
            };
        }
        // Full: a stale key first, else the least recently used (ties cannot occur: `last` is
        // distinct per entry).
        // A plain loop (the first minimum, as `min_by_key`), which stays inlined.
        let mut slot = 0;
        let mut best = (true, u64::MAX);
        for (i, e) in self.entries[..len].iter().enumerate() {
            let rank = (!state::is_stale_word(e.word, at), e.last);
            if rank < best {
                (best, slot) = (rank, i);
            }
        }
        #[cfg(any(loom, test))]
        self.victims.push(self.entries[slot].hash);
        self.entries[slot] = entry;
        Touched {
            slot,
            counts,
            evicted: true,
        }
    }

    /// Stores `counts` for `key` if it is still at `slot` (a later access of the same step may
    /// have evicted it: then nothing is stored, as in the model). Not an access.
    pub(crate) fn store(&mut self, slot: usize, key: u64, counts: Counts) {
        if let Some(e) = self.entries[..self.len].get_mut(slot)
            && e.hash == key
        {
            e.word = state::pack(counts);
        }
    }

    /// Keys tracked.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The tracked keys' hashes, in table order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.entries[..self.len].iter().map(|e| e.hash)
    }

    /// The stored counts of `key`, without an access.
    pub(crate) fn peek(&self, key: u64) -> Option<Counts> {
        self.entries[..self.len]
            .iter()
            .find(|e| e.hash == key)
            .map(|e| state::counts(e.word))
    }

    /// Under loom and in unit tests: the hashes of the keys this shard evicted, in order.
    #[cfg(any(loom, test))]
    pub(crate) fn victims(&self) -> Vec<u64> {
        self.victims.clone()
    }

    /// Checks the table's invariants. Panics with the broken one.
    #[cfg(any(test, fuzzing, loom))]
    fn validate(&self) {
        assert!(self.len <= self.entries.len(), "over capacity");
        let live = &self.entries[..self.len];
        let mut hashes: Vec<u64> = live.iter().map(|e| e.hash).collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), self.len, "a key tracked twice");
        let mut lasts: Vec<u64> = live.iter().map(|e| e.last).collect();
        lasts.sort_unstable();
        lasts.dedup();
        assert_eq!(lasts.len(), self.len, "two keys with one recency");
        for e in live {
            assert!(
                (1..=self.clock).contains(&e.last),
                "recency {} outside 1..={}",
                e.last,
                self.clock
            );
            assert_eq!(
                e.word,
                state::pack(state::counts(e.word)),
                "key {:#x}: a word with flags or bits outside its fields",
                e.hash
            );
        }
    }
}

/// One exact-LRU shard: its table behind its lock.
pub(crate) struct LruShard {
    table: Mutex<Table>,
}

impl LruShard {
    /// The bytes of the table of a shard of `capacity` keys (`None` if that overflows).
    pub(crate) fn bytes_for(capacity: usize) -> Option<usize> {
        capacity.checked_mul(size_of::<Entry>())
    }

    /// An empty shard holding at most `capacity` keys, or `Err` if its table cannot be
    /// allocated. Nothing allocates after this (outside the victims log of loom builds and unit
    /// tests).
    pub(crate) fn new(capacity: usize) -> Result<Self, TryReserveError> {
        debug_assert!((2..=SMALL_SHARD).contains(&capacity));
        let mut entries = Vec::new();
        entries.try_reserve_exact(capacity)?;
        entries.resize(capacity, Entry::default());
        Ok(Self {
            table: Mutex::new(Table {
                entries: entries.into_boxed_slice(),
                len: 0,
                clock: 0,
                #[cfg(any(loom, test))]
                victims: Vec::new(),
            }),
        })
    }

    /// The shard's table, locked (blocking while another thread holds it). A poisoned lock is
    /// taken as it is: see the module docs, "Poisoning".
    #[inline]
    pub(crate) fn lock(&self) -> MutexGuard<'_, Table> {
        self.table
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Checks the shard's invariants (no key twice, at most its capacity, valid words, distinct
    /// recency). Panics with the broken invariant.
    #[cfg(any(test, fuzzing, loom))]
    pub(crate) fn validate(&self) {
        self.lock().validate();
    }
}

/// What a group over exact-LRU shards does to each of its keys.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Verb {
    /// An admission of this weight (`1..=L`) on every key, if every key admits it.
    Admit(u32),
    /// One penalty on every key.
    Penalize,
}

/// The guards of a group's locked shards, one per distinct shard in ascending shard index;
/// inline up to [`INLINE`] shards.
struct Locked<'a> {
    inline: [Option<MutexGuard<'a, Table>>; INLINE],
    spill: Vec<MutexGuard<'a, Table>>,
    len: usize,
}

impl<'a> Locked<'a> {
    fn new() -> Self {
        Self {
            inline: std::array::from_fn(|_| None),
            spill: Vec::new(),
            len: 0,
        }
    }

    fn push(&mut self, guard: MutexGuard<'a, Table>) {
        if self.len < INLINE {
            self.inline[self.len] = Some(guard);
        } else {
            self.spill.push(guard);
        }
        self.len += 1;
    }

    /// The `i`-th locked table (`i < len`).
    fn get(&mut self, i: usize) -> &mut Table {
        match i.checked_sub(INLINE) {
            None => self.inline[i]
                .as_deref_mut()
                .expect("a guard per distinct shard, pushed before the lookups"),
            Some(j) => &mut self.spill[j],
        }
    }
}

/// A group of two or more distinct keys over exact-LRU shards, as one step: every shard of its
/// keys locked (in ascending shard index: the lock order of the module docs), then the model's
/// group: each key looked up in canonical order (created, evicting, or rolled; a later lookup may
/// evict an earlier key of the group, whose counts as seen still decide), the decision on the
/// counts seen, and the writes to the keys still tracked. Returns the outcome and the number of
/// evictions the lookups made.
pub(crate) fn group(
    shards: &[CachePadded<LruShard>],
    members: &[Member],
    verb: Verb,
    at: Instant,
    limits: &Limits,
) -> (Outcome, u64) {
    let mut locked = Locked::new();
    for (i, m) in members.iter().enumerate() {
        let prev = i.checked_sub(1).map(|p| members[p].shard);
        // Canonical order sorts by shard first, so each shard's keys are adjacent and shards
        // come in ascending order: every group takes its locks in one global order.
        assert!(
            prev.is_none_or(|p| p <= m.shard),
            "a group's keys are in canonical order"
        );
        if prev != Some(m.shard) {
            locked.push(shards[m.shard as usize].lock());
        }
    }
    let mut seen: SmallBuf<Touched, INLINE> = SmallBuf::new();
    let mut evicted = 0;
    let mut table = 0;
    for (i, m) in members.iter().enumerate() {
        if i > 0 && members[i - 1].shard != m.shard {
            table += 1;
        }
        let touched = locked.get(table).touch(m.hash, at);
        evicted += u64::from(touched.evicted);
        seen.push(touched);
    }
    let seen = seen.as_mut_slice();
    let remaining = match verb {
        Verb::Admit(cost) => {
            if let Some(key) = seen
                .iter()
                .position(|s| state::admit(s.counts, at, limits, cost).is_none())
            {
                let counts = seen[key].counts;
                return (Outcome::Dropped { key, counts }, evicted);
            }
            for s in seen.iter_mut() {
                s.counts = state::admit(s.counts, at, limits, cost).unwrap_or(s.counts);
            }
            seen.iter()
                .map(|s| state::remaining(s.counts, at, limits))
                .min()
        }
        Verb::Penalize => {
            for s in seen.iter_mut() {
                s.counts = state::penalize(s.counts, at, limits);
            }
            None
        }
    };
    let mut table = 0;
    for (i, (m, s)) in members.iter().zip(seen.iter()).enumerate() {
        if i > 0 && members[i - 1].shard != m.shard {
            table += 1;
        }
        locked.get(table).store(s.slot, m.hash, s.counts);
    }
    (Outcome::Applied { remaining }, evicted)
}
