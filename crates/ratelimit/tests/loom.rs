//! loom models of the lock-free paths (run with `RUSTFLAGS="--cfg loom"`, see the workspace
//! README). Reclamation is txgate-sync's loom stand-in, which poisons a retired node as soon as
//! every guard alive at its retirement has dropped and makes any later access panic; its only
//! ordering is seize's Linux barriers (a fence at each retirement, and the fence `membarrier`
//! runs in every other thread, modelled before that thread's next guard entry), none on guard
//! entry. Each model ends with the structural validator.
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Decision, Origin};

/// The instant the checker's operations count from.
const T0: u64 = txgate_ratelimit::checker::T0;

/// The eviction policy a model's shards run (the same scenario is checked under both).
#[derive(Clone, Copy, Debug)]
enum Policy {
    /// The normal geometry: shards this small keep exact LRU behind a mutex.
    Lru,
    /// The lock-free set-associative table evicting by CLOCK (`Config::with_clock_ways`), each
    /// shard one set of two ways per key.
    Clock,
}

/// Declares a model twice, as two tests: `$lru` runs `$body` with `$p` = [`Policy::Lru`] and
/// `$clock` with [`Policy::Clock`] (the scenario is the same; only the table differs). Attributes
/// written between the two names apply to `$clock` alone.
macro_rules! twins {
    (
        $(#[$attr:meta])*
        fn $lru:ident, $(#[$clock_attr:meta])* $clock:ident($p:ident) $body:block
    ) => {
        $(#[$attr])*
        #[test]
        fn $lru() {
            let $p = Policy::Lru;
            $body
        }
        $(#[$attr])*
        $(#[$clock_attr])*
        #[test]
        fn $clock() {
            let $p = Policy::Clock;
            $body
        }
    };
}

/// One shard of `capacity` keys under `policy`, L = `limit` per 1 s window.
fn limiter(policy: Policy, limit: u64, capacity: usize) -> Arc<AppRateLimiter> {
    sharded(policy, limit, capacity, 1)
}

fn sharded(policy: Policy, limit: u64, max_size: usize, shards: usize) -> Arc<AppRateLimiter> {
    Arc::new(AppRateLimiter::new(policy_config(policy, limit, max_size, shards)).unwrap())
}

/// `shards` shards holding `max_size` keys in all, L = `limit` per 1 s window.
fn config(limit: u64, max_size: usize, shards: usize) -> Config {
    Config::default()
        .with_max_size(max_size)
        .with_rate_per_second(limit)
        .with_window(Duration::from_secs(1))
        .with_shards(shards)
        .with_salt(Some([1; 16]))
}

/// [`config`] under `policy`: for [`Policy::Clock`], every shard one CLOCK set of two ways per
/// key of its capacity (the table's sets are `ceil(2 C / ways)`), so that every key of a shard
/// competes in one set, as in an exact-LRU shard.
fn policy_config(policy: Policy, limit: u64, max_size: usize, shards: usize) -> Config {
    let c = config(limit, max_size, shards);
    match policy {
        Policy::Lru => c,
        Policy::Clock => c.with_clock_ways(Some(2 * (max_size / shards))),
    }
}

/// One shard of `capacity` keys under `policy`, L = `limit` per 1 s window, as a config.
fn shard(policy: Policy, limit: u64, capacity: usize) -> Config {
    policy_config(policy, limit, capacity, 1)
}

fn peer(i: u8) -> Origin {
    Origin::from_peer_id(&[i])
}

/// The value of `f` run once, single-threaded, under loom's runtime (whose atomics the limiter
/// needs): for choosing a model's keys by trying candidates, one fresh run per candidate, so
/// that the search adds nothing to the model's own executions.
fn once<T: Send + 'static>(f: impl Fn() -> T + Send + Sync + 'static) -> T {
    let out = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = out.clone();
    loom::model(move || *slot.lock().unwrap() = Some(f()));
    let value = out.lock().unwrap().take();
    value.expect("the model ran")
}

/// Runs `model` with loom's preemption bound raised to at least `bound`, whatever
/// `LOOM_MAX_PREEMPTIONS` says (for models whose bad interleaving needs that many).
fn check_with_bound(bound: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(bound, |b| b.max(bound)));
    builder.check(model);
}

/// Runs `model` under loom; under [`Policy::Clock`] with the preemption bound capped at `cap`
/// (for CLOCK twins whose history needs no more and whose search is too large at the default).
fn check_capped(policy: Policy, cap: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if let Policy::Clock = policy {
        builder.preemption_bound = Some(builder.preemption_bound.map_or(cap, |b| b.min(cap)));
    }
    builder.check(model);
}

twins! {
    /// Two threads admit a key that neither finds in the table: with L = 1 exactly one is admitted,
    /// and the table ends with one node of the key.
    fn racing_admits_on_a_new_key_never_exceed_l, racing_admits_on_a_new_key_never_exceed_l_clock(p) {
        loom::model(move || {
            let l = limiter(p, 1, 2);
            let key = l.app_key(1, &peer(0));
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_key(key, T0))
            };
            let mine = l.admit_key(key, T0);
            let theirs = t.join().unwrap();
            assert_eq!(mine.is_admit() as u8 + theirs.is_admit() as u8, 1);
            assert_eq!(l.tracked_keys(), vec![(0, key.hash())]);
            assert!(l.admit_key(key, T0).is_drop());
            l.validate();
        });
    }
}

twins! {
    /// A stale lookup: thread B admits k then m, thread A admits k (L = 1, capacity 2). A's lookup
    /// may miss k while B inserts k and then m; A must then find k (never evict it to insert it
    /// afresh), so k is admitted exactly once and nothing is evicted.
    fn a_stale_miss_never_admits_a_key_twice, a_stale_miss_never_admits_a_key_twice_clock(p) {
        check_with_bound(3, move || {
            let l = limiter(p, 1, 2);
            let (k, m) = (l.app_key(1, &peer(0)), l.app_key(1, &peer(1)));
            let t = {
                let l = l.clone();
                thread::spawn(move || {
                    let d = l.admit_key(k, T0);
                    let _ = l.admit_key(m, T0);
                    d
                })
            };
            let mine = l.admit_key(k, T0);
            let theirs = t.join().unwrap();
            assert_eq!(
                mine.is_admit() as u8 + theirs.is_admit() as u8,
                1,
                "{mine:?} {theirs:?}"
            );
            let s = l.stats();
            assert_eq!((s.evicted, s.entries), (0, 2), "{s:?}");
            l.validate();
        });
    }
}

twins! {
    /// Three threads admit one new key (L = 1) into a shard of capacity 2: whatever the
    /// interleaving of their insertions, exactly one admission and one node of the key (the
    /// in-flight case: an insertion in flight never makes another caller decide without the table).
    fn three_threads_admit_one_new_key_once, three_threads_admit_one_new_key_once_clock(p) {
        loom::model(move || {
            let l = limiter(p, 1, 2);
            let key = l.app_key(1, &peer(0));
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let l = l.clone();
                    thread::spawn(move || l.admit_key(key, T0))
                })
                .collect();
            let mut admitted = l.admit_key(key, T0).is_admit() as u8;
            for t in threads {
                admitted += t.join().unwrap().is_admit() as u8;
            }
            assert_eq!(admitted, 1);
            assert_eq!(l.tracked_keys(), vec![(0, key.hash())]);
            assert!(l.admit_key(key, T0).is_drop());
            l.validate();
        });
    }
}

twins! {
    /// Two groups naming the same two apps in opposite orders, each app one admission from its
    /// limit: exactly one is admitted
    /// (the groups take their keys in one canonical order; neither is dropped because of the other's
    /// count unless that count stays).
    fn crossed_groups_admit_exactly_one, crossed_groups_admit_exactly_one_clock(p) {
        loom::model(move || {
            let l = sharded(p, 2, 8, 4);
            let (a, b) = (l.app_key(11, &peer(0)), l.app_key(12, &peer(0)));
            for k in [a, b] {
                // One admission each first (L = 2), so the model explores the groups, not
                // insertions.
                assert!(l.admit_key(k, T0).is_admit());
            }
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_keys(&[b, a], T0))
            };
            let mine = l.admit_keys(&[a, b], T0);
            let theirs = t.join().unwrap();
            assert_eq!(
                mine.is_admit() as u8 + theirs.is_admit() as u8,
                1,
                "{mine:?} {theirs:?}"
            );
            assert_eq!(l.counts(a), Some((0, 2)));
            assert_eq!(l.counts(b), Some((0, 2)));
            l.validate();
        });
    }
}

twins! {
    /// A group {a, b} where b is already at its limit races a single admission of a (L = 1, a has
    /// room; a comes first in the groups' key order, so the group holds a while it finds b full).
    /// The group must drop and the single admission must be admitted: the group's tentative count
    /// on a may never make a concurrent caller drop (no sequential order drops both).
    ///
    /// Under CLOCK (4 shards of 2, each one set of 4 ways; a and b fall in one shard) two
    /// insertions of the new key a race (the single's, and the group's lookup) in a shard
    /// holding b alone, with one spare unit: whichever takes it, the other finds a inserted.
    /// Were the unit reserved before the set's claim and given back when the claim fails, the
    /// second could find no unit, evict b and claim the set first; b's counts would leave with
    /// it and the group would be admitted over b's limit, which no order explains.
    fn a_failing_group_never_drops_a_concurrent_caller,
    a_failing_group_never_drops_a_concurrent_caller_clock(p) {
        loom::model(move || {
            let l = sharded(p, 1, 8, 4);
            let (a, b) = ordered_pair(&l);
            assert!(l.admit_key(b, T0).is_admit());
            assert!(l.counts(a).is_none());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_keys(&[a, b], T0))
            };
            let single = l.admit_key(a, T0);
            let group = t.join().unwrap();
            assert!(group.is_drop(), "{group:?} victims {:?}", l.victims());
            assert!(single.is_admit(), "{single:?}");
            assert_eq!(l.counts(a), Some((0, 1)));
            l.validate();
        });
    }
}

twins! {
    /// A group {a, b} (a first in key order, both one admission from L = 2) races single
    /// admissions of a then b on another thread. Sequentially either the group goes first (admitted;
    /// both singles drop) or the single on a does (the group drops, naming a, index 0). A drop that
    /// names b while both singles were admitted would be explained by no order: the group must not
    /// decide a drop on counts read after it was aborted.
    fn a_dropped_group_names_a_key_over_its_limit_at_one_instant, a_dropped_group_names_a_key_over_its_limit_at_one_instant_clock(p) {
        loom::model(move || {
            let l = sharded(p, 2, 8, 4);
            let (a, b) = ordered_pair(&l);
            assert!(l.admit_key(a, T0).is_admit());
            assert!(l.admit_key(b, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || (l.admit_key(a, T0), l.admit_key(b, T0)))
            };
            let group = l.admit_keys(&[a, b], T0);
            let (sa, sb) = t.join().unwrap();
            match group {
                Decision::Admit { .. } => assert!(sa.is_drop() && sb.is_drop(), "{sa:?} {sb:?}"),
                Decision::Drop { index, .. } => {
                    assert!(sa.is_admit(), "{sa:?}");
                    assert_eq!(index, 0, "{group:?} {sa:?} {sb:?}");
                }
                _ => unreachable!(),
            }
            l.validate();
        });
    }
}

twins! {
    /// As [`a_dropped_group_names_a_key_over_its_limit_at_one_instant`], with the write to b a
    /// penalty (L = 2, penalty 1; both keys at 1): the other thread admits a (aborting the group if
    /// its marker is there) and then penalizes b. Sequentially the group is admitted first, or a's
    /// admission comes first and the group drops on a (index 0); a drop naming b would rest on b's
    /// penalty, written after the group's abort.
    fn a_dropped_group_never_names_a_penalty_written_after_its_abort, a_dropped_group_never_names_a_penalty_written_after_its_abort_clock(p) {
        loom::model(move || {
            let l = sharded(p, 2, 8, 4);
            let (a, b) = ordered_pair(&l);
            assert!(l.admit_key(a, T0).is_admit());
            assert!(l.admit_key(b, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || {
                    let sa = l.admit_key(a, T0);
                    l.penalize_keys(&[b], T0);
                    sa
                })
            };
            let group = l.admit_keys(&[a, b], T0);
            let sa = t.join().unwrap();
            match group {
                Decision::Admit { .. } => assert!(sa.is_drop(), "{sa:?}"),
                Decision::Drop { index, .. } => {
                    assert!(sa.is_admit(), "{sa:?}");
                    assert_eq!(index, 0, "{group:?} {sa:?}");
                }
                _ => unreachable!(),
            }
            l.validate();
        });
    }
}

