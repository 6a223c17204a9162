//! Differential fuzzing of txgate-bloom against a `HashSet` model: any sequence of inserts,
//! queries, clears, unions and reloads, on both filter variants and either block layout. The
//! filters may answer "maybe" for keys the model lacks (false positives) but never "no" for a key
//! it holds; the plain and atomic variants must agree bit for bit, and a run on the scalar backend
//! must agree with one on the detected (SIMD) backend.
#![no_main]

use std::collections::HashSet;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use txgate_bloom::{
    AnyBloom, AtomicBlockedBloom, Backend, Block256, Block512, BlockLayout, BlockedBloom,
    BloomBuilder, Bytes, Filter, Hashed,
};

#[derive(Arbitrary, Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Bytes(Vec<u8>),
    Id([u8; 32]),
    Hash(u64),
}

#[derive(Arbitrary, Debug)]
enum Op {
    Insert(Key),
    Contains(Key),
    Clear,
    /// Union with a fresh filter of the same shape holding these keys.
    UnionWith(Vec<Key>),
    /// Serialize and load both variants again.
    Reload,
}

#[derive(Arbitrary, Debug)]
struct Input {
    blocks: u8,
    seed: u64,
    wide: bool,
    ops: Vec<Op>,
}

fn insert<B: BlockLayout>(
    plain: &mut BlockedBloom<B>,
    atomic: &AtomicBlockedBloom<B>,
    key: &Key,
) -> (bool, bool) {
    match key {
        Key::Bytes(b) => (plain.insert(b), atomic.insert(b)),
        Key::Id(id) => (plain.insert(Bytes(id)), atomic.insert(Bytes(id))),
        Key::Hash(h) => (plain.insert(Hashed(*h)), atomic.insert(Hashed(*h))),
    }
}

fn contains<B: BlockLayout>(
    plain: &BlockedBloom<B>,
    atomic: &AtomicBlockedBloom<B>,
    key: &Key,
) -> (bool, bool) {
    match key {
        Key::Bytes(b) => (plain.contains(b), atomic.contains(b)),
        Key::Id(id) => (plain.contains(Bytes(id)), atomic.contains(Bytes(id))),
        Key::Hash(h) => (plain.contains(Hashed(*h)), atomic.contains(Hashed(*h))),
    }
}

/// Runs the ops on layout `B` with `backend`; returns the final bits.
fn run<B: BlockLayout>(input: &Input, backend: Backend) -> Vec<u8> {
    let builder = BloomBuilder::with_num_blocks(u64::from(input.blocks) + 1)
        .seed(input.seed)
        .backend(backend)
        .layout::<B>();
    let mut plain = builder.build().unwrap();
    let mut atomic = builder.build_atomic().unwrap();
    let mut model: HashSet<Key> = HashSet::new();
    for op in input.ops.iter().take(512) {
        match op {
            Op::Insert(key) => {
                let (p, a) = insert(&mut plain, &atomic, key);
                assert_eq!(p, a, "variants disagree on insert");
                if model.contains(key) {
                    assert!(!p, "a present key reported new");
                }
                model.insert(key.clone());
            }
            Op::Contains(key) => {
                let (p, a) = contains(&plain, &atomic, key);
                assert_eq!(p, a, "variants disagree on contains");
                if model.contains(key) {
                    assert!(p, "false negative");
                }
            }
            Op::Clear => {
                plain.clear();
                atomic.clear();
                model.clear();
                assert!(plain.is_empty());
            }
            Op::UnionWith(keys) => {
                let mut other = builder.build().unwrap();
                let other_atomic = builder.build_atomic().unwrap();
                for key in keys.iter().take(64) {
                    insert(&mut other, &other_atomic, key);
                    model.insert(key.clone());
                }
                plain.union(&other).unwrap();
                atomic.union(&other).unwrap();
            }
            Op::Reload => {
                let bytes = plain.to_bytes();
                plain = BlockedBloom::<B>::from_layout_bytes(&bytes).unwrap();
                atomic = AtomicBlockedBloom::<B>::from_layout_bytes(&atomic.to_bytes()).unwrap();
                let any = AnyBloom::from_bytes(&bytes).unwrap();
                assert_eq!(any.layout(), B::LAYOUT);
                assert_eq!(any.to_bytes(), bytes);
            }
        }
        assert_eq!(plain.to_bytes(), atomic.to_bytes(), "variants' bits differ");
    }
    for key in &model {
        assert!(
            contains(&plain, &atomic, key) == (true, true),
            "false negative at the end"
        );
    }
    plain.to_bytes()
}

fuzz_target!(|input: Input| {
    let (scalar, detected) = if input.wide {
        (
            run::<Block512>(&input, Backend::Scalar),
            run::<Block512>(&input, Backend::detect()),
        )
    } else {
        (
            run::<Block256>(&input, Backend::Scalar),
            run::<Block256>(&input, Backend::detect()),
        )
    };
    assert_eq!(scalar, detected, "backends disagree");
});
