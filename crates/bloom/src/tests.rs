//! Unit tests: every backend of both layouts against one naive oracle, the false-positive rate
//! against the formula, serialization (both format versions, the checksum) and its rejections,
//! set operations, and the atomic insert rule.

use crate::error::{BuildError, LoadError, ShapeError};
use crate::format::{CHECKSUM_BYTES, HEADER_BYTES};
use crate::layout::BlockLayout;
use crate::{
    AnyBloom, AtomicBlockedBloom, Backend, Block256, Block512, BlockedBloom, BloomBuilder, Layout,
    Sbbf,
};

/// Scale for miri, which runs the scalar path about 10^4 times slower.
const MIRI: bool = cfg!(miri);

/// SplitMix64 (Steele, Lea, Flood 2014): an independent stream of well-mixed test hashes.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// The salts of the Parquet SBBF spec, written out again for the oracle.
const SPEC_SALT: [u64; 8] = [
    0x47b6137b, 0x44974d91, 0x8824ad5b, 0xa2b7289d, 0x705495c7, 0x2df1424b, 0x9efc4947, 0x5c6bfb31,
];

/// A naive bloom filter: one `bool` per bit, positions computed in plain u64/u128 arithmetic
/// straight from the layouts' definition: blocks of 8 words of `w` bits (32 or 64), bit
/// `(x * salt_i mod 2^32) >> (32 - log2 w)` of word `i`. The native layouts and Parquet's differ
/// only in the word width and the block index: `(h * n) >> 64` in 128 bits, or the spec's
/// `((h >> 32) * n) >> 32`.
struct Oracle {
    bits: Vec<bool>,
    num_blocks: u64,
    word_bits: u64,
    sbbf: bool,
}

impl Oracle {
    fn native(layout: Layout, num_blocks: u64) -> Self {
        let word_bits = match layout {
            Layout::Block256 => 32,
            _ => 64,
        };
        Oracle {
            bits: vec![false; (num_blocks * 8 * word_bits) as usize],
            num_blocks,
            word_bits,
            sbbf: false,
        }
    }

    fn sbbf(num_blocks: u64) -> Self {
        Oracle {
            sbbf: true,
            ..Oracle::native(Layout::Block256, num_blocks)
        }
    }

    fn positions(&self, h: u64) -> Vec<usize> {
        let x = h & 0xffff_ffff;
        let block = if self.sbbf {
            ((h >> 32) * self.num_blocks) >> 32
        } else {
            ((u128::from(h) * u128::from(self.num_blocks)) >> 64) as u64
        };
        let shift = 32 - self.word_bits.trailing_zeros();
        (0..8u64)
            .map(|i| {
                let bit = ((x * SPEC_SALT[i as usize]) % (1 << 32)) >> shift;
                (block * 8 * self.word_bits + i * self.word_bits + bit) as usize
            })
            .collect()
    }

    fn insert(&mut self, h: u64) -> bool {
        let mut new = false;
        for p in self.positions(h) {
            new |= !self.bits[p];
            self.bits[p] = true;
        }
        new
    }

    fn contains(&self, h: u64) -> bool {
        self.positions(h).into_iter().all(|p| self.bits[p])
    }

    /// The oracle's bits as little-endian bytes (word order = bit order within the bitset).
    fn bytes(&self) -> Vec<u8> {
        self.bits
            .chunks(8)
            .map(|byte| {
                byte.iter()
                    .enumerate()
                    .fold(0u8, |acc, (i, &b)| acc | (u8::from(b) << i))
            })
            .collect()
    }
}

fn builder(blocks: u64) -> BloomBuilder {
    BloomBuilder::with_num_blocks(blocks).unwrap().seed(0x5eed)
}

fn builder_of<B: BlockLayout>(blocks: u64) -> BloomBuilder<B> {
    builder(blocks).layout::<B>().unwrap()
}

/// The blocks of a serialized filter (between the header and the checksum).
fn body(bytes: &[u8]) -> &[u8] {
    &bytes[HEADER_BYTES..bytes.len() - CHECKSUM_BYTES]
}

