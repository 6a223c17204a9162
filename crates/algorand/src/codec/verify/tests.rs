//! Block verification against a reference written from go-algorand's rules, independently of
//! the library's tree code: entries re-encoded with rmpv, txids and trees computed by plain
//! recursion.

use rmpv::Value;
use sha2::{Digest, Sha256, Sha512, Sha512_256};

use super::*;
use crate::codec::{decode_block, payset_offsets};
use crate::synth::{SynthTxn, encode_block, encode_block_with_protocol};

const GEN: &str = "testnet-v1.0";
const GH: [u8; 32] = [1; 32];

fn txns(n: usize) -> Vec<SynthTxn> {
    (0..n)
        .map(|i| {
            let mut t = if i % 3 == 0 {
                SynthTxn::app_call([i as u8 + 1; 32], 10, 1010, vec![42 + i as u64, 7])
            } else {
                SynthTxn::payment([i as u8 + 1; 32], 10, 1010)
            };
            t.note = vec![i as u8; i % 5];
            t
        })
        .collect()
}

fn h<D: Digest>(parts: &[&[u8]]) -> Vec<u8> {
    let mut d = D::new();
    for p in parts {
        d.update(p);
    }
    d.finalize().to_vec()
}

/// Canonical msgpack by rmpv: maps sorted by key, values written by rmpv's minimal writers.
fn canonical(v: &Value) -> Vec<u8> {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Map(m) => {
                let mut m: Vec<(Value, Value)> =
                    m.iter().map(|(k, v)| (k.clone(), sorted(v))).collect();
                m.sort_by(|a, b| a.0.as_slice().unwrap().cmp(b.0.as_slice().unwrap()));
                Value::Map(m)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &sorted(v)).unwrap();
    out
}

/// Each entry's stored bytes and its `txn` completed with `gen` (when `hgi`) and `gh`,
/// canonical.
fn entries(bytes: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let block = decode_block(bytes).unwrap();
    payset_offsets(bytes)
        .unwrap()
        .into_iter()
        .map(|at| {
            let mut rest = &bytes[at..];
            let before = rest.len();
            let v = rmpv::decode::read_value(&mut rest).unwrap();
            let stib = bytes[at..at + before - rest.len()].to_vec();
            let map = v.as_map().unwrap();
            let get = |k: &str| map.iter().find(|(key, _)| key.as_str() == Some(k));
            let hgi = get("hgi").is_some_and(|(_, v)| v.as_bool() == Some(true));
            let mut txn = get("txn").unwrap().1.as_map().unwrap().clone();
            if hgi {
                txn.push((Value::from("gen"), Value::from(block.genesis_id.as_slice())));
                // rmpv writes `&[u8]` as bin; `gen` is a str.
                let last = txn.last_mut().unwrap();
                last.1 = Value::from(std::str::from_utf8(&block.genesis_id).unwrap());
            }
            txn.push((Value::from("gh"), Value::from(&block.genesis_hash[..])));
            (stib, canonical(&Value::Map(txn)))
        })
        .collect()
}

/// An inner node's hash from its children.
type Node = dyn Fn(&[u8], &[u8]) -> Vec<u8>;

/// go-algorand `merklearray.Build` root, written recursively: a tree of depth
/// ceil(log2 n) whose missing subtrees are zero digests.
fn reference_merkle(leaves: &[Vec<u8>], node: &Node, size: usize) -> Vec<u8> {
    fn sub(leaves: &[Vec<u8>], depth: u32, node: &Node, size: usize) -> Vec<u8> {
        if depth == 0 {
            return leaves[0].clone();
        }
        let half = 1usize << (depth - 1);
        let left = sub(&leaves[..half.min(leaves.len())], depth - 1, node, size);
        let right = if leaves.len() > half {
            sub(&leaves[half..], depth - 1, node, size)
        } else {
            vec![0; size]
        };
        node(&left, &right)
    }
    if leaves.is_empty() {
        return vec![0; size];
    }
    let mut depth = 0;
    while (1usize << depth) < leaves.len() {
        depth += 1;
    }
    sub(leaves, depth, node, size)
}

