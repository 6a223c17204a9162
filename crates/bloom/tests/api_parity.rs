//! The portable byte hash, ids of any length, equality and `Extend` on every
//! filter type, the borrowed bits, and the Parquet filter's union and clear, with values fixed by
//! the format or computed independently.

use txgate_bloom::{
    AnyBloom, AtomicBlockedBloom, Block512, BlockLayout, BlockedBloom, BloomBuilder, Bytes, Filter,
    Layout, Sbbf, ShapeError,
};

fn filter(seed: u64) -> BlockedBloom {
    BloomBuilder::with_num_bits(1 << 16)
        .seed(seed)
        .build()
        .unwrap()
}

/// A filter of `builder` extended with `keys` (the one way to build a filter of given keys).
fn filled<B: BlockLayout, T: std::hash::Hash>(
    builder: &BloomBuilder<B>,
    keys: impl IntoIterator<Item = T>,
) -> BlockedBloom<B> {
    let mut filter = builder.build().unwrap();
    filter.extend(keys);
    filter
}

/// The block of hash `h` among `n`: `(h * n) >> 64` in 128-bit arithmetic, the format's rule.
fn block_of(h: u64, n: u64) -> u64 {
    ((u128::from(h) * u128::from(n)) >> 64) as u64
}

#[test]
fn byte_hash_is_seeded_xxh3_fixed_by_the_format() {
    // Expected values from the reference C implementation of XXH3-64 (xxHash 0.8, through the
    // `xxhash` Python binding: xxh3_64_intdigest(data, seed)), not from this crate's dependency.
    let cases: [(u64, &[u8], u64); 3] = [
        (0, b"", 0x2d06_8005_38d3_94c2),
        (42, b"txgate", 0x77de_27c1_0b65_be1e),
        (42, &[0xab; 64], 0xa4d0_6a0d_c26f_67b8),
    ];
    for (seed, bytes, want) in cases {
        let f = filter(seed);
        assert_eq!(
            f.hash(Bytes(bytes)),
            want,
            "seed {seed}, {} bytes",
            bytes.len()
        );
        // 2^16 bits of 256-bit blocks: 256 blocks; the key's block by the format's rule.
        assert_eq!(f.num_blocks(), 256);
        let mut one = filter(seed);
        one.insert(Bytes(bytes));
        let set: Vec<usize> = one
            .as_bytes()
            .chunks(32)
            .enumerate()
            .filter(|(_, b)| b.iter().any(|&x| x != 0))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(set, vec![block_of(want, 256) as usize]);
    }
}

#[test]
fn ids_of_any_length_hash_as_their_bytes() {
    let mut f = filter(7);
    let signature = [0x5a_u8; 64]; // an ed25519 signature's length (Solana's transaction id)
    let txid = [0x11_u8; 32];
    // The array form (XXH3's fixed-length path) and the slice form hash alike.
    assert_eq!(f.hash(Bytes(&signature)), f.hash(Bytes(&signature[..])));
    assert_eq!(f.hash(Bytes(&txid)), f.hash(Bytes(&txid[..])));
    assert!(f.insert(Bytes(&signature)));
    assert!(f.contains(Bytes(&signature[..])) && f.contains(Bytes(&signature)));
    assert!(!f.insert(Bytes(&signature[..])), "already present");
    let mut wide: BlockedBloom<Block512> = BloomBuilder::with_num_bits(1 << 16)
        .seed(7)
        .layout()
        .build()
        .unwrap();
    wide.insert(Bytes(&b"abc"[..]));
    assert!(wide.contains(Bytes(b"abc")));
    let atomic = AtomicBlockedBloom::from(filter(7));
    atomic.insert(Bytes(&txid[..]));
    assert!(atomic.contains(Bytes(&txid)));
    let mut any = AnyBloom::from_bytes(&wide.to_bytes()).unwrap();
    assert!(any.contains(Bytes(&b"abc"[..])));
    any.insert(Bytes(&[1u8; 20]));
    assert!(any.contains(Bytes(&[1u8; 20][..])));
    // Survives serialization: the hash is part of the format.
    let loaded = BlockedBloom::from_bytes(&f.to_bytes()).unwrap();
    assert!(loaded.contains(Bytes(&signature[..])));
}