/// Every backend of layout `B`, plain and atomic, against the oracle: the insert answers, the
/// bits, and the contains and contains_many answers.
fn matches_the_oracle<B: BlockLayout>(blocks: u64, keys: usize) {
    for backend in Backend::available() {
        let mut plain = builder_of::<B>(blocks).backend(backend).build().unwrap();
        let atomic = builder_of::<B>(blocks)
            .backend(backend)
            .build_atomic()
            .unwrap();
        let mut oracle = Oracle::native(B::LAYOUT, blocks);
        let mut rng = SplitMix(1);
        let what = format!("{:?} {backend:?}", B::LAYOUT);
        for _ in 0..keys {
            let h = rng.next();
            let expected = oracle.insert(h);
            assert_eq!(plain.insert_hash(h), expected, "{what} insert {h:#x}");
            assert_eq!(
                atomic.insert_hash(h),
                expected,
                "{what} atomic insert {h:#x}"
            );
        }
        assert_eq!(body(&plain.to_bytes()), &oracle.bytes()[..], "{what} bits");
        assert_eq!(plain.to_bytes(), atomic.to_bytes(), "{what} atomic bits");
        let probes: Vec<u64> = (0..keys).map(|_| rng.next()).collect();
        let want: Vec<bool> = probes.iter().map(|&h| oracle.contains(h)).collect();
        for (&h, &expected) in probes.iter().zip(&want) {
            assert_eq!(plain.contains_hash(h), expected, "{what} contains {h:#x}");
            assert_eq!(
                atomic.contains_hash(h),
                expected,
                "{what} atomic contains {h:#x}"
            );
        }
        let mut out = vec![false; probes.len()];
        plain.contains_many(&probes, &mut out);
        assert_eq!(out, want, "{what} contains_many");
        atomic.contains_many(&probes, &mut out);
        assert_eq!(out, want, "{what} atomic contains_many");
        // The probes must exercise both answers, or the comparison above proves little.
        let hits = want.iter().filter(|&&b| b).count();
        assert!(hits > 0 && hits < keys, "{what}: {hits} of {keys}");
    }
}

#[test]
fn every_backend_of_both_layouts_matches_the_oracle() {
    // CI runs on x86-64 machines with AVX2: there the SIMD path must be among those tested.
    // (AVX-512 depends on the machine drawn; its kernels are tested wherever it is present.)
    if cfg!(all(target_arch = "x86_64", not(miri)))
        && std::env::var("CI").is_ok_and(|v| v == "true")
    {
        assert!(
            Backend::Avx2.is_available(),
            "CI machine without AVX2: the SIMD path went untested"
        );
    }
    if !Backend::Avx512.is_available() {
        eprintln!("NOTE: no AVX-512 on this CPU: its kernels are not exercised here");
    }
    // Between a tenth and a half of the probes answer "maybe" (keys per block chosen so).
    if MIRI {
        matches_the_oracle::<Block256>(1, 120);
        matches_the_oracle::<Block512>(1, 200);
    } else {
        matches_the_oracle::<Block256>(500, 20_000);
        matches_the_oracle::<Block512>(250, 30_000);
    }
}

#[test]
fn every_sbbf_backend_matches_the_oracle() {
    let (blocks, keys) = if MIRI { (1, 60) } else { (61, 8_000) };
    for backend in Backend::available() {
        let mut sbbf = Sbbf::new(blocks * 32)
            .unwrap()
            .with_backend(backend)
            .unwrap();
        let mut oracle = Oracle::sbbf(blocks);
        let mut rng = SplitMix(2);
        for _ in 0..keys {
            let h = rng.next();
            assert_eq!(sbbf.insert_hash(h), oracle.insert(h), "{backend:?}");
        }
        assert_eq!(sbbf.bitset(), oracle.bytes(), "{backend:?}");
        for _ in 0..keys {
            let h = rng.next();
            assert_eq!(sbbf.contains_hash(h), oracle.contains(h), "{backend:?}");
        }
    }
}

#[test]
fn contains_many_matches_contains() {
    // About 25 % "maybe" answers (miri: 60 keys in one block; else 55 keys per block).
    let (n, blocks, inserts) = if MIRI {
        (120, 1, 60)
    } else {
        (10_000, 90, 5_000)
    };
    let mut filter = builder(blocks).build().unwrap();
    let atomic = builder(blocks).build_atomic().unwrap();
    let mut rng = SplitMix(3);
    for _ in 0..inserts {
        let h = rng.next();
        filter.insert_hash(h);
        atomic.insert_hash(h);
    }
    let probes: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    let mut out = vec![false; n];
    filter.contains_many(&probes, &mut out);
    let expected: Vec<bool> = probes.iter().map(|&h| filter.contains_hash(h)).collect();
    assert_eq!(out, expected);
    let mut out_atomic = vec![false; n];
    atomic.contains_many(&probes, &mut out_atomic);
    assert_eq!(out_atomic, expected);
    assert!(expected.iter().any(|&b| b) && !expected.iter().all(|&b| b));
}

