//! Property tests: no false negatives, ever, for any keys, seeds and sizes, in both variants;
//! loading arbitrary bytes never panics.
#![cfg(not(loom))]

use proptest::prelude::*;
use txgate_bloom::{AtomicBlockedBloom, Backend, BlockedBloom, BloomBuilder, Sbbf};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_false_negatives(
        keys in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..40), 0..300),
        blocks in 1u64..64,
        seed in any::<u64>(),
    ) {
        for backend in Backend::available() {
            let builder = BloomBuilder::with_num_blocks(blocks).unwrap().seed(seed).backend(backend);
            let mut plain = builder.build().unwrap();
            let atomic = builder.build_atomic().unwrap();
            for k in &keys {
                plain.insert(k);
                atomic.insert(k);
            }
            for k in &keys {
                prop_assert!(plain.contains(k));
                prop_assert!(atomic.contains(k));
            }
            let reloaded = BlockedBloom::from_bytes(&plain.to_bytes()).unwrap();
            prop_assert!(keys.iter().all(|k| reloaded.contains(k)));
        }
    }

    #[test]
    fn no_false_negatives_for_ids_and_hashes(
        ids in prop::collection::vec(any::<[u8; 32]>(), 0..200),
        hashes in prop::collection::vec(any::<u64>(), 0..200),
        bits in 1u64..100_000,
        seed in any::<u64>(),
    ) {
        let mut plain = BloomBuilder::with_num_bits(bits).unwrap().seed(seed).build().unwrap();
        for id in &ids { plain.insert_id(id); }
        for &h in &hashes { plain.insert_hash(h); }
        prop_assert!(ids.iter().all(|id| plain.contains_id(id)));
        prop_assert!(hashes.iter().all(|&h| plain.contains_hash(h)));
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
        let _ = BlockedBloom::from_bytes(&bytes);
        let _ = AtomicBlockedBloom::from_bytes(&bytes);
        let _ = Sbbf::from_parquet(&bytes);
        let _ = Sbbf::from_bitset(&bytes);
    }

    /// Valid encodings with a few bytes changed, and cut or extended: the loaders get past the
    /// magic and into every later check. Whatever loads writes the same bytes back.
    #[test]
    fn loading_mutated_valid_encodings_never_panics(
        blocks in 1u64..6,
        keys in prop::collection::vec(any::<u64>(), 0..40),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in 0usize..40,
        extend in prop::collection::vec(any::<u8>(), 0..3),
    ) {
        let mut filter = BloomBuilder::with_num_blocks(blocks).unwrap().seed(3).build().unwrap();
        let mut sbbf = Sbbf::new(blocks * 32).unwrap();
        for &k in &keys {
            filter.insert_hash(k);
            sbbf.insert_hash(k);
        }
        for mut bytes in [filter.to_bytes(), sbbf.to_parquet()] {
            for (at, value) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *value;
            }
            bytes.truncate(bytes.len().saturating_sub(cut));
            bytes.extend_from_slice(&extend);
            if let Ok(f) = BlockedBloom::from_bytes(&bytes) {
                prop_assert_eq!(f.to_bytes(), bytes.clone());
            }
            if let Ok(f) = AtomicBlockedBloom::from_bytes(&bytes) {
                prop_assert_eq!(f.to_bytes(), bytes.clone());
            }
            if let Ok((f, used)) = Sbbf::from_parquet(&bytes) {
                prop_assert_eq!(f.to_parquet(), bytes[..used].to_vec());
            }
        }
    }

    /// A valid header with a body within a few bytes of the declared length: exactly the
    /// declared length loads.
    #[test]
    fn loading_a_valid_header_with_any_body(seed in any::<u64>(), blocks in 0u64..4, delta in -3i64..=3, fill in any::<u8>()) {
        let len = (blocks as i64 * 32 + delta).max(0) as usize;
        let body = vec![fill; len];
        let mut bytes = b"TXGBLOOM".to_vec();
        bytes.extend_from_slice(&1u16.to_le_bytes());
        bytes.extend_from_slice(&[1, 0, 0, 0, 0, 0]);
        bytes.extend_from_slice(&seed.to_le_bytes());
        bytes.extend_from_slice(&blocks.to_le_bytes());
        bytes.extend_from_slice(&body);
        let loaded = BlockedBloom::from_bytes(&bytes);
        prop_assert_eq!(loaded.is_ok(), blocks > 0 && body.len() as u64 == blocks * 32);
        if let Ok(filter) = loaded {
            prop_assert_eq!(filter.to_bytes(), bytes);
        }
    }
}