/// Recency in a small shard under concurrency: a thread refreshing a while the main thread
/// refreshes b, c, b cannot move the shard's clock back, so after c and a are used again a new
/// key d evicts b, the least recently used in every order of the accesses.
#[test]
fn small_shard_recency_never_runs_backwards() {
    loom::model(|| {
        let l = limiter(Policy::Lru, 100, 3);
        let [a, b, c, d] = [0, 1, 2, 3].map(|i| l.app_key(1, &peer(i)));
        for k in [a, b, c] {
            assert!(l.admit_key(k, T0).is_admit());
        }
        let t = {
            let l = l.clone();
            thread::spawn(move || {
                let _ = l.admit_key(a, T0);
            })
        };
        for k in [b, c, b] {
            assert!(l.admit_key(k, T0).is_admit());
        }
        t.join().unwrap();
        for k in [c, a, d] {
            assert!(l.admit_key(k, T0).is_admit());
        }
        let tracked = l.tracked_keys();
        assert!(
            !tracked.contains(&(0, b.hash())) && tracked.len() == 3,
            "{tracked:?}"
        );
        l.validate();
    });
}

twins! {
    /// A key admitted (twice, L = 1) while another thread inserts two more keys into its shard,
    /// which has room for all three: the key is admitted exactly once and nothing is evicted.
    fn admissions_racing_insertions_with_room_never_exceed_l, admissions_racing_insertions_with_room_never_exceed_l_clock(p) {
        loom::model(move || {
            let l = limiter(p, 1, 3);
            let [k, m, n] = [0, 1, 2].map(|i| l.app_key(1, &peer(i)));
            let t = {
                let l = l.clone();
                thread::spawn(move || {
                    let _ = l.admit_key(m, T0);
                    let _ = l.admit_key(n, T0);
                })
            };
            let admitted = l.admit_key(k, T0).is_admit() as u8 + l.admit_key(k, T0).is_admit() as u8;
            t.join().unwrap();
            assert_eq!(admitted, 1);
            let s = l.stats();
            assert_eq!((s.evicted, s.entries), (0, 3), "{s:?}");
            l.validate();
        });
    }
}

twins! {
    /// Two threads insert one new key into a full shard {B, C} while one of them changes which key
    /// is least recently used, so they may plan different victims: the set's claim lets one
    /// insertion through, and with L = 1 exactly one admission lands.
    fn racing_inserts_of_one_key_into_a_full_shard_admit_once, racing_inserts_of_one_key_into_a_full_shard_admit_once_clock(p) {
        check_with_bound(3, move || {
            let l = limiter(p, 1, 2);
            let [a, b, c] = [0, 1, 2].map(|i| l.app_key(1, &peer(i)));
            assert!(l.admit_key(b, T0).is_admit());
            assert!(l.admit_key(c, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_key(a, T0))
            };
            // A dropped attempt still refreshes B's recency: C becomes the least recently used.
            let _ = l.admit_key(b, T0);
            let mine = l.admit_key(a, T0);
            let theirs = t.join().unwrap();
            assert_eq!(
                mine.is_admit() as u8 + theirs.is_admit() as u8,
                1,
                "{mine:?} {theirs:?}"
            );
            assert!(l.admit_key(a, T0).is_drop());
            let tracked = l.tracked_keys();
            assert!(
                tracked.contains(&(0, a.hash())) && tracked.len() == 2,
                "{tracked:?}"
            );
            l.validate();
        });
    }
}

twins! {
    /// A helper that loaded an insertion's claim and stalls must not act on the set after that
    /// insertion completed: thread A inserts k (evicting x), refreshes y and inserts k2, which
    /// evicts k in the same way; thread B, inserting k3, may have loaded k's claim before all that
    /// and complete it late. A late helper that replaced "whatever is in the way" would mark k2
    /// evicted and put the retired k back; the structure stays valid and every key is admitted once.
    /// (Under CLOCK the bound is 1, the one preemption of B that A's whole sequence runs in.)
    fn a_stale_helper_never_reinstates_a_replaced_node, a_stale_helper_never_reinstates_a_replaced_node_clock(p) {
        check_capped(p, 1, move || {
            let l = limiter(p, 1, 2);
            let [x, y, k, k2, k3] = [0, 1, 2, 3, 4].map(|i| l.app_key(1, &peer(i)));
            assert!(l.admit_key(x, T0).is_admit());
            assert!(l.admit_key(y, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_key(k3, T0))
            };
            assert!(l.admit_key(k, T0).is_admit());
            let _ = l.admit_key(y, T0);
            assert!(l.admit_key(k2, T0).is_admit());
            assert!(t.join().unwrap().is_admit());
            let s = l.stats();
            assert_eq!(s.entries, 2, "{s:?}");
            l.validate();
        });
    }
}

twins! {
    /// Two threads, two admissions each, on an existing key with L = 3: exactly 3 admitted.
    fn racing_admits_on_an_existing_key_never_exceed_l, racing_admits_on_an_existing_key_never_exceed_l_clock(p) {
        loom::model(move || {
            let l = limiter(p, 3, 2);
            let key = l.app_key(1, &peer(0));
            assert!(l.admit_key(key, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_key(key, T0))
            };
            let mine = l.admit_key(key, T0);
            let theirs = t.join().unwrap();
            assert_eq!(mine.is_admit() as u8 + theirs.is_admit() as u8, 2);
            assert!(l.admit_key(key, T0).is_drop());
            l.validate();
        });
    }
}

twins! {
    /// One thread admits key A while another inserts a new key C into the full shard {A, B},
    /// evicting the least recently used key. The bound of 2 keys holds, no retired node is touched
    /// after reclamation could free it (the stand-in panics), and A's admission is decided.
    fn admit_racing_eviction_of_the_same_key, admit_racing_eviction_of_the_same_key_clock(p) {
        // Evictions seen, per execution: 1 (A's admission first, C evicts B) and 2 (C evicts A
        // first) must both occur (checked after the model), so the race is reached.
        static SEEN: [std::sync::atomic::AtomicBool; 3] =
            [const { std::sync::atomic::AtomicBool::new(false) }; 3];
        // The first C whose insertion, alone, evicts A (same salt: same hashes and places).
        let c = (2..=u8::MAX)
            .find(|&i| {
                once(move || {
                    let s = limiter(p, 5, 2);
                    let [a, b, c] = [0, 1, i].map(|i| s.app_key(1, &peer(i)));
                    for k in [a, b, c] {
                        assert!(s.admit_key(k, T0).is_admit());
                    }
                    s.counts(a).is_none()
                })
            })
            .unwrap();
        loom::model(move || {
            let l = limiter(p, 5, 2);
            let [a, b, c] = [0, 1, c].map(|i| l.app_key(1, &peer(i)));
            assert!(l.admit_key(a, T0).is_admit());
            assert!(l.admit_key(b, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_key(c, T0))
            };
            let mine = l.admit_key(a, T0);
            let theirs = t.join().unwrap();
            assert!(mine.is_admit() && theirs.is_admit());
            let s = l.stats();
            // C evicts A or B; if it evicted A before A's lookup, A comes back and evicts again.
            assert_eq!((s.entries, s.admitted), (2, 4));
            assert!(s.evicted == 1 || s.evicted == 2, "{s:?}");
            SEEN[s.evicted as usize].store(true, std::sync::atomic::Ordering::Relaxed);
            l.validate();
        });
        let seen = SEEN.each_ref().map(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        assert!(seen[1] && seen[2], "the race was not reached: evictions seen {seen:?}");
    }
}

twins! {
    /// A group {a, x} (x in another shard) races an insertion of c that, alone, evicts a from its
    /// full shard {a, b} (a is the least recently used, and c's CLOCK sweep starts at a): the
    /// group either lands on a before the eviction or finds a evicted and starts over; in every
    /// case it is admitted once, with its count stored on a tracked node or lost with an evicted
    /// one, and no retired node is touched. Both orders must occur among the executions (checked
    /// after the model), so the race is reached.
    fn a_group_racing_the_eviction_of_its_key, a_group_racing_the_eviction_of_its_key_clock(p) {
        // a's counts after each execution: 1 (a evicted, then inserted afresh by the group),
        // 2 (the group landed on a first, and a was kept) or 0 (a evicted after the group).
        static SEEN: [std::sync::atomic::AtomicBool; 3] =
            [const { std::sync::atomic::AtomicBool::new(false) }; 3];
        // Peers of b and c: b the first in a's shard, c the first after it there whose
        // insertion, alone, evicts a (same salt: same hashes and places).
        let (b, c) = once(move || {
            let s = sharded(p, 5, 4, 2);
            let a = s.app_key(11, &peer(0));
            let mut beside_a = (1..=u8::MAX).filter(|&i| s.app_key(11, &peer(i)).shard() == a.shard());
            (beside_a.next().unwrap(), beside_a.collect::<Vec<_>>())
        });
        let c = c
            .into_iter()
            .find(|&i| {
                once(move || {
                    let s = sharded(p, 5, 4, 2);
                    let [a, b, c] = [0, b, i].map(|i| s.app_key(11, &peer(i)));
                    for k in [a, b, c] {
                        assert!(s.admit_key(k, T0).is_admit());
                    }
                    s.counts(a).is_none()
                })
            })
            .unwrap();
        loom::model(move || {
            let l = sharded(p, 5, 4, 2); // 2 shards of 2
            let o = peer(0);
            let a = l.app_key(11, &o);
            let x = (12..)
                .map(|app| l.app_key(app, &o))
                .find(|k| k.shard() != a.shard())
                .unwrap();
            let [b, c] = [b, c].map(|i| l.app_key(11, &peer(i)));
            assert!(l.admit_key(a, T0).is_admit());
            assert!(l.admit_key(b, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_key(c, T0))
            };
            let group = l.admit_keys(&[a, x], T0);
            assert!(t.join().unwrap().is_admit());
            assert!(group.is_admit());
            assert_eq!(l.counts(x), Some((0, 1)));
            let cur = l.counts(a).map_or(0, |(_, cur)| cur);
            assert!(cur <= 2, "a counts {cur}");
            SEEN[cur as usize].store(true, std::sync::atomic::Ordering::Relaxed);
            l.validate();
        });
        let seen = SEEN.each_ref().map(|s| s.load(std::sync::atomic::Ordering::Relaxed));
        assert!(
            seen.iter().filter(|&&s| s).count() >= 2,
            "the race was not reached: a's counts were always the same ({seen:?})"
        );
    }
}

twins! {
    /// A penalty racing an admission on one key (L = 4, penalty 1): everything lands, so exactly one
    /// more admission fits afterwards.
    fn penalize_racing_admit_keeps_the_arithmetic_exact, penalize_racing_admit_keeps_the_arithmetic_exact_clock(p) {
        loom::model(move || {
            let l = limiter(p, 4, 2);
            let key = l.app_key(1, &peer(0));
            assert!(l.admit_key(key, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.penalize_keys(&[key], T0))
            };
            let mine = l.admit_key(key, T0);
            t.join().unwrap();
            assert!(mine.is_admit());
            // 1 + 1 admitted + 1 penalty = 3 of 4.
            assert!(l.admit_key(key, T0).is_admit());
            assert!(l.admit_key(key, T0).is_drop());
            l.validate();
        });
    }
}

/// Keys equal after reducing their shard are one key in a group.
#[test]
fn aliased_keys_count_once() {
    loom::model(|| {
        let l = sharded(Policy::Lru, 1, 8, 4);
        let (a, b) = (AppKey::from_parts(1, 77), AppKey::from_parts(5, 77));
        assert!(l.admit_keys(&[a, b], T0).is_admit());
        assert!(l.admit_key(a, T0).is_drop());
    });
}

twins! {
    /// Weighted: two threads admit a cost of 2 on a key neither finds in the table (L = 3): exactly
    /// one is admitted, and the key's node is born holding that cost (2), whichever insertion won.
    fn weighted_admits_on_a_new_key_never_exceed_l, weighted_admits_on_a_new_key_never_exceed_l_clock(p) {
        loom::model(move || {
            let l = limiter(p, 3, 2);
            let key = l.app_key(1, &peer(0));
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_keys_n(&[key], cost(2), T0).unwrap())
            };
            let mine = l.admit_keys_n(&[key], cost(2), T0).unwrap();
            let theirs = t.join().unwrap();
            assert_eq!(mine.is_admit() as u8 + theirs.is_admit() as u8, 1);
            assert_eq!(l.counts(key), Some((0, 2)));
            assert_eq!(l.tracked_keys(), vec![(0, key.hash())]);
            l.validate();
        });
    }
}

