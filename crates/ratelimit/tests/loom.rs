//! loom models of the lock-free paths (run with `RUSTFLAGS="--cfg loom"`, see the workspace
//! README). Reclamation is txgate-sync's loom stand-in, which poisons a retired node as soon as
//! every guard alive at its retirement has dropped and makes any later access panic; it adds no
//! happens-before edge of its own. Each model ends with the structural validator.
#![cfg(loom)]

use std::time::Duration;

use loom::sync::Arc;
use loom::thread;
use txgate_ratelimit::{AppKey, AppRateLimiter, Config, Decision, Origin};

const T0: u64 = 1_700_000_000 * 1_000_000_000;

/// One shard of `capacity` keys, L = `limit` per 1 s window.
fn limiter(limit: u64, capacity: usize) -> Arc<AppRateLimiter> {
    sharded(limit, capacity, 1)
}

fn sharded(limit: u64, max_size: usize, shards: usize) -> Arc<AppRateLimiter> {
    Arc::new(
        AppRateLimiter::new(
            Config::default()
                .with_max_size(max_size)
                .with_rate_per_second(limit)
                .with_window(Duration::from_secs(1))
                .with_shards(shards)
                .with_salt(Some([1; 16])),
        )
        .unwrap(),
    )
}

fn peer(i: u8) -> Origin {
    Origin::from_peer_id(&[i])
}

/// Runs `model` with loom's preemption bound raised to at least `bound`, whatever
/// `LOOM_MAX_PREEMPTIONS` says (for models whose bad interleaving needs that many).
fn check_with_bound(bound: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(builder.preemption_bound.map_or(bound, |b| b.max(bound)));
    builder.check(model);
}

