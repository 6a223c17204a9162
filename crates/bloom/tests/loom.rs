//! loom models of `AtomicBlockedBloom`'s concurrent inserts. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p txgate-bloom --test loom`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use txgate_bloom::{AtomicBlockedBloom, BloomBuilder};

fn one_block() -> AtomicBlockedBloom {
    BloomBuilder::with_num_blocks(1)
        .unwrap()
        .seed(9)
        .build_atomic()
        .unwrap()
}

/// Two threads insert the same new key: at least one reports it new (the documented rule), and
/// after the joins it is present, in every interleaving.
#[test]
fn racing_inserts_of_one_key() {
    loom::model(|| {
        let filter = Arc::new(one_block());
        let key = 0x0123_4567_89ab_cdefu64;
        let f = Arc::clone(&filter);
        let t = thread::spawn(move || f.insert_hash(key));
        let here = filter.insert_hash(key);
        let there = t.join().unwrap();
        assert!(here || there, "neither racing insert reported the new key");
        assert!(filter.contains_hash(key));
        assert!(!filter.insert_hash(key));
    });
}

/// Two threads insert different keys into the one block: both are visible after the joins, and
/// each reports itself new (each key has a bit the other never sets, so its own load always
/// finds that bit clear).
#[test]
fn racing_inserts_of_two_keys_in_one_block() {
    loom::model(|| {
        let filter = Arc::new(one_block());
        let (a, b) = (0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888u64);
        let f = Arc::clone(&filter);
        let t = thread::spawn(move || f.insert_hash(b));
        let a_new = filter.insert_hash(a);
        let b_new = t.join().unwrap();
        assert!(a_new && b_new);
        assert!(filter.contains_hash(a) && filter.contains_hash(b));
        assert_eq!(filter.count_ones(), 16 - shared_bits(a, b));
    });
}

/// Bits the two keys share (so the expected count is exact), from the fresh-filter bits of each.
fn shared_bits(a: u64, b: u64) -> u64 {
    let alone = |h| {
        let f = one_block();
        f.insert_hash(h);
        f.to_bytes()
    };
    let (x, y) = (alone(a), alone(b));
    x.iter()
        .zip(&y)
        .skip(32)
        .map(|(p, q)| u64::from((p & q).count_ones()))
        .sum()
}