twins! {
    /// Weighted: a group {a, b} of cost 2 races a single admission of cost 2 on a (L = 4, both keys
    /// at 1). Sequentially exactly one of them fits: the group first leaves a = b = 3; the single
    /// first leaves a = 3, b = 1. Whoever meets the group's marker on a and resolves it must apply
    /// the group's cost, not one admission: else a would read 2 and both would be admitted.
    fn a_resolved_weighted_group_applies_its_cost, a_resolved_weighted_group_applies_its_cost_clock(p) {
        loom::model(move || {
            let l = sharded(p, 4, 8, 4);
            let (a, b) = ordered_pair(&l);
            assert!(l.admit_key(a, T0).is_admit());
            assert!(l.admit_key(b, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_keys_n(&[a, b], cost(2), T0).unwrap())
            };
            let single = l.admit_keys_n(&[a], cost(2), T0).unwrap();
            let group = t.join().unwrap();
            assert_eq!(
                group.is_admit() as u8 + single.is_admit() as u8,
                1,
                "{group:?} {single:?}"
            );
            assert_eq!(l.counts(a), Some((0, 3)));
            let b_count = if group.is_admit() { 3 } else { 1 };
            assert_eq!(l.counts(b), Some((0, b_count)), "{group:?} {single:?}");
            l.validate();
        });
    }
}

twins! {
    /// Weighted: two groups on the same keys {a, b}, of costs 2 and 1 (L = 3, both keys at 1; the
    /// groups take their keys in one canonical order whatever the caller's). Sequentially the first
    /// admitted leaves no room for the other (1 + 2 + 1 > 3 either way), so exactly one is admitted
    /// and both keys end at 1 plus its cost, whoever resolves whose marker.
    fn weighted_groups_on_the_same_keys_admit_exactly_one_with_its_cost, weighted_groups_on_the_same_keys_admit_exactly_one_with_its_cost_clock(p) {
        loom::model(move || {
            let l = sharded(p, 3, 8, 4);
            let (a, b) = (l.app_key(11, &peer(0)), l.app_key(12, &peer(0)));
            assert!(l.admit_key(a, T0).is_admit());
            assert!(l.admit_key(b, T0).is_admit());
            let t = {
                let l = l.clone();
                thread::spawn(move || l.admit_keys_n(&[b, a], cost(1), T0).unwrap())
            };
            let heavy = l.admit_keys_n(&[a, b], cost(2), T0).unwrap();
            let light = t.join().unwrap();
            assert_eq!(
                heavy.is_admit() as u8 + light.is_admit() as u8,
                1,
                "{heavy:?} {light:?}"
            );
            let want = if heavy.is_admit() { 3 } else { 2 };
            assert_eq!(l.counts(a), Some((0, want)));
            assert_eq!(l.counts(b), Some((0, want)));
            l.validate();
        });
    }
}

// A linearizability check against the reference model: two threads run their operations on the
// real limiter, and the crate's checker (`txgate_ratelimit::checker`, whose module docs give
// the steps it interleaves: E1's sweep steps, E2's lookups, aborted attempts and decisions)
// must find an order of the two threads' model steps, from the same start and keeping real
// time, that gives every decision (with its details), the tracked keys, the compared keys'
// stored counts, the reference bits, the keys evicted (the real limiter logs its victims
// under loom) and the bits each operation's sweeps cleared.

use txgate_ratelimit::checker::{self, History, Op, cost, on_limiter};

fn admit(keys: &[AppKey], c: u32) -> Op {
    Op::Admit(keys.to_vec(), c, 0)
}

/// A scenario: the set-up run first on one thread, the two threads' operations, and the keys
/// whose counts are compared.
struct Scenario {
    setup: Vec<Op>,
    threads: [Vec<Op>; 2],
    keys: Vec<AppKey>,
}

/// Runs `scenario` (built on the limiter of `config`) under loom and checks that some
/// interleaving of the two threads' operations on the model gives what the limiter gave: every
/// decision, the tracked keys, the compared keys' counts, the keys whose CLOCK reference bit is
/// set, the victims, and for each operation the number of reference bits its sweeps cleared
/// (E1: each clearing is a step of the model, so a stray clearing fails even where the end
/// state hides it).
fn linearizable(config: Config, scenario: fn(&AppRateLimiter) -> Scenario) {
    linearizable_within(None, config, scenario);
}

/// [`linearizable`] for a scenario about an eviction racing a use of its victim:
/// `scenario(l, i)` names its new key by `i` ([`keys_with`]); the first `i` for which the
/// operation that inserts the new key `s.keys[new]`, run alone after the set-up, evicts
/// `s.keys[victim]` is used (so
/// that a CLOCK sweep, which starts at a way drawn from the new key's hash, picks the victim
/// the scenario races, as recency does in an LRU shard). The histories must then differ (at
/// least two distinct results among the executions), or the race was not reached.
fn linearizable_racing(
    config: Config,
    victim: usize,
    new: usize,
    scenario: fn(&AppRateLimiter, u8) -> Scenario,
) {
    let i = (0..=100)
        .find(|&i| {
            let config = config.clone();
            once(move || {
                let l = AppRateLimiter::new(config.clone()).unwrap();
                let s = scenario(&l, i);
                for op in &s.setup {
                    let _ = on_limiter(&l, op);
                }
                assert!(l.counts(s.keys[new]).is_none(), "key {new} is not new");
                assert!(
                    l.counts(s.keys[victim]).is_some(),
                    "key {victim} is not tracked"
                );
                let inserting = s.threads.iter().flatten().find(|op| match op {
                    Op::Admit(k, ..) | Op::Penalize(k) => k.contains(&s.keys[new]),
                });
                let _ = on_limiter(&l, inserting.expect("an operation inserts the new key"));
                l.counts(s.keys[victim]).is_none()
            })
        })
        .expect("some new key evicts the victim");
    let results = linearizable_within(None, config, move |l| scenario(l, i));
    assert!(
        results >= 2,
        "every execution gave the same history: the race was not reached"
    );
}

/// [`linearizable`] with loom's preemption bound raised to at least `bound` (for histories that
/// need that many preemptions), whatever `LOOM_MAX_PREEMPTIONS` says.
/// Returns the number of distinct histories (results, end state, victims) the executions gave.
fn linearizable_within(
    bound: Option<usize>,
    config: Config,
    scenario: impl Fn(&AppRateLimiter) -> Scenario + Send + Sync + 'static,
) -> usize {
    linearizable_then(bound, config, scenario, |_| {})
}

/// [`linearizable_within`], also running `after` on the limiter at the end of every execution
/// (before the checker).
fn linearizable_then(
    bound: Option<usize>,
    config: Config,
    scenario: impl Fn(&AppRateLimiter) -> Scenario + Send + Sync + 'static,
    after: impl Fn(&AppRateLimiter) + Send + Sync + 'static,
) -> usize {
    linearizable_when(bound, config, scenario, move |l| {
        after(l);
        true
    })
}

/// [`linearizable_then`] whose `when` (run at the end of every execution, before the checker)
/// also says whether to check the execution's history (review: to check only the executions
/// that took one path).
fn linearizable_when(
    bound: Option<usize>,
    config: Config,
    scenario: impl Fn(&AppRateLimiter) -> Scenario + Send + Sync + 'static,
    when: impl Fn(&AppRateLimiter) -> bool + Send + Sync + 'static,
) -> usize {
    let histories = std::sync::Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let seen = histories.clone();
    let mut builder = loom::model::Builder::new();
    if let Some(bound) = bound {
        builder.preemption_bound = Some(builder.preemption_bound.map_or(bound, |b| b.max(bound)));
    }
    builder.check(move || {
        let l = Arc::new(AppRateLimiter::new(config.clone()).unwrap());
        let s = scenario(&l);
        for op in &s.setup {
            let _ = on_limiter(&l, op);
        }
        // Real time: each operation's start and end, stamped from one counter. Loom runs one
        // thread at a time and switches only at its own operations, so a plain atomic (which
        // adds no interleavings) orders the stamps as the execution ran.
        let clock = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let stamp = |clock: &std::sync::atomic::AtomicUsize| {
            clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        };
        let t = {
            let (l, ops, clock) = (l.clone(), s.threads[1].clone(), clock.clone());
            thread::spawn(move || checker::run(&l, &ops, || stamp(&clock)))
        };
        let mine = checker::run(&l, &s.threads[0], || stamp(&clock));
        let theirs = t.join().unwrap();
        let h = History {
            setup: s.setup,
            threads: s.threads,
            runs: [mine, theirs],
            outcome: checker::outcome(&l, &s.keys),
            keys: s.keys,
            // The keys the real operations evicted (the set-up's included), sorted: the
            // sequential order must evict the same keys, as often.
            victims: l.victims(),
        };
        seen.lock().unwrap().insert(format!(
            "{:?} {:?} {:?}",
            [&h.runs[0].got, &h.runs[1].got],
            h.outcome,
            h.victims
        ));
        l.validate();
        if !when(&l) {
            return;
        }
        assert_eq!(
            checker::explained(&config, &h),
            Ok(true),
            "no sequential order of the steps explains {h:?}"
        );
    });
    histories.lock().map(|h| h.len()).unwrap()
}

/// One shard of `capacity` keys, L = `limit` per 1 s window, as a config.
fn one_shard(limit: u64, capacity: usize) -> Config {
    config(limit, capacity, 1)
}

/// Two of a peer's keys, in the groups' canonical order.
fn ordered_pair(l: &AppRateLimiter) -> (AppKey, AppKey) {
    let (x, y) = (l.app_key(11, &peer(0)), l.app_key(12, &peer(0)));
    let order = |k: AppKey| (k.shard(), k.hash());
    if order(x) < order(y) { (x, y) } else { (y, x) }
}

twins! {
    /// A weighted group {a, b} of two new keys races a weighted single on a (L = 3, room for both).
    fn linearizable_weighted_group_and_single_on_new_keys, linearizable_weighted_group_and_single_on_new_keys_clock(p) {
        linearizable(shard(p, 3, 4), |l| {
            let (a, b) = ordered_pair(l);
            Scenario {
                setup: vec![],
                threads: [vec![admit(&[a, b], 2)], vec![admit(&[a], 2)]],
                keys: vec![a, b],
            }
        });
    }
}

twins! {
    /// A weighted group {a, b} races a penalty of {b, a} and then an admission of a (L = 4,
    /// penalty 1; both keys at 1).
    fn linearizable_weighted_group_and_penalty_group, linearizable_weighted_group_and_penalty_group_clock(p) {
        linearizable(shard(p, 4, 4), |l| {
            let (a, b) = ordered_pair(l);
            Scenario {
                setup: vec![admit(&[a, b], 1)],
                threads: [
                    vec![admit(&[a, b], 2)],
                    vec![Op::Penalize(vec![b, a]), admit(&[a], 1)],
                ],
                keys: vec![a, b],
            }
        });
    }
}

twins! {
    /// Weighted singles and a group on one key, one of them a caller one interval ahead (the key
    /// rolls over under the other's feet; L = 3).
    fn linearizable_weighted_calls_across_an_interval_roll, linearizable_weighted_calls_across_an_interval_roll_clock(p) {
        linearizable(shard(p, 3, 4), |l| {
            let (a, b) = ordered_pair(l);
            Scenario {
                setup: vec![admit(&[a], 2)],
                threads: [
                    vec![admit(&[a], 1), admit(&[a, b], 2)],
                    // Admitted, it rolls a to the next interval (prev 2 weighs 2 at its offset 0).
                    vec![Op::Admit(vec![a], 1, 1_000_000_000)],
                ],
                keys: vec![a, b],
            }
        });
    }
}

const SEC: u64 = 1_000_000_000;

/// One shard of `capacity` keys evicting by CLOCK in sets of `ways` ways (the test geometry),
/// L = `limit` per 1 s window.
fn clock_shard(limit: u64, capacity: usize, ways: usize) -> Config {
    config(limit, capacity, 1).with_clock_ways(Some(ways))
}

/// Distinct keys of one peer's apps 1, 2, ... (all in the one shard of a one-shard limiter).
fn keys<const N: usize>(l: &AppRateLimiter) -> [AppKey; N] {
    std::array::from_fn(|i| l.app_key(1, &peer(i as u8)))
}

/// [`keys`], the last one chosen by `i` (the `i`-th candidate of [`linearizable_racing`]).
fn keys_with<const N: usize>(l: &AppRateLimiter, i: u8) -> [AppKey; N] {
    std::array::from_fn(|k| l.app_key(1, &peer(if k + 1 == N { k as u8 + i } else { k as u8 })))
}