#[test]
#[should_panic(expected = "one output per hash")]
fn contains_many_rejects_mismatched_lengths() {
    builder(1)
        .build()
        .unwrap()
        .contains_many(&[1, 2], &mut [false]);
}

/// The hashes of the `n` keys inserted by the false-positive tests.
fn fpr_keys(n: u64) -> impl Iterator<Item = u64> {
    let mut keys = SplitMix(0xfeed);
    (0..n).map(move |_| keys.next())
}

/// The measured false-positive rate over `probes` hashes from a stream disjoint from the keys.
fn probe(contains: impl Fn(u64) -> bool, probes: u64) -> f64 {
    let mut others = SplitMix(0xbeef);
    (0..probes).filter(|_| contains(others.next())).count() as f64 / probes as f64
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
            plain.insert_hash(h);
        }
        rate = check(
            probe(|h| plain.contains_hash(h), FPR_PROBES),
            &format!("{backend:?}"),
        );
    }
    let atomic = builder_of::<B>(blocks).build_atomic().unwrap();
    for h in fpr_keys(FPR_KEYS) {
        atomic.insert_hash(h);
    }
    check(probe(|h| atomic.contains_hash(h), FPR_PROBES), "atomic");
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
    let hits = (FPR_KEYS..FPR_KEYS + FPR_PROBES)
        .filter(|i| filter.contains(i))
        .count();
    let got = hits as f64 / FPR_PROBES as f64;
    assert!(
        (got - expected).abs() <= 0.1 * expected,
        "{:?} u64 keys: {got} vs {expected}",
        B::LAYOUT
    );

    let id = |i: u64| {
        let mut id = [0x42u8; 32];
        id[..8].copy_from_slice(&i.to_be_bytes());
        id
    };
    filter.clear();
    for i in 0..FPR_KEYS {
        filter.insert_id(&id(i));
    }
    let hits = (FPR_KEYS..FPR_KEYS + FPR_PROBES)
        .filter(|&i| filter.contains_id(&id(i)))
        .count();
    let got = hits as f64 / FPR_PROBES as f64;
    assert!(
        (got - expected).abs() <= 0.1 * expected,
        "{:?} ids: {got} vs {expected}",
        B::LAYOUT
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
        .unwrap()
        .layout::<B>()
        .unwrap()
        .build()
        .unwrap();
    assert!(filter.expected_false_positive_rate(items) <= fpr);
    let mut rng = SplitMix(4);
    for _ in 0..items {
        filter.insert_hash(rng.next());
    }
    let probes = if MIRI { 500 } else { 2_000_000 };
    let hits = (0..probes)
        .filter(|_| filter.contains_hash(rng.next()))
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
    let mut filter = BloomBuilder::with_num_bits(bits)
        .unwrap()
        .seed(1)
        .build()
        .unwrap();
    assert_eq!(filter.num_blocks(), (1 << 24) + 1);
    // The largest hashes land in the last block, past bit 2^32.
    assert!(filter.insert_hash(u64::MAX));
    assert!(filter.contains_hash(u64::MAX));
    let bytes = filter.to_bytes();
    let last = &body(&bytes)[body(&bytes).len() - 32..];
    assert_eq!(last.iter().map(|b| b.count_ones()).sum::<u32>(), 8);
    // Spread: 2^16 random keys touch blocks in the upper half as often as in the lower.
    let mut rng = SplitMix(5);
    let upper = (0..1u64 << 16)
        .filter(|_| {
            crate::block::block_index(rng.next(), filter.num_blocks()) >= filter.num_blocks() / 2
        })
        .count();
    assert!((31_000..34_500).contains(&upper), "{upper}");
}

#[test]
fn estimated_len_tracks_distinct_inserts() {
    let n = if MIRI { 300 } else { 100_000 };
    let mut filter = builder(n * 10 / 256 + 1).build().unwrap();
    let mut rng = SplitMix(6);
    let keys: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    for &k in &keys {
        filter.insert_hash(k);
    }
    for &k in &keys {
        filter.insert_hash(k); // repeats must not count
    }
    let est = filter.estimated_len();
    let tolerance = if MIRI { 0.1 } else { 0.02 };
    assert!(
        (est - n as f64).abs() <= tolerance * n as f64,
        "{est} vs {n}"
    );
    assert_eq!(crate::estimate_len(0, 512), 0.0);
    assert!(crate::estimate_len(512, 512).is_infinite());
}