#[test]
fn equality_extend_and_the_borrowed_bits() {
    let keys = ["a", "b", "c", "d"];
    let mut one = filter(3);
    for k in keys {
        one.insert(k);
    }
    let mut other = filter(3);
    other.extend(keys.iter().copied());
    assert_eq!(one, other);
    other.insert("e");
    assert_ne!(one, other);
    assert_ne!(filter(3), filter(4), "another seed answers differently");
    assert_eq!(filter(3), filter(3));
    // The borrowed bits are the serialized blocks (little-endian targets).
    let bytes = one.to_bytes();
    assert_eq!(one.as_bytes().len(), 256 * 32);
    if cfg!(target_endian = "little") {
        assert_eq!(one.as_bytes(), &bytes[32..32 + 256 * 32]);
    }
    assert_eq!(
        one.as_bytes()
            .iter()
            .map(|b| b.count_ones() as u64)
            .sum::<u64>(),
        one.count_ones()
    );
}

#[test]
fn every_filter_type_extends_as_insert_does() {
    let keys: Vec<u64> = (0..300u64).map(|i| i * 7919).collect();
    let builder = BloomBuilder::with_num_bits(1 << 16).seed(11);
    let mut one_by_one = builder.build().unwrap();
    for k in &keys {
        one_by_one.insert(k);
    }

    let built = filled(&builder, &keys);
    assert_eq!(built, one_by_one);
    assert!(keys.iter().all(|k| built.contains(k)));

    // Keys by value (a range, an owned Vec) hash as their references do.
    let mut by_value = builder.build().unwrap();
    by_value.extend(keys.clone());
    assert_eq!(by_value, one_by_one);
    assert_eq!(filled(&builder, (0..300u64).map(|i| i * 7919)), one_by_one);

    let mut atomic = builder.build_atomic().unwrap();
    atomic.extend(&keys);
    assert!(keys.iter().all(|k| atomic.contains(k)));
    assert_eq!(atomic.to_plain().unwrap(), one_by_one);

    let mut any = builder.build_any(Layout::Block256).unwrap();
    any.extend(&keys);
    assert!(keys.iter().all(|k| any.contains(k)));
    assert_eq!(any.to_bytes(), one_by_one.to_bytes());

    // The 512-bit layout, through AnyBloom and Extend alike.
    let wide_builder = builder.clone().layout::<Block512>();
    let mut wide: BlockedBloom<Block512> = wide_builder.build().unwrap();
    for k in &keys {
        wide.insert(k);
    }
    assert_eq!(filled(&wide_builder, &keys), wide);
    let mut any_wide = builder.build_any(Layout::Block512).unwrap();
    any_wide.extend(&keys);
    assert_eq!(any_wide.layout(), Layout::Block512);
    assert_eq!(any_wide.to_bytes(), wide.to_bytes());

    // One key sets exactly one bit in each of a block's 8 words.
    let one = filled(&builder, ["txid-1"]);
    assert_eq!(one.count_ones(), 8);
    // Extend hashes by `Hash`: an id extended in is not found by its bytes' hash (XXH3), and
    // is found by `contains` (wyhash of its `Hash` form).
    let id = [0x42_u8; 32];
    let mut by_hash = builder.build_any(Layout::Block256).unwrap();
    by_hash.extend([&id]);
    assert!(by_hash.contains(&id));
    assert!(!by_hash.contains(Bytes(&id)));
    assert_eq!(by_hash.count_ones(), 8);
}

#[test]
fn parquet_filters_union_and_clear() {
    let mut a = Sbbf::new(1024).unwrap();
    let mut b = Sbbf::new(1024).unwrap();
    a.insert(b"left");
    b.insert(b"right");
    a.union(&b).unwrap();
    assert!(a.contains(b"left") && a.contains(b"right"));
    let c = Sbbf::new(2048).unwrap();
    assert!(matches!(
        a.union(&c),
        Err(ShapeError::Blocks {
            ours: 32,
            theirs: 64
        })
    ));
    assert!(a.contains(b"left"), "unchanged after a refused union");
    a.clear();
    assert!(!a.contains(b"left") && !a.contains(b"right"));
    assert_eq!(a.bitset(), vec![0; 1024]);
}
