//! txgate-bloom against fastbloom, sbbf-rs-safe and bloomfilter, in one run (ratios, not
//! absolute times, are what this noisy 2-core machine can show).
//!
//! ```text
//! cargo bench -p txgate-benches --bench bloom
//! ```
//! Groups (2^20 keys at 10 bits per key unless said otherwise; each iteration is a pass over a
//! fixed slice of seeded random keys, `Throughput::Elements` = keys per pass):
//! - `prehashed`: pre-hashed `u64` keys, for every filter that takes them (txgate, fastbloom,
//!   sbbf-rs-safe): insert into an empty filter, contains hit, contains miss.
//! - `ids`: 32-byte ids hashed by each filter's own hashing (sbbf-rs-safe has none: XXH3 as its
//!   docs suggest): insert, contains hit, contains miss.
//! - `atomic_insert`: txgate's atomic insert next to its plain insert and fastbloom's atomic
//!   filter, each into an empty filter; and both txgate variants' batch `insert_many`
//!   (prefetching), which is where the atomic one's read-modify-writes stop waiting on misses.
//! - `dram`: 256 MiB filters holding 2^24 keys, probed with 2^22 random keys per pass (so the
//!   lines touched do not fit any cache): contains one by one, txgate's batch `contains_many`
//!   (prefetching), and the peers' contains.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use txgate_benches::{random_ids, random_u64s};
use txgate_bloom::{AtomicBlockedBloom, Backend, BlockedBloom, BloomBuilder};

const KEYS: usize = 1 << 20;
const BITS_PER_KEY: usize = 10;
const PASS: usize = 1 << 16;
const DRAM_PROBES: usize = 1 << 22;

fn txgate(bits: usize, backend: Backend) -> BlockedBloom {
    BloomBuilder::with_num_bits(bits as u64)
        .unwrap()
        .seed(1)
        .backend(backend)
        .build()
        .unwrap()
}

fn txgate_atomic(bits: usize) -> AtomicBlockedBloom {
    BloomBuilder::with_num_bits(bits as u64)
        .unwrap()
        .seed(1)
        .build_atomic()
        .unwrap()
}

fn fastbloom(bits: usize, items: usize) -> fastbloom::BloomFilter {
    fastbloom::BloomFilter::with_num_bits(bits)
        .seed(&1)
        .expected_items(items)
}

fn fastbloom_atomic(bits: usize, items: usize) -> fastbloom::AtomicBloomFilter {
    fastbloom::AtomicBloomFilter::with_num_bits(bits)
        .seed(&1)
        .expected_items(items)
}

fn sbbf(bits: usize, items: usize) -> sbbf_rs_safe::Filter {
    sbbf_rs_safe::Filter::new(bits / items, items)
}

/// Keeps an insert's result alive so the call is not optimised away.
#[inline(always)]
fn sink(new: bool) {
    black_box(new);
}

fn count(keys: &[u64], contains: impl Fn(u64) -> bool) -> usize {
    keys.iter().filter(|&&k| contains(k)).count()
}