twins! {
    /// Scenario A (one shard of 2, L = 1): b was admitted two windows before y, so it is stale;
    /// thread 1 admits a new key c while thread 2 admits b. Every order keeps b (stale only until
    /// its admission makes it current, or evicted before it and admitted afresh) and the history
    /// must be one of them: an eviction planned on b's stale state never lands after b's admission.
    fn linearizable_a_stale_victim_used_before_its_eviction, linearizable_a_stale_victim_used_before_its_eviction_clock(p) {
        linearizable_racing(shard(p, 1, 2), 0, 2, |l, i| {
            let [b, y, c] = keys_with(l, i);
            Scenario {
                setup: vec![admit(&[b], 1), Op::Admit(vec![y], 1, 2 * SEC)],
                threads: [
                    vec![Op::Admit(vec![c], 1, 2 * SEC)],
                    vec![Op::Admit(vec![b], 1, 2 * SEC)],
                ],
                keys: vec![b, y, c],
            }
        });
    }
}

twins! {
    /// Scenario B (shard {v, w} full, w least recently used, L = 1): thread 1 admits a new key b
    /// while thread 2 hits w and is dropped. The dropped hit is a use: if it comes first, v goes.
    fn linearizable_b_a_dropped_hit_on_the_victim, linearizable_b_a_dropped_hit_on_the_victim_clock(p) {
        linearizable(shard(p, 1, 2), |l| {
            let [v, w, b] = keys(l);
            Scenario {
                setup: vec![admit(&[w], 1), admit(&[v], 1)],
                threads: [vec![admit(&[b], 1)], vec![admit(&[w], 1)]],
                keys: vec![v, w, b],
            }
        });
    }
}

twins! {
    /// Scenario C (weighted, L = 4, shard {a stale, x}): a group {a, b} of cost 3 races an
    /// admission of cost 2 on a.
    fn linearizable_c_a_weighted_group_and_its_stale_key, linearizable_c_a_weighted_group_and_its_stale_key_clock(p) {
        linearizable(shard(p, 4, 2), |l| {
            let [a, x, b] = keys(l);
            Scenario {
                setup: vec![admit(&[a], 1), Op::Admit(vec![x], 1, 2 * SEC)],
                threads: [
                    vec![Op::Admit(vec![a, b], 3, 2 * SEC)],
                    vec![Op::Admit(vec![a], 2, 2 * SEC)],
                ],
                keys: vec![a, x, b],
            }
        });
    }
}

twins! {
    /// An eviction racing an admission of its victim (shard {v, w} full, v least recently used,
    /// L = 2): the admission lands before the eviction (then w goes) or the key comes back fresh.
    fn linearizable_an_admission_of_the_victim, linearizable_an_admission_of_the_victim_clock(p) {
        linearizable_racing(shard(p, 2, 2), 0, 2, |l, i| {
            let [v, w, n] = keys_with(l, i);
            Scenario {
                setup: vec![admit(&[v], 1), admit(&[w], 1)],
                threads: [vec![admit(&[n], 1)], vec![admit(&[v], 1)]],
                keys: vec![v, w, n],
            }
        });
    }
}

twins! {
    /// An eviction racing a penalty of its victim (shard {v, w}, v least recently used, L = 4,
    /// penalty 1).
    fn linearizable_a_penalty_of_the_victim, linearizable_a_penalty_of_the_victim_clock(p) {
        linearizable_racing(shard(p, 4, 2), 0, 2, |l, i| {
            let [v, w, n] = keys_with(l, i);
            Scenario {
                setup: vec![admit(&[v], 1), admit(&[w], 1)],
                threads: [vec![admit(&[n], 1)], vec![Op::Penalize(vec![v])]],
                keys: vec![v, w, n],
            }
        });
    }
}

twins! {
    /// Two insertions of new keys into a full shard of 2 (L = 1) race: each evicts the least
    /// recently used key at its instant.
    fn linearizable_two_evicting_insertions, linearizable_two_evicting_insertions_clock(p) {
        linearizable(shard(p, 1, 2), |l| {
            let [v, w, m, n] = keys(l);
            Scenario {
                setup: vec![admit(&[v], 1), admit(&[w], 1)],
                threads: [vec![admit(&[m], 1)], vec![admit(&[n], 1)]],
                keys: vec![v, w, m, n],
            }
        });
    }
}

/// A CLOCK shard under the checker (one set of 4 ways holding 2 keys, L = 1): a new key's
/// insertion sweeps the reference bits while another thread hits (dropped) a key it may pass.
/// A victim must have had no access since the sweep last passed it.
#[test]
fn linearizable_a_clock_shard_sweep_and_a_hit() {
    linearizable_racing(clock_shard(1, 2, 4), 0, 2, |l, i| {
        let [v, w, n] = keys_with(l, i);
        Scenario {
            // v and w admitted (reference bits clear: new keys), then both hit (bits set).
            setup: vec![
                admit(&[v], 1),
                admit(&[w], 1),
                admit(&[v], 1),
                admit(&[w], 1),
            ],
            threads: [vec![admit(&[n], 1)], vec![admit(&[v], 1)]],
            keys: vec![v, w, n],
        }
    });
}

/// A CLOCK shard: an insertion races an admission of the key it would evict (bits clear).
#[test]
fn linearizable_a_clock_shard_eviction_and_an_admission_of_its_victim() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let [v, w, n] = keys(l);
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[v], 1), admit(&[w], 1)]],
            keys: vec![v, w, n],
        }
    });
}

/// A CLOCK shard (one set of 4 ways holding 2 keys, L = 2; both keys' reference bits clear): a
/// new key's sweep starts at the way its hash draws, whose key another thread admits meanwhile.
/// Admitted first, that key is a use since the sweep (its bit set): the sweep passes it and the
/// other key goes. An eviction that took the key after that admission would be explained by no
/// order (its count would leave with it). Three preemptions: the sweep, the whole admission in
/// between, and the eviction's commit.
#[test]
fn linearizable_a_clock_sweep_racing_a_use_of_its_start_key() {
    linearizable_within(Some(3), clock_shard(2, 2, 4), |l| {
        let [v, w, n] = keys(l);
        // Ways fill in order: v in way 0, w in way 1; the sweep of n starts at way `start`.
        let start = (((n.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32;
        let first = if start == 0 { v } else { w };
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[first], 1)]],
            keys: vec![v, w, n],
        }
    });
}

twins! {
    /// Scenario B with a dropped hit that writes nothing (L = 1; w already dropped once, so its
    /// reference bit is set and its interval current): only its recency shows the use, and an
    /// eviction after it must take v.
    fn linearizable_b_a_dropped_hit_that_writes_nothing, linearizable_b_a_dropped_hit_that_writes_nothing_clock(p) {
        linearizable(shard(p, 1, 2), |l| {
            let [v, w, b] = keys(l);
            Scenario {
                setup: vec![admit(&[w], 1), admit(&[w], 1), admit(&[v], 1)],
                threads: [vec![admit(&[b], 1)], vec![admit(&[w], 1)]],
                keys: vec![v, w, b],
            }
        });
    }
}
twins! {
    /// Scenario D (shard of 2, L = 2; x at 2, a at 1): a group {a, b} races an admission of x. The
    /// group's lookups may evict x before the group takes effect (E2): x then comes back fresh.
    fn linearizable_d_a_groups_lookups_before_it_takes_effect, linearizable_d_a_groups_lookups_before_it_takes_effect_clock(p) {
        linearizable(shard(p, 2, 2), |l| {
            let [x, a, b] = keys(l);
            Scenario {
                setup: vec![admit(&[x], 2), admit(&[a], 1)],
                threads: [vec![admit(&[a, b], 1)], vec![admit(&[x], 1)]],
                keys: vec![x, a, b],
            }
        });
    }
}

/// A CLOCK shard (one set of 4 ways holding 2 keys, L = 1; both reference bits clear): a new
/// key's sweep starts at the way its hash draws, whose key another thread hits and is dropped.
/// A dropped hit is a use, and when its interval is current it writes only the reference bit:
/// if it comes first the sweep must pass that key and evict the other one.
#[test]
fn linearizable_a_dropped_hit_that_only_sets_the_reference_bit_is_a_use() {
    linearizable(clock_shard(1, 2, 4), |l| {
        let [v, w, n] = keys(l);
        let start = (((n.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32;
        let first = if start == 0 { v } else { w };
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[first], 1)]],
            keys: vec![v, w, n],
        }
    });
}

/// `n` distinct keys of the one shard per set of a shard of `sets` sets (a set: the high bits
/// of the key's hash, as the table picks it), from one peer's apps.
fn keys_by_set(l: &AppRateLimiter, sets: u64, n: usize) -> Vec<Vec<AppKey>> {
    let set = |k: &AppKey| ((u128::from(k.hash()) * u128::from(sets)) >> 64) as u64;
    (0..sets)
        .map(|s| {
            (0..=255u8)
                .map(|i| l.app_key(1, &peer(i)))
                .filter(|k| set(k) == s)
                .take(n)
                .collect()
        })
        .collect()
}

/// CLOCK over two sets sharing one spare unit (capacity 3 in sets of 3 ways: 2 sets, each with
/// one key of room, and 1 unit; L = 1): a1 in set 0 and b1 in set 1, then new keys a2 and b2
/// race. The one that takes the unit is inserted; the other evicts its set's key.
#[test]
fn linearizable_clock_two_sets_race_for_one_spare_unit() {
    linearizable(clock_shard(1, 3, 3), |l| {
        let by = keys_by_set(l, 2, 2);
        let (a1, a2, b1, b2) = (by[0][0], by[0][1], by[1][0], by[1][1]);
        Scenario {
            setup: vec![admit(&[a1], 1), admit(&[b1], 1)],
            threads: [vec![admit(&[a2], 1)], vec![admit(&[b2], 1)]],
            keys: vec![a1, a2, b1, b2],
        }
    });
}

/// CLOCK with an early eviction (capacity 9 in sets of 3 ways: 6 sets, 3 spare units; L = 1):
/// set 0 holds a1..a3 (two units taken, one left), so a new key a4 of set 0 evicts although a
/// unit remains, while another thread inserts b1 into set 1 (one key of room of its own) and
/// hits a1.
#[test]
fn linearizable_clock_a_full_set_evicts_while_a_unit_remains() {
    linearizable(clock_shard(1, 9, 3), |l| {
        let by = keys_by_set(l, 6, 4);
        let (a, b1) = (&by[0], by[1][0]);
        Scenario {
            setup: vec![admit(&[a[0]], 1), admit(&[a[1]], 1), admit(&[a[2]], 1)],
            threads: [
                vec![admit(&[a[3]], 1)],
                vec![admit(&[b1], 1), admit(&[a[0]], 1)],
            ],
            keys: vec![a[0], a[1], a[2], a[3], b1],
        }
    });
}

twins! {
    /// A caller behind never makes a key stale (shard of 3 in way order u, w, v, all used at
    /// T0 + 2 s, recency w < v < u; L = 3): thread 1 inserts n while thread 2
    /// admits u two intervals behind and then uses w. If the behind access rolled u back to T0's
    /// interval, u would turn stale after n's plan read it as current, and n would evict v where
    /// every order evicts the stale u. A key never rolls backwards, so u stays current and v, the
    /// least recently used, goes in every order.
    fn linearizable_a_caller_behind_never_makes_a_key_stale_under_a_plan, linearizable_a_caller_behind_never_makes_a_key_stale_under_a_plan_clock(p) {
        linearizable(shard(p, 3, 3), |l| {
            let [u, w, v, n] = keys(l);
            Scenario {
                setup: vec![
                    Op::Admit(vec![u], 1, 2 * SEC),
                    Op::Admit(vec![w], 1, 2 * SEC),
                    Op::Admit(vec![v], 1, 2 * SEC),
                    Op::Admit(vec![u], 1, 2 * SEC),
                ],
                threads: [
                    vec![Op::Admit(vec![n], 1, 2 * SEC)],
                    vec![Op::Admit(vec![u], 1, 0), Op::Admit(vec![w], 1, 2 * SEC)],
                ],
                keys: vec![u, w, v, n],
            }
        });
    }
}

twins! {
    /// A failed claim leaves no recency on another key's way (shard of 3, L = 1; q tracked):
    /// thread 1 inserts x then z while thread 2 inserts y and then uses q. Thread 1 may find way 1
    /// empty, lose its claim to y's, and insert x into way 2; z then evicts the least recently used
    /// key, y (inserted before q's use in every order that keeps thread 2's order), never q.
    fn linearizable_a_failed_claim_leaves_no_recency_on_another_keys_way, linearizable_a_failed_claim_leaves_no_recency_on_another_keys_way_clock(p) {
        linearizable(shard(p, 1, 3), |l| {
            let [q, y, x, z] = keys(l);
            Scenario {
                setup: vec![admit(&[q], 1)],
                threads: [
                    vec![admit(&[x], 1), admit(&[z], 1)],
                    vec![admit(&[y], 1), admit(&[q], 1)],
                ],
                keys: vec![q, y, x, z],
            }
        });
    }
}

