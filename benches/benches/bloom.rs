//! txgate-bloom (both block layouts) against fastbloom, sbbf-rs-safe and bloomfilter, in one
//! run (read ratios, not absolute times: on a shared or noisy machine only ratios carry over).
//!
//! ```text
//! cargo bench -p txgate-benches --bench bloom
//! ```
//! Rows named `txgate` (or `txgate-<backend>`) are the 256-bit layout, `txgate512` the 512-bit
//! one. Groups (2^20 keys at 10 bits per key unless said otherwise; each iteration is a pass over
//! a fixed slice of seeded random keys, `Throughput::Elements` = keys per pass):
//! - `prehashed`: pre-hashed `u64` keys, for every filter that takes them (txgate, fastbloom,
//!   sbbf-rs-safe): insert into an empty filter, contains hit, contains miss; txgate once per
//!   backend (the AVX-512 backend runs the AVX2 kernel for 256-bit blocks' inserts, so that
//!   insert row is not repeated for them; their queries have an AVX-512VL kernel and a row).
//! - `ids`: 32-byte ids hashed by each filter's own hashing (sbbf-rs-safe has none: XXH3 as its
//!   docs suggest): insert, contains hit, contains miss.
//! - `atomic_insert`: txgate's atomic insert next to its plain insert and fastbloom's atomic
//!   filter, each into an empty filter; and the txgate variants' batch `insert_many`
//!   (prefetching), which is where the atomic one's read-modify-writes stop waiting on misses.
//! - `dram`: filters of 4x the last-level cache (read at run time from sysfs; at least 1 GiB,
//!   `TXGATE_DRAM_BYTES` overrides) holding 2^24 keys, probed with 2^22 random keys per pass
//!   (more lines than any cache holds): contains one by one, txgate's batch `contains_many`
//!   (prefetching [`PREFETCH_AHEAD`] keys ahead), the peers' contains, and two baselines with
//!   no filter work: `line_read` reads one word of the same number of random 64-byte lines of a
//!   buffer of the same size, prefetching as far ahead as `contains_many` (the physical limit of
//!   the core it runs on), and `line_read_no_prefetch` the same without prefetching. One filter
//!   is in memory at a time.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use rand::{Rng, SeedableRng, rngs::SmallRng};
use txgate_benches::{random_ids, random_u64s};
use txgate_bloom::{
    AtomicBlockedBloom, Backend, Block256, Block512, BlockLayout, BlockedBloom, BloomBuilder,
    Bytes, Filter, Hashed, Layout, PREFETCH_AHEAD,
};

const KEYS: usize = 1 << 20;
const BITS_PER_KEY: usize = 10;
const PASS: usize = 1 << 16;
const DRAM_PROBES: usize = 1 << 22;

fn builder<B: BlockLayout>(bits: usize) -> BloomBuilder<B> {
    BloomBuilder::with_num_bits(bits as u64)
        .seed(1)
        .layout::<B>()
}

fn txgate<B: BlockLayout>(bits: usize, backend: Backend) -> BlockedBloom<B> {
    builder::<B>(bits).backend(backend).build().unwrap()
}

fn txgate_atomic<B: BlockLayout>(bits: usize) -> AtomicBlockedBloom<B> {
    builder::<B>(bits).build_atomic().unwrap()
}

/// The backends worth an insert row for layout `B`: all for 512-bit blocks; for 256-bit blocks
/// the AVX-512 backend inserts with the AVX2 kernel, so not that one.
fn backends(layout: Layout) -> Vec<Backend> {
    Backend::available()
        .into_iter()
        .filter(|&b| layout == Layout::Block512 || b != Backend::Avx512)
        .collect()
}

