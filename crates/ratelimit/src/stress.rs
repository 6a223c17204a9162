//! Threaded tests on real threads: many short trials over tiny shards, each checked against the
//! rules a linearizable limiter must keep and followed by the structural validator.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Barrier;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

use txgate_testkit::rng::SplitMix64;

use crate::{AppKey, AppRateLimiter, Config, Decision, Origin};

const T0: u64 = 1_700_000_010 * 1_000_000_000;

fn limiter(rate: u64, max_size: usize, shards: usize) -> AppRateLimiter {
    AppRateLimiter::new(Config {
        rate_per_second: rate,
        window: Duration::from_secs(1),
        max_size,
        shards,
        salt: Some([1; 16]),
        ..Config::default()
    })
    .unwrap()
}

fn origin(i: u64) -> Origin {
    Origin::from_peer_id(&i.to_le_bytes())
}

/// Runs `f(thread)` on `threads` threads started together.
fn race<R: Send>(threads: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    f(t)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

/// Trials of random groups over a few keys in shards with room for all of them (no eviction is
/// ever due), all at one instant, so every key's count only grows. Linearizability then
/// requires: each key's final count is exactly the sum of the costs of the admitted groups
/// naming it and at most L; no eviction; and every dropped group of cost `c` names a key that
/// ends above `L - c`, the one its decision points to (it had no room for `c` when the group
/// took effect, and counts only grow). A reservation taken back after a concurrent caller was
/// dropped because of it breaks the last rule.
fn groups_without_eviction_trials(seed: u64, weighted: bool) {
    let trials = if cfg!(miri) { 4 } else { 2000 };
    let mut rng = SplitMix64(seed);
    for trial in 0..trials {
        let limit = 1 + rng.below(if weighted { 4 } else { 3 });
        let threads = 2 + rng.below(2) as usize;
        let l = limiter(limit, 16, 2); // 2 shards of 8 keys (one set each)
        // 6 keys: apps 1..=3 from origins 0 and 1 (at most 6 in one shard: room for all).
        let keys: Vec<AppKey> = (1..=3)
            .flat_map(|app| (0..2).map(move |o| (app, o)))
            .map(|(app, o)| l.app_key(app, &origin(o)))
            .collect();
        // Per thread, six groups: (cost, key indices).
        let plans: Vec<Vec<(u64, Vec<usize>)>> = (0..threads)
            .map(|_| {
                (0..6)
                    .map(|_| {
                        let cost = if weighted { 1 + rng.below(limit) } else { 1 };
                        let n = 1 + rng.below(3) as usize;
                        (cost, (0..n).map(|_| rng.below(6) as usize).collect())
                    })
                    .collect()
            })
            .collect();
        let results = race(threads, |t| {
            plans[t]
                .iter()
                .map(|(cost, group)| {
                    let ks: Vec<AppKey> = group.iter().map(|&i| keys[i]).collect();
                    if weighted {
                        let cost = NonZeroU32::new(*cost as u32).unwrap();
                        l.admit_keys_n(&ks, cost, T0).unwrap()
                    } else {
                        l.admit_keys(&ks, T0)
                    }
                })
                .collect::<Vec<Decision>>()
        });
        l.validate();
        let mut admitted: HashMap<usize, u64> = HashMap::new();
        let mut ops = 0;
        for (t, decisions) in results.iter().enumerate() {
            for ((cost, group), d) in plans[t].iter().zip(decisions) {
                ops += 1;
                if d.is_admit() {
                    let mut distinct = group.clone();
                    distinct.sort_unstable();
                    distinct.dedup();
                    for k in distinct {
                        *admitted.entry(k).or_default() += cost;
                    }
                }
            }
        }
        let count = |k: usize| l.counts(keys[k]).map_or(0, |(_, cur)| u64::from(cur));
        for k in 0..keys.len() {
            let want = admitted.get(&k).copied().unwrap_or(0);
            assert!(
                want <= limit,
                "trial {trial}: key {k} admitted {want} > L {limit}"
            );
            assert_eq!(count(k), want, "trial {trial}: key {k} count");
        }
        for (t, decisions) in results.iter().enumerate() {
            for ((cost, group), d) in plans[t].iter().zip(decisions) {
                if let Decision::Drop { index, .. } = *d {
                    let k = group[index];
                    let cur = count(k);
                    assert!(
                        cur + cost > limit,
                        "trial {trial}: group {group:?} of cost {cost} dropped for key {k}, \
                         which ends at {cur}, room for it under L {limit}"
                    );
                }
            }
        }
        let s = l.stats();
        assert_eq!(s.evicted, 0, "trial {trial}: eviction with room");
        assert_eq!(s.admitted + s.dropped, ops);
    }
}

#[test]
fn groups_without_eviction_are_linearizable() {
    groups_without_eviction_trials(7, false);
}

/// The same for weighted groups (`admit_keys_n`, costs 1 to L, L up to 4).
#[test]
fn weighted_groups_without_eviction_are_linearizable() {
    groups_without_eviction_trials(13, true);
}

/// Two groups naming the same two apps in opposite orders, L = 1: exactly one is admitted.
#[test]
fn crossed_groups_admit_exactly_one() {
    let trials = if cfg!(miri) { 4 } else { 3000 };
    for trial in 0..trials {
        let l = limiter(1, 256, 128);
        let o = origin(trial);
        let (a, b) = (l.app_key(11, &o), l.app_key(12, &o));
        let results = race(2, |t| {
            if t == 0 {
                l.admit_keys(&[a, b], T0)
            } else {
                l.admit_keys(&[b, a], T0)
            }
        });
        let admitted = results.iter().filter(|d| d.is_admit()).count();
        assert_eq!(admitted, 1, "trial {trial}: {results:?}");
        l.validate();
    }
}

/// Three threads admit one new key into a shard of capacity 2 (L = 1): exactly one admission,
/// one node, whatever the interleaving of their insertions.
#[test]
fn three_inserters_of_one_key_admit_once() {
    let trials = if cfg!(miri) { 4 } else { 3000 };
    for trial in 0..trials {
        let l = limiter(1, 2, 1);
        let key = l.app_key(1, &origin(trial));
        let results = race(3, |_| l.admit_key(key, T0));
        assert_eq!(results.iter().filter(|d| d.is_admit()).count(), 1);
        l.validate();
        assert_eq!(l.tracked_keys(), vec![(0, key.hash())]);
    }
}

/// A shard of capacity 3 holding exactly 3 keys never evicts, and each key admits exactly L
/// (L = 2), however two threads interleave.
#[test]
fn a_full_small_shard_without_new_keys_never_evicts() {
    let trials = if cfg!(miri) { 3 } else { 1000 };
    for trial in 0..trials {
        let l = limiter(2, 3, 1);
        let keys: Vec<AppKey> = (0..3)
            .map(|i| l.app_key(1, &origin(trial * 3 + i)))
            .collect();
        let results = race(2, |_| {
            let mut admitted = [0usize; 3];
            for _ in 0..4 {
                for (k, key) in keys.iter().enumerate() {
                    admitted[k] += usize::from(l.admit_key(*key, T0).is_admit());
                }
            }
            admitted
        });
        for (k, (a, b)) in results[0].iter().zip(&results[1]).enumerate() {
            assert_eq!(a + b, 2, "trial {trial} key {k}");
        }
        assert_eq!(l.stats().evicted, 0);
        l.validate();
    }
}

/// Threads racing on one key, new to the table at the start, admit exactly L.
#[test]
fn racing_admits_on_a_new_key_admit_exactly_l() {
    let (threads, keys, per) = if cfg!(miri) { (3, 2, 6) } else { (4, 200, 40) };
    // L = 20; one shard of 8,192 keys (264 sets of 31 ways), 128 (5 sets) under Miri.
    let l = limiter(20, if cfg!(miri) { 128 } else { 8192 }, 1);
    for k in 0..keys {
        let key = l.app_key(7, &origin(k));
        let admitted = AtomicUsize::new(0);
        race(threads, |_| {
            for _ in 0..per {
                if l.admit_key(key, T0).is_admit() {
                    admitted.fetch_add(1, Relaxed);
                }
            }
        });
        let want = (threads * per as usize).min(20);
        assert_eq!(admitted.load(Relaxed), want);
        assert_eq!(l.counts(key), Some((0, want as u32)));
    }
    assert_eq!(l.stats().entries, keys as usize);
    l.validate();
}

/// Threads racing weighted admissions (costs 1 to 3) on one key, new to the table at the
/// start: the admitted costs sum to at most L, and every drop is of a cost that no longer fit
/// (counts only grow at one instant, so the final count leaves less room than the drop saw).
#[test]
fn racing_weighted_admits_on_a_new_key_never_exceed_l() {
    let (threads, keys, per) = if cfg!(miri) { (3, 2, 6) } else { (4, 200, 40) };
    let l = limiter(20, if cfg!(miri) { 128 } else { 8192 }, 1); // L = 20
    for k in 0..keys {
        let key = l.app_key(8, &origin(k));
        let results = race(threads, |t| {
            (0..per)
                .map(|i| {
                    let cost = 1 + ((t + i) % 3) as u32;
                    let d = l.admit_keys_n(&[key], NonZeroU32::new(cost).unwrap(), T0);
                    (cost, d.unwrap())
                })
                .collect::<Vec<_>>()
        });
        let admitted: u32 = results
            .iter()
            .flatten()
            .filter(|(_, d)| d.is_admit())
            .map(|(c, _)| c)
            .sum();
        let cur = l.counts(key).map_or(0, |(_, cur)| cur);
        assert_eq!(cur, admitted, "key {k}");
        assert!(admitted <= 20, "key {k}: {admitted} > L");
        for (cost, _) in results.iter().flatten().filter(|(_, d)| d.is_drop()) {
            assert!(
                cur + cost > 20,
                "key {k}: a cost of {cost} dropped at {cur}"
            );
        }
    }
    l.validate();
}

/// Penalties racing admissions keep the arithmetic exact: every admission and penalty lands.
#[test]
fn penalize_racing_admit_is_exact() {
    let rounds = if cfg!(miri) { 3 } else { 100 };
    let l = limiter(1000, 1024, 8); // L = 1000, penalty 250
    for r in 0..rounds {
        let key = l.app_key(3, &origin(r));
        let admitted = AtomicUsize::new(0);
        race(2, |t| {
            if t == 0 {
                for _ in 0..2 {
                    l.penalize_keys(&[key], T0);
                }
            } else {
                for _ in 0..300 {
                    if l.admit_key(key, T0).is_admit() {
                        admitted.fetch_add(1, Relaxed);
                    }
                }
            }
        });
        // 500 of penalty leave room for 500 admissions, so all 300 land, in any order.
        assert_eq!(admitted.load(Relaxed), 300);
        assert_eq!(l.counts(key), Some((0, 800)));
    }
    l.validate();
}

/// Many threads inserting distinct keys into tiny shards, in groups: eviction and reclamation
/// under contention; the bound holds, the structure stays valid, and every decision is an
/// admission (each group's keys are new: L = 1 always admits).
#[test]
fn concurrent_eviction_keeps_the_bound() {
    let (threads, per) = if cfg!(miri) { (2, 30) } else { (4, 5000) };
    for trial in 0..if cfg!(miri) { 1 } else { 4 } {
        let l = limiter(1, 16, 4); // capacity 4 per shard, L = 1
        race(threads, |t| {
            for i in 0..per {
                let o = origin((trial * 10 + t as u64) * 1_000_000 + i as u64);
                assert!(l.admit(&[1, 2, 3], &o, T0).is_admit());
            }
        });
        l.validate();
        let s = l.stats();
        assert!(s.entries <= 16, "{s:?}");
        assert_eq!(s.admitted, (threads * per) as u64);
        // Each group inserts its 3 keys (again, if a retry finds one evicted meanwhile); all
        // but the ones still tracked were evicted.
        assert!(s.evicted >= (3 * threads * per - s.entries) as u64, "{s:?}");
    }
}

/// Random single-key and group operations with penalties and a moving clock over a key space
/// larger than the shards: the validator holds after every trial and the counters add up.
#[test]
fn random_operations_with_eviction_keep_the_structure() {
    let trials = if cfg!(miri) { 2 } else { 400 };
    let mut rng = SplitMix64(11);
    for trial in 0..trials {
        let limit = 1 + rng.below(3);
        let shards = 1 << rng.below(2);
        let capacity = 2 + rng.below(4) as usize;
        let l = limiter(limit, capacity * shards, shards);
        // Each (origin, app) key derived once: an admission of apps from an origin is one of
        // their keys, app 0 (no app call) left out, as `admit` does.
        let derived: Vec<Vec<AppKey>> = (0..4)
            .map(|o| (0..5).map(|a| l.app_key(a, &origin(o))).collect())
            .collect();
        let seeds: Vec<u64> = (0..3).map(|_| rng.next_u64()).collect();
        let ops: Vec<u64> = race(3, |t| {
            let mut rng = SplitMix64(seeds[t]);
            let mut ops = 0;
            let mut now = T0;
            for _ in 0..40 {
                let o = rng.below(4) as usize;
                let keys: Vec<AppKey> = (0..1 + rng.below(3))
                    .map(|_| rng.below(5) as usize)
                    .filter(|&a| a != 0)
                    .map(|a| derived[o][a])
                    .collect();
                match rng.below(8) {
                    0 => l.penalize_keys(&keys, now),
                    1 => now += rng.below(1_500_000_000),
                    _ => {
                        let _ = l.admit_keys(&keys, now);
                        ops += 1;
                    }
                }
            }
            ops
        });
        l.validate();
        let s = l.stats();
        assert_eq!(
            s.admitted + s.dropped,
            ops.iter().sum::<u64>(),
            "trial {trial}"
        );
        assert!(s.entries <= capacity * shards);
    }
}

/// A large shard (4,096 keys: 265 sets of 31 ways, two ways per key) evicts early for at most 0.1% of the keys
/// that fill it, and once full every new key evicts exactly one, so it ends exactly full. Keys
/// are uniform 64-bit hashes, as derived keys are (pre-derived: no BLAKE2b per admission, which
/// miri would spend most of its time on).
#[test]
fn large_shards_evict_only_when_full() {
    let cap = if cfg!(miri) { 128 } else { 4096 };
    let l = limiter(1, cap, 1);
    let mut rng = SplitMix64(17);
    let keys: Vec<AppKey> = (0..3 * cap)
        .map(|_| AppKey::from_parts(0, rng.next_u64()))
        .collect();
    for &k in &keys[..cap] {
        assert!(l.admit_key(k, T0).is_admit());
    }
    let early = l.stats().evicted;
    assert!(
        early as usize * 1000 <= cap,
        "{early} evictions before full"
    );
    assert_eq!(l.stats().entries as u64, cap as u64 - early);
    for &k in &keys[cap..] {
        assert!(l.admit_key(k, T0).is_admit());
    }
    let s = l.stats();
    assert_eq!((s.entries, s.evicted), (cap, 2 * cap as u64));
    l.validate();
}

/// Shards of up to 64 keys are one set: they never evict while they have room.
#[test]
fn small_shards_never_evict_with_room() {
    for cap in [2, 3, 17, 64] {
        let l = limiter(1, cap, 1);
        for i in 0..cap {
            assert!(l.admit(&[9], &origin(i as u64), T0).is_admit());
        }
        assert_eq!(l.stats().evicted, 0, "capacity {cap}");
        assert_eq!(l.stats().entries, cap);
        assert!(l.admit(&[9], &origin(1000), T0).is_admit());
        assert_eq!((l.stats().evicted, l.stats().entries), (1, cap));
        l.validate();
    }
}

/// The user's view of evictions: while threads flood a shard with new keys, one thread keeps
/// sending on a key at its limit (L = 3, one window). Each time the key is evicted it starts
/// afresh, so it gets at most L admissions per window plus L for each eviction of it; and since
/// every eviction is exact at its instant, an admission is never lost with its count: the key's
/// decisions, in its thread's order, are incarnations of exactly `remaining` L-1, L-2, ..., 0
/// and then drops until the next incarnation's L-1 (a lost count would repeat a `remaining`, an
/// eviction of a key that had just been admitted without the rule's say would break the
/// drops-only-at-0 rule). At most one incarnation more than the shard's evictions; the
/// structural validator after every trial. LRU shards and CLOCK (test geometry) shards.
#[test]
fn a_key_at_its_limit_keeps_its_count_while_others_flood_its_shard() {
    let trials = if cfg!(miri) { 1 } else { 40 };
    let (flooders, per, hits) = if cfg!(miri) {
        (1, 20, 20)
    } else {
        (3, 400, 600)
    };
    for trial in 0..trials {
        let clock = trial % 2 == 1;
        let config = Config {
            rate_per_second: 3, // L = 3 per 1 s window
            window: Duration::from_secs(1),
            max_size: 4,
            shards: 1,
            salt: Some([2; 16]),
            ..Config::default()
        }
        .with_clock_ways(clock.then_some(4));
        let l = AppRateLimiter::new(config).unwrap();
        let hot = l.app_key(1, &origin(u64::MAX));
        let results = race(flooders + 1, |t| {
            if t == 0 {
                (0..hits).map(|_| l.admit_key(hot, T0)).collect::<Vec<_>>()
            } else {
                for i in 0..per {
                    let k = l.app_key(1, &origin((trial * 10 + t as u64) * 1_000_000 + i));
                    assert!(l.admit_key(k, T0).is_admit());
                }
                Vec::new()
            }
        });
        l.validate();
        let mut incarnations = 0u64;
        let mut admitted = 0u64;
        // The `remaining` the next admission of this incarnation must report.
        let mut next: Option<u32> = None;
        for (i, d) in results[0].iter().enumerate() {
            match *d {
                Decision::Admit {
                    remaining: Some(r), ..
                } => {
                    admitted += 1;
                    if r == 2 {
                        incarnations += 1;
                    } else {
                        assert_eq!(Some(r), next, "trial {trial} call {i}: {:?}", results[0]);
                    }
                    next = r.checked_sub(1);
                }
                Decision::Drop { .. } => {
                    assert_eq!(next, None, "trial {trial} call {i}: a drop with room left");
                }
                _ => unreachable!("{d:?}"),
            }
        }
        let s = l.stats();
        assert!(admitted <= 3 * incarnations, "trial {trial}");
        assert!(
            incarnations <= 1 + s.evicted,
            "trial {trial}: {incarnations} incarnations, {} evictions",
            s.evicted
        );
        assert_eq!(s.entries, 4, "trial {trial}");
    }
}

/// Trials of every verb (single keys, groups of up to four apps, penalties, the clock moving)
/// on tiny CLOCK shards of two to four ways, over far more keys than they hold: evictions,
/// sweeps that meet each other's markers, reservations, and nodes and records reused from the
/// per-thread pools at the addresses of retired ones. Each thread counts the decisions it was
/// given; the limiter's counters must match them exactly (each admission call counts once, as
/// admitted or dropped, and a penalty not at all), and the structural validator must pass.
/// Run under AddressSanitizer in CI, where a node used after its reclamation fails the run.
#[test]
fn clock_sets_of_few_ways_under_every_verb() {
    let (trials, calls) = if cfg!(miri) { (1, 25) } else { (300, 1500) };
    let mut rng = SplitMix64(0x5EED_C10C);
    for trial in 0..trials {
        let ways = 2 + rng.below(3) as usize;
        let shards = 1 << rng.below(2);
        let per_shard = 2 + rng.below(6) as usize;
        let l = AppRateLimiter::new(
            Config::default()
                .with_rate_per_second(1 + rng.below(3))
                .with_window(Duration::from_secs(1))
                .with_max_size(per_shard * shards)
                .with_shards(shards)
                .with_clock_ways(Some(ways))
                .with_salt(Some([7; 16])),
        )
        .unwrap();
        let senders = 4 + rng.below(40);
        let seeds: Vec<u64> = (0..4).map(|_| rng.next_u64()).collect();
        let counted = race(4, |t| {
            let mut rng = SplitMix64(seeds[t]);
            let mut now = T0;
            let (mut admitted, mut dropped) = (0u64, 0u64);
            for _ in 0..calls {
                let o = origin(rng.below(senders));
                let apps: Vec<u64> = (0..1 + rng.below(4)).map(|_| 1 + rng.below(3)).collect();
                match rng.below(10) {
                    0 => l.penalize(&apps, &o, now),
                    1 => now += rng.below(400_000_000),
                    _ => {
                        if l.admit(&apps, &o, now).is_admit() {
                            admitted += 1;
                        } else {
                            dropped += 1;
                        }
                    }
                }
            }
            (admitted, dropped)
        });
        l.validate();
        let s = l.stats();
        let admitted: u64 = counted.iter().map(|c| c.0).sum();
        let dropped: u64 = counted.iter().map(|c| c.1).sum();
        assert_eq!(
            (s.admitted, s.dropped),
            (admitted, dropped),
            "trial {trial}"
        );
        assert!(s.entries <= per_shard * shards, "trial {trial}: {s:?}");
    }
}

/// Runs `f(thread)` on two threads that spin until both are running, so that their first
/// operations overlap (a barrier's wake-up alone lags by microseconds, longer than an
/// operation).
///
/// Where the process may run on two CPUs or more, thread `t` is pinned to the `t`-th of them.
/// Unpinned, a machine with other work on one core lets the scheduler run both threads on the
/// other, one after the other: with one busy loop beside it, 2 of 17,730 trials overlapped
/// (pinned: 2,596 of 5,096). Not under miri, which interprets one thread at a time anyway.
fn race_spinning<R: Send>(f: impl Fn(usize) -> R + Sync) -> [R; 2] {
    let ready = AtomicUsize::new(0);
    let cpus = if cfg!(miri) {
        None
    } else {
        core_affinity::get_core_ids().filter(|cpus| cpus.len() >= 2)
    };
    std::thread::scope(|s| {
        let handles = [0, 1].map(|t| {
            let (f, ready, cpu) = (&f, &ready, cpus.as_ref().map(|cpus| cpus[t]));
            s.spawn(move || {
                if let Some(cpu) = cpu {
                    // A failure leaves the thread where the scheduler puts it.
                    let _ = core_affinity::set_for_current(cpu);
                }
                ready.fetch_add(1, Relaxed);
                while ready.load(Relaxed) < 2 {
                    std::hint::spin_loop();
                }
                f(t)
            })
        });
        handles.map(|h| h.join().unwrap())
    })
}

/// Histories of two threads on one tiny shard, each checked whole by the linearizability
/// checker (`checker::explained`, the loom models' own): some sequential order of the
/// operations' steps on the model (E0-E2 in the crate docs), keeping real time, must give
/// every decision, the keys evicted, the reference bits each operation's sweeps cleared, and
/// the end state (tracked keys, counts, reference bits). The shard is CLOCK with sets of two
/// to four ways in three trials of four (exact LRU otherwise), holds two to four keys, and the
/// set-up fills it, so most operations evict: an eviction races uses of its victim, other
/// evictions, groups and penalties on real threads, with nodes reused from the per-thread
/// pools; half the operations go to two hot keys, so that accesses to one key race too. The
/// threads, pinned to two CPUs, start spinning together (in a quarter of the trials one after a
/// random delay). Trials go on until 2,000 histories had overlapping operations and an eviction
/// (or a minute passed), and fail if fewer than 20 did where two CPUs are available. Two
/// mutations, tried when this test was written, each failed it in every run (four and three): a
/// hit that wrote its counts over a newer word (a lost update), and an eviction whose victim
/// was used after its plan (the marker installed over the newer word). The other stress tests
/// pass the second. Run alone by nextest (`.config/nextest.toml`).
#[test]
fn two_thread_histories_with_evictions_are_linearizable() {
    use crate::checker::{self, History, Op};
    // Trials go on until `wanted` histories had overlapping operations and an eviction among
    // the threads' operations, or `most` trials ran, or a minute passed (on a machine whose
    // other work leaves the two threads one core, few overlap); then at least `least` must
    // have, where the process may run on two CPUs at all. Under miri, one trial, not searched
    // (below).
    let (wanted, least, most) = if cfg!(miri) {
        (usize::MAX, 0, 1)
    } else {
        (2_000, 20, 40_000)
    };
    let mut rng = SplitMix64(0x11AE_A21B);
    let (mut overlapped, mut racing_evictions, mut undecided) = (0, 0, 0);
    let mut trials = 0;
    let start = std::time::Instant::now();
    let minute = Duration::from_secs(60);
    while trials < most && racing_evictions < wanted && (cfg!(miri) || start.elapsed() < minute) {
        let trial = trials;
        trials += 1;
        let limit = 1 + rng.below(2);
        let capacity = 2 + rng.below(3) as usize;
        let mut config = Config::default()
            .with_rate_per_second(limit)
            .with_window(Duration::from_secs(1))
            .with_max_size(capacity)
            .with_shards(1)
            .with_salt(Some([9; 16]));
        if rng.below(4) != 0 {
            config = config.with_clock_ways(Some(2 + rng.below(3) as usize));
        }
        let l = AppRateLimiter::new(config.clone()).unwrap();
        l.record_history();
        let keys: Vec<AppKey> = (0..6)
            .map(|i| l.app_key(1 + i % 2, &origin(i / 2)))
            .collect();
        let op = |rng: &mut SplitMix64| {
            // Half the operations on two hot keys, so that accesses to one key race.
            let key = |rng: &mut SplitMix64| {
                keys[if rng.below(2) == 0 {
                    rng.below(2)
                } else {
                    rng.below(6)
                } as usize]
            };
            match rng.below(20) {
                0..=2 => {
                    let (a, b) = (key(rng), key(rng));
                    Op::Admit(vec![a, b], 1, 0)
                }
                3 => Op::Penalize(vec![key(rng)]),
                4 => Op::Penalize(vec![key(rng), key(rng)]),
                5 => Op::Admit(vec![key(rng)], 1, 1_000_000_000),
                6 => Op::Admit(vec![key(rng)], 1 + rng.below(limit) as u32, 0),
                _ => Op::Admit(vec![key(rng)], 1, 0),
            }
        };
        let setup: Vec<Op> = (0..rng.below(capacity as u64 + 2))
            .map(|_| Op::Admit(vec![keys[rng.below(6) as usize]], 1, 0))
            .collect();
        let threads: [Vec<Op>; 2] =
            [0, 1].map(|_| (0..2 + rng.below(2)).map(|_| op(&mut rng)).collect());
        for o in &setup {
            let _ = checker::on_limiter(&l, o);
        }
        let before = l.victims().len();
        // Most trials start both threads at once; some delay one by up to about a microsecond.
        let delays = [0, 1].map(|_| if rng.below(4) == 0 { rng.below(300) } else { 0 });
        let stamps = AtomicUsize::new(0);
        let runs = race_spinning(|t| {
            for _ in 0..delays[t] {
                std::hint::spin_loop();
            }
            checker::run(&l, &threads[t], || {
                stamps.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            })
        });
        l.validate();
        let overlap = runs[0]
            .spans
            .iter()
            .any(|&(s0, e0)| runs[1].spans.iter().any(|&(s1, e1)| s0 < e1 && s1 < e0));
        let history = History {
            setup,
            threads,
            runs,
            outcome: checker::outcome(&l, &keys),
            keys,
            victims: l.victims(),
        };
        if overlap {
            overlapped += 1;
            racing_evictions += usize::from(history.victims.len() > before);
        }
        if cfg!(miri) {
            // Miri runs the search thousands of times slower (minutes for one history): its
            // trial is for the table's memory accesses, which the validator above walks too.
            eprintln!("under miri: the history is not searched");
            continue;
        }
        match checker::explained(&config, &history) {
            Ok(explained) => assert!(
                explained,
                "trial {trial}: no sequential order of the steps explains {history:?} on \
                 {config:?}"
            ),
            Err(checker::Exhausted) => undecided += 1,
        }
    }
    eprintln!(
        "{overlapped} of {trials} histories overlapped, {racing_evictions} with evictions; \
         {undecided} too large for the checker's budget"
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        eprintln!("one CPU available: races cannot be reached here, their count is not required");
    } else {
        assert!(
            racing_evictions >= least,
            "too few races reached: {overlapped} histories overlapped, {racing_evictions} with \
             evictions, of {trials}"
        );
    }
    assert!(
        undecided <= trials / 100,
        "{undecided} of {trials} histories too large for the checker"
    );
}
