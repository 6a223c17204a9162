//! The false-positive rate against the blocked-filter formula, sizing against its target, the
//! block index's reach past 2^32 bits, and the distinct-key estimate.

use super::*;

/// The hashes of the `n` keys inserted by the false-positive tests.
fn fpr_keys(n: u64) -> impl Iterator<Item = u64> {
    let mut keys = SplitMix(0xfeed);
    (0..n).map(move |_| keys.next_u64())
}

/// The measured false-positive rate over `probes` hashes from a stream disjoint from the keys.
fn probe(contains: impl Fn(u64) -> bool, probes: u64) -> f64 {
    let mut others = SplitMix(0xbeef);
    (0..probes).filter(|_| contains(others.next_u64())).count() as f64 / probes as f64
}

const FPR_KEYS: u64 = 1 << 20;
const FPR_PROBES: u64 = 10_000_000;

/// The measured rate of layout `B` at `bits_per_key`, checked to be within 10 % (relative) of
/// the formula for every backend (plain) and the detected one (atomic: the same bits, checked
/// by the oracle test, through the other query path).
fn measured_rate<B: BlockLayout>(bits_per_key: u64) -> f64 {
    let blocks = FPR_KEYS * bits_per_key / B::LAYOUT.bits_per_block();
    let expected = B::LAYOUT.false_positive_rate(FPR_KEYS, blocks);
    let check = |got: f64, what: &str| {
        assert!(
            (got - expected).abs() <= 0.1 * expected,
            "{:?} {what} {bits_per_key} b/key: {got} vs {expected}",
            B::LAYOUT
        );
        got
    };
    let mut rate = 0.0;
    for backend in Backend::available() {
        let mut plain = builder_of::<B>(blocks).backend(backend).build().unwrap();
        for h in fpr_keys(FPR_KEYS) {
            plain.insert(Hashed(h));
        }
        rate = check(
            probe(|h| plain.contains(Hashed(h)), FPR_PROBES),
            &format!("{backend:?}"),
        );
    }
    let atomic = builder_of::<B>(blocks).build_atomic().unwrap();
    for h in fpr_keys(FPR_KEYS) {
        atomic.insert(Hashed(h));
    }
    check(probe(|h| atomic.contains(Hashed(h)), FPR_PROBES), "atomic");
    rate
}

/// Measured false-positive rate within 10 % (relative) of the blocked formula, at 8, 10 and 16
/// bits per key, for both layouts, both variants and every backend, over 10^7 probes with fixed
/// seeds (at 16 bits per key the 512-bit formula gives ~0.09 %: ~9,100 expected hits, sd ~1 %);
/// and at equal memory the 512-bit layout has at least 15 % fewer false positives at 10 and 16
/// bits per key (the formula: 17 % and 31 %) and at least 10 % fewer at 8 (the formula: 12 %).
#[test]
#[cfg_attr(
    miri,
    ignore = "statistical: 10^7 probes per case; the native run covers it"
)]
fn false_positive_rate_matches_formula() {
    for bits_per_key in [8u64, 10, 16] {
        let small = measured_rate::<Block256>(bits_per_key);
        let large = measured_rate::<Block512>(bits_per_key);
        let bound = if bits_per_key == 8 { 0.90 } else { 0.85 };
        assert!(
            large <= bound * small,
            "{bits_per_key} b/key: 512-bit {large} vs 256-bit {small}"
        );
    }
}

/// The same through the `Hash` and 32-byte id entry points (wyhash of structured keys:
/// consecutive integers, ids differing in one byte), so the hashing, not only the layout, is
/// held to the formula.
fn hashed_keys_rate<B: BlockLayout>() {
    let blocks = FPR_KEYS * 10 / B::LAYOUT.bits_per_block();
    let expected = B::LAYOUT.false_positive_rate(FPR_KEYS, blocks);
    let mut filter = builder_of::<B>(blocks).build().unwrap();
    for i in 0..FPR_KEYS {
        filter.insert(&i);
    }
    // Within 10% of the formula: `hits` of the probes `FPR_KEYS..FPR_KEYS + FPR_PROBES`.
    let assert_rate = |hits: usize, keys: &str| {
        let got = hits as f64 / FPR_PROBES as f64;
        assert!(
            (got - expected).abs() <= 0.1 * expected,
            "{:?} {keys}: {got} vs {expected}",
            B::LAYOUT
        );
    };
    let probes = FPR_KEYS..FPR_KEYS + FPR_PROBES;
    assert_rate(
        probes.clone().filter(|i| filter.contains(i)).count(),
        "u64 keys",
    );

    let id = |i: u64| {
        let mut id = [0x42u8; 32];
        id[..8].copy_from_slice(&i.to_be_bytes());
        id
    };
    filter.clear();
    for i in 0..FPR_KEYS {
        filter.insert(Bytes(&id(i)));
    }
    assert_rate(
        probes.filter(|&i| filter.contains(Bytes(&id(i)))).count(),
        "ids",
    );
}

