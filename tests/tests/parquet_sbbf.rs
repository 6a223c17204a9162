//! txgate-bloom's Parquet SBBF mode against real Parquet data and the published vectors in
//! `../shared/data/derived/sbbf_vectors.json` (see `shared/data/SOURCES.md`).

use serde_json::Value;
use txgate_bloom::{Backend, Sbbf};
use txgate_testkit::data_file;
use txgate_testkit::rng::SplitMix64;

fn vectors() -> Value {
    let path = data_file("derived/sbbf_vectors.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// parquet-mr wrote `bloom_filter.xxhash.bin`: a 16-byte Thrift header and a 1024-byte bitset
/// holding "hello", "parquet", "bloom" and "filter".
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn reads_parquet_mr_bloom_filter_file() {
    let v = vectors();
    let path = data_file("parquet-testing/bloom_filter.xxhash.bin");
    let spec = &v["bloom_filter_xxhash_bin"];
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes.len() as u64, spec["size"].as_u64().unwrap());
    let (filter, used) = Sbbf::from_parquet(&bytes).unwrap();
    assert_eq!(used, bytes.len());
    assert_eq!(filter.num_bytes(), spec["num_bytes"].as_u64().unwrap());
    assert_eq!(filter.num_blocks(), spec["num_blocks"].as_u64().unwrap());
    let header = spec["header_bytes"].as_u64().unwrap() as usize;
    assert_eq!(filter.bitset(), &bytes[header..]);

    for backend in Backend::available() {
        let filter = filter.clone().with_backend(backend).unwrap();
        for value in strs(&spec["inserted"]) {
            assert!(
                filter.contains(value.as_bytes()),
                "{backend:?}: {value} missing"
            );
        }
        for value in strs(&spec["checked_absent_offline"]) {
            assert!(
                !filter.contains(value.as_bytes()),
                "{backend:?}: {value} present"
            );
        }
    }

    // Writing the same four values into an empty filter of the same size gives the file's
    // bitset, and writing it back out gives the file byte for byte (header included).
    let mut rebuilt = Sbbf::new(filter.num_bytes()).unwrap();
    for value in strs(&spec["inserted"]) {
        rebuilt.insert(value.as_bytes());
    }
    assert_eq!(rebuilt.bitset(), filter.bitset());
    assert_eq!(rebuilt.to_parquet(), bytes);
}

/// Each inserted value's hash, block and bit in every word, as the vectors list them.
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn per_value_hash_block_and_bits() {
    let v = vectors();
    for detail in v["bloom_filter_xxhash_bin"]["inserted_detail"]
        .as_array()
        .unwrap()
    {
        let value = detail["value_utf8"].as_str().unwrap();
        let hash = Sbbf::hash(value.as_bytes());
        assert_eq!(hash, detail["xxh64_seed0"].as_u64().unwrap(), "{value}");
        assert_eq!(
            format!("{hash:016x}"),
            detail["xxh64_hex"].as_str().unwrap()
        );
        let mut alone = Sbbf::new(1024).unwrap();
        alone.insert(value.as_bytes());
        let bitset = alone.bitset();
        let block = detail["block_index"].as_u64().unwrap() as usize;
        let bits: Vec<u64> = detail["bit_in_word"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .collect();
        for (i, chunk) in bitset.chunks(32).enumerate() {
            let words: Vec<u32> = chunk
                .chunks(4)
                .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
                .collect();
            if i == block {
                let expected: Vec<u32> = bits.iter().map(|&b| 1u32 << b).collect();
                assert_eq!(words, expected, "{value}: block {i}");
            } else {
                assert!(
                    words.iter().all(|&w| w == 0),
                    "{value}: stray bits in block {i}"
                );
            }
        }
    }
}

/// XXH64 vectors of parquet-java and arrow: bytes `[0, 1, .., i - 1]` for `i` in `0..32`, at
/// seed 0 (the hash SBBF uses, through `Sbbf::hash`) and seed 42 (the library beneath).
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn xxh64_tables() {
    let v = vectors();
    let x = &v["xxh64"];
    let input = |i: usize| (0..i as u8).collect::<Vec<u8>>();
    let seed0 = x["seed0_u64"].as_array().unwrap();
    let seed0_signed = x["seed0_signed_i64"].as_array().unwrap();
    let seed42 = x["seed42_u64"].as_array().unwrap();
    assert_eq!((seed0.len(), seed42.len()), (32, 32));
    for i in 0..32 {
        assert_eq!(
            Sbbf::hash(&input(i)),
            seed0[i].as_u64().unwrap(),
            "seed 0, {i} bytes"
        );
        assert_eq!(
            Sbbf::hash(&input(i)) as i64,
            seed0_signed[i].as_i64().unwrap()
        );
        assert_eq!(
            xxhash_rust::xxh64::xxh64(&input(i), 42),
            seed42[i].as_u64().unwrap(),
            "seed 42, {i} bytes"
        );
    }
    assert_eq!(
        Sbbf::hash(b""),
        x["empty_input_seed0_u64"].as_u64().unwrap()
    );
}

/// arrow-rs `test_with_fixture`: a one-block bitset written by parquet-mr / Spark.
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn arrow_rs_fixture() {
    let v = vectors();
    let f = &v["arrow_rs_fixture"];
    let bytes: Vec<u8> = f["bitset_bytes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_u64().unwrap() as u8)
        .collect();
    let filter = Sbbf::from_bitset(&bytes).unwrap();
    assert_eq!(filter.num_blocks(), f["num_blocks"].as_u64().unwrap());
    assert_eq!(filter.bitset(), bytes);
    for value in strs(&f["must_contain"]) {
        assert!(filter.contains(value.as_bytes()), "{value}");
    }
    for value in strs(&f["checked_absent_offline"]) {
        assert!(!filter.contains(value.as_bytes()), "{value}");
    }
}

/// The Parquet writers' sizing rules (arrow-rs tables).
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn sizing_tables() {
    let v = vectors();
    for row in v["sizing"]["num_of_bits_from_ndv_fpp"].as_array().unwrap() {
        let (fpp, ndv, bits) = (
            row[0].as_f64().unwrap(),
            row[1].as_u64().unwrap(),
            row[2].as_u64().unwrap(),
        );
        assert_eq!(
            Sbbf::num_bits_for(ndv, fpp).unwrap(),
            bits,
            "ndv {ndv} fpp {fpp}"
        );
    }
    for row in v["sizing"]["optimal_num_of_bytes"].as_array().unwrap() {
        let (input, bytes) = (row[0].as_u64().unwrap(), row[1].as_u64().unwrap());
        assert_eq!(Sbbf::optimal_num_bytes(input), bytes, "{input}");
    }
}

/// The spec's header layout: `0x15 <zigzag varint numBytes>` then the fixed 13 bytes, for
/// 1024 and 2048 bytes (16 bytes of header each).
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn header_layout() {
    let v = vectors();
    assert!(
        v["spec"]["thrift_header"]
            .as_str()
            .unwrap()
            .starts_with("BloomFilterHeader in Thrift compact protocol: 0x15")
    );
    for (num_bytes, varint) in [(1024u64, [0x80u8, 0x10]), (2048, [0x80, 0x20])] {
        let out = Sbbf::new(num_bytes).unwrap().to_parquet();
        assert_eq!(&out[..3], &[0x15, varint[0], varint[1]]);
        assert_eq!(
            &out[3..16],
            &[0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0x1c, 0x1c, 0, 0, 0]
        );
        assert_eq!(out.len() as u64, 16 + num_bytes);
    }
    // Anything else is a typed error: another algorithm/hash byte, a short body, a bad varint.
    let good = Sbbf::new(64).unwrap().to_parquet();
    let mut other_hash = good.clone();
    other_hash[7] = 0x2c;
    assert!(Sbbf::from_parquet(&other_hash).is_err());
    assert!(Sbbf::from_parquet(&good[..good.len() - 1]).is_err());
    assert!(Sbbf::from_parquet(&[0x15, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_err());
    assert!(Sbbf::from_parquet(&[0x15, 0x01]).is_err()); // numBytes = -1
}

/// An independent SBBF implementation (the sbbf-rs-safe crate) builds the same bitset from the
/// same hashes, at several sizes, and answers every probe alike.
#[test]
fn agrees_with_an_independent_sbbf() {
    let mut rng = SplitMix64(0x1234_5678_9abc_def0);
    for blocks in [1usize, 3, 61, 1024] {
        let bytes = blocks * 32;
        let mut ours = Sbbf::new(bytes as u64).unwrap();
        let mut theirs = sbbf_rs_safe::Filter::from_bytes(&vec![0u8; bytes]).unwrap();
        for _ in 0..blocks * 20 {
            let h = rng.next_u64();
            ours.insert_hash(h);
            theirs.insert_hash(h);
        }
        assert_eq!(ours.bitset(), theirs.as_bytes(), "{blocks} blocks");
        let mut maybes = 0;
        for _ in 0..10_000 {
            let h = rng.next_u64();
            assert_eq!(ours.contains_hash(h), theirs.contains_hash(h));
            maybes += usize::from(ours.contains_hash(h));
        }
        assert!(maybes > 0 && maybes < 10_000, "{maybes}");
    }
}

/// The build script's `cfg(txgate_no_data)` follows txgate-testkit's rule for the data here.
#[test]
fn the_data_cfg_follows_the_data() {
    txgate_testkit::assert_data_cfg(cfg!(txgate_no_data));
}
