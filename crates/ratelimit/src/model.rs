//! A plain single-threaded reference model of the limiter, for differential tests and fuzzing.
//!
//! Per shard a `HashMap` of keys plus the table's geometry (sets, ways in fill order, spare
//! room): no atomics, no reclamation. It uses the same window arithmetic as the real table
//! (`crate::state`), the same shards and keys (it takes [`AppKey`]s derived by a real
//! [`AppRateLimiter`](crate::AppRateLimiter)), the same canonical order for the keys of a group
//! (sorted by shard, then hash), and it evicts by the rule, exactly:
//!
//! - every access (admitted, dropped, penalty) rolls the key to its instant, stores it and
//!   refreshes its recency: an exact LRU order (a global access counter) and the key's CLOCK
//!   reference bit;
//! - a shard of up to 64 keys is one set: a new key in a full shard evicts a stale key first,
//!   else the least recently used;
//! - a larger shard (or one built with the CLOCK test geometry) is sets of ways, two per key of
//!   capacity: a new key takes a unit of spare room to join a non-empty set, and evicts in its
//!   own set when none is left or the set is full, by CLOCK: the sweep starts at the way drawn
//!   from the key's hash bits 16..48, clears the reference bits it passes and takes the first
//!   way whose bit was clear (the start way if all were set). A new key's bit starts clear.
//!
//! Single-threaded the real limiter takes exactly these decisions and evictions; concurrently,
//! its histories are checked against interleavings of this model's steps (the `checker`
//! module, run by the loom models in `tests/loom.rs` and by the threaded trials).

use std::collections::HashMap;
use std::num::NonZeroU32;

use crate::config::{Config, ConfigError};
use crate::decision::{Decision, InsufficientCapacity, Stats};
use crate::origin::AppKey;
use crate::state::{self, Counts, Instant, Limits};

/// What a group's lookup step saw of one key ([`Model::lookup_step`]).
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    key: AppKey,
    index: usize,
    counts: Counts,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    counts: Counts,
    /// The access counter at the key's last access (LRU order).
    last: u64,
    /// The CLOCK reference bit: an access since a sweep last passed the key.
    touched: bool,
}

/// One shard: its keys and the table's geometry.
#[derive(Clone, Debug)]
struct Shard {
    entries: HashMap<u64, Entry>,
    /// Each set's keys in way order (ways fill in order; an eviction replaces in place).
    sets: Vec<Vec<u64>>,
    ways: usize,
    /// Exact LRU over one set (shards of up to 64 keys) rather than CLOCK.
    lru: bool,
    /// CLOCK shards: units of room beyond each set's first key.
    units: usize,
}

/// The reference model of [`AppRateLimiter`](crate::AppRateLimiter) over pre-derived keys.
#[derive(Clone, Debug)]
pub struct Model {
    limits: Limits,
    capacity: usize,
    shards: Vec<Shard>,
    tick: u64,
    stats: Stats,
    /// The keys evicted so far, in order, as `(shard, hash)`.
    victims: Vec<(u32, u64)>,
    /// Per key hash, the sweep steps a pending CLOCK insertion of it has taken
    /// ([`Model::sweep_step`]): its eviction's sweep goes on from there.
    sweeps: Sweeps,
    /// Reference bits cleared so far by CLOCK sweeps (sweep steps and the clearings of the
    /// insertions' own sweeps).
    cleared: u64,
}

/// The sweep steps of pending CLOCK insertions, per key hash ([`Model::sweep_step`]). A model
/// holds one set; a checker that interleaves the steps of several operations gives each its
/// own with [`Model::swap_sweeps`], since a sweep belongs to one operation's insertion of a
/// key: two insertions of one key, in flight at once, each sweep from their start way, and
/// one's steps never move the other's position (E1 in the crate docs). An operation's steps
/// stay its own until its insertion of the key takes effect, even while another operation's
/// insertion holds the key: if the key is evicted again and the operation inserts it after
/// all, the sweep goes on.
#[derive(Clone, Debug, Default)]
pub struct Sweeps(HashMap<u64, usize>);

