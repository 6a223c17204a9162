//! A bounded cache of the rate limiter's derived keys, per (origin, app id).
//!
//! Deriving an [`AppKey`] costs one BLAKE2b-256 ([`AppRateLimiter::app_key`]), more than the
//! rest of an admission; go-algorand derives it for every app of every message. A peer's
//! connection sends many messages for the same apps, so the handler derives each (origin, app)
//! key once and keeps it: the limiter's API takes pre-derived keys
//! ([`AppRateLimiter::admit_keys`], [`AppRateLimiter::penalize_keys`]) for this use. A key is
//! only meaningful to the limiter that derived it (its salt and shard count), so a cache belongs
//! to one limiter: the handler's.
//!
//! # Shape
//!
//! A fixed array of four-way sets, one 64-byte cache line each (a set-associative cache, as
//! CPU caches are), so a lookup touches one line. The *tag* of a pair is a 64-bit keyed
//! foldhash of (app id, origin), seeded from the OS random source per cache; its low bits pick
//! the set. A slot is 16 bytes, two independent atomic words: the key's 64-bit hash, and a check
//! word that holds the key's shard index in its low `low` bits and `tag ^ hash` in the rest. A
//! reader accepts a slot iff `(check ^ hash ^ tag)` is zero outside the low bits, for its own
//! tag; a writer stores the two words (a miss derives the key and writes it into a free slot of
//! the set, else over one picked by the tag). No lock, no fence, and no unsafe code but a
//! prefetch hint (a group's sets are prefetched before they are read, so their cache lines load
//! side by side).
//!
//! # Odds of a wrong key
//!
//! Let `k = max(log2 sets, log2 shards)` (the low bits: `k` = 16 at the default size and the
//! limiter's default 128 shards); a check compares the `63 - k` tag bits above them (the top
//! tag bit is forced to one so that an all-zero, never written slot matches no pair).
//! - Another pair's intact slot in the same set is accepted with probability `2^-(63 - k)`
//!   (`2^-47` at the default size): the pairs' tags agree on the set's bits, and on the compared
//!   bits only by chance.
//! - A torn read (a reader that sees one pair's hash word and another write's check word) fails
//!   its equation but with the same odds: the words' hashes are salted BLAKE2b output, so their
//!   XOR is random in the compared bits. (The check-word trick is Hyatt and Mann's lockless
//!   transposition table, ICGA Journal 25(1), 2002.)
//!
//! An accepted wrong slot charges one message to another pair's key, the same effect as a
//! collision of the limiter's own 64-bit key hashes, which it accepts: with a shard of 8,192
//! keys these collide with probability about `2^-39` per shard.
//!
//! # Why a fast keyed hash is safe here
//!
//! Peers choose their messages' app ids and, within limits, their origins; they never see a
//! tag, a set index or a seed (none leaves the process). foldhash
//! (<https://github.com/orlp/foldhash>) is keyed with 128 random bits here (the per-hasher seed
//! and the shared seed expanded from another 64); it has no known seed-independent collisions,
//! so without the seed a peer can neither aim its pairs at one set nor forge another pair's tag.
//! The worst a peer can cause is misses, by sending more pairs than the cache holds, which cost
//! what deriving every key costs without a cache. foldhash is not a cryptographic PRF: an
//! attacker that could read the process's memory or many tags could recover the seed, which
//! is outside this threat model (it could read the limiter's salt as well).
//!
//! Memory is fixed at construction (16 bytes per slot) and nothing allocates afterwards but a
//! group's key list beyond [`INLINE_KEYS`] keys.

use std::hash::{Hash, Hasher};

use foldhash::SharedSeed;
use foldhash::quality::FoldHasher;
use smallvec::SmallVec;
use txgate_ratelimit::{AppKey, AppRateLimiter, Origin};
use txgate_sync::sync::{AtomicU64, Ordering};

/// Slots per set: four 16-byte slots fill one 64-byte cache line.
const WAYS: usize = 4;

/// Keys held inline by [`KeyBuf`]: a group of go-algorand's maximum size (16 transactions)
/// calling one app each fits without allocating.
pub(crate) const INLINE_KEYS: usize = 16;

/// The keys of one group, on the stack up to [`INLINE_KEYS`].
pub(crate) type KeyBuf = SmallVec<[AppKey; INLINE_KEYS]>;