twins! {
    /// A late hit never raises the recency of the key that replaced its node (shard of 2, L = 2;
    /// y then q used, y least recent): thread 1 admits y while thread 2 inserts n (evicting y) and
    /// then uses q. If thread 1's hit comes after the eviction, y comes back fresh and evicts n,
    /// the least recently used, not q: the hit's recency never lands on the key that replaced y.
    fn linearizable_a_late_hit_never_refreshes_the_key_that_replaced_its_key, linearizable_a_late_hit_never_refreshes_the_key_that_replaced_its_key_clock(p) {
        linearizable_racing(shard(p, 2, 2), 0, 2, |l, i| {
            let [y, q, n] = keys_with(l, i);
            Scenario {
                setup: vec![admit(&[y], 1), admit(&[q], 1)],
                threads: [vec![admit(&[y], 1)], vec![admit(&[n], 1), admit(&[q], 1)]],
                keys: vec![y, q, n],
            }
        });
    }
}

/// CLOCK, two sets sharing one spare unit (capacity 3 in sets of 3 ways; L = 1; a1 in set 0, b1
/// in set 1): thread 1 inserts a2 (set 0) while thread 2 inserts b2 (set 1) and then a2. If
/// thread 1 could hold the unit while its claim of set 0 fails (thread 2's a2 claims it first)
/// and give it back, b2 would find no unit and evict b1 although at its instant the shard had
/// a unit free: no order explains that. The unit is taken at the claim's instant (the table's
/// units word), so b2 evicts only once a2 holds the unit.
#[test]
fn linearizable_clock_spare_unit_held_by_a_failing_claim() {
    linearizable(clock_shard(1, 3, 3), |l| {
        let by = keys_by_set(l, 2, 2);
        let (a1, a2, b1, b2) = (by[0][0], by[0][1], by[1][0], by[1][1]);
        Scenario {
            setup: vec![admit(&[a1], 1), admit(&[b1], 1)],
            threads: [
                vec![admit(&[a2], 1)],
                vec![admit(&[b2], 1), admit(&[a2], 1)],
            ],
            keys: vec![a1, a2, b1, b2],
        }
    });
}

/// CLOCK, two sets sharing one spare unit (capacity 3 in sets of 3 ways; L = 1; a1 in set 0, b1
/// in set 1): thread 1 inserts a2 (set 0) while thread 2 inserts a3 (set 0) and then b2 (set 1).
/// Exactly one of a2 and a3 takes the unit and the other evicts in set 0, and b2 (after a3)
/// always evicts b1: no eviction may happen while a unit is free, and no insertion may take a
/// unit an earlier eviction found gone.
#[test]
fn linearizable_clock_no_eviction_while_a_unit_is_free() {
    linearizable(clock_shard(1, 3, 3), |l| {
        let by = keys_by_set(l, 2, 3);
        let (a1, a2, a3, b1, b2) = (by[0][0], by[0][1], by[0][2], by[1][0], by[1][1]);
        Scenario {
            setup: vec![admit(&[a1], 1), admit(&[b1], 1)],
            threads: [
                vec![admit(&[a2], 1)],
                vec![admit(&[a3], 1), admit(&[b2], 1)],
            ],
            keys: vec![a1, a2, a3, b1, b2],
        }
    });
}

/// CLOCK, one set of 6 ways holding a1, two spare units (capacity 3; L = 1): threads insert a2
/// and a3. Each takes a unit through a reservation; loom preempts an owner between installing
/// its reservation and its claim, so the other thread, needing a unit, claims the set for the
/// pending node and decides it (helping). Sequentially both are inserted and nothing is evicted.
#[test]
fn linearizable_clock_a_helper_completes_a_pending_reservation() {
    linearizable(clock_shard(1, 3, 6), |l| {
        let [a1, a2, a3] = keys(l);
        Scenario {
            setup: vec![admit(&[a1], 1)],
            threads: [vec![admit(&[a2], 1)], vec![admit(&[a3], 1)]],
            keys: vec![a1, a2, a3],
        }
    });
}

/// CLOCK, one set of 6 ways holding a1, two spare units (capacity 3; L = 1): thread 1 inserts
/// a2 while thread 2 inserts a3 and then a4. A reservation fails when another insertion
/// completed in its set after its owner's scan (thread 1 scans, thread 2 inserts a3 whole,
/// thread 1 reserves on the stale scan); its owner must plan again and take the last unit or
/// evict, never insert twice or leave the unit taken. Sequentially two of a2, a3, a4 take the
/// units and the last one evicts.
#[test]
fn linearizable_clock_a_failed_reservation_plans_again() {
    linearizable(clock_shard(1, 3, 6), |l| {
        let [a1, a2, a3, a4] = keys(l);
        Scenario {
            setup: vec![admit(&[a1], 1)],
            threads: [
                vec![admit(&[a2], 1)],
                vec![admit(&[a3], 1), admit(&[a4], 1)],
            ],
            keys: vec![a1, a2, a3, a4],
        }
    });
}

/// A CLOCK sweep that goes round again (one set of 4 ways holding v and w, L = 4, both bits
/// set): a new key n's sweep clears both bits, the key at its start way is admitted meanwhile
/// (its bit set again), and the sweep clears it again and evicts the other key. Each clearing is
/// a step of its own (E1), so the checker interleaves the admission between them.
#[test]
fn linearizable_a_clock_sweep_going_round_after_a_use_of_its_start_key() {
    linearizable(clock_shard(3, 2, 4), |l| {
        let [v, w, n] = keys(l);
        let start = (((n.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32;
        let first = if start == 0 { v } else { w };
        Scenario {
            setup: vec![
                admit(&[v], 1),
                admit(&[w], 1),
                admit(&[v], 1),
                admit(&[w], 1),
            ],
            threads: [vec![admit(&[n], 1)], vec![admit(&[first], 1)]],
            keys: vec![v, w, n],
        }
    });
}

twins! {
    /// Scenario E (weighted, one shard of 2, L = 4; a and b at 1, a the least recently used): a
    /// group {a, b} of cost 2 races an admission of cost 3 of a new key c, which evicts one of them.
    /// Recency follows the order in which the accesses take effect: if the group's lookup of a key
    /// comes before c's eviction, c is more recent than that key, so the group's re-insertion of an
    /// evicted key never evicts c while the model evicts the other.
    fn linearizable_e_recency_follows_the_order_accesses_take_effect, linearizable_e_recency_follows_the_order_accesses_take_effect_clock(p) {
        linearizable(shard(p, 4, 2), |l| {
            let [a, b, c] = keys(l);
            Scenario {
                setup: vec![admit(&[a], 1), admit(&[b], 1)],
                threads: [vec![admit(&[a, b], 2)], vec![admit(&[c], 3)]],
                keys: vec![a, b, c],
            }
        });
    }
}

twins! {
    /// Scenario E's core with single keys (shard of 2, L = 2; a then b used, a the least recently
    /// used): thread 1 inserts c (evicting a) while thread 2 uses b and then a. If b's use takes
    /// effect before c's eviction, c is the more recent of the two, so a's re-insertion evicts b.
    fn linearizable_e_a_hit_just_before_an_eviction, linearizable_e_a_hit_just_before_an_eviction_clock(p) {
        linearizable(shard(p, 2, 2), |l| {
            let [a, b, c] = keys(l);
            Scenario {
                setup: vec![admit(&[a], 1), admit(&[b], 1)],
                threads: [vec![admit(&[c], 1)], vec![admit(&[b], 1), admit(&[a], 1)]],
                keys: vec![a, b, c],
            }
        });
    }
}

twins! {
    /// As [`linearizable_e_a_hit_just_before_an_eviction`] with a dropped hit
    /// that writes nothing (L = 1; b already dropped once, so its word is current): only b's
    /// recency shows the use.
    fn linearizable_e_a_dropped_hit_just_before_an_eviction, linearizable_e_a_dropped_hit_just_before_an_eviction_clock(p) {
        linearizable(shard(p, 1, 2), |l| {
            let [a, b, c] = keys(l);
            Scenario {
                setup: vec![admit(&[a], 1), admit(&[b], 1), admit(&[b], 1)],
                threads: [vec![admit(&[c], 1)], vec![admit(&[b], 1), admit(&[a], 1)]],
                keys: vec![a, b, c],
            }
        });
    }
}

twins! {
    /// A group {a, b} decided on a snapshot races admissions of a and then b by one thread (L = 2;
    /// both keys at 1): a group that read a before the admissions and b after them must not name b
    /// (no instant has a with room and b without). Fails if a dropped group does not read the keys
    /// before the failing one again (seen with three preemptions: the group's two reads and the
    /// other thread's two admissions between them).
    fn linearizable_a_dropped_group_revalidates_its_snapshot, linearizable_a_dropped_group_revalidates_its_snapshot_clock(p) {
        linearizable_within(Some(3), shard(p, 2, 4), |l| {
            let (a, b) = ordered_pair(l);
            Scenario {
                setup: vec![admit(&[a], 1), admit(&[b], 1)],
                threads: [
                    vec![admit(&[a, b], 1)],
                    vec![admit(&[a], 1), admit(&[b], 1)],
                ],
                keys: vec![a, b],
            }
        });
    }
}

twins! {
    /// A group's first key k0, evicted by the group's own third lookup (two shards of 2, L = 3;
    /// k0 at 2 in interval 0, the group {k0, k1, k2} of cost 2 one interval later), is used
    /// meanwhile by a group {k0, x} one interval behind (x in the other shard). The real group
    /// decides k0 on its word at eviction, the model on the counts its lookup saw: the histories
    /// agree only through E2's aborted attempt (a lookup of k0 before the use stands, the last
    /// attempt's lookup comes after it).
    fn linearizable_a_self_evicted_key_used_by_a_group_before_its_eviction,
        linearizable_a_self_evicted_key_used_by_a_group_before_its_eviction_clock(p) {
        linearizable(policy_config(p, 3, 4, 2), |l| {
            let all: Vec<AppKey> = (0..=255u8).map(|i| l.app_key(1, &peer(i))).collect();
            let mut one: Vec<AppKey> = all
                .iter()
                .copied()
                .filter(|k| k.shard() == all[0].shard())
                .collect();
            one.sort_by_key(|k| k.hash());
            let (k0, k1, k2) = (one[0], one[1], one[2]);
            let x = (2..64u64)
                .map(|app| l.app_key(app, &peer(0)))
                .find(|k| k.shard() != k0.shard())
                .expect("two shards");
            Scenario {
                setup: vec![admit(&[k0], 2)],
                threads: [
                    vec![Op::Admit(vec![k0, k1, k2], 2, SEC)],
                    vec![Op::Admit(vec![k0, x], 1, 0)],
                ],
                keys: vec![k0, k1, k2, x],
            }
        });
    }
}

/// A CLOCK shard (one set of 4 ways holding k and u, L = 3; both reference bits clear): thread
/// 1 admits k while thread 2 inserts n (evicting one of them) and then admits k. An admission
/// whose compare-and-swap fails because of a later write leaves nothing behind (the reference
/// bit is set only by a write that succeeds), so k survives n's insertion only if an access
/// took effect before it. Checked with loom's preemption bound raised to 3.
#[test]
fn linearizable_a_clock_admission_retried_after_a_later_write_leaves_no_use() {
    linearizable_within(Some(3), clock_shard(3, 2, 4), |l| {
        let [k, u, n] = keys(l);
        Scenario {
            setup: vec![admit(&[k], 1), admit(&[u], 1)],
            threads: [vec![admit(&[k], 1)], vec![admit(&[n], 1), admit(&[k], 1)]],
            keys: vec![k, u, n],
        }
    });
}

/// LRU shard of 2 (L = 4; k at 2 and least recent, then j): thread 1 admits k while thread 2
/// inserts n and then asks k for cost 4. If k's admission comes first, n evicts j and thread 2
/// is dropped on cur = 3; else n evicts k, and thread 2 admits k afresh. An access whose
/// recency were visible before its count (once a separate stamp, raised before the write) gave
/// j's eviction with a drop on cur = 2, which no order explains.
#[test]
fn linearizable_lru_a_hit_changes_recency_and_counts_at_one_instant() {
    linearizable(one_shard(4, 2), |l| {
        let [k, j, n] = keys(l);
        Scenario {
            setup: vec![admit(&[k], 1), admit(&[k], 1), admit(&[j], 1)],
            threads: [vec![admit(&[k], 1)], vec![admit(&[n], 1), admit(&[k], 4)]],
            keys: vec![k, j, n],
        }
    });
}

/// As [`linearizable_lru_a_hit_changes_recency_and_counts_at_one_instant`], the second access
/// an admission of cost 2: if j is evicted, k's admission came before it, so thread 2 sees
/// cur = 3 and is dropped, and thread 1 is admitted (never dropped after the eviction that
/// rested on its use).
#[test]
fn linearizable_lru_an_eviction_after_a_hit_keeps_the_hit() {
    linearizable(one_shard(4, 2), |l| {
        let [k, j, n] = keys(l);
        Scenario {
            setup: vec![admit(&[k], 1), admit(&[k], 1), admit(&[j], 1)],
            threads: [vec![admit(&[k], 1)], vec![admit(&[n], 1), admit(&[k], 2)]],
            keys: vec![k, j, n],
        }
    });
}

/// LRU shard of 2 (L = 3; k0 at 2): a group {k0, k1, k2} of cost 2 at T0 + 1 s races an
/// admission of k0 by a caller one interval behind. The group's lookups roll k0, insert k1 and
/// then k2 (evicting k1 or k0, whichever is the least recently used at that instant) and it is
/// dropped naming the key and wait of one sequential order: the group runs under its shard's
/// lock as one step, so the other admission falls wholly before or after it.
#[test]
fn linearizable_lru_a_group_is_one_step() {
    linearizable(one_shard(3, 2), |l| {
        let mut k: Vec<AppKey> = (0..3).map(|i| l.app_key(1, &peer(i))).collect();
        k.sort_by_key(|k| (k.shard(), k.hash()));
        let (k0, k1, k2) = (k[0], k[1], k[2]);
        Scenario {
            setup: vec![admit(&[k0], 2)],
            threads: [
                vec![Op::Admit(vec![k0, k1, k2], 2, SEC)],
                vec![Op::Admit(vec![k0], 1, 0)],
            ],
            keys: vec![k0, k1, k2],
        }
    });
}

/// Two groups over two exact-LRU shards (2 shards of 2 keys, L = 1), naming their apps in
/// opposite orders and sharing one key: {x0, y0} and {y0, x1}, x's in one shard and y's in the
/// other. Each group locks both shards (in ascending shard index, whatever the caller's order,
/// so the two cannot deadlock) and takes effect as one step: exactly one of them gets y0, and
/// the history is a sequential order of the two.
#[test]
fn linearizable_lru_groups_across_shards_lock_in_one_order() {
    linearizable(config(1, 4, 2), |l| {
        let shard = |app: u64| l.app_key(app, &peer(0)).shard() & 1;
        let x = (1..).find(|&a| shard(a) == 0).unwrap();
        let y = (1..).find(|&a| shard(a) == 1).unwrap();
        let (x0, y0, x1) = (
            l.app_key(x, &peer(0)),
            l.app_key(y, &peer(0)),
            l.app_key(x, &peer(1)),
        );
        Scenario {
            setup: vec![],
            threads: [vec![admit(&[x0, y0], 1)], vec![admit(&[y0, x1], 1)]],
            keys: vec![x0, y0, x1],
        }
    });
}

// Groups over CLOCK shards: the lock-free group protocol (`group::run`: lookups, the validated
// drop snapshot, the multi-word compare-and-swap and its resolution by other operations) is
// reached only through the CLOCK test geometry. The `_clock` twins above replay the suite's
// histories there; these add histories the twins do not check through the `linearizable`
// checker (or check with other starting states).

/// Two groups over the same two keys of a CLOCK shard, named in opposite orders (one set of 8
/// ways, capacity 4, L = 2; both keys at 1): each group's commit may meet the other's markers
/// and abort it; exactly one of them is admitted, at one instant.
#[test]
fn linearizable_clock_crossed_groups_admit_exactly_one() {
    linearizable(clock_shard(2, 4, 8), |l| {
        let (a, b) = ordered_pair(l);
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[b], 1)],
            threads: [vec![admit(&[a, b], 1)], vec![admit(&[b, a], 1)]],
            keys: vec![a, b],
        }
    });
}

