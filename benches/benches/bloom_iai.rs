//! Instruction counts (callgrind) for txgate-bloom's insert and contains, both block layouts
//! (`*512` benches: 512-bit blocks, the detected backend): deterministic on a noisy machine, so
//! regressions show as count changes. Run only with
//! `cargo bench -p txgate-benches --bench bloom_iai` (needs valgrind and
//! `iai-callgrind-runner` 0.16.1); never through `cargo test`.

// The `library_benchmark` macros generate undocumented public modules.
#![allow(missing_docs)]

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use txgate_benches::{random_ids, random_u64s};
use txgate_bloom::{
    AtomicBlockedBloom, Block512, BlockedBloom, BloomBuilder, Bytes, Filter, Hashed,
};

const OPS: usize = 1000;
/// 2^16 keys at 10 bits per key: 80 KiB, cache resident.
const BITS: u64 = (1 << 16) * 10;

fn empty() -> BlockedBloom {
    BloomBuilder::with_num_bits(BITS).seed(1).build().unwrap()
}

fn empty512() -> BlockedBloom<Block512> {
    BloomBuilder::with_num_bits(BITS)
        .seed(1)
        .layout::<Block512>()
        .build()
        .unwrap()
}

fn filled512() -> (BlockedBloom<Block512>, Vec<u64>, Vec<u64>) {
    let mut f = empty512();
    let keys = random_u64s(1 << 16, 1);
    keys.iter().for_each(|&k| {
        f.insert(Hashed(k));
    });
    (f, keys[..OPS].to_vec(), random_u64s(OPS, 2))
}

fn filled() -> (BlockedBloom, Vec<u64>, Vec<u64>) {
    let mut f = empty();
    let keys = random_u64s(1 << 16, 1);
    keys.iter().for_each(|&k| {
        f.insert(Hashed(k));
    });
    (f, keys[..OPS].to_vec(), random_u64s(OPS, 2))
}

#[library_benchmark]
#[bench::prehashed_1000((empty(), random_u64s(OPS, 3)))]
fn insert((mut f, keys): (BlockedBloom, Vec<u64>)) -> BlockedBloom {
    for k in keys {
        black_box(f.insert(Hashed(k)));
    }
    f
}

#[library_benchmark]
#[bench::ids_1000((empty(), random_ids(OPS, 4)))]
fn insert_id((mut f, ids): (BlockedBloom, Vec<[u8; 32]>)) -> BlockedBloom {
    for id in &ids {
        black_box(f.insert(Bytes(id)));
    }
    f
}

#[library_benchmark]
#[bench::prehashed_1000((BloomBuilder::with_num_bits(BITS).seed(1).build_atomic().unwrap(), random_u64s(OPS, 5)))]
fn atomic_insert((f, keys): (AtomicBlockedBloom, Vec<u64>)) -> AtomicBlockedBloom {
    for k in keys {
        black_box(f.insert(Hashed(k)));
    }
    f
}

#[library_benchmark]
#[bench::hit_1000(filled())]
fn contains_hit((f, hits, _): (BlockedBloom, Vec<u64>, Vec<u64>)) -> usize {
    hits.iter()
        .filter(|&&k| f.contains(Hashed(black_box(k))))
        .count()
}

#[library_benchmark]
#[bench::miss_1000(filled())]
fn contains_miss((f, _, misses): (BlockedBloom, Vec<u64>, Vec<u64>)) -> usize {
    misses
        .iter()
        .filter(|&&k| f.contains(Hashed(black_box(k))))
        .count()
}

#[library_benchmark]
#[bench::prehashed_1000((empty512(), random_u64s(OPS, 3)))]
fn insert512((mut f, keys): (BlockedBloom<Block512>, Vec<u64>)) -> BlockedBloom<Block512> {
    for k in keys {
        black_box(f.insert(Hashed(k)));
    }
    f
}

#[library_benchmark]
#[bench::prehashed_1000((BloomBuilder::with_num_bits(BITS).seed(1).layout::<Block512>().build_atomic().unwrap(), random_u64s(OPS, 5)))]
fn atomic_insert512(
    (f, keys): (AtomicBlockedBloom<Block512>, Vec<u64>),
) -> AtomicBlockedBloom<Block512> {
    for k in keys {
        black_box(f.insert(Hashed(k)));
    }
    f
}

#[library_benchmark]
#[bench::hit_1000(filled512())]
fn contains_hit512((f, hits, _): (BlockedBloom<Block512>, Vec<u64>, Vec<u64>)) -> usize {
    hits.iter()
        .filter(|&&k| f.contains(Hashed(black_box(k))))
        .count()
}

#[library_benchmark]
#[bench::miss_1000(filled512())]
fn contains_miss512((f, _, misses): (BlockedBloom<Block512>, Vec<u64>, Vec<u64>)) -> usize {
    misses
        .iter()
        .filter(|&&k| f.contains(Hashed(black_box(k))))
        .count()
}

library_benchmark_group!(
    name = bloom;
    benchmarks = insert, insert_id, atomic_insert, contains_hit, contains_miss,
        insert512, atomic_insert512, contains_hit512, contains_miss512
);
main!(library_benchmark_groups = bloom);
