//! Every backend of both layouts (and the SBBF's) against the naive oracle: inserts, bits,
//! `contains` and `contains_many`; batch inserts; the atomic insert rule under racing threads.

use super::*;

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
            let h = rng.next_u64();
            let expected = oracle.insert(h);
            assert_eq!(plain.insert(Hashed(h)), expected, "{what} insert {h:#x}");
            assert_eq!(
                atomic.insert(Hashed(h)),
                expected,
                "{what} atomic insert {h:#x}"
            );
        }
        assert_eq!(body(&plain.to_bytes()), &oracle.bytes()[..], "{what} bits");
        assert_eq!(plain.to_bytes(), atomic.to_bytes(), "{what} atomic bits");
        let probes: Vec<u64> = (0..keys).map(|_| rng.next_u64()).collect();
        let want: Vec<bool> = probes.iter().map(|&h| oracle.contains(h)).collect();
        for (&h, &expected) in probes.iter().zip(&want) {
            assert_eq!(
                plain.contains(Hashed(h)),
                expected,
                "{what} contains {h:#x}"
            );
            assert_eq!(
                atomic.contains(Hashed(h)),
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
    // The project's CI (`TXGATE_REQUIRE_AVX2=1`, set by `.ci/run`) runs on x86-64 machines with
    // AVX2: there the SIMD path must be among those tested. Elsewhere (users' CI included) a
    // machine without it only skips that backend. (AVX-512 depends on the machine drawn; its
    // kernels are tested wherever it is present.)
    if cfg!(all(target_arch = "x86_64", not(miri)))
        && std::env::var("TXGATE_REQUIRE_AVX2").is_ok_and(|v| v == "1")
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
            let h = rng.next_u64();
            assert_eq!(sbbf.insert_hash(h), oracle.insert(h), "{backend:?}");
        }
        assert_eq!(sbbf.bitset(), oracle.bytes(), "{backend:?}");
        for _ in 0..keys {
            let h = rng.next_u64();
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
        let h = rng.next_u64();
        filter.insert(Hashed(h));
        atomic.insert(Hashed(h));
    }
    let probes: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let mut out = vec![false; n];
    filter.contains_many(&probes, &mut out);
    let expected: Vec<bool> = probes.iter().map(|&h| filter.contains(Hashed(h))).collect();
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
    let hashes: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let mut one = builder_of::<B>(64).build().unwrap();
    let new_one = hashes.iter().filter(|&&h| one.insert(Hashed(h))).count();
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

/// The one-key queries are inline assembly that ends with `vzeroupper`, which zeroes bits 128
/// and up of every vector register. A caller compiled with AVX2 may keep 256-bit values in those
/// registers across a query; they must come out whole (the assembly declares every vector
/// register clobbered, so the compiler saves what it keeps there). Eight 256-bit running sums
/// live across 2,000 queries of each layout, and every lane of each must equal the sum computed
/// in plain integers.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[test]
fn queries_keep_the_callers_vector_registers() {
    for backend in Backend::available() {
        if backend == Backend::Scalar {
            continue;
        }
        let mut narrow = builder_of::<Block256>(16).backend(backend).build().unwrap();
        let mut wide = builder_of::<Block512>(16).backend(backend).build().unwrap();
        let mut rng = SplitMix(11);
        for _ in 0..400 {
            let h = rng.next_u64();
            narrow.insert(Hashed(h));
            wide.insert(Hashed(h));
        }
        let probes: Vec<u64> = (0..2_000).map(|_| rng.next_u64()).collect();
        let want = probes
            .iter()
            .filter(|&&h| narrow.contains(Hashed(h)))
            .count()
            + probes.iter().filter(|&&h| wide.contains(Hashed(h))).count();
        // SAFETY: `backend` is available and not scalar, so this CPU has AVX2.
        let (hits, lanes) = unsafe { sums_across_queries(&narrow, &wide, &probes) };
        assert_eq!(hits, want, "{backend:?}: answers");
        assert!(hits > 0 && hits < 2 * probes.len(), "{backend:?}: {hits}");
        let n = probes.len() as i64;
        for (j, lanes) in lanes.iter().enumerate() {
            // Sum over i of i * (j + 1).
            let sum = (j as i64 + 1) * n * (n - 1) / 2;
            assert_eq!(*lanes, [sum; 4], "{backend:?}: running sum {j}");
        }
    }
}

/// Queries every probe in both filters while adding `i * (j + 1)` to every 64-bit lane of
/// running sum `j` (eight 256-bit values); the hits and the sums' lanes.
#[cfg(all(target_arch = "x86_64", not(miri)))]
#[target_feature(enable = "avx2")]
fn sums_across_queries(
    narrow: &BlockedBloom<Block256>,
    wide: &BlockedBloom<Block512>,
    probes: &[u64],
) -> (usize, [[i64; 4]; 8]) {
    use core::arch::x86_64::{__m256i, _mm256_add_epi64, _mm256_set1_epi64x, _mm256_storeu_si256};
    let mut sums = [_mm256_set1_epi64x(0); 8];
    let mut hits = 0;
    for (i, &h) in probes.iter().enumerate() {
        hits += usize::from(narrow.contains(Hashed(h))) + usize::from(wide.contains(Hashed(h)));
        for (j, sum) in sums.iter_mut().enumerate() {
            *sum = _mm256_add_epi64(*sum, _mm256_set1_epi64x((i * (j + 1)) as i64));
        }
    }
    let mut lanes = [[0i64; 4]; 8];
    for (out, sum) in lanes.iter_mut().zip(sums) {
        // SAFETY: `out` is 32 writable bytes: one unaligned 32-byte store covers it exactly.
        unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast::<__m256i>(), sum) };
    }
    (hits, lanes)
}

