//! Evicted nodes are really freed, while the limiter lives and all of them once it drops.
//!
//! The process-wide count of reclaimed objects (`txgate_sync::reclaim::reclaimed`) is exact
//! only where nothing else reclaims: this file holds one test, so its binary (run by
//! `cargo test`, or by `cargo nextest` in a process per test) reclaims nothing else.
//! Not under loom (no real collector) nor `txgate_tsan` (which frees only when the collector
//! drops).
#![cfg(all(debug_assertions, not(loom), not(txgate_tsan)))]

use std::time::Duration;

use txgate_ratelimit::{AppRateLimiter, Config, Origin};

/// Enough evictions to make seize reclaim (its batch is 2 under Miri, and the limiter's 512
/// otherwise). Lock-free (CLOCK) shards only: exact-LRU shards keep their keys in place under a
/// lock and retire nothing, so the test geometry gives tiny shards CLOCK sets.
#[test]
fn evicted_nodes_are_reclaimed() {
    assert_eq!(
        txgate_sync::reclaim::reclaimed(),
        0,
        "something else in this process reclaimed"
    );
    let l = AppRateLimiter::new(
        Config::default()
            .with_rate_per_second(1)
            .with_window(Duration::from_secs(1))
            .with_max_size(4) // capacity 2 per shard: 2 CLOCK sets of 2 ways, one key each
            .with_shards(2)
            .with_clock_ways(Some(2))
            .with_salt(Some([1; 16])),
    )
    .unwrap();
    let t0 = 1_700_000_010 * 1_000_000_000;
    let n: u64 = if cfg!(miri) { 40 } else { 3000 };
    for i in 0..n {
        let _ = l.admit(&[1], &Origin::from_peer_id(&i.to_le_bytes()), t0);
    }
    // App 1's keys all fall in one shard (the shard hash is the app id's), whose 2 sets hold one
    // key each (no spare room: capacity 2 = 2 sets); 40 keys fill both.
    assert_eq!(l.stats().entries, 2);
    let evicted = n - 2;
    assert_eq!(l.stats().evicted, evicted);
    // Each eviction retires two objects (the protocol's I1, single-threaded so no claim or
    // install fails and nothing is re-planned): the eviction's record and its victim node, both
    // by the record's last holder (here its owner), once the slot and the claim word moved past
    // them.
    let retired = 2 * evicted;
    // Retirements were batched and freed while the limiter was alive: all but the last partial
    // batch (512 objects; 2 under Miri), so at least `retired - batch` and a whole number of
    // batches.
    let batch = if cfg!(miri) { 2 } else { 512 };
    let freed = txgate_sync::reclaim::reclaimed();
    assert!(
        (retired - batch..=retired).contains(&freed) && freed.is_multiple_of(batch),
        "freed {freed} of {retired} retired objects"
    );
    // The collector frees the rest when the limiter drops; the nodes still tracked are the
    // table's to free, not the collector's.
    drop(l);
    assert_eq!(txgate_sync::reclaim::reclaimed(), retired);
}