fn union_and_intersect_of<B: BlockLayout>() {
    let mut a = builder_of::<B>(8).build().unwrap();
    let mut b = builder_of::<B>(8).build().unwrap();
    let mut rng = SplitMix(7);
    let xs: Vec<u64> = (0..40).map(|_| rng.next()).collect();
    let ys: Vec<u64> = (0..40).map(|_| rng.next()).collect();
    for &h in &xs {
        a.insert_hash(h);
    }
    for &h in &ys {
        b.insert_hash(h);
    }
    let (a_bytes, b_bytes) = (a.to_bytes(), b.to_bytes());

    let mut u = a.clone();
    u.union(&b).unwrap();
    assert!(xs.iter().chain(&ys).all(|&h| u.contains_hash(h)));
    let or: Vec<u8> = body(&a_bytes)
        .iter()
        .zip(body(&b_bytes))
        .map(|(x, y)| x | y)
        .collect();
    assert_eq!(body(&u.to_bytes()), &or[..]);

    let mut i = u.clone();
    i.intersect(&a).unwrap();
    assert_eq!(i.to_bytes(), a_bytes, "(a | b) & a == a");
    let mut i = a.clone();
    i.intersect(&b).unwrap();
    let and: Vec<u8> = body(&a_bytes)
        .iter()
        .zip(body(&b_bytes))
        .map(|(x, y)| x & y)
        .collect();
    assert_eq!(body(&i.to_bytes()), &and[..]);

    // The atomic variant agrees.
    let mut atomic = AtomicBlockedBloom::from(a.clone());
    atomic.union(&b).unwrap();
    assert_eq!(atomic.to_bytes(), u.to_bytes());
    atomic.intersect(&a).unwrap();
    assert_eq!(atomic.to_bytes(), a_bytes);

    // Shapes and seeds must match; a refused operation changes nothing.
    let other_size = builder_of::<B>(9).build().unwrap();
    let other_seed = builder_of::<B>(8).seed(1).build().unwrap();
    assert_eq!(
        a.union(&other_size),
        Err(ShapeError::Blocks { ours: 8, theirs: 9 })
    );
    assert_eq!(a.intersect(&other_seed), Err(ShapeError::Seed));
    assert_eq!(atomic.union(&other_seed), Err(ShapeError::Seed));
    assert_eq!(a.to_bytes(), a_bytes);
}

#[test]
fn union_and_intersect() {
    union_and_intersect_of::<Block256>();
    union_and_intersect_of::<Block512>();
}

fn clear_empties_of<B: BlockLayout>() {
    let mut a = builder_of::<B>(4).build().unwrap();
    assert!(a.is_empty());
    a.insert(&"x");
    assert!(!a.is_empty() && a.count_ones() == 8);
    a.clear();
    assert!(a.is_empty() && !a.contains(&"x"));
    let mut atomic = builder_of::<B>(4).build_atomic().unwrap();
    atomic.insert(&"x");
    assert_eq!(atomic.count_ones(), 8);
    atomic.clear();
    assert_eq!(atomic.count_ones(), 0);
}

#[test]
fn clear_empties() {
    clear_empties_of::<Block256>();
    clear_empties_of::<Block512>();
}