/// Two threads admit a key that neither finds in the table: with L = 1 exactly one is admitted,
/// and the table ends with one node of the key.
#[test]
fn racing_admits_on_a_new_key_never_exceed_l() {
    loom::model(|| {
        let l = limiter(1, 2);
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

/// A stale lookup: thread B admits k then m, thread A admits k (L = 1, capacity 2). A's lookup
/// may miss k while B inserts k and then m; A must then find k (never evict it to insert it
/// afresh), so k is admitted exactly once and nothing is evicted.
#[test]
fn a_stale_miss_never_admits_a_key_twice() {
    check_with_bound(3, || {
        let l = limiter(1, 2);
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

/// Three threads admit one new key (L = 1) into a shard of capacity 2: whatever the
/// interleaving of their insertions, exactly one admission and one node of the key (the
/// in-flight case: an insertion in flight never makes another caller decide without the table).
#[test]
fn three_threads_admit_one_new_key_once() {
    loom::model(|| {
        let l = limiter(1, 2);
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

/// Two groups naming the same two apps in opposite orders, each app one admission from its
/// limit: exactly one is admitted
/// (the groups take their keys in one canonical order; neither is dropped because of the other's
/// count unless that count stays).
#[test]
fn crossed_groups_admit_exactly_one() {
    loom::model(|| {
        let l = sharded(2, 8, 4);
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

/// A group {a, b} where b is already at its limit races a single admission of a (L = 1, a has
/// room; a comes first in the groups' key order, so the group holds a while it finds b full).
/// The group must drop and the single admission must be admitted: the group's tentative count
/// on a may never make a concurrent caller drop (no sequential order drops both).
#[test]
fn a_failing_group_never_drops_a_concurrent_caller() {
    loom::model(|| {
        let l = sharded(1, 8, 4);
        let (x, y) = (l.app_key(11, &peer(0)), l.app_key(12, &peer(0)));
        let order = |k: AppKey| (k.shard(), k.hash());
        let (a, b) = if order(x) < order(y) { (x, y) } else { (y, x) };
        assert!(l.admit_key(b, T0).is_admit());
        assert!(l.counts(a).is_none());
        let t = {
            let l = l.clone();
            thread::spawn(move || l.admit_keys(&[a, b], T0))
        };
        let single = l.admit_key(a, T0);
        let group = t.join().unwrap();
        assert!(group.is_drop(), "{group:?}");
        assert!(single.is_admit(), "{single:?}");
        assert_eq!(l.counts(a), Some((0, 1)));
        l.validate();
    });
}

/// A group {a, b} (a first in key order, both one admission from L = 2) races single
/// admissions of a then b on another thread. Sequentially either the group goes first (admitted;
/// both singles drop) or the single on a does (the group drops, naming a, index 0). A drop that
/// names b while both singles were admitted would be explained by no order: the group must not
/// decide a drop on counts read after it was aborted.
#[test]
fn a_dropped_group_names_a_key_over_its_limit_at_one_instant() {
    loom::model(|| {
        let l = sharded(2, 8, 4);
        let (x, y) = (l.app_key(11, &peer(0)), l.app_key(12, &peer(0)));
        let order = |k: AppKey| (k.shard(), k.hash());
        let (a, b) = if order(x) < order(y) { (x, y) } else { (y, x) };
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

/// Recency in a small shard under concurrency: a thread refreshing a while the main thread
/// refreshes b, c, b cannot move the shard's clock back, so after c and a are used again a new
/// key d evicts b, the least recently used in every order of the accesses.
#[test]
fn small_shard_recency_never_runs_backwards() {
    loom::model(|| {
        let l = limiter(100, 3);
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

/// A key admitted (twice, L = 1) while another thread inserts two more keys into its shard,
/// which has room for all three: the key is admitted exactly once and nothing is evicted.
#[test]
fn admissions_racing_insertions_with_room_never_exceed_l() {
    loom::model(|| {
        let l = limiter(1, 3);
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

/// Two threads insert one new key into a full shard {B, C} while one of them changes which key
/// is least recently used, so they may plan different victims: the set's claim lets one
/// insertion through, and with L = 1 exactly one admission lands.
#[test]
fn racing_inserts_of_one_key_into_a_full_shard_admit_once() {
    check_with_bound(3, || {
        let l = limiter(1, 2);
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

/// A helper that loaded an insertion's claim and stalls must not act on the set after that
/// insertion completed: thread A inserts k (evicting x), refreshes y and inserts k2, which
/// evicts k in the same way; thread B, inserting k3, may have loaded k's claim before all that
/// and complete it late. A late helper that replaced "whatever is in the way" would mark k2
/// evicted and put the retired k back; the structure stays valid and every key is admitted once.
#[test]
fn a_stale_helper_never_reinstates_a_replaced_node() {
    loom::model(|| {
        let l = limiter(1, 2);
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

/// Two threads, two admissions each, on an existing key with L = 3: exactly 3 admitted.
#[test]
fn racing_admits_on_an_existing_key_never_exceed_l() {
    loom::model(|| {
        let l = limiter(3, 2);
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

/// One thread admits key A while another inserts a new key C into the full shard {A, B},
/// evicting the least recently used key. The bound of 2 keys holds, no retired node is touched
/// after reclamation could free it (the stand-in panics), and A's admission is decided.
#[test]
fn admit_racing_eviction_of_the_same_key() {
    loom::model(|| {
        let l = limiter(5, 2);
        let [a, b, c] = [0, 1, 2].map(|i| l.app_key(1, &peer(i)));
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
        l.validate();
    });
}

/// A group {a, x} (x in another shard) races an insertion that evicts a from its full shard
/// {a, b}: the group either lands on a before the eviction or finds a evicted and starts over;
/// in every case it is admitted once, with its count stored on a tracked node or lost with an
/// evicted one, and no retired node is touched.
#[test]
fn a_group_racing_the_eviction_of_its_key() {
    loom::model(|| {
        let l = sharded(5, 4, 2); // 2 shards of 2
        let o = peer(0);
        let a = l.app_key(11, &o);
        let x = (12..)
            .map(|app| l.app_key(app, &o))
            .find(|k| k.shard() != a.shard())
            .unwrap();
        let b = l.app_key(11, &peer(1));
        let c = l.app_key(11, &peer(2));
        assert!(l.admit_key(b, T0).is_admit());
        assert!(l.admit_key(a, T0).is_admit());
        let t = {
            let l = l.clone();
            thread::spawn(move || l.admit_key(c, T0))
        };
        let group = l.admit_keys(&[a, x], T0);
        assert!(t.join().unwrap().is_admit());
        assert!(group.is_admit());
        assert_eq!(l.counts(x), Some((0, 1)));
        if let Some((_, cur)) = l.counts(a) {
            assert!(cur == 1 || cur == 2, "a counts {cur}");
        }
        l.validate();
    });
}

/// A penalty racing an admission on one key (L = 4, penalty 1): everything lands, so exactly one
/// more admission fits afterwards.
#[test]
fn penalize_racing_admit_keeps_the_arithmetic_exact() {
    loom::model(|| {
        let l = limiter(4, 2);
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

/// Keys equal after reducing their shard are one key in a group.
#[test]
fn aliased_keys_count_once() {
    loom::model(|| {
        let l = sharded(1, 8, 4);
        let (a, b) = (AppKey::from_parts(1, 77), AppKey::from_parts(5, 77));
        assert!(l.admit_keys(&[a, b], T0).is_admit());
        assert!(l.admit_key(a, T0).is_drop());
    });
}
