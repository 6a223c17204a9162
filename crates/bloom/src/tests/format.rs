//! The serialized form: round trips, version 1, the checksum against damage, and every
//! malformed header rejected with its error.

use super::*;

fn serialization_round_trips_of<B: BlockLayout>() {
    let mut a = builder_of::<B>(5).build().unwrap();
    for i in 0..50u32 {
        a.insert(&i);
    }
    let bytes = a.to_bytes();
    let block_bytes = B::LAYOUT.block_bytes();
    assert_eq!(bytes.len(), HEADER_BYTES + 5 * block_bytes + CHECKSUM_BYTES);
    assert_eq!(bytes.len() as u64, crate::format::encoded_len(B::LAYOUT, 5));
    let b = BlockedBloom::<B>::from_layout_bytes(&bytes).unwrap();
    assert_eq!(b.to_bytes(), bytes);
    assert_eq!((b.seed(), b.num_blocks()), (0x5eed, 5));
    assert!((0..50u32).all(|i| b.contains(&i)));
    let atomic = AtomicBlockedBloom::<B>::from_layout_bytes(&bytes).unwrap();
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
        Layout::Block256 => BlockedBloom::<Block256>::from_layout_bytes(&bytes).map(|_| ()),
        _ => BlockedBloom::<Block512>::from_layout_bytes(&bytes).map(|_| ()),
    };
    assert_eq!(refused, Err(mismatch.clone()));
    let refused = match other {
        Layout::Block256 => AtomicBlockedBloom::<Block256>::from_layout_bytes(&bytes).map(|_| ()),
        _ => AtomicBlockedBloom::<Block512>::from_layout_bytes(&bytes).map(|_| ()),
    };
    assert_eq!(refused, Err(mismatch));
}

#[test]
fn serialization_round_trips() {
    serialization_round_trips_of::<Block256>();
    serialization_round_trips_of::<Block512>();
}

/// The version-1 encoding of `filter` (format version 1 has no checksum).
fn version_1(filter: &BlockedBloom) -> Vec<u8> {
    txgate_testkit::bloom_format::version_1(&filter.to_bytes())
}

#[test]
fn testkit_writes_the_checksum_this_crate_reads() {
    // The test support writes the format's rule out on its own (it cannot depend on this crate).
    assert_eq!(txgate_testkit::bloom_format::CHECKSUM_BYTES, CHECKSUM_BYTES);
    let mut filter = builder(3).build().unwrap();
    filter.insert(&7u32);
    let bytes = filter.to_bytes();
    assert_eq!(txgate_testkit::bloom_format::written_back(&bytes), bytes);
    assert_eq!(
        txgate_testkit::bloom_format::written_back(&version_1(&filter)),
        bytes
    );
}

#[test]
fn version_1_still_loads() {
    let mut filter = builder(3).build().unwrap();
    for i in 0..30u32 {
        filter.insert(&i);
    }
    let v1 = version_1(&filter);
    let loaded = BlockedBloom::<Block256>::from_layout_bytes(&v1).unwrap();
    assert!((0..30u32).all(|i| loaded.contains(&i)));
    // It is written back as version 2: the same blocks, with a checksum.
    assert_eq!(loaded.to_bytes(), filter.to_bytes());
    assert_eq!(
        AnyBloom::from_bytes(&v1).unwrap().to_bytes(),
        filter.to_bytes()
    );
    assert_eq!(
        AtomicBlockedBloom::<Block256>::from_layout_bytes(&v1)
            .unwrap()
            .to_bytes(),
        filter.to_bytes()
    );
    // Version 1 defines only the 256-bit layout, and has no trailer.
    let mut v1_wide = v1.clone();
    v1_wide[10] = 2;
    assert_eq!(
        BlockedBloom::<Block512>::from_layout_bytes(&v1_wide).unwrap_err(),
        LoadError::UnknownLayout {
            version: 1,
            code: 2
        }
    );
    assert!(matches!(
        BlockedBloom::<Block256>::from_layout_bytes(&[v1.clone(), vec![0; 8]].concat()),
        Err(LoadError::LengthMismatch { .. })
    ));
    // A version-1 filter with a damaged seed loads (it has no checksum): why version 2 exists.
    let mut damaged = v1;
    damaged[16] ^= 1;
    let loaded = BlockedBloom::<Block256>::from_layout_bytes(&damaged).unwrap();
    assert_ne!(loaded.seed(), filter.seed());
}

/// The checksum catches what version 1 could not: every single-bit flip of the seed, of a
/// block or of the checksum itself, in both layouts, is a typed error; and a flipped seed would
/// otherwise have answered "absent" for nearly every inserted key.
fn checksum_catches_damage_of<B: BlockLayout>() {
    let keys = if MIRI { 20 } else { 1000 };
    let mut filter = BloomBuilder::with_false_positive_rate(keys, 0.01)
        .seed(0x5eed)
        .layout::<B>()
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
        let err = BlockedBloom::<B>::from_layout_bytes(&bad).unwrap_err();
        assert!(
            matches!(err, LoadError::ChecksumMismatch { .. }),
            "{:?} bit {bit}: {err:?}",
            B::LAYOUT
        );
        assert_eq!(AnyBloom::from_bytes(&bad).unwrap_err(), err);
        assert_eq!(
            AtomicBlockedBloom::<B>::from_layout_bytes(&bad).unwrap_err(),
            err
        );
    }
    // What the seed flip would have done unchecked: the same blocks under another seed.
    let mut other_seed = good.clone();
    other_seed[16] ^= 1;
    let rest = other_seed.len() - CHECKSUM_BYTES;
    let fixed = xxhash_rust::xxh3::xxh3_64(&other_seed[..rest]).to_le_bytes();
    other_seed[rest..].copy_from_slice(&fixed);
    let wrong = BlockedBloom::<B>::from_layout_bytes(&other_seed).unwrap();
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
            BlockedBloom::<Block256>::from_layout_bytes(&good[..len]).unwrap_err(),
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
            BlockedBloom::<Block256>::from_layout_bytes(&bytes).unwrap_err(),
            expected
        );
        assert_eq!(
            AtomicBlockedBloom::<Block256>::from_layout_bytes(&bytes).unwrap_err(),
            expected
        );
        assert_eq!(AnyBloom::from_bytes(&bytes).unwrap_err(), expected);
    }
}