fn serialization_round_trips_of<B: BlockLayout>() {
    let mut a = builder_of::<B>(5).build().unwrap();
    for i in 0..50u32 {
        a.insert(&i);
    }
    let bytes = a.to_bytes();
    let block_bytes = B::LAYOUT.block_bytes();
    assert_eq!(bytes.len(), HEADER_BYTES + 5 * block_bytes + CHECKSUM_BYTES);
    assert_eq!(bytes.len() as u64, crate::format::encoded_len(B::LAYOUT, 5));
    let b = BlockedBloom::<B>::from_bytes(&bytes).unwrap();
    assert_eq!(b.to_bytes(), bytes);
    assert_eq!((b.seed(), b.num_blocks()), (0x5eed, 5));
    assert!((0..50u32).all(|i| b.contains(&i)));
    let atomic = AtomicBlockedBloom::<B>::from_bytes(&bytes).unwrap();
    assert_eq!(atomic.to_bytes(), bytes);
    let plain = atomic.to_plain().unwrap();
    assert_eq!(plain.to_bytes(), bytes);
    let any = AnyBloom::from_bytes(&bytes).unwrap();
    assert_eq!(any.layout(), B::LAYOUT);
    assert_eq!(any.to_bytes(), bytes);
    assert!((0..50u32).all(|i| any.contains(&i)));
    // Header fields at their documented offsets; the checksum is XXH3-64 of all before it.
    assert_eq!(&bytes[..8], b"TXGBLOOM");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2);
    assert_eq!(bytes[10], B::LAYOUT.code());
    assert_eq!(
        u64::from_le_bytes(bytes[16..24].try_into().unwrap()),
        0x5eed
    );
    assert_eq!(u64::from_le_bytes(bytes[24..32].try_into().unwrap()), 5);
    let (rest, checksum) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
    assert_eq!(
        u64::from_le_bytes(checksum.try_into().unwrap()),
        xxhash_rust::xxh3::xxh3_64(rest)
    );
    // The other layout's loaders refuse it.
    let other = match B::LAYOUT {
        Layout::Block256 => Layout::Block512,
        _ => Layout::Block256,
    };
    let mismatch = LoadError::LayoutMismatch {
        expected: other,
        found: B::LAYOUT,
    };
    let refused = match other {
        Layout::Block256 => BlockedBloom::<Block256>::from_bytes(&bytes).map(|_| ()),
        _ => BlockedBloom::<Block512>::from_bytes(&bytes).map(|_| ()),
    };
    assert_eq!(refused, Err(mismatch.clone()));
    let refused = match other {
        Layout::Block256 => AtomicBlockedBloom::<Block256>::from_bytes(&bytes).map(|_| ()),
        _ => AtomicBlockedBloom::<Block512>::from_bytes(&bytes).map(|_| ()),
    };
    assert_eq!(refused, Err(mismatch));
}

#[test]
fn serialization_round_trips() {
    serialization_round_trips_of::<Block256>();
    serialization_round_trips_of::<Block512>();
}

/// A version-1 encoding of `filter` (no checksum): what earlier builds wrote.
fn version_1(filter: &BlockedBloom) -> Vec<u8> {
    let mut bytes = filter.to_bytes();
    bytes.truncate(bytes.len() - CHECKSUM_BYTES);
    bytes[8] = 1;
    bytes
}

#[test]
fn version_1_still_loads() {
    let mut filter = builder(3).build().unwrap();
    for i in 0..30u32 {
        filter.insert(&i);
    }
    let v1 = version_1(&filter);
    let loaded = BlockedBloom::<Block256>::from_bytes(&v1).unwrap();
    assert!((0..30u32).all(|i| loaded.contains(&i)));
    // It is written back as version 2: the same blocks, with a checksum.
    assert_eq!(loaded.to_bytes(), filter.to_bytes());
    assert_eq!(
        AnyBloom::from_bytes(&v1).unwrap().to_bytes(),
        filter.to_bytes()
    );
    assert_eq!(
        AtomicBlockedBloom::<Block256>::from_bytes(&v1)
            .unwrap()
            .to_bytes(),
        filter.to_bytes()
    );
    // Version 1 defines only the 256-bit layout, and has no trailer.
    let mut v1_wide = v1.clone();
    v1_wide[10] = 2;
    assert_eq!(
        BlockedBloom::<Block512>::from_bytes(&v1_wide).unwrap_err(),
        LoadError::UnknownLayout {
            version: 1,
            code: 2
        }
    );
    assert!(matches!(
        BlockedBloom::<Block256>::from_bytes(&[v1.clone(), vec![0; 8]].concat()),
        Err(LoadError::LengthMismatch { .. })
    ));
    // A version-1 filter with a damaged seed loads (it has no checksum): why version 2 exists.
    let mut damaged = v1;
    damaged[16] ^= 1;
    let loaded = BlockedBloom::<Block256>::from_bytes(&damaged).unwrap();
    assert_ne!(loaded.seed(), filter.seed());
}

