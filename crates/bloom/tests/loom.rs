//! loom models of `AtomicBlockedBloom`'s concurrent inserts, for both block layouts. Run with
//! `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=3 cargo test --release -p txgate-bloom --test loom`.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use txgate_bloom::{
    AtomicBlockedBloom, Block256, Block512, BlockLayout, BloomBuilder, Filter, Hashed,
};

fn one_block_of<B: BlockLayout>() -> AtomicBlockedBloom<B> {
    BloomBuilder::with_num_blocks(1)
        .seed(9)
        .layout::<B>()
        .build_atomic()
        .unwrap()
}

/// Two threads insert the same new key into the one block of layout `B`: at least one reports
/// it new (the documented rule), and after the joins it is present (its 8 bits set), in every
/// interleaving.
fn racing_inserts_of_one_key_in<B: BlockLayout>() {
    loom::model(|| {
        let filter = Arc::new(one_block_of::<B>());
        let key = 0x0123_4567_89ab_cdefu64;
        let f = Arc::clone(&filter);
        let t = thread::spawn(move || f.insert(Hashed(key)));
        let here = filter.insert(Hashed(key));
        let there = t.join().unwrap();
        assert!(here || there, "neither racing insert reported the new key");
        assert!(filter.contains(Hashed(key)));
        assert!(!filter.insert(Hashed(key)));
        assert_eq!(filter.count_ones(), 8);
    });
}

#[test]
fn racing_inserts_of_one_key() {
    racing_inserts_of_one_key_in::<Block256>();
}

/// The same on a 512-bit block, whose key's bits are spread over eight `AtomicU64`s (one bit
/// each, so each word is its own load-then-`fetch_or`).
#[test]
fn racing_inserts_of_one_key_in_a_512_bit_block() {
    racing_inserts_of_one_key_in::<Block512>();
}

/// Two threads insert different keys into the one block of layout `B`: both are visible after
/// the joins, and each reports itself new (each key has a bit the other never sets, so its own
/// load always finds that bit clear).
fn racing_inserts_of_two_keys_in<B: BlockLayout>() {
    loom::model(|| {
        let filter = Arc::new(one_block_of::<B>());
        let (a, b) = (0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888u64);
        let f = Arc::clone(&filter);
        let t = thread::spawn(move || f.insert(Hashed(b)));
        let a_new = filter.insert(Hashed(a));
        let b_new = t.join().unwrap();
        assert!(a_new && b_new);
        assert!(filter.contains(Hashed(a)) && filter.contains(Hashed(b)));
        let shared = shared_bits::<B>(a, b);
        assert!(shared < 8, "the keys must differ in some bit");
        assert_eq!(filter.count_ones(), 16 - shared);
    });
}

#[test]
fn racing_inserts_of_two_keys_in_one_block() {
    racing_inserts_of_two_keys_in::<Block256>();
}

#[test]
fn racing_inserts_of_two_keys_in_one_512_bit_block() {
    racing_inserts_of_two_keys_in::<Block512>();
}

/// Bits the two keys share (so the expected count is exact), from the fresh-filter bits of each.
fn shared_bits<B: BlockLayout>(a: u64, b: u64) -> u64 {
    let alone = |h| {
        let f = one_block_of::<B>();
        f.insert(Hashed(h));
        f.to_bytes()
    };
    let (x, y) = (alone(a), alone(b));
    // The block, between the 32-byte header and the 8-byte checksum.
    let block = 32..32 + B::LAYOUT.block_bytes();
    x[block.clone()]
        .iter()
        .zip(&y[block])
        .map(|(p, q)| u64::from((p & q).count_ones()))
        .sum()
}