/// go-algorand `BuildVectorCommitmentTree` root: leaves at bit-reversed positions, padded with
/// H("MB") to a power of two (at least 2 positions for the index width, 1 leaf for n <= 1).
fn reference_vc<D: Digest>(leaves: &[Vec<u8>]) -> Vec<u8> {
    let bottom = h::<D>(&[b"MB"]);
    let n = leaves.len();
    if n <= 1 {
        return leaves.first().cloned().unwrap_or(bottom);
    }
    let mut bits = 0;
    while (1usize << bits) < n {
        bits += 1;
    }
    let placed: Vec<Vec<u8>> = (0..1usize << bits)
        .map(|pos| {
            let mut rev = 0;
            for b in 0..bits {
                if pos & (1 << b) != 0 {
                    rev |= 1 << (bits - 1 - b);
                }
            }
            leaves.get(rev).cloned().unwrap_or_else(|| bottom.clone())
        })
        .collect();
    let size = bottom.len();
    reference_merkle(&placed, &|l, r| h::<D>(&[b"MA", l, r]), size)
}

struct Reference {
    merkle: Vec<u8>,
    sha256: Vec<u8>,
    sha512: Vec<u8>,
    /// Each entry's leaf in the `txn`, `txn256` and `txn512` trees, concatenated.
    leaves: [Vec<u8>; 3],
}

fn reference(bytes: &[u8]) -> Reference {
    let block = decode_block(bytes).unwrap();
    let mut native = Vec::new();
    let mut l256 = Vec::new();
    let mut l512 = Vec::new();
    for (i, (stib, txn)) in entries(bytes).iter().enumerate() {
        let txid = h::<Sha512_256>(&[b"TX", txn]);
        assert_eq!(txid, block.txns[i].txid.0, "entry {i}: txid by rmpv");
        native.push(h::<Sha512_256>(&[
            b"TL",
            &txid,
            &h::<Sha512_256>(&[b"STIB", stib]),
        ]));
        let id256 = h::<Sha256>(&[b"TX", txn]);
        let stib256 = h::<Sha256>(&[b"STIB", stib]);
        l256.push(h::<Sha256>(&[b"TL", &id256, &stib256]));
        l512.push(h::<Sha512>(&[b"TL", &id256, &stib256]));
    }
    Reference {
        merkle: reference_merkle(&native, &|l, r| h::<Sha512_256>(&[b"MA", l, r]), 32),
        sha256: reference_vc::<Sha256>(&l256),
        sha512: reference_vc::<Sha512>(&l512),
        leaves: [native.concat(), l256.concat(), l512.concat()],
    }
}

/// Each tree built in parts (its two subtrees, as a split decode's verification builds it) and
/// joined is the reference's root, for every leaf count up to 70 and at the power-of-two edges
/// up to 1,025, every tree asked for.
#[test]
fn trees_built_in_parts_are_the_references() {
    use crate::codec::trees::{build, join, pieces};
    use sha2::digest::Output;
    let zero_as_none = |v: Vec<u8>| (v.iter().any(|b| *b != 0)).then_some(v);
    for n in (0..=70).chain([
        127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025,
    ]) {
        let seeds: Vec<[u8; 8]> = (0..n as u64).map(u64::to_le_bytes).collect();
        let native: Vec<Vec<u8>> = seeds.iter().map(|s| h::<Sha512_256>(&[s])).collect();
        let l256: Vec<Vec<u8>> = seeds.iter().map(|s| h::<Sha256>(&[s])).collect();
        let l512: Vec<Vec<u8>> = seeds.iter().map(|s| h::<Sha512>(&[s])).collect();
        let all = Trees {
            merkle: true,
            sha256: true,
            sha512: true,
        };
        let mut leaves = Leaves::new(all, n);
        leaves.native = native
            .iter()
            .map(|v| *Output::<Sha512_256>::from_slice(v))
            .collect();
        leaves.sha256 = l256
            .iter()
            .map(|v| *Output::<Sha256>::from_slice(v))
            .collect();
        leaves.sha512 = l512
            .iter()
            .map(|v| *Output::<Sha512>::from_slice(v))
            .collect();
        leaves.set_len(n);
        let built: Vec<_> = pieces(all, n)
            .into_iter()
            .map(|p| build(&leaves, p))
            .collect();
        let got = join(all, n, &built).expect("every part built");
        let merkle = reference_merkle(&native, &|l, r| h::<Sha512_256>(&[b"MA", l, r]), 32);
        assert_eq!(
            got.merkle.map(|d| d.to_vec()),
            zero_as_none(merkle),
            "n {n}"
        );
        assert_eq!(
            got.sha256.map(|d| d.to_vec()),
            Some(reference_vc::<Sha256>(&l256))
        );
        assert_eq!(
            got.sha512.map(|d| d.to_vec()),
            Some(reference_vc::<Sha512>(&l512))
        );
    }
}