/// The top tag bit, always set: a never-written slot (both words zero) matches no tag.
const TAG_TOP: u64 = 1 << 63;

/// One cached key as two independent words (see the module docs).
#[derive(Default)]
struct Slot {
    /// `((tag ^ hash) & !low) | shard`.
    check: AtomicU64,
    hash: AtomicU64,
}

/// One set: its slots on one 64-byte cache line.
#[derive(Default)]
#[repr(align(64))]
struct Set([Slot; WAYS]);

/// The cache (see the module docs).
pub(crate) struct KeyCache {
    // Invariant: a power-of-two number of sets.
    sets: Box<[Set]>,
    /// Ones in the low `k` bits (see the module docs): they hold a check word's shard and pick a
    /// tag's set. Invariant: below `TAG_TOP`.
    low: u64,
    /// The tag hash's per-hasher seed.
    seed: u64,
    /// The tag hash's shared seed.
    shared: SharedSeed,
}

impl KeyCache {
    /// A cache of at least `capacity` keys (rounded up to a power-of-two number of sets) for a
    /// limiter of `shards` shards (a power of two, as the limiter's config requires), its tags
    /// keyed by `seed` (random bytes: the OS random source in the handler, fixed in tests).
    pub(crate) fn new(capacity: usize, shards: usize, seed: [u8; 16]) -> Self {
        let sets = capacity.div_ceil(WAYS).max(1).next_power_of_two();
        let k = sets
            .trailing_zeros()
            .max(shards.max(1).next_power_of_two().trailing_zeros())
            .min(62);
        let (a, b) = seed.split_at(8);
        let word = |s: &[u8]| u64::from_le_bytes(s.try_into().unwrap_or([0; 8]));
        Self {
            sets: (0..sets).map(|_| Set::default()).collect(),
            low: (1 << k) - 1,
            seed: word(a),
            shared: SharedSeed::from_u64(word(b)),
        }
    }

    /// The tag of a pair: its top bit set (see [`TAG_TOP`]).
    fn tag(&self, app: u64, origin: &Origin) -> u64 {
        let mut h = FoldHasher::with_seed(self.seed, &self.shared);
        (app, origin).hash(&mut h);
        h.finish() | TAG_TOP
    }

    /// The set of `tag`.
    fn set_of(&self, tag: u64) -> &Set {
        &self.sets[tag as usize & (self.sets.len() - 1)]
    }