/// The checksum catches what version 1 could not: every single-bit flip of the seed, of a
/// block or of the checksum itself, in both layouts, is a typed error; and a flipped seed would
/// otherwise have answered "absent" for nearly every inserted key.
fn checksum_catches_damage_of<B: BlockLayout>() {
    let keys = if MIRI { 20 } else { 1000 };
    let mut filter = BloomBuilder::with_false_positive_rate(keys, 0.01)
        .unwrap()
        .seed(0x5eed)
        .layout::<B>()
        .unwrap()
        .build()
        .unwrap();
    for i in 0..keys {
        filter.insert(&i);
    }
    let good = filter.to_bytes();
    let checksum_at = good.len() - CHECKSUM_BYTES;
    let mut positions: Vec<usize> = (16 * 8..24 * 8).collect(); // every bit of the seed
    positions.extend([
        HEADER_BYTES * 8,
        HEADER_BYTES * 8 + 77,
        (checksum_at - 1) * 8 + 7,
    ]);
    positions.extend([checksum_at * 8, good.len() * 8 - 1]);
    for bit in positions {
        let mut bad = good.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let err = BlockedBloom::<B>::from_bytes(&bad).unwrap_err();
        assert!(
            matches!(err, LoadError::ChecksumMismatch { .. }),
            "{:?} bit {bit}: {err:?}",
            B::LAYOUT
        );
        assert_eq!(AnyBloom::from_bytes(&bad).unwrap_err(), err);
        assert_eq!(AtomicBlockedBloom::<B>::from_bytes(&bad).unwrap_err(), err);
    }
    // What the seed flip would have done unchecked: the same blocks under another seed.
    let mut other_seed = good.clone();
    other_seed[16] ^= 1;
    let rest = other_seed.len() - CHECKSUM_BYTES;
    let fixed = xxhash_rust::xxh3::xxh3_64(&other_seed[..rest]).to_le_bytes();
    other_seed[rest..].copy_from_slice(&fixed);
    let wrong = BlockedBloom::<B>::from_bytes(&other_seed).unwrap();
    let found = (0..keys).filter(|i| wrong.contains(i)).count() as u64;
    assert!(
        found * 10 < keys,
        "{found} of {keys} still found under a wrong seed"
    );
}

#[test]
fn checksum_catches_damage() {
    checksum_catches_damage_of::<Block256>();
    checksum_catches_damage_of::<Block512>();
}

#[test]
fn every_malformed_header_is_rejected() {
    let good = builder(2).build().unwrap().to_bytes();
    let with = |at: usize, value: u8| {
        let mut b = good.clone();
        b[at] = value;
        b
    };
    let with_u64 = |at: usize, value: u64| {
        let mut b = good.clone();
        b[at..at + 8].copy_from_slice(&value.to_le_bytes());
        b
    };
    for len in 0..HEADER_BYTES {
        assert_eq!(
            BlockedBloom::<Block256>::from_bytes(&good[..len]).unwrap_err(),
            LoadError::TooShort {
                len,
                header: HEADER_BYTES
            }
        );
    }
    let len = good.len() as u64; // 32 + 2 * 32 + 8
    let cases: Vec<(Vec<u8>, LoadError)> = vec![
        (with(0, b'X'), LoadError::BadMagic),
        (with(8, 3), LoadError::UnsupportedVersion(3)),
        (with(8, 0), LoadError::UnsupportedVersion(0)),
        (with(9, 1), LoadError::UnsupportedVersion(258)),
        (
            with(10, 3),
            LoadError::UnknownLayout {
                version: 2,
                code: 3,
            },
        ),
        (
            with(10, 0),
            LoadError::UnknownLayout {
                version: 2,
                code: 0,
            },
        ),
        (with(11, 1), LoadError::ReservedNotZero),
        (with(15, 0x80), LoadError::ReservedNotZero),
        (with_u64(24, 0), LoadError::ZeroBlocks),
        (with_u64(24, u64::MAX), LoadError::TooManyBlocks(u64::MAX)),
        (
            with_u64(24, 3),
            LoadError::LengthMismatch {
                expected: len + 32,
                actual: len,
            },
        ),
        (
            with_u64(24, 1),
            LoadError::LengthMismatch {
                expected: len - 32,
                actual: len,
            },
        ),
        (
            good[..good.len() - 1].to_vec(),
            LoadError::LengthMismatch {
                expected: len,
                actual: len - 1,
            },
        ),
        (
            [good.clone(), vec![0]].concat(),
            LoadError::LengthMismatch {
                expected: len,
                actual: len + 1,
            },
        ),
        // A 256-bit filter relabelled as 512-bit blocks: its length is that of half the
        // declared blocks, caught before the checksum.
        (
            with(10, 2),
            LoadError::LengthMismatch {
                expected: len + 64,
                actual: len,
            },
        ),
    ];
    for (bytes, expected) in cases {
        assert_eq!(
            BlockedBloom::<Block256>::from_bytes(&bytes).unwrap_err(),
            expected
        );
        assert_eq!(
            AtomicBlockedBloom::<Block256>::from_bytes(&bytes).unwrap_err(),
            expected
        );
        assert_eq!(AnyBloom::from_bytes(&bytes).unwrap_err(), expected);
    }
}