/// [`a_failing_group_never_drops_a_concurrent_caller`] on a CLOCK shard (capacity 4 in one set
/// of 8 ways, L = 1; b at its limit, a new): the group {a, b} is dropped and the single
/// admission of a is admitted in every interleaving (the group's lookup of a inserts it
/// fresh, and no group marker on a may drop the single).
#[test]
fn linearizable_clock_a_failing_group_never_drops_a_concurrent_caller() {
    linearizable(clock_shard(1, 4, 8), |l| {
        let (a, b) = ordered_pair(l);
        Scenario {
            setup: vec![admit(&[b], 1)],
            threads: [vec![admit(&[a, b], 1)], vec![admit(&[a], 1)]],
            keys: vec![a, b],
        }
    });
}

/// A group whose key is the victim of a racing CLOCK eviction (capacity 2 in one set of 4 ways,
/// L = 2; a and x tracked, both reference bits clear): thread 1 admits the group {a, x} while
/// thread 2 inserts a new key n, whose sweep evicts a or x (the first with its bit clear from
/// its start way). The group's lookups set both bits: if they come first, n's sweep clears
/// them and evicts its start way's key; the group then either committed before (its counts
/// leave with the victim) or finds its key evicted and starts over.
#[test]
fn linearizable_clock_a_group_racing_the_eviction_of_its_key() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let [a, x, n] = keys(l);
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[x], 1)],
            threads: [vec![admit(&[a, x], 1)], vec![admit(&[n], 1)]],
            keys: vec![a, x, n],
        }
    });
}

/// [`a_dropped_group_never_names_a_penalty_written_after_its_abort`] through the checker on a
/// CLOCK shard (capacity 4 in one set of 8 ways, L = 2, penalty 1; a and b at 1): the group
/// {a, b} races an admission of a (which may abort the group's marker) and then a penalty of
/// b. A drop naming b would rest on b's penalty, written after the group's abort.
#[test]
fn linearizable_clock_a_dropped_group_never_names_a_penalty_written_after_its_abort() {
    linearizable(clock_shard(2, 4, 8), |l| {
        let (a, b) = ordered_pair(l);
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[b], 1)],
            threads: [
                vec![admit(&[a, b], 1)],
                vec![admit(&[a], 1), Op::Penalize(vec![b])],
            ],
            keys: vec![a, b],
        }
    });
}

/// [`a_resolved_weighted_group_applies_its_cost`] through the checker on a CLOCK shard
/// (capacity 4 in one set of 8 ways, L = 4; a and b at 1): a weighted group {a, b} of cost 2
/// races a weighted single of cost 2 on a; whoever resolves the group's marker applies its
/// cost, never 1.
#[test]
fn linearizable_clock_a_resolved_weighted_group_applies_its_cost() {
    linearizable(clock_shard(4, 4, 8), |l| {
        let (a, b) = ordered_pair(l);
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[b], 1)],
            threads: [vec![admit(&[a, b], 2)], vec![admit(&[a], 2)]],
            keys: vec![a, b],
        }
    });
}

/// Scenario D on a CLOCK shard (capacity 2 in one set of 4 ways, L = 2; x at 2 with its
/// reference bit set, a at 1 with its bit clear): a group {a, b} races an admission of x. The
/// group's lookup of b evicts by CLOCK (a's bit is set by the group's own lookup of a when b
/// comes after it in key order), possibly x, which then comes back fresh.
#[test]
fn linearizable_clock_d_a_groups_lookups_before_it_takes_effect() {
    linearizable_racing(clock_shard(2, 2, 4), 0, 2, |l, i| {
        let [x, a, b] = keys_with(l, i);
        Scenario {
            setup: vec![admit(&[x], 1), admit(&[x], 1), admit(&[a], 1)],
            threads: [vec![admit(&[a, b], 1)], vec![admit(&[x], 1)]],
            keys: vec![x, a, b],
        }
    });
}

/// A group of three new keys in a CLOCK shard of two (one set of 4 ways, L = 2; all of the
/// group's keys new): the group's third lookup evicts one of its own earlier keys (frozen: its
/// counts as seen decide, its admission is not stored) while another thread admits the
/// group's first key.
#[test]
fn linearizable_clock_a_group_evicting_its_own_key() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let mut k: Vec<AppKey> = (0..3).map(|i| l.app_key(1, &peer(i))).collect();
        k.sort_by_key(|k| (k.shard(), k.hash()));
        let (k0, k1, k2) = (k[0], k[1], k[2]);
        Scenario {
            setup: vec![],
            threads: [vec![admit(&[k0, k1, k2], 1)], vec![admit(&[k0], 1)]],
            keys: vec![k0, k1, k2],
        }
    });
}

// The table's helper and claim protocol under loom. The single-key models at the top of this
// file (`limiter(_, 2)`, `limiter(_, 3)`) now run on exact-LRU shards; these run the same
// histories on CLOCK shards, where insertions claim sets and complete each other's claims.

/// One shard of `capacity` keys evicting by CLOCK in sets of `ways` ways, L = `limit`.
fn clock_limiter(limit: u64, capacity: usize, ways: usize) -> Arc<AppRateLimiter> {
    Arc::new(AppRateLimiter::new(clock_shard(limit, capacity, ways)).unwrap())
}

/// [`a_stale_helper_never_reinstates_a_replaced_node`] on a CLOCK shard (capacity 2 in one set
/// of 4 ways, L = 1), without the refresh of y between A's insertions (with it the model ran
/// for over 7 minutes of CPU without finishing): thread A inserts k and then k2 (each new key
/// evicting by CLOCK); thread B inserts k3 and may complete one of A's claims late. Every key
/// is admitted once, the shard holds 2 keys and its structure is valid.
#[test]
fn clock_a_stale_helper_never_reinstates_a_replaced_node() {
    loom::model(|| {
        let l = clock_limiter(1, 2, 4);
        let [x, y, k, k2, k3] = [0, 1, 2, 3, 4].map(|i| l.app_key(1, &peer(i)));
        assert!(l.admit_key(x, T0).is_admit());
        assert!(l.admit_key(y, T0).is_admit());
        let t = {
            let l = l.clone();
            thread::spawn(move || l.admit_key(k3, T0))
        };
        assert!(l.admit_key(k, T0).is_admit());
        assert!(l.admit_key(k2, T0).is_admit());
        assert!(t.join().unwrap().is_admit());
        let s = l.stats();
        assert_eq!(s.entries, 2, "{s:?}");
        l.validate();
    });
}