#[test]
#[cfg_attr(miri, ignore = "statistical: 10^7 probes; the native run covers it")]
fn false_positive_rate_of_hashed_keys_matches_formula() {
    hashed_keys_rate::<Block256>();
    hashed_keys_rate::<Block512>();
}

#[test]
fn sizing_meets_the_target() {
    sizing_meets_the_target_of::<Block256>();
    sizing_meets_the_target_of::<Block512>();
}

fn sizing_meets_the_target_of<B: BlockLayout>() {
    let (items, fpr) = if MIRI { (100, 0.05) } else { (100_000, 0.001) };
    let mut filter = BloomBuilder::with_false_positive_rate(items, fpr)
        .layout::<B>()
        .build()
        .unwrap();
    assert!(filter.expected_false_positive_rate(items) <= fpr);
    let mut rng = SplitMix(4);
    for _ in 0..items {
        filter.insert(Hashed(rng.next_u64()));
    }
    let probes = if MIRI { 500 } else { 2_000_000 };
    let hits = (0..probes)
        .filter(|_| filter.contains(Hashed(rng.next_u64())))
        .count();
    // Within 4 standard deviations of a binomial at the target rate.
    let mean = fpr * probes as f64;
    assert!(
        (hits as f64) < mean + 4.0 * mean.sqrt() + 4.0,
        "{hits} false positives, target mean {mean}"
    );
}

/// The block index is 64-bit: a filter of more than 2^32 bits uses its last blocks (a 32-bit
/// index would wrap and leave them empty, and overload the first ones).
#[test]
fn block_index_is_64_bit() {
    use crate::block::block_index;
    let n = 1u64 << 40;
    assert_eq!(block_index(u64::MAX, n), n - 1);
    assert_eq!(block_index(1 << 63, n), n / 2);
    assert_eq!(block_index(u64::MAX, u64::MAX), u64::MAX - 1);
    assert_eq!(block_index(0, n), 0);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "allocates 512 MiB; the index arithmetic is covered by block_index_is_64_bit"
)]
fn filter_past_2_pow_32_bits_uses_every_block() {
    let bits = (1u64 << 32) + 256;
    let mut filter = BloomBuilder::with_num_bits(bits).seed(1).build().unwrap();
    assert_eq!(filter.num_blocks(), (1 << 24) + 1);
    // The largest hashes land in the last block, past bit 2^32.
    assert!(filter.insert(Hashed(u64::MAX)));
    assert!(filter.contains(Hashed(u64::MAX)));
    let bytes = filter.to_bytes();
    let last = &body(&bytes)[body(&bytes).len() - 32..];
    assert_eq!(last.iter().map(|b| b.count_ones()).sum::<u32>(), 8);
    // Spread: 2^16 random keys touch blocks in the upper half as often as in the lower.
    let mut rng = SplitMix(5);
    let upper = (0..1u64 << 16)
        .filter(|_| {
            crate::block::block_index(rng.next_u64(), filter.num_blocks())
                >= filter.num_blocks() / 2
        })
        .count();
    assert!((31_000..34_500).contains(&upper), "{upper}");
}

#[test]
fn estimated_len_tracks_distinct_inserts() {
    let n = if MIRI { 300 } else { 100_000 };
    let mut filter = builder(n * 10 / 256 + 1).build().unwrap();
    let mut rng = SplitMix(6);
    let keys: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    for &k in &keys {
        filter.insert(Hashed(k));
    }
    for &k in &keys {
        filter.insert(Hashed(k)); // repeats must not count
    }
    let est = filter.estimated_len();
    let tolerance = if MIRI { 0.1 } else { 0.02 };
    assert!(
        (est - n as f64).abs() <= tolerance * n as f64,
        "{est} vs {n}"
    );
    assert_eq!(crate::filter::estimate_len(0, 512), 0.0);
    assert!(crate::filter::estimate_len(512, 512).is_infinite());
}