impl Sweeps {
    /// The sweep steps taken so far by the pending insertion of `key` that these steps belong
    /// to (0: none, or the insertion took effect).
    pub fn steps(&self, key: &AppKey) -> usize {
        self.0.get(&key.hash).copied().unwrap_or(0)
    }
}

impl Model {
    /// A model of a limiter built from `config`.
    ///
    /// # Errors
    ///
    /// The same [`ConfigError`]s as [`AppRateLimiter::new`](crate::AppRateLimiter::new).
    pub fn new(config: &Config) -> Result<Self, ConfigError> {
        let v = config.validate()?;
        let lru = crate::lru::exact(v.capacity, v.clock_ways);
        let (sets, ways) = if lru {
            (1, v.capacity)
        } else {
            crate::table::Shard::geometry(v.capacity, v.clock_ways).expect("validated geometry")
        };
        let shard = Shard {
            entries: HashMap::new(),
            sets: vec![Vec::new(); sets],
            ways,
            lru,
            units: if lru { 0 } else { v.capacity - sets },
        };
        Ok(Self {
            limits: v.limits,
            capacity: v.capacity,
            shards: vec![shard; config.shards],
            tick: 0,
            stats: Stats::default(),
            victims: Vec::new(),
            sweeps: Sweeps::default(),
            cleared: 0,
        })
    }