    /// Asks the CPU to load `set`'s cache line, so that the lines of a group's keys load side by
    /// side instead of one miss after another (a hint: no effect on what any load returns).
    #[inline]
    fn prefetch(set: &Set) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        {
            let line: *const Set = set;
            // SAFETY: `_mm_prefetch` needs SSE, part of every x86-64 target's baseline; a
            // prefetch has no effect on program behaviour (Intel SDM, PREFETCHh), and `line`
            // points into a live allocation.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(line.cast());
            }
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        let _ = set;
    }

    /// The cached key of `tag`, if one of its set's slots holds it.
    #[inline]
    fn lookup(&self, set: &Set, tag: u64) -> Option<AppKey> {
        let high = !self.low;
        set.0.iter().find_map(|slot| {
            // Relaxed: each word is read on its own and the check below decides; no other
            // memory is published through the slot.
            let check = slot.check.load(Ordering::Relaxed);
            let hash = slot.hash.load(Ordering::Relaxed);
            ((check ^ hash ^ tag) & high == 0)
                .then(|| AppKey::from_parts((check & self.low) as u32, hash))
        })
    }

    /// The key of (`app`, `origin`) in `limiter`: cached, or derived and remembered; for tests.
    #[cfg(all(test, not(loom)))]
    fn key(&self, limiter: &AppRateLimiter, origin: &Origin, app: u64) -> AppKey {
        self.get_or_derive(origin, app, || limiter.app_key(app, origin))
    }

    /// The cached key of (`app`, `origin`), or `derive()` remembered; for tests.
    #[cfg(test)]
    fn get_or_derive(&self, origin: &Origin, app: u64, derive: impl FnOnce() -> AppKey) -> AppKey {
        self.get_or_derive_tagged(self.tag(app, origin), derive)
    }

    /// The cached key of the pair whose tag is `tag`, or `derive()` remembered.
    #[inline]
    fn get_or_derive_tagged(&self, tag: u64, derive: impl FnOnce() -> AppKey) -> AppKey {
        let set = self.set_of(tag);
        if let Some(key) = self.lookup(set, tag) {
            return key;
        }
        let key = derive();
        self.put(set, tag, key);
        key
    }

    /// Writes `key` under `tag` into one slot of `set`: a never-written slot if the set has one,
    /// else the slot two bits of the tag pick.
    fn put(&self, set: &Set, tag: u64, key: AppKey) {
        // A pair takes a free way before it evicts anything, so up to four pairs of one set all
        // stay. Once every way is full, two tag bits the set index does not use (bits 61 and
        // 62: the set index is at most 62 bits, bit 63 is always one) pick the victim.
        // Relaxed: a hint; two writers that pick the same free slot leave one key, and the other
        // pair misses once more.
        let free = set
            .0
            .iter()
            .position(|s| s.check.load(Ordering::Relaxed) == 0);
        let victim = free.unwrap_or((tag >> 61) as usize & (WAYS - 1));
        self.write(&set.0[victim], tag, key);
    }

    /// Stores `key` under `tag` in `slot`.
    fn write(&self, slot: &Slot, tag: u64, key: AppKey) {
        let hash = key.hash();
        // The shard fits the low bits: `low` covers the limiter's shard count, and a derived
        // key's shard is below it.
        let check = ((tag ^ hash) & !self.low) | (u64::from(key.shard()) & self.low);
        // Relaxed: see `lookup`; a reader that sees only one of these words fails its check but
        // with the odds in the module docs.
        slot.hash.store(hash, Ordering::Relaxed);
        slot.check.store(check, Ordering::Relaxed);
    }

    /// The keys of `app_ids` from `origin`, in order, into `out` (which must be empty).
    pub(crate) fn keys(
        &self,
        limiter: &AppRateLimiter,
        origin: &Origin,
        app_ids: &[u64],
        out: &mut KeyBuf,
    ) {
        debug_assert!(out.is_empty());
        // Tags first, with a prefetch of each set, then the lookups: the sets' cache lines (a
        // random line of the cache each) load in parallel. `out` holds the tags meanwhile (in
        // the keys' hash words), so nothing but `out` itself is needed for them.
        out.extend(app_ids.iter().map(|&app| {
            let tag = self.tag(app, origin);
            Self::prefetch(self.set_of(tag));
            AppKey::from_parts(0, tag)
        }));
        for (key, &app) in out.iter_mut().zip(app_ids) {
            let tag = AppKey::hash(key);
            *key = self.get_or_derive_tagged(tag, || limiter.app_key(app, origin));
        }
    }

    /// Whether the key of (`app`, `origin`) is cached; for tests.
    #[cfg(test)]
    fn contains(&self, origin: &Origin, app: u64) -> bool {
        let tag = self.tag(app, origin);
        self.lookup(self.set_of(tag), tag).is_some()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::time::Duration;

    use txgate_ratelimit::Config;

    use super::*;

    const SEED: [u8; 16] = [9; 16];

    fn limiter_with(shards: usize) -> AppRateLimiter {
        AppRateLimiter::new(
            Config::default()
                .with_max_size(1 << 12)
                .with_rate_per_second(100)
                .with_window(Duration::from_secs(1))
                .with_shards(shards)
                .with_salt(Some([8; 16])),
        )
        .unwrap()
    }

    fn limiter() -> AppRateLimiter {
        limiter_with(16)
    }

    fn cache(capacity: usize, l: &AppRateLimiter) -> KeyCache {
        KeyCache::new(capacity, l.config().shards, SEED)
    }

    fn keys(c: &KeyCache, l: &AppRateLimiter, o: &Origin, apps: &[u64]) -> Vec<AppKey> {
        let mut out = KeyBuf::new();
        c.keys(l, o, apps, &mut out);
        out.as_slice().to_vec()
    }

    #[test]
    fn cached_keys_are_the_limiters_own() {
        // 16 shards in 16 sets; 1,024 shards (more shard bits than set bits) in 2 sets; one
        // shard.
        for (shards, capacity) in [(16, 64), (1024, 8), (1, 64)] {
            let l = limiter_with(shards);
            // A small cache, so misses, hits and overwrites all happen.
            let c = cache(capacity, &l);
            let apps: Vec<u64> = (1..=40).collect(); // more than the inline buffer
            for round in 0..3 {
                for p in 0..20u8 {
                    let o = Origin::from_peer_id(&[p]);
                    let want: Vec<AppKey> = apps.iter().map(|&a| l.app_key(a, &o)).collect();
                    let at = format!("{shards} shards, round {round} peer {p}");
                    assert_eq!(keys(&c, &l, &o, &apps), want, "{at}");
                    assert_eq!(keys(&c, &l, &o, &apps), want, "{at}, again");
                }
            }
        }
    }

    #[test]
    fn the_low_bits_cover_the_set_index_and_the_shard() {
        let l = limiter_with(1024);
        assert_eq!(cache(8, &l).low, (1 << 10) - 1); // 2 sets, 1,024 shards
        assert_eq!(cache(1 << 16, &l).low, (1 << 14) - 1); // 16,384 sets
        // A key of every shard round-trips through a slot.
        let c = cache(4, &l);
        for shard in [0, 1, 511, 1023] {
            let key = AppKey::from_parts(shard, 0xdead_beef_0000_0000 | u64::from(shard));
            let tag = c.tag(7, &Origin::from_peer_id(b"s"));
            c.write(&c.sets[0].0[0], tag, key);
            assert_eq!(c.lookup(&c.sets[0], tag), Some(key), "shard {shard}");
        }
    }

    #[test]
    fn a_set_is_one_cache_line_and_the_cache_rounds_up() {
        assert_eq!(std::mem::size_of::<Slot>(), 16);
        assert_eq!(std::mem::size_of::<Set>(), 64);
        let l = limiter();
        assert_eq!(cache(100, &l).sets.len(), 32); // 25 sets of four, rounded up
        assert_eq!(cache(1, &l).sets.len(), 1);
    }

    #[test]
    fn a_working_set_that_fits_stays() {
        let l = limiter();
        let c = cache(1 << 14, &l);
        let pairs: Vec<(Origin, u64)> = (0..1_000u32)
            .map(|i| {
                (
                    Origin::from_peer_id(&(i % 50).to_le_bytes()),
                    u64::from(1 + i % 37),
                )
            })
            .collect();
        for (o, a) in &pairs {
            assert_eq!(c.key(&l, o, *a), l.app_key(*a, o));
        }
        // 1,000 keys in 4,096 four-way sets: only the fifth and later pairs of a set evict
        // (sets of 0.24 pairs on average, Poisson: about 0.04 evictions expected); placed by the
        // tag alone, in 16,384 direct-mapped slots, about 30 would be.
        let kept = pairs.iter().filter(|(o, a)| c.contains(o, *a)).count();
        assert!(kept >= 998, "{kept} of 1000 kept");
    }

    #[test]
    fn four_pairs_of_one_set_all_stay() {
        let l = limiter();
        let c = cache(4, &l); // one set of four ways
        // Four pairs whose tags pick the same victim slot: a cache that placed a pair by its tag
        // alone would keep only the last.
        let o = Origin::from_peer_id(b"p");
        let victim = |a: u64| (c.tag(a, &o) >> 61) & 3;
        let apps: Vec<u64> = (1..).filter(|&a| victim(a) == victim(1)).take(5).collect();
        let keys: Vec<AppKey> = apps[..4].iter().map(|&a| c.key(&l, &o, a)).collect();
        for &a in &apps[..4] {
            assert!(
                c.contains(&o, a),
                "app {a} was evicted from a set with room"
            );
        }
        // All hit from now on: a lookup derives nothing.
        let fail = || -> AppKey { panic!("derived a cached key") };
        for (&a, &k) in apps.iter().zip(&keys) {
            assert_eq!(c.get_or_derive(&o, a, fail), k);
            assert_eq!(k, l.app_key(a, &o));
        }
        // A fifth pair evicts exactly one of them (its tag's victim), and is then cached itself.
        assert_eq!(c.key(&l, &o, apps[4]), l.app_key(apps[4], &o));
        assert!(c.contains(&o, apps[4]));
        let kept = apps[..4].iter().filter(|&&a| c.contains(&o, a)).count();
        assert_eq!(kept, 3);
    }

    #[test]
    fn a_torn_slot_reads_as_a_miss() {
        let l = limiter();
        let c = cache(4, &l); // one set
        let (o, p) = (Origin::from_peer_id(b"a"), Origin::from_peer_id(b"b"));
        let key = c.key(&l, &o, 5);
        assert!(c.contains(&o, 5));
        // Another pair's write, caught half way: its hash landed in our slot, its check did not.
        let slot = c.sets[0]
            .0
            .iter()
            .find(|s| s.check.load(Ordering::Relaxed) != 0)
            .unwrap();
        slot.hash.store(l.app_key(6, &p).hash(), Ordering::Relaxed);
        assert!(!c.contains(&o, 5), "a torn slot was accepted");
        assert_eq!(c.key(&l, &o, 5), key); // the miss derives it again
        assert!(c.contains(&o, 5));
        // The other half: our hash with another pair's check word.
        let other = c.tag(6, &p);
        let slot = c.sets[0]
            .0
            .iter()
            .find(|s| s.hash.load(Ordering::Relaxed) == key.hash())
            .unwrap();
        let check = ((other ^ l.app_key(6, &p).hash()) & !c.low) | u64::from(key.shard());
        slot.check.store(check, Ordering::Relaxed);
        assert!(!c.contains(&o, 5), "a torn slot was accepted");
    }

    #[test]
    fn tags_depend_on_the_seed_and_on_the_whole_pair() {
        let l = limiter();
        let (c, d) = (cache(4, &l), KeyCache::new(4, 16, [1; 16]));
        let (o, p) = (Origin::from_peer_id(&[1]), Origin::from_peer_id(&[1, 0]));
        assert_ne!(c.tag(5, &o), d.tag(5, &o));
        assert_ne!(c.tag(5, &o), c.tag(6, &o));
        // Origins that differ only in length are different pairs.
        assert_ne!(c.tag(5, &o), c.tag(5, &p));
        assert_eq!(c.tag(5, &o), cache(4, &l).tag(5, &o));
    }
}