/// Two evicting insertions into one CLOCK set that plan the same victim (capacity 2 in one set
/// of 4 ways, L = 1; v and w tracked with their reference bits clear; m and n new keys whose
/// sweeps start at the same way). Each planner installs its eviction's marker on the victim
/// before it claims the set; a sweep that meets the other's marker helps that eviction to its
/// end instead of aborting it, so one of them always completes: in every execution at most
/// three evictions are attempted (markers installed: one each, and one more by a planner whose
/// scan came after the other's insertion completed but whose claim word was loaded before, a
/// stale plan that fails on the claim). Aborting instead lets each abort the other's plan in
/// turn (four attempts within two preemptions, and no bound on the rounds). Also each key
/// admitted once, each eviction CLOCK's choice at its instant.
#[test]
fn linearizable_clock_two_evicting_insertions_on_one_victim() {
    linearizable_then(
        None,
        clock_shard(1, 2, 4),
        |l| {
            let [v, w] = keys(l);
            let start = |k: &AppKey| (((k.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32;
            let fresh: Vec<AppKey> = (2..=255u8).map(|i| l.app_key(1, &peer(i))).collect();
            let m = fresh[0];
            let n = *fresh[1..]
                .iter()
                .find(|k| start(k) == start(&m))
                .expect("a key with the same start way");
            Scenario {
                setup: vec![admit(&[v], 1), admit(&[w], 1)],
                threads: [vec![admit(&[m], 1)], vec![admit(&[n], 1)]],
                keys: vec![v, w, m, n],
            }
        },
        |l| {
            let attempts = l.eviction_attempts();
            assert!(
                attempts <= 3,
                "{attempts} evictions attempted for two insertions"
            );
        },
    );
}

/// A helper's late claim (CLOCK, capacity 2 in one set of 4 ways, L = 1; v and w tracked, bits
/// clear; n and m new keys whose sweeps start at v's way, 0): the main thread inserts n,
/// evicting v; thread 1 inserts m, whose sweep meets n's marker on v and helps that eviction;
/// thread 2 admits v again (dropped if v is still tracked: at its limit), which aborts the eviction if it finds the
/// marker before the claim. The helper may load the claim word and the undecided status just
/// before the abort and install the eviction's claim after it: a late claim on a failed
/// eviction, which the owner may meet (its own claim then fails on it) and which must be taken
/// back before the record, and the new node it names, are retired (the references; a holder
/// that finds its record retired, or a record retired with its claim in place, fails an
/// assertion, and loom's collector stand-in poisons retired records). Every execution: each
/// insertion admitted, two keys tracked, the structure valid.
#[test]
fn clock_a_helpers_late_claim_on_a_failed_eviction() {
    loom::model(|| {
        let l = clock_limiter(1, 2, 4);
        let [v, w] = [0, 1].map(|i| l.app_key(1, &peer(i)));
        let start = |k: &AppKey| (((k.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32;
        // v is in way 0 (the set's first key).
        let mut from_v = (2..=255u8)
            .map(|i| l.app_key(1, &peer(i)))
            .filter(|k| start(k) == 0);
        let n = from_v.next().expect("a key whose sweep starts at v's way");
        let m = from_v
            .next()
            .expect("two keys whose sweeps start at v's way");
        assert!(l.admit_key(v, T0).is_admit());
        assert!(l.admit_key(w, T0).is_admit());
        let helper = {
            let l = l.clone();
            thread::spawn(move || l.admit_key(m, T0))
        };
        let hit = {
            let l = l.clone();
            // Dropped while v is tracked (at its limit), admitted afresh once evicted.
            thread::spawn(move || {
                let _ = l.admit_key(v, T0);
            })
        };
        // The owner on the main thread, after the spawns: a schedule that stops it after its
        // marker, the helper after its loads, and lets the hit run to its end, reaches the late
        // claim within two preemptions.
        assert!(l.admit_key(n, T0).is_admit());
        assert!(helper.join().unwrap().is_admit());
        hit.join().unwrap();
        let s = l.stats();
        assert_eq!(s.entries, 2, "{s:?}");
        l.validate();
    });
}

// A group whose keys are all tracked first reads them without writing: its lookups take effect
// with its decision (an admission's markers carry each key's word as its lookup leaves it), or,
// for a drop, run as writes of their own before the validated snapshot.

/// The new key of a CLOCK set of two (`a` in way 0, `x` in way 1) whose sweep starts at way 1
/// (hash bits 16..48 of the new key pick the start way, `table.rs`).
fn new_key_sweeping_from_way_1(l: &AppRateLimiter) -> AppKey {
    let start = |k: &AppKey| (((k.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32;
    (2..=255u8)
        .map(|i| l.app_key(1, &peer(i)))
        .find(|k| start(k) == 1)
        .expect("a key whose sweep starts at way 1")
}

/// A group admitted on a read-only attempt sets its keys' reference bits (capacity 2 in one set
/// of 4 ways, L = 3; a at 1 with its bit clear in way 0, x at 2 with its bit set in way 1):
/// thread 1 admits the group {a, x}, then a new key n whose sweep starts at x's way. After the
/// group both bits are set, so n's sweep clears x's and a's and evicts x; an admission that
/// left a's bit clear would have n evict a. (Thread 2 stays idle: any access of its to x could
/// set x's bit again between the sweep's steps and explain that victim. The races of a
/// read-only attempt with uses and evictions of its keys are the CLOCK group models above,
/// whose groups of tracked keys now take this path first.)
#[test]
fn linearizable_clock_a_read_only_group_admission_touches_its_keys() {
    linearizable(clock_shard(3, 2, 4), |l| {
        let [a, x] = keys(l);
        let n = new_key_sweeping_from_way_1(l);
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[x], 1), admit(&[x], 1)],
            threads: [vec![admit(&[a, x], 1), admit(&[n], 1)], vec![]],
            keys: vec![a, x, n],
        }
    });
}

/// A group dropped after a read-only attempt still sets its keys' reference bits (capacity 2 in
/// one set of 4 ways, L = 2; a at 1 with its bit clear in way 0, x at 2 with its bit set in way
/// 1): thread 1's group {a, x} is dropped on x, then a new key n, whose sweep starts at x's way,
/// evicts x (both bits set by then). A drop that left a's bit clear would have n evict a.
/// (Thread 2 stays idle, as above.)
#[test]
fn linearizable_clock_a_read_only_group_drop_touches_its_keys() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let [a, x] = keys(l);
        let n = new_key_sweeping_from_way_1(l);
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[x], 1), admit(&[x], 1)],
            threads: [vec![admit(&[a, x], 1), admit(&[n], 1)], vec![]],
            keys: vec![a, x, n],
        }
    });
}

/// CLOCK, one set of 4 ways and one spare unit (capacity 2; L = 1), empty: threads insert a1
/// and a2. One of them may load the set's claim word while the set is still empty and scan it
/// after the other's key landed, so its unit reservation names the empty set's claim word
/// (`idle(null)`) with a way behind the other key; that reservation must fail and its owner
/// plan again (a second reservation, which takes the unit). Sequentially both keys are
/// inserted, the first into the set's free room and the second with the unit, and nothing is
/// evicted.
#[test]
fn linearizable_clock_a_reservation_planned_on_an_empty_set() {
    linearizable(clock_shard(1, 2, 4), |l| {
        let [a1, a2] = keys(l);
        Scenario {
            setup: vec![],
            threads: [vec![admit(&[a1], 1)], vec![admit(&[a2], 1)]],
            keys: vec![a1, a2],
        }
    });
}

/// CLOCK, a full set and a reservation in another set at once (capacity 9 in sets of 3 ways: 6
/// sets, 3 spare units; L = 1): set 0 holds a1..a3 (two units taken), set 1 holds b1. Thread 1
/// inserts a4, which evicts in set 0 (its ways are all taken) although a unit remains; thread
/// 2 inserts b2, which takes the last unit through a reservation, and then hits a1. The early
/// eviction needs no unit and must not wait on, take or give back the pending one: b2 is
/// inserted in every order and a4 evicts CLOCK's choice in set 0.
#[test]
fn linearizable_clock_an_early_eviction_beside_a_pending_reservation() {
    linearizable(clock_shard(1, 9, 3), |l| {
        let by = keys_by_set(l, 6, 4);
        let (a, b) = (&by[0], &by[1]);
        Scenario {
            setup: vec![
                admit(&[a[0]], 1),
                admit(&[a[1]], 1),
                admit(&[a[2]], 1),
                admit(&[b[0]], 1),
            ],
            threads: [
                vec![admit(&[a[3]], 1)],
                vec![admit(&[b[1]], 1), admit(&[a[0]], 1)],
            ],
            keys: vec![a[0], a[1], a[2], a[3], b[0], b[1]],
        }
    });
}

/// CLOCK, one set of 6 ways holding a1, two spare units (capacity 3; L = 1): thread 1 inserts
/// a2 while thread 2 admits a1 again (dropped: a1 is at its limit) and then inserts a3. A hit
/// that finds a2's node holding the set's claim completes that insertion, and must decide
/// a2's pending reservation before it frees the claim word; else a2's owner would later find
/// the claim word moved past its scan, fail the reservation and retire a node that is in a
/// way. Sequentially a2 and a3 take the two units and a1's second admission drops.
#[test]
fn linearizable_clock_a_hit_completes_a_node_whose_reservation_is_pending() {
    linearizable(clock_shard(1, 3, 6), |l| {
        let [a1, a2, a3] = keys(l);
        Scenario {
            setup: vec![admit(&[a1], 1)],
            threads: [
                vec![admit(&[a2], 1)],
                vec![admit(&[a1], 1), admit(&[a3], 1)],
            ],
            keys: vec![a1, a2, a3],
        }
    });
}

/// A group dropped after a read-only attempt re-reads its failing key too (two CLOCK shards of
/// 2, each one set of 4 ways, L = 2, window 1 s). Shard 0 holds a and z, each admitted twice in
/// interval 1 (a over its limit, both reference bits set); shard 1 holds b, admitted once in
/// interval 0. Thread 1's group {a, b} in interval 1 reads a (over) and b, then runs its
/// lookup steps: a's word already shows the access (its read was the step), b's step rolls b
/// to interval 1. Thread 2 admits a new key c into shard 0 (its sweep goes round and evicts a)
/// and then admits b one interval behind. A group that takes a's word at its read and b's step
/// after thread 2's operations must not drop on a: its decision comes after b's step, when a is
/// gone, and every order that drops the group on a puts b's roll before thread 2's admission
/// of b, which then counts in interval 1 (b ends at prev 1, cur 1, not prev 2, cur 0). So the
/// drop reads a's word again after the last step, sees it evicted and starts over.
#[test]
fn linearizable_clock_a_dropped_group_rereads_its_failing_key() {
    linearizable_racing(policy_config(Policy::Clock, 2, 4, 2), 0, 2, |l, i| {
        // A key's shard is drawn from its app id.
        let app = |shard| {
            (1..=64u64)
                .find(|&app| l.app_key(app, &peer(0)).shard() == shard)
                .expect("two shards")
        };
        let (zero, b) = (app(0), l.app_key(app(1), &peer(0)));
        let [a, z, c] = [0, 1, 2 + i].map(|p| l.app_key(zero, &peer(p)));
        Scenario {
            setup: vec![
                Op::Admit(vec![a], 1, SEC),
                Op::Admit(vec![a], 1, SEC),
                Op::Admit(vec![z], 1, SEC),
                Op::Admit(vec![z], 1, SEC),
                admit(&[b], 1),
            ],
            threads: [
                vec![Op::Admit(vec![a, b], 1, SEC)],
                vec![Op::Admit(vec![c], 1, SEC), admit(&[b], 1)],
            ],
            keys: vec![a, b, c, z],
        }
    });
}

// A CLOCK sweep that meets another insertion's eviction marker helps that eviction to its end,
// then plans again: its sweep goes on from the way after the bits it cleared, as the model's
// single sweep does (starting over would pass those ways a second time and take a key whose
// bit the sweep itself cleared).

/// The way of a CLOCK set holding two keys at which a new key's sweep starts (hash bits 16..48
/// of the key pick it, `table.rs`).
fn start_way(k: &AppKey) -> u64 {
    (((k.hash() >> 16) & 0xFFFF_FFFF) * 2) >> 32
}

/// New keys whose sweeps start at `way` of a CLOCK set holding two keys, in the order of their
/// peers.
fn sweeping_from(l: &AppRateLimiter, way: u64) -> impl Iterator<Item = AppKey> + '_ {
    (2..=255u8)
        .map(|i| l.app_key(1, &peer(i)))
        .filter(move |k| start_way(k) == way)
}

/// [`linearizable_when`] over every execution of `scenario`, which must also help an eviction
/// in at least one of them (the shard's help counter under loom): a model of the help path that
/// never takes it proves nothing.
fn linearizable_helped(
    config: Config,
    scenario: impl Fn(&AppRateLimiter) -> Scenario + Send + Sync + 'static,
) {
    let helped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = helped.clone();
    linearizable_when(None, config, scenario, move |l| {
        if l.eviction_helps() > 0 {
            seen.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        true
    });
    assert!(
        helped.load(std::sync::atomic::Ordering::Relaxed),
        "no execution helped an eviction"
    );
}

/// v and w (the set-up's first two keys: way 0 and way 1 of a CLOCK set of 4 ways) and two new
/// keys whose sweeps start at v's way.
fn v_w_and_two_from_v(l: &AppRateLimiter) -> [AppKey; 4] {
    let [v, w] = keys(l);
    let mut at_v = sweeping_from(l, 0);
    let n = at_v.next().expect("a key starting at v");
    let m = at_v.next().expect("two keys starting at v");
    [v, w, n, m]
}

/// One set of 4 ways holding v (way 0, reference bit set) and w (way 1, bit clear), L = 2. The
/// main thread inserts n, whose sweep starts at w's way (w is its victim); thread 1 inserts m,
/// whose sweep starts at v's way: it clears v's bit, meets n's marker on w, helps that eviction
/// to its end and plans again. The model's sweep goes on after its steps: after n evicted w, m
/// takes n (or m evicts w first and n then takes m); no order evicts both v and w. A sweep that
/// started over from its start way after helping (or after a failed marker install, or a stale
/// claim) would find v's bit clear and evict it.
#[test]
fn linearizable_clock_a_sweep_goes_on_after_it_helps() {
    linearizable_helped(clock_shard(2, 2, 4), sweep_goes_on);
}

/// The scenario of [`linearizable_clock_a_sweep_goes_on_after_it_helps`].
fn sweep_goes_on(l: &AppRateLimiter) -> Scenario {
    let [v, w] = keys(l);
    let n = sweeping_from(l, 1).next().expect("a key starting at w");
    let m = sweeping_from(l, 0).next().expect("a key starting at v");
    Scenario {
        // v and w admitted (bits clear: new keys), then v hit (its bit set).
        setup: vec![admit(&[v], 1), admit(&[w], 1), admit(&[v], 1)],
        threads: [vec![admit(&[n], 1)], vec![admit(&[m], 1)]],
        keys: vec![v, w, n, m],
    }
}

/// [`linearizable_clock_a_sweep_goes_on_after_it_helps`] with the checker run only on the
/// executions in which a sweep helped an eviction (the shard's help counter under loom): the
/// helping path's own replan, apart from the older ones (a failed marker install, a stale
/// claim).
#[test]
fn linearizable_clock_a_sweep_goes_on_after_it_helps_helped_executions_only() {
    linearizable_when(None, clock_shard(2, 2, 4), sweep_goes_on, |l| {
        l.eviction_helps() > 0
    });
}

/// The same new key inserted by two threads at once into a full CLOCK set (capacity 2, one set
/// of 4 ways, L = 1): the second thread's sweep may meet the first's eviction marker and help
/// it; it must then find the key tracked (one admission, one drop), never insert it twice.
#[test]
fn linearizable_clock_one_new_key_inserted_twice() {
    linearizable(clock_shard(1, 2, 4), |l| {
        let [v, w, n] = keys(l);
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[n], 1)]],
            keys: vec![v, w, n],
        }
    });
}