#[test]
fn builder_rejects_bad_input() {
    assert_eq!(
        BloomBuilder::with_num_blocks(0).unwrap_err(),
        BuildError::ZeroSize
    );
    assert_eq!(
        BloomBuilder::with_num_bits(0).unwrap_err(),
        BuildError::ZeroSize
    );
    assert!(matches!(
        BloomBuilder::with_num_blocks(u64::MAX),
        Err(BuildError::TooLarge { .. })
    ));
    assert!(matches!(
        BloomBuilder::with_false_positive_rate(10, 1.5),
        Err(BuildError::InvalidFalsePositiveRate(_))
    ));
    // A size the allocator cannot satisfy is an error, not an abort.
    let huge = BloomBuilder::with_num_blocks(crate::MAX_BLOCKS).unwrap();
    if !MIRI {
        assert!(matches!(
            huge.build(),
            Err(BuildError::AllocationFailed { .. })
        ));
    }
    for backend in [Backend::Avx2, Backend::Avx512] {
        if !backend.is_available() {
            assert_eq!(
                builder(1).backend(backend).build().unwrap_err(),
                BuildError::BackendUnavailable(backend)
            );
        }
    }
    // A block count that fits 256-bit blocks but not 512-bit ones.
    assert!(matches!(
        huge.clone().layout::<Block512>(),
        Err(BuildError::TooLarge { .. })
    ));
    assert!(matches!(Sbbf::new(0), Err(BuildError::InvalidSbbfSize(0))));
    assert!(matches!(
        Sbbf::new(33),
        Err(BuildError::InvalidSbbfSize(33))
    ));
    assert!(matches!(
        Sbbf::new(1 << 31),
        Err(BuildError::InvalidSbbfSize(_))
    ));
    assert!(matches!(
        Sbbf::num_bits_for(1_000_000, 1e-200),
        Err(BuildError::TooLarge { .. })
    ));
    assert_eq!(Sbbf::num_bits_for(10, 0.1).unwrap(), 57); // arrow-rs table
    // Sizing never exceeds what the builder accepts.
    for fpr in [0.2, 0.3, 0.9] {
        match crate::num_blocks_for(u64::MAX, fpr) {
            Ok(blocks) => assert!(blocks <= crate::MAX_BLOCKS),
            Err(e) => assert!(matches!(e, BuildError::TooLarge { .. }), "{e:?}"),
        }
    }
    // A Parquet header whose numBytes is not whole blocks is a header error.
    let mut bytes = vec![0x15, 66]; // zigzag(33)
    bytes.extend_from_slice(&[0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0]);
    bytes.extend_from_slice(&[0; 33]);
    assert!(matches!(
        Sbbf::from_parquet(&bytes),
        Err(LoadError::ParquetHeader(_))
    ));
}

/// A change of layout sizes the request again: a rate target gets the fewest blocks of the new
/// layout, bits are rounded up to its blocks, a block count stays; seed and backend carry over.
#[test]
fn layout_switch_resizes_the_request() {
    let rate = BloomBuilder::with_false_positive_rate(10_000, 0.001)
        .unwrap()
        .seed(9)
        .backend(Backend::Scalar);
    let wide = rate.clone().layout::<Block512>().unwrap();
    assert_eq!(
        wide.num_blocks(),
        Layout::Block512.num_blocks_for(10_000, 0.001).unwrap()
    );
    assert_eq!(
        rate.num_blocks(),
        Layout::Block256.num_blocks_for(10_000, 0.001).unwrap()
    );
    assert_eq!(wide.clone().layout::<Block256>().unwrap(), rate);
    let filter = wide.build().unwrap();
    assert_eq!((filter.seed(), filter.backend()), (9, Backend::Scalar));
    assert_eq!(filter.layout(), Layout::Block512);
    let bits = BloomBuilder::with_num_bits(1000).unwrap();
    assert_eq!(bits.num_blocks(), 4);
    assert_eq!(bits.layout::<Block512>().unwrap().num_blocks(), 2);
    let blocks = BloomBuilder::with_num_blocks(3).unwrap();
    assert_eq!(blocks.layout::<Block512>().unwrap().num_blocks(), 3);
    let any = BloomBuilder::with_false_positive_rate(10_000, 0.001)
        .unwrap()
        .build_any(Layout::Block512)
        .unwrap();
    assert_eq!(any.num_blocks(), filter.num_blocks());
    assert_eq!(any.memory_bytes(), 64 * filter.num_blocks());
}