fn prehashed(c: &mut Criterion) {
    let keys = random_u64s(KEYS, 1);
    let misses = random_u64s(PASS, 2);
    let hits = &keys[..PASS];
    let bits = KEYS * BITS_PER_KEY;
    let mut g = c.benchmark_group("prehashed");

    g.throughput(Throughput::Elements(KEYS as u64));
    for backend in Backend::available() {
        g.bench_function(
            BenchmarkId::new("insert", format!("txgate-{backend:?}")),
            |b| {
                b.iter_batched_ref(
                    || txgate(bits, backend),
                    |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
                    BatchSize::LargeInput,
                )
            },
        );
    }
    g.bench_function(BenchmarkId::new("insert", "fastbloom"), |b| {
        b.iter_batched_ref(
            || fastbloom(bits, KEYS),
            |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(BenchmarkId::new("insert", "sbbf-rs-safe"), |b| {
        b.iter_batched_ref(
            || sbbf(bits, KEYS),
            |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
            BatchSize::LargeInput,
        )
    });

    g.throughput(Throughput::Elements(PASS as u64));
    let mut filters: Vec<(String, BlockedBloom)> = Backend::available()
        .into_iter()
        .map(|b| (format!("txgate-{b:?}"), txgate(bits, b)))
        .collect();
    let mut fb = fastbloom(bits, KEYS);
    let mut sb = sbbf(bits, KEYS);
    for &k in &keys {
        filters.iter_mut().for_each(|(_, f)| sink(f.insert_hash(k)));
        fb.insert_hash(k);
        sb.insert_hash(k);
    }
    for (case, probe) in [("contains_hit", hits), ("contains_miss", &misses[..])] {
        for (name, f) in &filters {
            g.bench_function(BenchmarkId::new(case, name), |b| {
                b.iter(|| count(probe, |k| f.contains_hash(k)))
            });
        }
        g.bench_function(BenchmarkId::new(case, "fastbloom"), |b| {
            b.iter(|| count(probe, |k| fb.contains_hash(k)))
        });
        g.bench_function(BenchmarkId::new(case, "sbbf-rs-safe"), |b| {
            b.iter(|| count(probe, |k| sb.contains_hash(k)))
        });
    }
    g.finish();
}

fn ids(c: &mut Criterion) {
    let keys = random_ids(KEYS, 3);
    let misses = random_ids(PASS, 4);
    let hits = &keys[..PASS];
    let bits = KEYS * BITS_PER_KEY;
    let xxh3 = |id: &[u8; 32]| xxhash_rust::xxh3::xxh3_64(id);
    let mut g = c.benchmark_group("ids");

    g.throughput(Throughput::Elements(KEYS as u64));
    g.bench_function(BenchmarkId::new("insert", "txgate"), |b| {
        b.iter_batched_ref(
            || txgate(bits, Backend::detect()),
            |f| keys.iter().for_each(|k| sink(f.insert_id(k))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(BenchmarkId::new("insert", "fastbloom"), |b| {
        b.iter_batched_ref(
            || fastbloom(bits, KEYS),
            |f| keys.iter().for_each(|k| sink(f.insert(k))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(BenchmarkId::new("insert", "sbbf-rs-safe+xxh3"), |b| {
        b.iter_batched_ref(
            || sbbf(bits, KEYS),
            |f| keys.iter().for_each(|k| sink(f.insert_hash(xxh3(k)))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(BenchmarkId::new("insert", "bloomfilter"), |b| {
        b.iter_batched_ref(
            || bloomfilter::Bloom::<[u8; 32]>::new(bits / 8, KEYS).unwrap(),
            |f| keys.iter().for_each(|k| f.set(black_box(k))),
            BatchSize::LargeInput,
        )
    });

    g.throughput(Throughput::Elements(PASS as u64));
    let mut tg = txgate(bits, Backend::detect());
    let mut fb = fastbloom(bits, KEYS);
    let mut sb = sbbf(bits, KEYS);
    let mut bf = bloomfilter::Bloom::<[u8; 32]>::new(bits / 8, KEYS).unwrap();
    for k in &keys {
        tg.insert_id(k);
        fb.insert(k);
        sb.insert_hash(xxh3(k));
        bf.set(k);
    }
    for (case, probe) in [("contains_hit", hits), ("contains_miss", &misses[..])] {
        g.bench_function(BenchmarkId::new(case, "txgate"), |b| {
            b.iter(|| probe.iter().filter(|k| tg.contains_id(k)).count())
        });
        g.bench_function(BenchmarkId::new(case, "fastbloom"), |b| {
            b.iter(|| probe.iter().filter(|k| fb.contains(*k)).count())
        });
        g.bench_function(BenchmarkId::new(case, "sbbf-rs-safe+xxh3"), |b| {
            b.iter(|| probe.iter().filter(|k| sb.contains_hash(xxh3(k))).count())
        });
        g.bench_function(BenchmarkId::new(case, "bloomfilter"), |b| {
            b.iter(|| probe.iter().filter(|k| bf.check(k)).count())
        });
    }
    g.finish();
}

fn atomic_insert(c: &mut Criterion) {
    let keys = random_u64s(KEYS, 5);
    let bits = KEYS * BITS_PER_KEY;
    let mut g = c.benchmark_group("atomic_insert");
    g.throughput(Throughput::Elements(KEYS as u64));
    g.bench_function("txgate-plain", |b| {
        b.iter_batched_ref(
            || txgate(bits, Backend::detect()),
            |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("txgate-atomic", |b| {
        b.iter_batched_ref(
            || txgate_atomic(bits),
            |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("txgate-plain-insert_many", |b| {
        b.iter_batched_ref(
            || txgate(bits, Backend::detect()),
            |f| f.insert_many(&keys),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("txgate-atomic-insert_many", |b| {
        b.iter_batched_ref(
            || txgate_atomic(bits),
            |f| f.insert_many(&keys),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("fastbloom-atomic", |b| {
        b.iter_batched_ref(
            || fastbloom_atomic(bits, KEYS),
            |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

fn dram(c: &mut Criterion) {
    const BYTES: usize = 256 << 20;
    const FILL: usize = 1 << 24;
    let bits = BYTES * 8;
    let keys = random_u64s(FILL, 6);
    // 2^22 probes touch 2^22 distinct lines (256 MiB): far more than any cache, so every pass
    // goes to DRAM (a small probe set would stay in L3 between passes).
    let probes = random_u64s(DRAM_PROBES, 7);
    let mut tg = txgate(bits, Backend::detect());
    let mut fb = fastbloom(bits, FILL);
    let mut sb = sbbf(bits, FILL);
    for &k in &keys {
        tg.insert_hash(k);
        fb.insert_hash(k);
        sb.insert_hash(k);
    }
    drop(keys);
    let mut g = c.benchmark_group("dram");
    g.throughput(Throughput::Elements(DRAM_PROBES as u64));
    g.bench_function("txgate-contains", |b| {
        b.iter(|| count(&probes, |k| tg.contains_hash(k)))
    });
    let mut out = vec![false; DRAM_PROBES];
    g.bench_function("txgate-contains_many", |b| {
        b.iter(|| {
            tg.contains_many(&probes, &mut out);
            out.iter().filter(|&&x| x).count()
        })
    });
    g.bench_function("fastbloom-contains", |b| {
        b.iter(|| count(&probes, |k| fb.contains_hash(k)))
    });
    g.bench_function("sbbf-rs-safe-contains", |b| {
        b.iter(|| count(&probes, |k| sb.contains_hash(k)))
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
}

criterion_group!(name = benches; config = config(); targets = prehashed, ids, atomic_insert, dram);
criterion_main!(benches);
