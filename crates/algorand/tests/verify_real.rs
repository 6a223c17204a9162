//! Block verification against real Algorand blocks (../shared/data, see its SOURCES.md): every
//! dataset2 block passes (flat commitments, protocol `future` read from the header), the
//! betanet block (protocol v34, Merkle `txn` and `txn256`, payset trimmed) is refused, and every
//! single-bit flip of every non-empty dataset2 block is either refused (by decoding or by
//! verification) or lies outside what the commitments and the expected network cover, with
//! the txids unchanged. Data missing: the tests are ignored (`cfg(txgate_no_data)`), and fail
//! under `TXGATE_REQUIRE_DATA=1`.

use txgate_algorand::Txid;
use txgate_algorand::codec::{
    Commitment, Expected, VerifyError, decode_block, payset_commit_flat, payset_offsets,
};
use txgate_algorand::source::BlockSource;
use txgate_testkit::data_file;

const DATASET2: &str = "algorand-sdk-testing/private_blocks/dataset2.tar.bz2";
const BETANET: &str = "algorand-indexer/blocks/stpf_block_high_index.block";

fn dataset2() -> Vec<(u64, Vec<u8>)> {
    BlockSource::open(data_file(DATASET2))
        .unwrap()
        .map(|r| {
            let r = r.unwrap();
            (r.round.unwrap(), r.bytes)
        })
        .collect()
}

/// The network of dataset2, from its genesis block (round 0).
fn network(blocks: &[(u64, Vec<u8>)]) -> Expected {
    let b0 = decode_block(&blocks[0].1).unwrap();
    assert_eq!(b0.genesis_id, b"tbd-v1");
    Expected::default().with_genesis(b0.genesis_id, b0.genesis_hash)
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn every_dataset2_block_verifies_and_another_round_or_network_is_refused() {
    let blocks = dataset2();
    assert_eq!(blocks.len(), 378);
    let net = network(&blocks);
    for (round, bytes) in &blocks {
        let block = decode_block(bytes).unwrap();
        assert_eq!(block.protocol, b"future", "round {round}");
        block
            .verify(bytes, &net.clone().with_round(Some(*round)))
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(
            block.verify(bytes, &Expected::round(round + 1)),
            Err(VerifyError::Round {
                expected: round + 1,
                found: *round
            })
        );
        assert!(matches!(
            block.verify(
                bytes,
                &Expected::default().with_genesis("tbd-v2", block.genesis_hash)
            ),
            Err(VerifyError::GenesisId { .. })
        ));
    }
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn the_trimmed_betanet_block_is_refused_by_its_merkle_commitment() {
    let path = data_file(BETANET);
    let bytes = std::fs::read(path).unwrap();
    let block = decode_block(&bytes).unwrap();
    // Protocol v34: Merkle `txn` and SHA-256 `txn256`, both present.
    assert_eq!(
        block.protocol,
        b"https://github.com/algorandfoundation/specs/tree/2dd5435993f6f6d65691140f592ebca5ef19ffbd"
    );
    assert!(block.txn_commitment.is_some() && block.txn256_commitment.is_some());
    assert_eq!(block.txn512_commitment, None);
    match block.verify(&bytes, &Expected::round(20028291)) {
        Err(VerifyError::Mismatch {
            round: 20028291,
            commitment: Commitment::Merkle,
            header: Some(h),
            computed: Some(c),
        }) => {
            assert_eq!(h, block.txn_commitment.unwrap().to_vec());
            assert_ne!(h, c);
        }
        other => panic!("{other:?}"),
    }
    // Without the `txn` field, the SHA-256 one refuses it too.
    let mut no_txn = block.clone();
    no_txn.txn_commitment = None;
    assert!(matches!(
        no_txn.verify(&bytes, &Expected::default()),
        Err(VerifyError::Mismatch {
            commitment: Commitment::Merkle,
            header: None,
            ..
        })
    ));
    let mut only_256 = block.clone().with_protocol("future");
    only_256.txn_commitment = None;
    let e = only_256.verify(&bytes, &Expected::default());
    assert!(
        matches!(
            e,
            Err(VerifyError::Mismatch {
                commitment: Commitment::Merkle,
                ..
            })
        ),
        "{e:?}"
    );
}

/// Where the payset's bytes are in `bytes` (its first entry to the end of its last).
fn payset_span(bytes: &[u8]) -> std::ops::Range<usize> {
    let offsets = payset_offsets(bytes).unwrap();
    let mut last = &bytes[*offsets.last().unwrap()..];
    let before = last.len();
    rmpv::decode::read_value(&mut last).unwrap();
    // The array header sits just before the first entry (at most 5 bytes).
    offsets[0].saturating_sub(5)..offsets.last().unwrap() + (before - last.len())
}

/// Every single-bit flip of every non-empty dataset2 block (45 blocks, 106,437 bytes, 851,496
/// flips): refused, or outside the payset with every txid and the flat commitment unchanged.
/// Both sides must occur: flips inside the payset are all refused, and some flips (in the
/// certificate) are accepted.
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn every_bit_flip_of_every_nonempty_dataset2_block_is_refused_or_harmless() {
    let blocks = dataset2();
    let net = network(&blocks);
    let nonempty: Vec<&(u64, Vec<u8>)> = blocks
        .iter()
        .filter(|(_, b)| !decode_block(b).unwrap().txns.is_empty())
        .collect();
    assert_eq!(nonempty.len(), 45);
    let totals = std::thread::scope(|s| {
        let workers: Vec<_> = nonempty
            .chunks(nonempty.len().div_ceil(2))
            .map(|chunk| {
                let net = net.clone();
                s.spawn(move || {
                    let mut t = [0u64; 4]; // decode refused, verify refused, accepted, payset flips
                    for (round, bytes) in chunk {
                        let original = decode_block(bytes).unwrap();
                        let ids: Vec<Txid> = original.txns.iter().map(|t| t.txid).collect();
                        let flat = payset_commit_flat(bytes).unwrap();
                        let span = payset_span(bytes);
                        let expected = net.clone().with_round(Some(*round));
                        let mut flipped = bytes.clone();
                        for at in 0..bytes.len() {
                            for bit in 0..8 {
                                flipped[at] ^= 1 << bit;
                                let inside = span.contains(&at);
                                t[3] += u64::from(inside);
                                match decode_block(&flipped) {
                                    Err(_) => t[0] += 1,
                                    Ok(b) => match b.verify(&flipped, &expected) {
                                        Err(_) => t[1] += 1,
                                        Ok(()) => {
                                            t[2] += 1;
                                            assert!(!inside, "round {round}: byte {at} bit {bit}");
                                            let got: Vec<Txid> =
                                                b.txns.iter().map(|t| t.txid).collect();
                                            assert_eq!(got, ids, "round {round}: byte {at}");
                                            assert_eq!(
                                                payset_commit_flat(&flipped).unwrap(),
                                                flat,
                                                "round {round}: byte {at}"
                                            );
                                        }
                                    },
                                }
                                flipped[at] ^= 1 << bit;
                            }
                        }
                    }
                    t
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .fold([0u64; 4], |a, b| {
                [a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3]]
            })
    });
    let [decode_refused, verify_refused, accepted, in_payset] = totals;
    eprintln!(
        "flips: {} decode refused, {verify_refused} verify refused, {accepted} accepted, {in_payset} in the payset",
        decode_refused
    );
    assert_eq!(decode_refused + verify_refused + accepted, 851_496);
    assert!(verify_refused > 0 && accepted > 0 && in_payset > 0);
}