/// The sweeps of the late-claim model start at v's way: each of its two new keys, inserted
/// alone after the set-up, evicts v (the key in way 0), not w.
#[test]
fn clock_late_claim_keys_start_at_v() {
    for which in 0..2 {
        let evicted_v = once(move || {
            let l = clock_limiter(1, 2, 4);
            let [v, w] = [0, 1].map(|i| l.app_key(1, &peer(i)));
            let key = sweeping_from(&l, 0).nth(which).unwrap();
            assert!(l.admit_key(v, T0).is_admit());
            assert!(l.admit_key(w, T0).is_admit());
            assert!(l.admit_key(key, T0).is_admit());
            l.counts(v).is_none() && l.counts(w).is_some()
        });
        assert!(
            evicted_v,
            "key {which} of the late-claim model does not evict v"
        );
    }
}

/// A group's lookup of its new key meets another insertion's eviction (capacity 2 in one set of
/// 4 ways, L = 2; v and w tracked, bits clear; thread 1 inserts n; thread 2 admits the group
/// {w, m}, m new with n's start way): its sweep may meet n's marker and finish that eviction,
/// or find its plan gone stale, before its own insertion evicts. A lookup that swept again from
/// its start way after a stale plan evicted w twice.
#[test]
fn linearizable_clock_a_groups_new_key_meets_an_eviction() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let [v, w] = keys(l);
        let fresh: Vec<AppKey> = (2..=255u8).map(|i| l.app_key(1, &peer(i))).collect();
        let n = fresh[0];
        let m = *fresh[1..]
            .iter()
            .find(|k| start_way(k) == start_way(&n))
            .expect("a key with the same start way");
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[w, m], 1)]],
            keys: vec![v, w, n, m],
        }
    });
}

/// A group's new key helps an eviction, with sweeps that clear no bit before they plan again:
/// one set of 4 ways holding v (way 0) and w (way 1), both bits clear, L = 2. The main thread
/// inserts n, evicting v (its sweep starts at v's way); thread 1 admits the group {w, m}, m new
/// with its sweep also starting at v's way: the group's lookup of m meets n's marker on v and
/// helps (or plans v itself first), then evicts by CLOCK; w's bit, set by the group's lookup,
/// is never swept.
#[test]
fn linearizable_clock_a_groups_new_key_helps_an_eviction() {
    linearizable_helped(clock_shard(2, 2, 4), |l| {
        let [v, w, n, m] = v_w_and_two_from_v(l);
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[w, m], 1)]],
            keys: vec![v, w, n, m],
        }
    });
}

/// A helped eviction followed by a use of its victim on the helper's thread (one set of 4 ways
/// holding v (way 0) and w (way 1), both bits clear, L = 1; n and m start at v's way). The main
/// thread inserts n (evicting v); thread 1 inserts m (its sweep may meet n's marker and help)
/// and then admits v (a new key again if evicted, else dropped at its limit). The helper's
/// completion of n's eviction is its instant: v's admission after it must find v new.
#[test]
fn linearizable_clock_a_helper_then_uses_the_victim() {
    linearizable_helped(clock_shard(1, 2, 4), |l| {
        let [v, w, n, m] = v_w_and_two_from_v(l);
        Scenario {
            setup: vec![admit(&[v], 1), admit(&[w], 1)],
            threads: [vec![admit(&[n], 1)], vec![admit(&[m], 1), admit(&[v], 1)]],
            keys: vec![v, w, n, m],
        }
    });
}

/// The set's length changes between an insertion's scan and its plan. One set of 4 ways holding
/// a (way 0, reference bit set) and one spare unit (capacity 2, L = 2). The main thread inserts
/// k, whose sweep in a set of two keys starts at way 1; thread 1 inserts b, which takes the
/// unit. Sequentially k either takes the unit (no eviction) or comes after b, its sweep
/// starting at b's way (b's bit clear): b goes, never a. An insertion that scanned the set
/// holding a alone and read the units `0` after b took the last one must not sweep a set of one
/// key (clearing a's bit, then evicting a on its replan over two keys): it checks that the
/// set's claim word is still as scanned first.
#[test]
fn linearizable_clock_a_sweep_runs_over_the_sets_real_length() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let [a, b] = keys(l);
        let k = sweeping_from(l, 1).next().expect("a key starting at way 1");
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[a], 1)],
            threads: [vec![admit(&[k], 1)], vec![admit(&[b], 1)]],
            keys: vec![a, b, k],
        }
    });
}

/// [`linearizable_clock_a_sweep_runs_over_the_sets_real_length`] through a group's lookup of
/// its new key (the same insertion path): the main thread admits the group {a, k} (L = 3).
#[test]
fn linearizable_clock_a_groups_sweep_runs_over_the_sets_real_length() {
    linearizable(clock_shard(3, 2, 4), |l| {
        let [a, b] = keys(l);
        let k = sweeping_from(l, 1).next().expect("a key starting at way 1");
        Scenario {
            setup: vec![admit(&[a], 1), admit(&[a], 1)],
            threads: [vec![admit(&[a, k], 1)], vec![admit(&[b], 1)]],
            keys: vec![a, b, k],
        }
    });
}

/// Two insertions of one new key in flight at once each have their own sweep. One set of 4
/// ways holding x (way 0) and y (way 1), both reference bits set (capacity 2, L = 2); k's sweep
/// starts at way 0, m's at way 1. The main thread inserts k; thread 1 inserts k and then m. The
/// main thread's sweep may clear x's bit and stop; thread 1's k (its own sweep from way 0)
/// evicts x, and its m (clearing y, then taking k at way 0) evicts k; the main thread's sweep
/// goes on at y, now clear, and evicts it. Sequentially that is the main thread's insertion of
/// k after thread 1's operations, its sweep's first step (clearing x) taken before them.
#[test]
fn linearizable_clock_two_insertions_of_one_key_sweep_apart() {
    linearizable(clock_shard(2, 2, 4), |l| {
        let [x, y] = keys(l);
        let k = sweeping_from(l, 0).next().expect("a key starting at way 0");
        let m = sweeping_from(l, 1).next().expect("a key starting at way 1");
        Scenario {
            setup: vec![
                admit(&[x], 1),
                admit(&[y], 1),
                admit(&[x], 1),
                admit(&[y], 1),
            ],
            threads: [vec![admit(&[k], 1)], vec![admit(&[k], 1), admit(&[m], 1)]],
            keys: vec![x, y, k, m],
        }
    });
}

/// A sweep whose insertion gave up, then an insertion of the same key in the same operation:
/// one sweep, going on. One set of 4 ways holding x (way 0, bit set) and y (way 1, bit clear),
/// no unit left (capacity 2, L = 2); k and m both start their sweeps at way 0. The main thread
/// admits k; thread 1 admits k, then m. The main thread's insertion may clear x's bit and plan
/// y; thread 1's k (its own sweep from way 0) evicts x; the main thread's eviction of y fails
/// (the claim word moved), and its replan finds k present; thread 1's m evicts k before the
/// main thread's access, which finds k evicted and looks it up again. E1 and the model give
/// the operation one sweep of k: it goes on from way 1, where y's bit is clear, and evicts y
/// (victims x, k, y). A table whose second insertion swept afresh from way 0 would evict m
/// (victims x, k, m), which no sequential order explains: the model's sweep of k stays the
/// main thread's until its insertion takes effect.
#[test]
fn linearizable_clock_a_sweep_given_up_goes_on_in_a_later_insertion() {
    linearizable_within(Some(3), clock_shard(2, 2, 4), |l| sweep_given_up(l, false));
}

/// A sweep that goes on clearing bits after another thread inserted its key: one set of 4 ways
/// holding x (way 0) and y (way 1), both bits set, no unit left (capacity 2, L = 4); k starts
/// its sweep at way 0. The main thread admits k; thread 1 admits x, k, then y. The main
/// thread's sweep may clear x's bit and pause; thread 1 touches x, inserts k (its own sweep
/// clears x and y and evicts x) and touches y; the main thread's sweep goes on at way 1 and
/// clears y's bit, k being tracked by then, and its insertion gives up (k found present). E1:
/// the sweep's steps are the main thread's, from its scan until its insertion takes effect or
/// gives up, whoever inserts the key meanwhile (`Model::sweep_step`).
#[test]
fn linearizable_clock_a_sweep_step_after_another_thread_inserted_its_key() {
    linearizable(clock_shard(4, 2, 4), |l| {
        let [x, y] = keys(l);
        let k = sweeping_from(l, 0).next().expect("a key starting at way 0");
        Scenario {
            setup: vec![
                admit(&[x], 1),
                admit(&[y], 1),
                admit(&[x], 1),
                admit(&[y], 1),
            ],
            threads: [
                vec![admit(&[k], 1)],
                vec![admit(&[x], 1), admit(&[k], 1), admit(&[y], 1)],
            ],
            keys: vec![x, y, k],
        }
    });
}

/// A hit takes no sweep step: thread 1 inserts k and uses it; the main thread's admission of
/// k, overlapping them, may find k missing (and sweep) or present. A table that cleared a bit
/// on a hit (an operation whose scan found its key present) fails the checker: a sweep step
/// needs a scan that found its key missing before it ([`Step::Miss`]).
#[test]
fn linearizable_clock_a_hit_takes_no_sweep_step() {
    linearizable(clock_shard(4, 2, 4), |l| {
        let [x, y] = keys(l);
        let k = sweeping_from(l, 0).next().expect("a key starting at way 0");
        Scenario {
            setup: vec![admit(&[x], 1), admit(&[y], 1)],
            threads: [vec![admit(&[k], 1)], vec![admit(&[k], 1), admit(&[k], 1)]],
            keys: vec![x, y, k],
        }
    });
}

/// The scenario of [`linearizable_clock_a_sweep_given_up_goes_on_in_a_later_insertion`]; with
/// `group`, the main thread admits the group {k, x} instead of k alone.
fn sweep_given_up(l: &AppRateLimiter, group: bool) -> Scenario {
    let [x, y] = keys(l);
    let mut from0 = sweeping_from(l, 0);
    let k = from0.next().expect("a key starting at way 0");
    let m = from0.next().expect("another key starting at way 0");
    let main = if group {
        admit(&[k, x], 1)
    } else {
        admit(&[k], 1)
    };
    Scenario {
        setup: vec![admit(&[x], 1), admit(&[y], 1), admit(&[x], 1)],
        threads: [vec![main], vec![admit(&[k], 1), admit(&[m], 1)]],
        keys: vec![x, y, k, m],
    }
}

/// [`linearizable_clock_a_sweep_given_up_goes_on_in_a_later_insertion`] in a group: the main
/// thread admits the group {k, x} instead of k alone, so the sweep that gives up is a group's
/// lookup of k, which the group keeps for a later insertion of k (`run_group`); x is the key
/// its sweep clears and thread 1's k evicts, so the group also inserts x again, in a look-again
/// or a later attempt. At the suite's bound 2 the executions reach the group keeping its given-up
/// sweep; a later attempt's insertion of k going on with it takes bound 3
/// (`LOOM_MAX_PREEMPTIONS=3`, over 20 minutes here).
#[test]
fn linearizable_clock_a_group_s_sweep_given_up_goes_on() {
    linearizable(clock_shard(2, 2, 4), |l| sweep_given_up(l, true));
}