/// loom model (run with `RUSTFLAGS="--cfg loom" cargo test -p txgate-ledger --release --lib
/// handler::keys`): readers racing writes of other pairs into the same slot never accept a key
/// that is not their pair's.
#[cfg(all(test, loom))]
mod loom_models {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

    use loom::sync::Arc;
    use loom::thread;

    use super::*;

    /// A stand-in for the limiter's derivation: distinct, fixed keys per pair, independent of
    /// the tags (as salted BLAKE2b output is of a keyed tag).
    fn derive(app: u64, origin: &Origin) -> AppKey {
        let h = BuildHasherDefault::<DefaultHasher>::default().hash_one((b"key", app, origin));
        AppKey::from_parts((h >> 60) as u32, h)
    }

    #[test]
    fn a_reader_never_accepts_another_pairs_key() {
        loom::model(|| {
            // One set of 16 shards: every pair shares its four slots. A fixed seed: the model
            // must be deterministic.
            let c = Arc::new(KeyCache::new(4, 16, [7; 16]));
            // Three pairs: the reader's takes the empty set's first slot, and the writers
            // overwrite it and each other there.
            let pairs: Vec<(Origin, u64)> = (0..3u8)
                .map(|i| (Origin::from_peer_id(&[i]), u64::from(i) + 1))
                .collect();
            let (mine, theirs) = (pairs[0], [pairs[1], pairs[2]]);
            let _ = c.get_or_derive(&mine.0, mine.1, || derive(mine.1, &mine.0));
            assert!(c.contains(&mine.0, mine.1));
            // The writers only store (the write half of a miss, into the reader's slot): loom 0.7
            // does not explore a reader seeing a thread's store when that thread loaded the same
            // word first (tokio-rs/loom#166, #392), which a full `get_or_derive` (its lookup) and
            // `put` (its search for a free slot) would do.
            let writers: Vec<_> = theirs
                .into_iter()
                .map(|(o, app)| {
                    let c = c.clone();
                    thread::spawn(move || {
                        let tag = c.tag(app, &o);
                        c.write(&c.sets[0].0[0], tag, derive(app, &o));
                    })
                })
                .collect();
            let tag = c.tag(mine.1, &mine.0);
            if let Some(key) = c.lookup(c.set_of(tag), tag) {
                assert_eq!(
                    key,
                    derive(mine.1, &mine.0),
                    "accepted a torn or foreign slot"
                );
            }
            for w in writers {
                w.join().unwrap();
            }
        });
    }
}