    /// The distinct keys of a group (shards reduced) in canonical order, each with the index of
    /// its first occurrence.
    fn canonical(&self, keys: &[AppKey]) -> Vec<(AppKey, usize)> {
        let mut distinct: Vec<(AppKey, usize)> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let key = AppKey {
                shard: self.shard_index(key) as u32,
                hash: key.hash,
            };
            if !distinct.iter().any(|(k, _)| *k == key) {
                distinct.push((key, i));
            }
        }
        distinct.sort_unstable_by_key(|(k, _)| (k.shard, k.hash));
        distinct
    }

    /// The model of [`AppRateLimiter::admit_keys`](crate::AppRateLimiter::admit_keys).
    pub fn admit_keys(&mut self, keys: &[AppKey], now_ns: u64) -> Decision {
        self.admit_keys_n(keys, NonZeroU32::MIN, now_ns)
            .expect("a cost of 1 is within every limit")
    }

    /// The model of [`AppRateLimiter::admit_keys_n`](crate::AppRateLimiter::admit_keys_n).
    ///
    /// # Errors
    ///
    /// [`InsufficientCapacity`] when `cost > L`, before anything is touched.
    pub fn admit_keys_n(
        &mut self,
        keys: &[AppKey],
        cost: NonZeroU32,
        now_ns: u64,
    ) -> Result<Decision, InsufficientCapacity> {
        let cost = self.limits.cost(cost)?;
        let at = self.limits.instant(now_ns);
        // Touch every distinct key first (create, evict, refresh), in canonical order, keeping
        // each key's counts as seen then: a later key of the group may evict an earlier one,
        // whose counts still decide.
        let seen: Vec<(AppKey, usize, Counts, bool)> = self
            .canonical(keys)
            .into_iter()
            .map(|(key, index)| (key, index, self.touch(&key, at), true))
            .collect();
        Ok(self.decide(&seen, cost, at))
    }

    /// The admit-or-drop step of a group whose keys were looked up with counts `seen`.
    fn decide(
        &mut self,
        seen: &[(AppKey, usize, Counts, bool)],
        cost: u32,
        at: Instant,
    ) -> Decision {
        let mut next = Vec::with_capacity(seen.len());
        for &(key, index, counts, store) in seen {
            match state::admit(counts, at, &self.limits, cost) {
                Some(c) => next.push((key, c, store)),
                None => {
                    self.stats.dropped += 1;
                    let wait = state::retry_after(counts, at, &self.limits, cost);
                    return Decision::drop(index, wait);
                }
            }
        }
        let remaining = next
            .iter()
            .map(|(_, c, _)| state::remaining(*c, at, &self.limits))
            .min();
        for (key, counts, store) in next {
            if let Some(e) = self.shard_mut(&key).entries.get_mut(&key.hash)
                && store
            {
                e.counts = counts;
            }
        }
        self.stats.admitted += 1;
        Decision::admit(remaining)
    }

    /// E2, step by step (for the model checker): a group's distinct keys in canonical order,
    /// each with the index of its first occurrence.
    pub fn group_keys(&self, keys: &[AppKey]) -> Vec<(AppKey, usize)> {
        self.canonical(keys)
    }

    /// E2, step by step: one lookup of a group's key (from [`Model::group_keys`]) at `now_ns`:
    /// created (evicting) or touched; returns what the lookup saw.
    pub fn lookup_step(&mut self, key: AppKey, index: usize, now_ns: u64) -> Seen {
        let at = self.limits.instant(now_ns);
        Seen {
            key,
            index,
            counts: self.touch(&key, at),
        }
    }

    /// E2, step by step: [`Model::lookup_step`] as a lookup of a group's attempt whose earlier
    /// lookups saw `seen`: appends what this one saw, and where it evicted a key of `seen` (a
    /// set too small for the group), sets that key's counts in `seen` to its counts at the
    /// eviction, which decide for it ([`Model::decide_step`]): as its own lookup left them, or
    /// as another operation wrote them since (the table decides on the victim's final word).
    /// Matched by hash: a checker must itself refuse a decision after another operation
    /// evicted a key the attempt looked up (the table's attempt aborts there).
    pub fn lookup_in_attempt(
        &mut self,
        seen: &mut Vec<Seen>,
        key: AppKey,
        index: usize,
        now_ns: u64,
    ) {
        let last: Vec<Option<Counts>> = seen
            .iter()
            .map(|s| {
                self.shards[self.shard_index(&s.key)]
                    .entries
                    .get(&s.key.hash)
                    .map(|e| e.counts)
            })
            .collect();
        let victims = self.victims.len();
        let this = self.lookup_step(key, index, now_ns);
        for &(shard, hash) in &self.victims[victims..] {
            for (earlier, last) in seen.iter_mut().zip(&last) {
                if let Some(c) = last
                    && (self.shard_index(&earlier.key) as u32, earlier.key.hash) == (shard, hash)
                {
                    earlier.counts = *c;
                }
            }
        }
        seen.push(this);
    }

    /// E2, step by step: a group's admit-or-drop step after its lookups `seen` (canonical
    /// order); `own[i]`: key `i` was evicted by the group's own later lookups (its counts in
    /// `seen` decide, those at its eviction if `seen` was built by [`Model::lookup_in_attempt`],
    /// and nothing is stored for it, also where another operation has inserted the key again
    /// since: that is a new life of the key, which the group did not look up). `None` if
    /// another key is missing (the real group aborts and looks its keys up again), or the cost
    /// exceeds `L`.
    pub fn decide_step(
        &mut self,
        seen: &[Seen],
        own: &[bool],
        cost: NonZeroU32,
        now_ns: u64,
    ) -> Option<Decision> {
        let cost = self.limits.cost(cost).ok()?;
        let at = self.limits.instant(now_ns);
        let seen = self.current(seen, own)?;
        Some(self.decide(&seen, cost, at))
    }

    /// E2, step by step: a group penalty's step after its lookups, as [`Model::decide_step`].
    pub fn penalize_step(&mut self, seen: &[Seen], own: &[bool], now_ns: u64) -> Option<()> {
        let at = self.limits.instant(now_ns);
        let limits = self.limits;
        for (key, _, counts, store) in self.current(seen, own)? {
            if let Some(e) = self.shard_mut(&key).entries.get_mut(&key.hash)
                && store
            {
                e.counts = state::penalize(counts, at, &limits);
            }
        }
        Some(())
    }

    /// The counts a group's decision reads, each with whether the decision stores to the key:
    /// each tracked key's current counts (stored), a key its own lookups evicted as seen (not
    /// stored, whether or not another operation inserted it again); `None` if another key is
    /// missing.
    fn current(&self, seen: &[Seen], own: &[bool]) -> Option<Vec<(AppKey, usize, Counts, bool)>> {
        seen.iter()
            .zip(own)
            .map(|(s, &own)| {
                let tracked = self.shards[self.shard_index(&s.key)]
                    .entries
                    .get(&s.key.hash)
                    .map(|e| e.counts);
                match (tracked, own) {
                    (Some(c), false) => Some((s.key, s.index, c, true)),
                    (_, true) => Some((s.key, s.index, s.counts, false)),
                    _ => None,
                }
            })
            .collect()
    }

    /// The model of [`AppRateLimiter::penalize_keys`](crate::AppRateLimiter::penalize_keys).
    pub fn penalize_keys(&mut self, keys: &[AppKey], now_ns: u64) {
        let at = self.limits.instant(now_ns);
        let seen: Vec<(AppKey, Counts)> = self
            .canonical(keys)
            .into_iter()
            .map(|(key, _)| (key, self.touch(&key, at)))
            .collect();
        let limits = self.limits;
        for (key, counts) in seen {
            if let Some(e) = self.shard_mut(&key).entries.get_mut(&key.hash) {
                e.counts = state::penalize(counts, at, &limits);
            }
        }
    }

    /// Tracked keys as `(shard, hash)`, sorted (compare with `AppRateLimiter::tracked_keys`).
    pub fn tracked_keys(&self) -> Vec<(u32, u64)> {
        let mut keys: Vec<(u32, u64)> = self
            .shards
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.entries.keys().map(move |&k| (i as u32, k)))
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Counters, as [`AppRateLimiter::stats`](crate::AppRateLimiter::stats) reports them.
    pub fn stats(&self) -> Stats {
        Stats {
            entries: self.shards.iter().map(|s| s.entries.len()).sum(),
            ..self.stats
        }
    }

    /// The tracked keys whose CLOCK reference bit is set, as `(shard, hash)`, sorted; empty for
    /// exact-LRU shards (the rule there is recency, which keeps no bit).
    pub fn referenced_keys(&self) -> Vec<(u32, u64)> {
        let mut keys: Vec<(u32, u64)> = self
            .shards
            .iter()
            .enumerate()
            .filter(|(_, shard)| !shard.lru)
            .flat_map(|(i, shard)| {
                shard
                    .entries
                    .iter()
                    .filter(|(_, e)| e.touched)
                    .map(move |(&k, _)| (i as u32, k))
            })
            .collect();
        keys.sort_unstable();
        keys
    }

    /// Current `(prev, cur)` of a tracked key, unrolled.
    pub fn counts(&self, key: &AppKey) -> Option<(u32, u32)> {
        self.shards[self.shard_index(key)]
            .entries
            .get(&key.hash)
            .map(|e| (e.counts.prev, e.counts.cur))
    }

    fn shard_index(&self, key: &AppKey) -> usize {
        key.shard as usize & (self.shards.len() - 1)
    }

    fn shard_mut(&mut self, key: &AppKey) -> &mut Shard {
        let i = self.shard_index(key);
        &mut self.shards[i]
    }

    /// The lookup steps of a group attempt that another operation aborts (E2 in the crate docs):
    /// the first `n` of the group's distinct keys, in canonical order, created (evicting) or
    /// touched at `now_ns`, as the real limiter's lookups do before it decides; nothing else.
    pub fn lookup_keys(&mut self, keys: &[AppKey], n: usize, now_ns: u64) {
        let at = self.limits.instant(now_ns);
        for (key, _) in self.canonical(keys).into_iter().take(n) {
            self.touch(&key, at);
        }
    }

    /// The model's state up to what no later step can tell apart, as a string: two models with
    /// the same fingerprint give the same results from here on (for a checker that remembers
    /// the states it has explored). Each key's recency counts only by its order among the
    /// shard's keys, and the victims only as a multiset; `pending` sweep steps are a checker's
    /// own, passed in.
    pub fn fingerprint(&self, pending: &[&Sweeps]) -> String {
        let mut out = String::new();
        for shard in &self.shards {
            let mut keys: Vec<(&u64, &Entry)> = shard.entries.iter().collect();
            keys.sort_unstable_by_key(|(_, e)| e.last);
            let mut keys: Vec<(usize, u64, &Entry)> = keys
                .into_iter()
                .enumerate()
                .map(|(rank, (h, e))| (rank, *h, e))
                .collect();
            keys.sort_unstable_by_key(|&(_, h, _)| h);
            for (rank, h, e) in keys {
                let c = e.counts;
                out += &format!(
                    "{h}:{rank}:{}:{}:{}:{} ",
                    c.interval, c.prev, c.cur, e.touched
                );
            }
            out += &format!("{:?} {}|", shard.sets, shard.units);
        }
        let mut victims = self.victims.clone();
        victims.sort_unstable();
        out += &format!("{victims:?} {} {:?}", self.cleared, self.stats);
        for sweeps in [&self.sweeps].into_iter().chain(pending.iter().copied()) {
            let mut s: Vec<_> = sweeps.0.iter().collect();
            s.sort_unstable();
            out += &format!(" {s:?}");
        }
        out
    }

    /// Whether the shards evict by CLOCK (sets of several keys' ways) rather than exact LRU.
    pub fn clock(&self) -> bool {
        !self.shards[0].lru
    }

    /// One step of the CLOCK sweep of a new key's insertion, as a step of its own (E1: a
    /// sweep's clearing of a bit is a step): if the insertion of `key` would evict in a CLOCK
    /// set (the set full, or no unit of spare room left for a non-empty set), the sweep's next
    /// way (from the way drawn from the key's hash, going round the set) has its reference bit
    /// cleared, and the key's eviction later goes on from the way after it. Returns `false`,
    /// changing nothing, if the set cannot take it: there is room, the shard is LRU, or the
    /// way's bit is clear (the sweep would stop there and evict it).
    ///
    /// The key may be tracked: an operation's sweep runs from its scan, which found the key
    /// missing, and another operation may insert the key before the sweep's next step (the
    /// sweeping insertion then gives up, finding the key present; its steps stand, and go on
    /// if the operation inserts the key later). That scan is the caller's to place: a step the
    /// table can take needs a moment, after the operation began and before the sweep's first
    /// step, at which the model did not track the key (the checker's `Miss` step checks
    /// [`Model::counts`] is `None` there); this method does not check it.
    pub fn sweep_step(&mut self, key: &AppKey) -> bool {
        let i = self.shard_index(key);
        let shard = &mut self.shards[i];
        if shard.lru {
            return false;
        }
        let set = ((u128::from(key.hash) * shard.sets.len() as u128) >> 64) as usize;
        let len = shard.sets[set].len();
        if len < shard.ways && (len == 0 || shard.units > 0) {
            return false;
        }
        let done = self.sweeps.0.get(&key.hash).copied().unwrap_or(0);
        let start = ((((key.hash >> 16) & 0xFFFF_FFFF) * len as u64) >> 32) as usize;
        let e = shard
            .entries
            .get_mut(&shard.sets[set][(start + done) % len])
            .expect("a set's keys are tracked");
        if !e.touched {
            return false;
        }
        e.touched = false;
        self.sweeps.0.insert(key.hash, done + 1);
        self.cleared += 1;
        true
    }

    /// Swaps the model's pending sweep steps with `sweeps`: before and after the steps of one
    /// operation, a checker swaps in that operation's own (empty for a new operation), so that
    /// each insertion sweeps on from its own steps only.
    ///
    /// # Examples
    ///
    /// ```
    /// use txgate_ratelimit::Config;
    /// use txgate_ratelimit::model::{Model, Sweeps};
    ///
    /// let mut model = Model::new(&Config::default()).unwrap();
    /// let mut mine = Sweeps::default();
    /// model.swap_sweeps(&mut mine); // this operation's steps go in
    /// // ... `sweep_step`s and the operation itself ...
    /// model.swap_sweeps(&mut mine); // and come out again
    /// ```
    pub fn swap_sweeps(&mut self, sweeps: &mut Sweeps) {
        std::mem::swap(&mut self.sweeps, sweeps);
    }

    /// The reference bits CLOCK sweeps have cleared so far: one per [`Model::sweep_step`] and
    /// one per bit an insertion's eviction clears on its way to its victim (E1: each clearing
    /// is a step of the model), so that a checker can match them with the table's clearings.
    pub fn cleared(&self) -> u64 {
        self.cleared
    }

    /// The keys evicted so far, in order, as `(shard, hash)`.
    pub fn victims(&self) -> &[(u32, u64)] {
        &self.victims
    }

    /// Creates (evicting if the shard or, in a CLOCK shard, its set is full) or refreshes a key;
    /// returns its stored counts.
    fn touch(&mut self, key: &AppKey, at: Instant) -> Counts {
        self.tick += 1;
        let tick = self.tick;
        let capacity = self.capacity;
        let i = self.shard_index(key);
        let shard = &mut self.shards[i];
        if let Some(e) = shard.entries.get_mut(&key.hash) {
            // Every access leaves its key current: rolled to `at` (and, in the callers, the
            // admission or penalty applied to the rolled counts, which decide the same), its
            // recency and reference bit refreshed.
            e.last = tick;
            e.touched = true;
            e.counts = state::roll(e.counts, at).0;
            return e.counts;
        }
        let set = ((u128::from(key.hash) * shard.sets.len() as u128) >> 64) as usize;
        let len = shard.sets[set].len();
        // Room without eviction, as the table's `room`.
        let room = if len == shard.ways {
            false
        } else if shard.lru {
            len < capacity
        } else if len == 0 {
            true
        } else if shard.units > 0 {
            shard.units -= 1;
            true
        } else {
            false
        };
        // The sweep steps this insertion already took (`sweep_step`).
        let done = self.sweeps.0.remove(&key.hash).unwrap_or(0);
        let counts = Counts {
            interval: at.interval,
            prev: 0,
            cur: 0,
        };
        let entry = Entry {
            counts,
            last: tick,
            touched: false,
        };
        if room {
            shard.sets[set].push(key.hash);
            shard.entries.insert(key.hash, entry);
            return counts;
        }
        let way = if shard.lru {
            // A stale key first, else the least recently used.
            (0..len)
                .min_by_key(|&w| {
                    let e = &shard.entries[&shard.sets[set][w]];
                    (!state::is_stale(e.counts, at), e.last)
                })
                .expect("a full set is not empty")
        } else {
            // CLOCK from the way drawn from hash bits 16..48, after the sweep steps taken.
            let start = ((((key.hash >> 16) & 0xFFFF_FFFF) * len as u64) >> 32) as usize;
            let start = (start + done) % len;
            let mut way = start;
            let mut chosen = start;
            for _ in 0..len {
                let e = shard
                    .entries
                    .get_mut(&shard.sets[set][way])
                    .expect("a set's keys are tracked");
                if !e.touched {
                    chosen = way;
                    break;
                }
                e.touched = false;
                self.cleared += 1;
                way = if way + 1 == len { 0 } else { way + 1 };
            }
            chosen
        };
        let victim = std::mem::replace(&mut shard.sets[set][way], key.hash);
        shard.entries.remove(&victim);
        shard.entries.insert(key.hash, entry);
        self.stats.evicted += 1;
        self.victims.push((i as u32, victim));
        counts
    }
}