#[test]
fn random_seeds_differ_and_fixed_seeds_repeat() {
    let a = BloomBuilder::with_num_blocks(1).unwrap().build().unwrap();
    let b = BloomBuilder::with_num_blocks(1).unwrap().build().unwrap();
    assert_ne!(a.seed(), b.seed());
    assert_eq!(
        builder(1).build().unwrap().hash(&"k"),
        builder(1).build().unwrap().hash(&"k")
    );
}

/// The documented rule for racing inserts, on real threads: for every key that is new (none of
/// its bits set by other keys), at least one of the racing inserts returns `true`, and after the
/// join every key is present.
/// ("New": with 20,000 keys in 2^16 blocks a key whose bits are all set by others has
/// probability below 1e-20; the fixed seed makes the run repeatable.)
#[test]
fn racing_atomic_inserts_report_each_new_key_at_least_once() {
    racing_atomic_inserts_of::<Block256>();
    racing_atomic_inserts_of::<Block512>();
}

fn racing_atomic_inserts_of<B: BlockLayout>() {
    use std::sync::Arc;
    let (threads, keys, blocks) = if MIRI {
        (2, 20u64, 64)
    } else {
        (4, 20_000u64, 1 << 16)
    };
    let filter = Arc::new(builder_of::<B>(blocks).build_atomic().unwrap());
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let filter = Arc::clone(&filter);
            std::thread::spawn(move || (0..keys).map(|k| filter.insert(&k)).collect::<Vec<bool>>())
        })
        .collect();
    let results: Vec<Vec<bool>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for k in 0..keys {
        assert!(
            results.iter().any(|r| r[k as usize]),
            "key {k}: no insert reported it new"
        );
        assert!(filter.contains(&k));
    }
    // A later insert of a present key reports it old.
    assert!((0..keys).all(|k| !filter.insert(&k)));
}

#[test]
fn insert_many_matches_one_by_one() {
    insert_many_of::<Block256>();
    insert_many_of::<Block512>();
}

fn insert_many_of<B: BlockLayout>() {
    let n = if MIRI { 80 } else { 20_000 };
    let mut rng = SplitMix(8);
    let hashes: Vec<u64> = (0..n).map(|_| rng.next()).collect();
    let mut one = builder_of::<B>(64).build().unwrap();
    let new_one = hashes.iter().filter(|&&h| one.insert_hash(h)).count();
    let mut many = builder_of::<B>(64).build().unwrap();
    assert_eq!(many.insert_many(&hashes), new_one);
    assert_eq!(many.to_bytes(), one.to_bytes());
    let atomic = builder_of::<B>(64).build_atomic().unwrap();
    assert_eq!(atomic.insert_many(&hashes), new_one);
    assert_eq!(atomic.to_bytes(), one.to_bytes());
    // Every hash again: none is new.
    assert_eq!(many.insert_many(&hashes), 0);
    assert!(new_one > 0);
}

/// Ids that differ in one byte anywhere hash apart: every single-byte change of a base id gives
/// a distinct hash (a collision here would make whole families of txids share a block pattern).
#[test]
fn id_hash_separates_single_byte_changes() {
    let filter = builder(1).build().unwrap();
    let base = [0x5au8; 32];
    let mut seen = std::collections::HashSet::new();
    seen.insert(filter.hash_id(&base));
    for pos in 0..32 {
        for value in [0u8, 1, 0x5b, 0xff] {
            let mut id = base;
            id[pos] = value;
            if id != base {
                assert!(
                    seen.insert(filter.hash_id(&id)),
                    "collision at byte {pos} = {value}"
                );
            }
        }
    }
    // A word equal to a public hash constant must not erase its neighbour (a family of
    // seed-independent collisions in folded-multiply hashes): wyhash's and XXH3's primes.
    for constant in [
        0xe703_7ed1_a0b4_28dbu64,
        0xa076_1d64_78bd_642f,
        0x9e37_79b1_85eb_ca87,
    ] {
        let mut hashes = std::collections::HashSet::new();
        for first in 0..64u64 {
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&first.to_le_bytes());
            id[8..16].copy_from_slice(&constant.to_le_bytes());
            assert!(
                hashes.insert(filter.hash_id(&id)),
                "{constant:#x}: word 0 erased"
            );
        }
    }
    // The seed keys the hash.
    let other = BloomBuilder::with_num_blocks(1)
        .unwrap()
        .seed(1)
        .build()
        .unwrap();
    assert_ne!(other.hash_id(&base), filter.hash_id(&base));
}