/// Every form of each backend's native query (the `Avx512` backend's 512-bit query has two:
/// `vptestnmq`, and `vpshufbitqmb` where the CPU has AVX512_BITALG, whichever the kernel picks on
/// this CPU's vendor) against the oracle, on filters of one block, a power of two, an odd count
/// and a larger one, where the CPU has them (the oracle test above runs only the form the CPU's
/// kernel picks).
#[test]
fn every_form_of_the_queries_matches_the_oracle() {
    // 40 keys per 256-bit block and 120 per 512-bit one: false-positive rates of about 7 % and
    // 27 %, so that the random queries meet both answers.
    for blocks in [1, 64, 250, 1_021] {
        every_form_matches_the_oracle::<Block256>(blocks * 2, 40);
        every_form_matches_the_oracle::<Block512>(blocks, 120);
    }
}

/// `per_block` keys per block inserted, then at least 2,000 random keys queried.
fn every_form_matches_the_oracle<B: BlockLayout>(blocks: u64, per_block: usize) {
    let inserted = per_block * blocks as usize;
    let (blocks, inserted, queried) = if MIRI {
        (1, 200, 200)
    } else {
        (blocks, inserted, inserted.max(2_000))
    };
    for backend in Backend::available() {
        let mut filter = builder_of::<B>(blocks).backend(backend).build().unwrap();
        let mut oracle = Oracle::native(B::LAYOUT, blocks);
        let mut rng = SplitMix(4);
        for _ in 0..inserted {
            let h = rng.next_u64();
            filter.insert(Hashed(h));
            oracle.insert(h);
        }
        let forms = filter.geometry().kernel().forms();
        // Both 512-bit queries where the CPU can run both, whichever the kernel chose.
        if backend == Backend::Avx512 && crate::kernels::bitalg_available() {
            assert_eq!(forms.len(), 2, "{forms:?}");
        }
        let mut hits = 0;
        for _ in 0..queried {
            let h = rng.next_u64();
            let expected = oracle.contains(h);
            hits += usize::from(expected);
            for &kernel in &forms {
                // SAFETY: a filter has at least one block.
                let got = unsafe { B::contains(kernel, filter.blocks(), h) };
                assert_eq!(got, expected, "{:?} {kernel:?} contains {h:#x}", B::LAYOUT);
            }
        }
        assert!(hits > 0 && hits < queried, "{hits} of {queried}");
    }
}