/// The row name of txgate layout `B` with `backend`: `txgate-Avx2`, `txgate512-Avx512`, ...
fn name<B: BlockLayout>(backend: Option<Backend>) -> String {
    let layout = match B::LAYOUT {
        Layout::Block256 => "txgate",
        _ => "txgate512",
    };
    match backend {
        Some(b) => format!("{layout}-{b:?}"),
        None => layout.to_owned(),
    }
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
    prehashed_insert::<Block256>(&mut g, &keys, bits);
    prehashed_insert::<Block512>(&mut g, &keys, bits);
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
    // Queries: every backend of both layouts (the AVX-512 one has its own 256-bit query).
    let mut small: Vec<(String, BlockedBloom)> = Backend::available()
        .into_iter()
        .map(|b| (name::<Block256>(Some(b)), txgate(bits, b)))
        .collect();
    let mut large: Vec<(String, BlockedBloom<Block512>)> = Backend::available()
        .into_iter()
        .map(|b| (name::<Block512>(Some(b)), txgate(bits, b)))
        .collect();
    let mut fb = fastbloom(bits, KEYS);
    let mut sb = sbbf(bits, KEYS);
    for &k in &keys {
        small
            .iter_mut()
            .for_each(|(_, f)| sink(f.insert(Hashed(k))));
        large
            .iter_mut()
            .for_each(|(_, f)| sink(f.insert(Hashed(k))));
        fb.insert_hash(k);
        sb.insert_hash(k);
    }
    for (case, probe) in [("contains_hit", hits), ("contains_miss", &misses[..])] {
        for (name, f) in &small {
            g.bench_function(BenchmarkId::new(case, name), |b| {
                b.iter(|| count(probe, |k| f.contains(Hashed(k))))
            });
        }
        for (name, f) in &large {
            g.bench_function(BenchmarkId::new(case, name), |b| {
                b.iter(|| count(probe, |k| f.contains(Hashed(k))))
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

/// Inserts of every key into an empty txgate filter of layout `B`, one row per backend.
fn prehashed_insert<B: BlockLayout>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    keys: &[u64],
    bits: usize,
) {
    for backend in backends(B::LAYOUT) {
        g.bench_function(BenchmarkId::new("insert", name::<B>(Some(backend))), |b| {
            b.iter_batched_ref(
                || txgate::<B>(bits, backend),
                |f| keys.iter().for_each(|&k| sink(f.insert(Hashed(k)))),
                BatchSize::LargeInput,
            )
        });
    }
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
            || txgate::<Block256>(bits, Backend::detect()),
            |f| keys.iter().for_each(|k| sink(f.insert(Bytes(k)))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(BenchmarkId::new("insert", "txgate512"), |b| {
        b.iter_batched_ref(
            || txgate::<Block512>(bits, Backend::detect()),
            |f| keys.iter().for_each(|k| sink(f.insert(Bytes(k)))),
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
    let mut tg = txgate::<Block256>(bits, Backend::detect());
    let mut tg512 = txgate::<Block512>(bits, Backend::detect());
    let mut fb = fastbloom(bits, KEYS);
    let mut sb = sbbf(bits, KEYS);
    let mut bf = bloomfilter::Bloom::<[u8; 32]>::new(bits / 8, KEYS).unwrap();
    for k in &keys {
        tg.insert(Bytes(k));
        tg512.insert(Bytes(k));
        fb.insert(k);
        sb.insert_hash(xxh3(k));
        bf.set(k);
    }
    for (case, probe) in [("contains_hit", hits), ("contains_miss", &misses[..])] {
        g.bench_function(BenchmarkId::new(case, "txgate"), |b| {
            b.iter(|| probe.iter().filter(|k| tg.contains(Bytes(*k))).count())
        });
        g.bench_function(BenchmarkId::new(case, "txgate512"), |b| {
            b.iter(|| probe.iter().filter(|k| tg512.contains(Bytes(*k))).count())
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
    atomic_insert_of::<Block256>(&mut g, &keys, bits);
    atomic_insert_of::<Block512>(&mut g, &keys, bits);
    g.bench_function("fastbloom-atomic", |b| {
        b.iter_batched_ref(
            || fastbloom_atomic(bits, KEYS),
            |f| keys.iter().for_each(|&k| sink(f.insert_hash(k))),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// Plain and atomic inserts, one by one and batched, into empty txgate filters of layout `B`.
fn atomic_insert_of<B: BlockLayout>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    keys: &[u64],
    bits: usize,
) {
    let name = name::<B>(None);
    g.bench_function(format!("{name}-plain"), |b| {
        b.iter_batched_ref(
            || txgate::<B>(bits, Backend::detect()),
            |f| keys.iter().for_each(|&k| sink(f.insert(Hashed(k)))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(format!("{name}-atomic"), |b| {
        b.iter_batched_ref(
            || txgate_atomic::<B>(bits),
            |f| keys.iter().for_each(|&k| sink(f.insert(Hashed(k)))),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(format!("{name}-plain-insert_many"), |b| {
        b.iter_batched_ref(
            || txgate::<B>(bits, Backend::detect()),
            |f| f.insert_many(keys),
            BatchSize::LargeInput,
        )
    });
    g.bench_function(format!("{name}-atomic-insert_many"), |b| {
        b.iter_batched_ref(
            || txgate_atomic::<B>(bits),
            |f| f.insert_many(keys),
            BatchSize::LargeInput,
        )
    });
}

/// The last-level cache's size in bytes (the largest `size` under
/// /sys/devices/system/cpu/cpu0/cache), if sysfs tells it.
fn last_level_cache_bytes() -> Option<u64> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|entry| {
        let size = std::fs::read_to_string(entry.ok()?.path().join("size")).ok()?;
        let size = size.trim();
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit())?);
        let n: u64 = digits.parse().ok()?;
        Some(match unit {
            "K" => n << 10,
            "M" => n << 20,
            "G" => n << 30,
            _ => n,
        })
    })
    .max()
}

/// Bytes of each DRAM-group filter: `TXGATE_DRAM_BYTES`, or 4x the last-level cache and at
/// least 1 GiB, rounded up to a power of two.
fn dram_bytes() -> usize {
    if let Some(bytes) = std::env::var("TXGATE_DRAM_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return bytes;
    }
    let l3 = last_level_cache_bytes().unwrap_or(0);
    (4 * l3).max(1 << 30).next_power_of_two() as usize
}

/// One 64-byte cache line of the baseline buffer.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u64; 8]);

/// `probes.len()` random line reads over `lines` (the line of hash `h` is `(h * n) >> 64`, as a
/// filter picks its block), one word each, prefetching the line `ahead` probes on (none when
/// `ahead == 0`); the xor of the words read, so that no read is optimised away.
fn line_reads(lines: &[Line], probes: &[u64], ahead: usize) -> u64 {
    let n = lines.len() as u64;
    let line = |h: u64| &lines[((u128::from(h) * u128::from(n)) >> 64) as usize];
    let mut acc = 0;
    for (i, &h) in probes.iter().enumerate() {
        if ahead > 0
            && let Some(&next) = probes.get(i + ahead)
        {
            prefetch(line(next));
        }
        acc ^= black_box(line(h)).0[0];
    }
    acc
}

fn prefetch(line: &Line) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults and reads nothing the program sees.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (line as *const Line).cast(),
        )
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = line;
}

/// 2^24 seeded random keys, generated again for each filter (not kept: 128 MiB).
fn fill_keys() -> impl Iterator<Item = u64> {
    let mut rng = SmallRng::seed_from_u64(6);
    (0..FILL).map(move |_| rng.random())
}

const FILL: usize = 1 << 24;

/// txgate's rows of the DRAM group for layout `B`: one by one and `contains_many`.
fn dram_txgate<B: BlockLayout>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    bytes: usize,
    probes: &[u64],
) {
    let mut filter = txgate::<B>(bytes * 8, Backend::detect());
    let keys: Vec<u64> = fill_keys().collect();
    filter.insert_many(&keys);
    drop(keys);
    let name = name::<B>(None);
    g.bench_function(format!("{name}-contains"), |b| {
        b.iter(|| count(probes, |k| filter.contains(Hashed(k))))
    });
    let mut out = vec![false; probes.len()];
    g.bench_function(format!("{name}-contains_many"), |b| {
        b.iter(|| {
            filter.contains_many(probes, &mut out);
            out.iter().filter(|&&x| x).count()
        })
    });
}

fn dram(c: &mut Criterion) {
    let bytes = dram_bytes();
    eprintln!(
        "dram: filters of {} MiB (last-level cache {:?} bytes), {DRAM_PROBES} probes per pass",
        bytes >> 20,
        last_level_cache_bytes()
    );
    // 2^22 probes touch 2^22 distinct lines: far more than any cache, so every pass goes to
    // DRAM (a small probe set would stay in the cache between passes).
    let probes = random_u64s(DRAM_PROBES, 7);
    let mut g = c.benchmark_group("dram");
    g.throughput(Throughput::Elements(DRAM_PROBES as u64));
    {
        // Every line written (a fresh allocation would read the shared zero page).
        let mut rng = SmallRng::seed_from_u64(8);
        let lines: Vec<Line> = (0..bytes / 64).map(|_| Line([rng.random(); 8])).collect();
        g.bench_function("line_read", |b| {
            b.iter(|| line_reads(&lines, &probes, PREFETCH_AHEAD))
        });
        g.bench_function("line_read_no_prefetch", |b| {
            b.iter(|| line_reads(&lines, &probes, 0))
        });
    }
    dram_txgate::<Block256>(&mut g, bytes, &probes);
    dram_txgate::<Block512>(&mut g, bytes, &probes);
    {
        // k = 8 as in the blocked filters: `expected_items` would pick hundreds of hashes for
        // this sparse fill, and a fill of 2^24 keys would take minutes.
        let mut fb = fastbloom::BloomFilter::with_num_bits(bytes * 8)
            .seed(&1)
            .hashes(8);
        fill_keys().for_each(|k| {
            fb.insert_hash(k);
        });
        g.bench_function("fastbloom-contains", |b| {
            b.iter(|| count(&probes, |k| fb.contains_hash(k)))
        });
    }
    {
        let mut sb = sbbf(bytes * 8, FILL);
        fill_keys().for_each(|k| {
            sb.insert_hash(k);
        });
        g.bench_function("sbbf-rs-safe-contains", |b| {
            b.iter(|| count(&probes, |k| sb.contains_hash(k)))
        });
    }
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
