//! A bounded cache of the rate limiter's derived keys, per (origin, app id).
//!
//! Deriving an [`AppKey`] costs one BLAKE2b-256 ([`AppRateLimiter::app_key`]), more than the
//! rest of an admission; go-algorand derives it for every app of every message. A peer's
//! connection sends many messages for the same apps, so the handler derives each (origin, app)
//! key once and keeps it: the limiter's API takes pre-derived keys
//! ([`AppRateLimiter::admit_keys`], [`AppRateLimiter::penalize_keys`]) for this use. A key is
//! only meaningful to the limiter that derived it (its salt), so a cache belongs to one limiter:
//! the handler's.
//!
//! # Shape
//!
//! A fixed array of two-slot sets, one cache line each (a set-associative cache, as CPU caches
//! are). The *tag* of a pair is a keyed SipHash of (app id, origin) (std's `RandomState`, random
//! per cache: peers cannot aim at a set or a tag); its bits pick the set. A slot is three
//! independent atomic words: the key's hash, its shard, and a check word `tag ^ hash ^
//! mix(shard)`. A reader accepts a slot iff its three words, read one by one, satisfy that
//! equation for the reader's own tag; a writer stores the three words (a miss derives the key
//! and writes it into a free slot of the set, else over one picked by the tag). No lock, no
//! fence, and no unsafe code but a prefetch hint (a group's sets are prefetched before they are
//! read, so their cache lines load side by side): a read that interleaves with writes of other
//! pairs sees words from different writes, whose equation fails (the key hashes are salted
//! BLAKE2b output, so it holds by chance with probability 2^-64, the collision odds the limiter
//! already accepts for its 64-bit key hashes), and a failed equation is a miss, which derives
//! the key. (The check-word trick is Hyatt and Mann's lockless
//! transposition table, ICGA Journal 25(1), 2002.)
//!
//! Memory is fixed at construction (32 bytes per slot) and nothing allocates afterwards. The
//! worst a peer can cause is misses, which cost what deriving every key costs without a cache.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use smallvec::SmallVec;
use txgate_ratelimit::{AppKey, AppRateLimiter, Origin};
use txgate_sync::sync::{AtomicU64, Ordering};

/// Slots per set (a set is one 64-byte cache line).
const WAYS: usize = 2;

/// Keys held inline by [`KeyBuf`]: a group of go-algorand's maximum size (16 transactions)
/// calling one app each fits without allocating.
const INLINE_KEYS: usize = 16;

/// The keys of one group, on the stack up to [`INLINE_KEYS`].
pub(crate) type KeyBuf = SmallVec<[AppKey; INLINE_KEYS]>;

/// One cached key as three independent words (see the module docs).
#[derive(Default)]
struct Slot {
    check: AtomicU64,
    hash: AtomicU64,
    shard: AtomicU64,
}

/// One set: its slots on one 64-byte cache line.
#[derive(Default)]
#[repr(align(64))]
struct Set([Slot; WAYS]);