/// The leaves computed while a block is decoded for a verification, on one thread and split
/// over a helper, are the reference's, entry by entry, for every tree rule; so they are for the
/// block written loosely (no entry canonical, `txns` before `gen` and `gh`, so decoded after the
/// header). Verification then passes on them. No leaves for a flat protocol, or for a decode
/// that no verification follows.
#[test]
fn leaves_computed_while_decoding_are_the_references() {
    let mut splits = vec![Split::ONE.for_verify()];
    #[cfg(feature = "parallel")]
    splits.extend([
        Split::small(0, 1).for_verify(),
        Split::small(0, 3).for_verify(),
    ]);
    let mut checked = 0;
    for version in [30, 34, 41, 42] {
        for n in [1, 5, 40] {
            let bytes = encode_block_with_protocol(9, GEN, &GH, 0, &txns(n), version);
            let want = reference(&bytes);
            let value = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
            let mut loose = Vec::new();
            crate::codec::tests::write_loose(&value, &mut loose);
            let trees = Trees {
                merkle: true,
                sha256: version >= 34,
                sha512: version >= 41,
            };
            for input in [&bytes, &loose] {
                for split in &splits {
                    let (block, located) = decode_located(input, *split).unwrap();
                    let leaves = located.leaves.as_ref().expect("leaves computed");
                    assert_eq!(leaves.trees, trees, "v{version}");
                    assert_eq!(leaves.len(), n);
                    let empty = Vec::new;
                    assert_eq!(
                        [
                            leaves.native.concat(),
                            leaves.sha256.concat(),
                            leaves.sha512.concat()
                        ],
                        [
                            want.leaves[0].clone(),
                            if trees.sha256 {
                                want.leaves[1].clone()
                            } else {
                                empty()
                            },
                            if trees.sha512 {
                                want.leaves[2].clone()
                            } else {
                                empty()
                            },
                        ],
                        "v{version} n {n} {split:?}"
                    );
                    let decoded = DecodedBlock {
                        block,
                        bytes: input,
                        located,
                    };
                    decoded.verify(&Expected::round(9)).unwrap();
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 4 * 3 * 2 * splits.len());
    let flat = encode_block_with_protocol(9, GEN, &GH, 0, &txns(3), 25);
    let v42 = encode_block_with_protocol(9, GEN, &GH, 0, &txns(3), 42);
    assert!(
        decode_located(&flat, Split::ONE.for_verify())
            .unwrap()
            .1
            .leaves
            .is_none()
    );
    assert!(decode_located(&v42, Split::ONE).unwrap().1.leaves.is_none());
}

#[test]
fn tree_commitments_match_the_reference_for_every_size_up_to_17() {
    for n in 0..=17 {
        let bytes = encode_block_with_protocol(9, GEN, &GH, 0, &txns(n), 42);
        let block = decode_block(&bytes).unwrap();
        let r = reference(&bytes);
        let zero_as_none = |v: Vec<u8>| (v.iter().any(|b| *b != 0)).then_some(v);
        assert_eq!(
            block.txn_commitment.map(|c| c.to_vec()),
            zero_as_none(r.merkle),
            "n={n}"
        );
        assert_eq!(
            block.txn256_commitment.map(|c| c.to_vec()),
            Some(r.sha256),
            "n={n}"
        );
        assert_eq!(
            block.txn512_commitment.map(|c| c.to_vec()),
            Some(r.sha512),
            "n={n}"
        );
        block
            .verify(&bytes, &Expected::round(9).with_genesis(GEN, GH))
            .unwrap();
    }
}

#[test]
fn empty_payset_roots_are_go_algorands() {
    // Merkle: no leaves, all-zero root, `txn` absent; vector commitments: one bottom leaf.
    let bytes = encode_block_with_protocol(3, GEN, &GH, 0, &[], 42);
    let b = decode_block(&bytes).unwrap();
    assert_eq!(b.txn_commitment, None);
    assert_eq!(b.txn256_commitment.unwrap().to_vec(), h::<Sha256>(&[b"MB"]));
    assert_eq!(b.txn512_commitment.unwrap().to_vec(), h::<Sha512>(&[b"MB"]));
    b.verify(&bytes, &Expected::default()).unwrap();
    // v26 to v33: an empty block carries no commitment at all, and that is its right one.
    let bytes = encode_block_with_protocol(3, GEN, &GH, 0, &[], 30);
    let b = decode_block(&bytes).unwrap();
    assert_eq!((b.txn_commitment, b.txn256_commitment), (None, None));
    b.verify(&bytes, &Expected::default()).unwrap();
    // Flat: the nil payset's hash.
    let bytes = encode_block_with_protocol(3, GEN, &GH, 0, &[], 25);
    let b = decode_block(&bytes).unwrap();
    assert_eq!(
        b.txn_commitment.unwrap().to_vec(),
        h::<Sha512_256>(&[b"PF", &[0xc0]])
    );
    assert_eq!(
        b.verify(&bytes, &Expected::default().with_round(None)),
        Ok(())
    );
    let stripped = b.clone().with_txn_commitment(None);
    assert_eq!(
        stripped.verify(&bytes, &Expected::default()),
        Err(VerifyError::NoCommitment { round: 3, txns: 0 })
    );
}

#[test]
fn each_kind_refuses_a_changed_commitment() {
    let t = txns(5);
    for (version, kind) in [
        (25, Commitment::Flat),
        (30, Commitment::Merkle),
        (34, Commitment::Sha256),
        (41, Commitment::Sha512),
    ] {
        let bytes = encode_block_with_protocol(7, GEN, &GH, 0, &t, version);
        let good = decode_block(&bytes).unwrap();
        good.verify(&bytes, &Expected::round(7)).unwrap();
        let mut bad = good.clone();
        match kind {
            Commitment::Flat | Commitment::Merkle => bad.txn_commitment.as_mut().unwrap()[0] ^= 1,
            Commitment::Sha256 => bad.txn256_commitment.as_mut().unwrap()[31] ^= 0x80,
            Commitment::Sha512 => bad.txn512_commitment.as_mut().unwrap()[63] ^= 0x80,
        }
        match bad.verify(&bytes, &Expected::round(7)) {
            Err(VerifyError::Mismatch {
                round: 7,
                commitment,
                header,
                computed,
            }) => {
                assert_eq!(commitment, kind, "v{version}");
                assert_ne!(header, computed);
            }
            other => panic!("v{version}: {other:?}"),
        }
        // Each kind alone: the others of a later protocol still match.
        if version >= 34 {
            let mut only = good.clone();
            only.txn_commitment.as_mut().unwrap()[5] ^= 4;
            assert!(matches!(
                only.verify(&bytes, &Expected::default()),
                Err(VerifyError::Mismatch {
                    commitment: Commitment::Merkle,
                    ..
                })
            ));
        }
    }
}

#[test]
fn protocol_decides_the_kind_and_extra_commitments_are_refused() {
    let t = txns(4);
    // A flat header on a Merkle protocol: refused, and the reverse.
    let flat = encode_block_with_protocol(7, GEN, &GH, 0, &t, 25);
    let merkle = encode_block_with_protocol(7, GEN, &GH, 0, &t, 30);
    let fb = decode_block(&flat).unwrap();
    let as_merkle = fb
        .clone()
        .with_protocol(decode_block(&merkle).unwrap().protocol);
    assert!(matches!(
        as_merkle.verify(&flat, &Expected::default()),
        Err(VerifyError::Mismatch {
            commitment: Commitment::Merkle,
            ..
        })
    ));
    // A `txn256` under a protocol without one (go-algorand compares all three fields).
    let extra = fb.clone().with_vector_commitments(Some([3; 32]), None);
    assert!(matches!(
        extra.verify(&flat, &Expected::default()),
        Err(VerifyError::Mismatch {
            commitment: Commitment::Sha256,
            header: Some(_),
            computed: None,
            ..
        })
    ));
    // v42 without `txn512`: refused.
    let v42 = encode_block_with_protocol(7, GEN, &GH, 0, &t, 42);
    let missing = decode_block(&v42)
        .unwrap()
        .with_vector_commitments(decode_block(&v42).unwrap().txn256_commitment, None);
    assert!(matches!(
        missing.verify(&v42, &Expected::default()),
        Err(VerifyError::Mismatch {
            commitment: Commitment::Sha512,
            header: None,
            computed: Some(_),
            ..
        })
    ));
    // v7 to v10: go-algorand no longer supports their commitment.
    let old = fb.clone().with_protocol("v10");
    assert!(matches!(
        old.verify(&flat, &Expected::default()),
        Err(VerifyError::UnsupportedProtocol { round: 7, .. })
    ));
    // `future` and unknown strings: from the header; `txn` alone may be flat or Merkle.
    for proto in [
        "future",
        "",
        "v43",
        "https://github.com/algorandfoundation/specs/tree/abc",
    ] {
        fb.clone()
            .with_protocol(proto)
            .verify(&flat, &Expected::default())
            .unwrap();
        let mb = decode_block(&merkle).unwrap().with_protocol(proto);
        mb.verify(&merkle, &Expected::default()).unwrap();
        let mut bad = mb.clone();
        bad.txn_commitment.as_mut().unwrap()[0] ^= 1;
        assert!(matches!(
            bad.verify(&merkle, &Expected::default()),
            Err(VerifyError::Mismatch {
                commitment: Commitment::Flat,
                ..
            })
        ));
        let none = mb.clone().with_txn_commitment(None);
        assert_eq!(
            none.verify(&merkle, &Expected::default()),
            Err(VerifyError::NoCommitment { round: 7, txns: 4 })
        );
        none.verify(&merkle, &Expected::default().allowing_uncommitted())
            .unwrap();
        // An empty block without any commitment too: its header may have lost both.
        let empty = encode_block(8, GEN, &GH, 0, &[]);
        let eb = decode_block(&empty)
            .unwrap()
            .with_protocol(proto)
            .with_txn_commitment(None);
        assert_eq!(
            eb.verify(&empty, &Expected::default()),
            Err(VerifyError::NoCommitment { round: 8, txns: 0 })
        );
        eb.verify(&empty, &Expected::default().allowing_uncommitted())
            .unwrap();
    }
}

#[test]
fn protocol_table_follows_go_algorand() {
    let known = |merkle, sha256, sha512| Rule::Known {
        merkle,
        sha256,
        sha512,
    };
    assert_eq!(rule(b"v7"), Rule::Unsupported);
    assert_eq!(rule(b"v10"), Rule::Unsupported);
    assert_eq!(rule(b"v11"), known(false, false, false));
    assert_eq!(rule(b"v011"), Rule::FromHeader);
    let url = |n| consensus_version(n).unwrap().into_bytes();
    assert_eq!(
        url(13),
        b"https://github.com/algorand/spec/tree/0c8a9dc44d7368cc266d5407b79fb3311f4fc795".to_vec()
    );
    assert_eq!(rule(&url(25)), known(false, false, false));
    assert_eq!(rule(&url(26)), known(true, false, false));
    assert_eq!(rule(&url(33)), known(true, false, false));
    // The real betanet block of the indexer's tests is v34 (`txn` and `txn256`).
    assert_eq!(
        url(34),
        b"https://github.com/algorandfoundation/specs/tree/2dd5435993f6f6d65691140f592ebca5ef19ffbd"
            .to_vec()
    );
    assert_eq!(rule(&url(34)), known(true, true, false));
    assert_eq!(rule(&url(40)), known(true, true, false));
    assert_eq!(rule(&url(41)), known(true, true, true));
    assert_eq!(rule(&url(42)), known(true, true, true));
    assert_eq!(rule(b"alpha3"), known(true, false, false));
    assert_eq!(rule(b"alpha4"), known(true, true, false));
    assert_eq!(rule(b"fnet4"), known(true, true, false));
    assert_eq!(rule(b"fnet5"), known(true, true, true));
    assert_eq!(rule(b"future"), Rule::FromHeader);
}

#[test]
fn round_and_network_are_checked_first() {
    let bytes = encode_block(11, GEN, &GH, 0, &txns(2));
    let b = decode_block(&bytes).unwrap();
    b.verify(&bytes, &Expected::round(11).with_genesis(GEN, GH))
        .unwrap();
    assert_eq!(
        b.verify(&bytes, &Expected::round(12)),
        Err(VerifyError::Round {
            expected: 12,
            found: 11
        })
    );
    let e = b.verify(
        &bytes,
        &Expected::default().with_genesis("mainnet-v1.0", GH),
    );
    assert!(
        matches!(e, Err(VerifyError::GenesisId { round: 11, .. })),
        "{e:?}"
    );
    assert_eq!(
        e.unwrap_err().to_string(),
        "round 11: genesis id \"testnet-v1.0\", expected \"mainnet-v1.0\""
    );
    let e = b.verify(&bytes, &Expected::default().with_genesis(GEN, [2; 32]));
    assert!(
        matches!(e, Err(VerifyError::GenesisHash { round: 11, .. })),
        "{e:?}"
    );
    // Another block's bytes.
    let other = encode_block(12, GEN, &GH, 0, &txns(2));
    assert!(matches!(
        b.verify(&other, &Expected::default()),
        Err(VerifyError::OtherBlock { round: 11, .. })
    ));
    let same_round = encode_block_with_protocol(11, GEN, &GH, 0, &txns(3), 42);
    let c = decode_block(&same_round).unwrap();
    let mixed = c.clone().with_txns(b.txns.clone());
    assert!(matches!(
        mixed.verify(&same_round, &Expected::default()),
        Err(VerifyError::OtherBlock { round: 11, .. })
    ));
}

#[test]
fn mismatch_message_names_round_field_and_both_values() {
    let bytes = encode_block(11, GEN, &GH, 0, &txns(1));
    let b = decode_block(&bytes)
        .unwrap()
        .with_txn_commitment(Some([0xab; 32]));
    let msg = b
        .verify(&bytes, &Expected::default())
        .unwrap_err()
        .to_string();
    let computed =
        data_encoding::HEXLOWER.encode(&decode_block(&bytes).unwrap().txn_commitment.unwrap());
    assert_eq!(
        msg,
        format!(
            "round 11: payset commitment `txn` (flat SHA-512/256 hash) mismatch: header {}, payset {computed}",
            "ab".repeat(32)
        )
    );
}

/// `decode_verified_block` gives what `decode_block` then `Block::verify` give: the same block
/// or the same error, over blocks of every commitment kind (flat, Merkle, `txn256`,
/// `txn512`), empty and non-empty, bare and wrapped, with every byte of a small block flipped,
/// and with the round or the network not the expected ones.
#[test]
fn decode_verified_block_is_decode_then_verify() {
    let both = |bytes: &[u8], expected: &Expected| {
        let fused = decode_verified_block(bytes, expected);
        let apart = decode_block(bytes)
            .map_err(VerifyError::from)
            .and_then(|b| b.verify(bytes, expected).map(|()| b));
        assert_eq!(fused, apart, "{expected:?}");
        // Split over a helper, one entry at a time: the same.
        #[cfg(feature = "parallel")]
        assert_eq!(
            decode_verify_split(bytes, Split::small(0, 1).for_verify(), expected).map(|(b, _)| b),
            fused,
            "{expected:?}"
        );
        fused.is_ok()
    };
    let mut blocks = vec![
        encode_block(9, GEN, &GH, 5, &txns(3)),
        encode_block(9, GEN, &GH, 5, &[]),
    ];
    for version in [11, 25, 26, 34, 41, 42] {
        for n in [0, 1, 4] {
            blocks.push(encode_block_with_protocol(
                9,
                GEN,
                &GH,
                5,
                &txns(n),
                version,
            ));
        }
    }
    // A bare block: the value of the wrapper's `block`.
    let wrapped = &blocks[0];
    let mut r = crate::codec::msgpack::Reader::new(wrapped);
    let mut bare = None;
    let Ok((crate::codec::msgpack::Token::Map(n), _)) = r.token() else {
        panic!("a map")
    };
    for _ in 0..n {
        let key = r.token().unwrap().0;
        let (s, e) = r.skip_span(1).unwrap();
        if key == crate::codec::msgpack::Token::Str(b"block") {
            bare = Some(wrapped[s..e].to_vec());
        }
    }
    blocks.push(bare.expect("a block key"));
    let right = Expected::round(9).with_genesis(GEN, GH);
    let mut passed = 0;
    for bytes in &blocks {
        passed += usize::from(both(bytes, &right));
        assert!(!both(bytes, &Expected::round(10)));
        assert!(!both(bytes, &Expected::default().with_genesis("other", GH)));
    }
    assert_eq!(passed, blocks.len());
    // A flat block, and a v42 block of four entries (three trees).
    for small in [&blocks[0], &blocks[blocks.len() - 2]] {
        let mut refused = 0;
        for at in 0..small.len() {
            let mut bad = small.clone();
            bad[at] ^= 0x01;
            refused += usize::from(!both(&bad, &Expected::default()));
        }
        // Most flips are refused (a decode error or a mismatch); those in the certificate are
        // not.
        assert!(refused > small.len() / 2, "{refused} of {}", small.len());
    }
}
