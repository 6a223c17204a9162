//! Property tests: no false negatives, ever, for any keys, seeds and sizes, in both variants and
//! both layouts; loading arbitrary bytes never panics, and whatever loads writes its bytes back.
#![cfg(not(loom))]

use proptest::prelude::*;
use txgate_bloom::format::HEADER_BYTES;
use txgate_bloom::{
    AnyBloom, AtomicBlockedBloom, Backend, Block256, Block512, BlockLayout, BlockedBloom,
    BloomBuilder, Bytes, Filter, Hashed, Sbbf,
};
use txgate_testkit::bloom_format::{version_1, written_back};

fn no_false_negatives_in<B: BlockLayout>(keys: &[Vec<u8>], blocks: u64, seed: u64) {
    for backend in Backend::available() {
        let builder = BloomBuilder::with_num_blocks(blocks)
            .seed(seed)
            .backend(backend)
            .layout::<B>();
        let mut plain = builder.build().unwrap();
        let atomic = builder.build_atomic().unwrap();
        for k in keys {
            plain.insert(k);
            atomic.insert(k);
        }
        assert!(keys.iter().all(|k| plain.contains(k) && atomic.contains(k)));
        let reloaded = BlockedBloom::<B>::from_layout_bytes(&plain.to_bytes()).unwrap();
        assert!(keys.iter().all(|k| reloaded.contains(k)));
        let any = AnyBloom::from_bytes(&atomic.to_bytes()).unwrap();
        assert!(keys.iter().all(|k| any.contains(k)));
    }
}

/// Every native loader on `bytes`: no panic, and a filter that loads writes `written_back`.
fn load_everything(bytes: &[u8]) -> Result<(), TestCaseError> {
    let results = [
        BlockedBloom::<Block256>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        BlockedBloom::<Block512>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        AtomicBlockedBloom::<Block256>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        AtomicBlockedBloom::<Block512>::from_layout_bytes(bytes).map(|f| f.to_bytes()),
        AnyBloom::from_bytes(bytes).map(|f| f.to_bytes()),
    ];
    for written in results.into_iter().flatten() {
        prop_assert_eq!(written, written_back(bytes));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_false_negatives(
        keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..300),
        blocks in 1u64..64,
        seed in any::<u64>(),
    ) {
        no_false_negatives_in::<Block256>(&keys, blocks, seed);
        no_false_negatives_in::<Block512>(&keys, blocks, seed);
    }

    #[test]
    fn no_false_negatives_for_ids_and_hashes(
        ids in prop::collection::vec(any::<[u8; 32]>(), 0..200),
        hashes in prop::collection::vec(any::<u64>(), 0..200),
        bits in 1u64..100_000,
        seed in any::<u64>(),
        wide in any::<bool>(),
    ) {
        let layout = if wide { txgate_bloom::Layout::Block512 } else { txgate_bloom::Layout::Block256 };
        let mut plain = BloomBuilder::with_num_bits(bits).seed(seed).build_any(layout).unwrap();
        for id in &ids { plain.insert(Bytes(id)); }
        for &h in &hashes { plain.insert(Hashed(h)); }
        prop_assert!(ids.iter().all(|id| plain.contains(Bytes(id))));
        prop_assert!(hashes.iter().all(|&h| plain.contains(Hashed(h))));
        let mut out = vec![false; hashes.len()];
        plain.contains_many(&hashes, &mut out);
        prop_assert!(out.iter().all(|&b| b));
    }

    #[test]
    fn sbbf_no_false_negatives(values in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..24), 0..200), blocks in 1u64..40) {
        let mut sbbf = Sbbf::new(blocks * 32).unwrap();
        for v in &values { sbbf.insert(v); }
        prop_assert!(values.iter().all(|v| sbbf.contains(v)));
        let (loaded, used) = Sbbf::from_parquet(&sbbf.to_parquet()).unwrap();
        prop_assert_eq!(used, sbbf.to_parquet().len());
        prop_assert_eq!(loaded.bitset(), sbbf.bitset());
    }

    #[test]
    fn loading_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        load_everything(&bytes)?;
        let _ = Sbbf::from_parquet(&bytes);
        let _ = Sbbf::from_bitset(&bytes);
    }

    /// Valid encodings (both layouts, both format versions, Parquet) with a few bytes changed,
    /// and cut or extended: the loaders get past the magic and into every later check. Whatever
    /// loads writes the same bytes back.
    #[test]
    fn loading_mutated_valid_encodings_never_panics(
        blocks in 1u64..6,
        keys in prop::collection::vec(any::<u64>(), 0..40),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in 0usize..40,
        extend in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let builder = BloomBuilder::with_num_blocks(blocks).seed(3);
        let mut small = builder.build().unwrap();
        let mut large = builder.clone().layout::<Block512>().build().unwrap();
        let mut sbbf = Sbbf::new(blocks * 32).unwrap();
        for &k in &keys {
            small.insert(Hashed(k));
            large.insert(Hashed(k));
            sbbf.insert_hash(k);
        }
        let v1 = version_1(&small.to_bytes());
        for mut bytes in [small.to_bytes(), large.to_bytes(), v1, sbbf.to_parquet()] {
            for (at, value) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *value;
            }
            bytes.truncate(bytes.len().saturating_sub(cut));
            bytes.extend_from_slice(&extend);
            load_everything(&bytes)?;
            if let Ok((f, used)) = Sbbf::from_parquet(&bytes) {
                prop_assert_eq!(f.to_parquet(), bytes[..used].to_vec());
            }
        }
    }

    /// A valid header of either version and layout with a body within a few bytes of the
    /// declared length: exactly the declared length (and, version 2, the right checksum) loads.
    #[test]
    fn loading_a_valid_header_with_any_body(
        seed in any::<u64>(),
        blocks in 0u64..4,
        delta in -3i64..=3,
        fill in any::<u8>(),
        version in 1u16..=2,
        wide in any::<bool>(),
    ) {
        let block_bytes: i64 = if wide { 64 } else { 32 };
        let len = (blocks as i64 * block_bytes + delta).max(0) as usize;
        let mut bytes = b"TXGBLOOM".to_vec();
        bytes.extend_from_slice(&version.to_le_bytes());
        bytes.extend_from_slice(&[if wide { 2 } else { 1 }, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&seed.to_le_bytes());
        bytes.extend_from_slice(&blocks.to_le_bytes());
        bytes.extend(std::iter::repeat_n(fill, len));
        if version == 2 {
            let checksum = xxhash_rust::xxh3::xxh3_64(&bytes);
            bytes.extend_from_slice(&checksum.to_le_bytes());
        }
        prop_assert_eq!(bytes.len() >= HEADER_BYTES, true);
        let loaded = AnyBloom::from_bytes(&bytes);
        let valid = blocks > 0 && delta == 0 && !(wide && version == 1);
        prop_assert_eq!(loaded.is_ok(), valid);
        if let Ok(filter) = loaded {
            prop_assert_eq!(filter.to_bytes(), written_back(&bytes));
        }
        load_everything(&bytes)?;
    }
}