/// Spreads a shard index over 64 bits (an odd multiplier: a bijection), so the check word
/// depends on every bit of it.
fn mix(shard: u64) -> u64 {
    shard.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The cache (see the module docs); `S` hashes tags (std's randomly keyed SipHash but in tests).
pub(crate) struct KeyCache<S = RandomState> {
    // Invariant: a power-of-two number of sets.
    sets: Box<[Set]>,
    tags: S,
}

impl KeyCache {
    /// A cache of at least `capacity` keys (rounded up to a power-of-two number of sets).
    pub(crate) fn new(capacity: usize) -> Self {
        Self::with_tags(capacity, RandomState::new())
    }
}

impl<S: BuildHasher> KeyCache<S> {
    /// [`KeyCache::new`] with the tags hashed by `tags`.
    fn with_tags(capacity: usize, tags: S) -> Self {
        let sets = capacity.div_ceil(WAYS).max(1).next_power_of_two();
        Self {
            sets: (0..sets).map(|_| Set::default()).collect(),
            tags,
        }
    }

    /// The tag of a pair: never 0, so an all-zero (never written) slot matches no pair.
    fn tag(&self, app: u64, origin: &Origin) -> u64 {
        self.tags.hash_one((app, origin)) | 1
    }

    /// The set of `tag`.
    fn set_of(&self, tag: u64) -> &Set {
        &self.sets[(tag >> 1) as usize & (self.sets.len() - 1)]
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
    fn lookup(&self, set: &Set, tag: u64) -> Option<AppKey> {
        set.0.iter().find_map(|slot| {
            // Relaxed: each word is read on its own and the check below decides; no other
            // memory is published through the slot.
            let check = slot.check.load(Ordering::Relaxed);
            let hash = slot.hash.load(Ordering::Relaxed);
            let shard = slot.shard.load(Ordering::Relaxed);
            (check ^ hash ^ mix(shard) == tag).then(|| AppKey::from_parts(shard as u32, hash))
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

    /// [`get_or_derive`](Self::get_or_derive) of the pair whose tag is `tag`.
    fn get_or_derive_tagged(&self, tag: u64, derive: impl FnOnce() -> AppKey) -> AppKey {
        let set = self.set_of(tag);
        if let Some(key) = self.lookup(set, tag) {
            return key;
        }
        let key = derive();
        Self::put(set, tag, key);
        key
    }

    /// Writes `key` under `tag` into one slot of `set`: a never-written slot if the set has one,
    /// else the slot a bit of the tag picks.
    fn put(set: &Set, tag: u64, key: AppKey) {
        // A set is two-way associative: a pair takes a free way before it evicts anything, so
        // two pairs of one set both stay (with the slot fixed by the tag alone, the cache would
        // be direct-mapped: at the default size and a working set of 0.7 keys per slot, half the
        // pairs would share their slot with another and evict each other on every use). Once
        // both ways are full, a bit of the tag the set index does not use picks the victim.
        // Relaxed: a hint; two writers that pick the same free slot leave one key, and the other
        // pair misses once more.
        let free = set
            .0
            .iter()
            .position(|s| s.check.load(Ordering::Relaxed) == 0);
        Self::write(&set.0[free.unwrap_or((tag >> 63) as usize)], tag, key);
    }

    /// Stores `key` under `tag` in `slot`.
    fn write(slot: &Slot, tag: u64, key: AppKey) {
        let (hash, shard) = (key.hash(), u64::from(key.shard()));
        // Relaxed: see `lookup`; a reader that sees only some of these words fails its check.
        slot.hash.store(hash, Ordering::Relaxed);
        slot.shard.store(shard, Ordering::Relaxed);
        slot.check.store(tag ^ hash ^ mix(shard), Ordering::Relaxed);
    }

    /// The keys of `app_ids` from `origin`, in order, into `out`.
    pub(crate) fn keys(
        &self,
        limiter: &AppRateLimiter,
        origin: &Origin,
        app_ids: &[u64],
        out: &mut KeyBuf,
    ) {
        // Tags first, with a prefetch of each set, then the lookups: the sets' cache lines (a
        // random line of the cache each) load in parallel.
        let tags: SmallVec<[u64; INLINE_KEYS]> = app_ids
            .iter()
            .map(|&app| {
                let tag = self.tag(app, origin);
                Self::prefetch(self.set_of(tag));
                tag
            })
            .collect();
        for (&app, &tag) in app_ids.iter().zip(&tags) {
            out.push(self.get_or_derive_tagged(tag, || limiter.app_key(app, origin)));
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

    fn limiter() -> AppRateLimiter {
        AppRateLimiter::new(
            Config::default()
                .with_max_size(1 << 12)
                .with_rate_per_second(100)
                .with_window(Duration::from_secs(1))
                .with_shards(16)
                .with_salt(Some([8; 16])),
        )
        .unwrap()
    }

    fn keys(c: &KeyCache, l: &AppRateLimiter, o: &Origin, apps: &[u64]) -> Vec<AppKey> {
        let mut out = KeyBuf::new();
        c.keys(l, o, apps, &mut out);
        out.as_slice().to_vec()
    }

    #[test]
    fn cached_keys_are_the_limiters_own() {
        let l = limiter();
        // A small cache, so misses, hits and overwrites all happen.
        let c = KeyCache::new(64);
        let apps: Vec<u64> = (1..=40).collect(); // more than the inline buffer
        for round in 0..3 {
            for p in 0..20u8 {
                let o = Origin::from_peer_id(&[p]);
                let want: Vec<AppKey> = apps.iter().map(|&a| l.app_key(a, &o)).collect();
                assert_eq!(keys(&c, &l, &o, &apps), want, "round {round} peer {p}");
                assert_eq!(
                    keys(&c, &l, &o, &apps),
                    want,
                    "round {round} peer {p}, again"
                );
            }
        }
    }

    #[test]
    fn a_set_is_one_cache_line_and_the_cache_rounds_up() {
        assert_eq!(std::mem::size_of::<Set>(), 64);
        assert_eq!(KeyCache::new(100).sets.len(), 64); // 50 sets of two, rounded up
    }

    #[test]
    fn a_working_set_that_fits_stays() {
        let l = limiter();
        let c = KeyCache::new(1 << 14);
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
        // 1,000 keys in 8,192 two-way sets: only the third and later pairs of a set evict
        // (about 2.4 keys expected: sets of 0.12 pairs on average, Poisson); placed by the tag
        // alone, in 16,384 direct-mapped slots, about 30 would be.
        let kept = pairs.iter().filter(|(o, a)| c.contains(o, *a)).count();
        assert!(kept >= 988, "{kept} of 1000 kept");
    }

    #[test]
    fn two_pairs_of_one_set_both_stay() {
        let l = limiter();
        let c = KeyCache::new(2); // one set of two ways
        // Two pairs whose tags pick the same victim slot: a cache that placed a pair by its tag
        // alone would keep only the second.
        let o = Origin::from_peer_id(b"p");
        let first = 1;
        let second = (2..)
            .find(|&a| c.tag(a, &o) >> 63 == c.tag(first, &o) >> 63)
            .unwrap();
        let (k1, k2) = (c.key(&l, &o, first), c.key(&l, &o, second));
        assert!(c.contains(&o, first), "the second pair evicted the first");
        assert!(c.contains(&o, second));
        // Both hit from now on: a third lookup derives nothing.
        let fail = || -> AppKey { panic!("derived a cached key") };
        assert_eq!(c.get_or_derive(&o, first, fail), k1);
        assert_eq!(c.get_or_derive(&o, second, fail), k2);
        assert_eq!((k1, k2), (l.app_key(first, &o), l.app_key(second, &o)));
        // A third pair evicts one of them, and is then cached itself.
        let third = (second + 1..)
            .find(|&a| c.tag(a, &o) >> 63 == c.tag(first, &o) >> 63)
            .unwrap();
        assert_eq!(c.key(&l, &o, third), l.app_key(third, &o));
        assert!(c.contains(&o, third));
        assert!(c.contains(&o, first) != c.contains(&o, second));
    }

    #[test]
    fn a_torn_slot_reads_as_a_miss() {
        let l = limiter();
        let c = KeyCache::new(2); // one set
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
    /// the tags (as salted BLAKE2b output is of a SipHash tag).
    fn derive(app: u64, origin: &Origin) -> AppKey {
        let h = BuildHasherDefault::<DefaultHasher>::default().hash_one((b"key", app, origin));
        AppKey::from_parts((h >> 60) as u32, h)
    }

    #[test]
    fn a_reader_never_accepts_another_pairs_key() {
        loom::model(|| {
            // One set: every pair shares its two slots. Fixed tag keys: the model must be
            // deterministic.
            let c = Arc::new(KeyCache::with_tags(
                2,
                BuildHasherDefault::<DefaultHasher>::default(),
            ));
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
                        KeyCache::<BuildHasherDefault<DefaultHasher>>::write(
                            &c.sets[0].0[0],
                            tag,
                            derive(app, &o),
                        );
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
