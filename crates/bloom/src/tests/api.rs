//! Set operations and clearing, the builder's checks and layout switch, seeds, and the id
//! hash's separation of nearby ids.

use super::*;

fn union_and_intersect_of<B: BlockLayout>() {
    let mut a = builder_of::<B>(8).build().unwrap();
    let mut b = builder_of::<B>(8).build().unwrap();
    let mut rng = SplitMix(7);
    let xs: Vec<u64> = (0..40).map(|_| rng.next_u64()).collect();
    let ys: Vec<u64> = (0..40).map(|_| rng.next_u64()).collect();
    for &h in &xs {
        a.insert(Hashed(h));
    }
    for &h in &ys {
        b.insert(Hashed(h));
    }
    let (a_bytes, b_bytes) = (a.to_bytes(), b.to_bytes());

    let mut u = a.clone();
    u.union(&b).unwrap();
    assert!(xs.iter().chain(&ys).all(|&h| u.contains(Hashed(h))));
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
    a.insert("x");
    assert!(!a.is_empty() && a.count_ones() == 8);
    a.clear();
    assert!(a.is_empty() && !a.contains("x"));
    let mut atomic = builder_of::<B>(4).build_atomic().unwrap();
    atomic.insert("x");
    assert_eq!(atomic.count_ones(), 8);
    atomic.clear();
    assert_eq!(atomic.count_ones(), 0);
}

#[test]
fn clear_empties() {
    clear_empties_of::<Block256>();
    clear_empties_of::<Block512>();
}

#[test]
fn builder_rejects_bad_input() {
    // Each request is checked once, by every build method.
    let zero_blocks = BloomBuilder::with_num_blocks(0);
    assert_eq!(zero_blocks.build().unwrap_err(), BuildError::ZeroSize);
    assert_eq!(
        zero_blocks.build_atomic().unwrap_err(),
        BuildError::ZeroSize
    );
    assert_eq!(
        zero_blocks.build_any(Layout::Block512).unwrap_err(),
        BuildError::ZeroSize
    );
    assert_eq!(
        BloomBuilder::with_num_bits(0).build().unwrap_err(),
        BuildError::ZeroSize
    );
    assert!(matches!(
        BloomBuilder::with_num_blocks(u64::MAX).build(),
        Err(BuildError::TooLarge { .. })
    ));
    for fpr in [1.5, 0.0, 1.0, -0.1, f64::NAN] {
        assert!(matches!(
            BloomBuilder::with_false_positive_rate(10, fpr).build_atomic(),
            Err(BuildError::InvalidFalsePositiveRate(_))
        ));
    }
    // A size the allocator cannot satisfy is an error, not an abort.
    let max_blocks = Layout::Block256.max_blocks();
    let huge = BloomBuilder::with_num_blocks(max_blocks);
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
        huge.clone().layout::<Block512>().build(),
        Err(BuildError::TooLarge { .. })
    ));
    assert!(matches!(
        huge.build_any(Layout::Block512),
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
        match Layout::Block256.num_blocks_for(u64::MAX, fpr) {
            Ok(blocks) => assert!(blocks <= max_blocks),
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
        .seed(9)
        .backend(Backend::Scalar);
    let wide = rate.clone().layout::<Block512>();
    assert_eq!(
        wide.build().unwrap().num_blocks(),
        Layout::Block512.num_blocks_for(10_000, 0.001).unwrap()
    );
    assert_eq!(
        rate.build().unwrap().num_blocks(),
        Layout::Block256.num_blocks_for(10_000, 0.001).unwrap()
    );
    assert_eq!(wide.clone().layout::<Block256>(), rate);
    let filter = wide.build().unwrap();
    assert_eq!((filter.seed(), filter.backend()), (9, Backend::Scalar));
    assert_eq!(filter.layout(), Layout::Block512);
    let bits = BloomBuilder::with_num_bits(1000);
    assert_eq!(bits.build().unwrap().num_blocks(), 4);
    assert_eq!(bits.layout::<Block512>().build().unwrap().num_blocks(), 2);
    let blocks = BloomBuilder::with_num_blocks(3);
    assert_eq!(blocks.layout::<Block512>().build().unwrap().num_blocks(), 3);
    let any = BloomBuilder::with_false_positive_rate(10_000, 0.001)
        .build_any(Layout::Block512)
        .unwrap();
    assert_eq!(any.num_blocks(), filter.num_blocks());
    assert_eq!(any.memory_bytes(), 64 * filter.num_blocks());
}

#[test]
fn random_seeds_differ_and_fixed_seeds_repeat() {
    let a = BloomBuilder::with_num_blocks(1).build().unwrap();
    let b = BloomBuilder::with_num_blocks(1).build().unwrap();
    assert_ne!(a.seed(), b.seed());
    assert_eq!(
        builder(1).build().unwrap().hash("k"),
        builder(1).build().unwrap().hash("k")
    );
}

/// Ids that differ in one byte anywhere hash apart: every single-byte change of a base id gives
/// a distinct hash (a collision here would make whole families of txids share a block pattern).
#[test]
fn id_hash_separates_single_byte_changes() {
    let filter = builder(1).build().unwrap();
    let base = [0x5au8; 32];
    let mut seen = std::collections::HashSet::new();
    seen.insert(filter.hash(Bytes(&base)));
    for pos in 0..32 {
        for value in [0u8, 1, 0x5b, 0xff] {
            let mut id = base;
            id[pos] = value;
            if id != base {
                assert!(
                    seen.insert(filter.hash(Bytes(&id))),
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
                hashes.insert(filter.hash(Bytes(&id))),
                "{constant:#x}: word 0 erased"
            );
        }
    }
    // The seed keys the hash.
    let other = BloomBuilder::with_num_blocks(1).seed(1).build().unwrap();
    assert_ne!(other.hash(Bytes(&base)), filter.hash(Bytes(&base)));
}

/// `as_bytes` views the blocks' memory (the one `unsafe` cast outside the kernels, so it runs
/// under miri here): its bytes are the words of each block in target byte order.
#[test]
fn as_bytes_views_every_word_of_either_layout() {
    let mut narrow = BloomBuilder::with_num_blocks(3).seed(9).build().unwrap();
    let mut wide: BlockedBloom<Block512> = BloomBuilder::with_num_blocks(2)
        .seed(9)
        .layout()
        .build()
        .unwrap();
    for i in 0..20u64 {
        narrow.insert(&i);
        wide.insert(&i);
    }
    let bytes = narrow.as_bytes();
    assert_eq!(bytes.len(), 3 * 32);
    let words: Vec<u32> = bytes
        .chunks(4)
        .map(|w| u32::from_ne_bytes(w.try_into().unwrap()))
        .collect();
    assert_eq!(
        words.iter().map(|w| u64::from(w.count_ones())).sum::<u64>(),
        narrow.count_ones()
    );
    assert_eq!(wide.as_bytes().len(), 2 * 64);
    assert_eq!(
        wide.as_bytes()
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum::<u64>(),
        wide.count_ones()
    );
}
