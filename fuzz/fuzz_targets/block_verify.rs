//! Block verification (`Block::verify`) under two inputs:
//! - arbitrary bytes: decode, then verify against nothing expected and against the decoded
//!   round: an error or success, never a panic, and a block that verifies verifies again;
//! - a valid synthetic block (flat, Merkle or with every commitment, by a selector byte) with
//!   bytes flipped at fuzzer-chosen offsets: either decoding or verification refuses it, or its
//!   header's payset commitments are the original's and so are its txids and payset bytes (the
//!   flips fell outside what the commitments cover: the certificate and header fields the txids
//!   do not depend on; a flip may drop a commitment that the block's protocol no longer
//!   names, its `proto` key renamed, while another commitment stays and is checked), or no
//!   commitment is left and the block is an empty one (flips that rename both the `txns` key
//!   and the commitment keys: an empty payset's commitments are the absent all-zero values,
//!   and the decoder skips keys it does not know).
//!
//! In both, the one-walk `decode_verified_block` gives exactly what `decode_block` then
//! `Block::verify` give: the same block, or the same error; so does the payset decoded on the
//! calling thread and a helper, one or three entries claimed at a time
//! (`decode_verified_block_split`: the trees' leaves are computed by whichever thread decodes
//! an entry).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use txgate_algorand::codec::{
    Block, Expected, VerifyError, decode_block, decode_verified_block, decode_verified_block_split,
    payset_commit_flat,
};
use txgate_algorand::synth::{SynthTxn, encode_block, encode_block_with_protocol};

#[derive(Debug, Arbitrary)]
enum Input<'a> {
    Bytes(&'a [u8]),
    Flip {
        /// 0: no protocol (flat); else v25 (flat), v30 (Merkle), v38 (+ txn256), v42 (all).
        kind: u8,
        txns: u8,
        flips: Vec<(u16, u8, u8)>,
    },
}

const GEN: &str = "fuzznet-v1";
const GH: [u8; 32] = [7; 32];

fn block_of(kind: u8, n: u8) -> Vec<u8> {
    let txns: Vec<SynthTxn> = (0..n % 9)
        .map(|i| {
            let mut t = if i % 2 == 0 {
                SynthTxn::payment([i + 1; 32], 5, 1005)
            } else {
                SynthTxn::app_call([i + 1; 32], 5, 1005, vec![u64::from(i) + 40])
            };
            t.note = vec![i; usize::from(i)];
            t
        })
        .collect();
    match kind % 5 {
        0 => encode_block(12, GEN, &GH, 1_700_000_000, &txns),
        1 => encode_block_with_protocol(12, GEN, &GH, 1_700_000_000, &txns, 25),
        2 => encode_block_with_protocol(12, GEN, &GH, 1_700_000_000, &txns, 30),
        3 => encode_block_with_protocol(12, GEN, &GH, 1_700_000_000, &txns, 38),
        _ => encode_block_with_protocol(12, GEN, &GH, 1_700_000_000, &txns, 42),
    }
}

/// `decode_block` then `Block::verify`, the two-walk path `decode_verified_block` stands for.
fn two_walks(bytes: &[u8], expected: &Expected) -> Result<Block, VerifyError> {
    let block = decode_block(bytes)?;
    block.verify(bytes, expected)?;
    Ok(block)
}

/// The one-walk path, on one thread and split, equals the two-walk path on `bytes` against
/// `expected`.
fn same_as_two_walks(bytes: &[u8], expected: &Expected) {
    let want = two_walks(bytes, expected);
    assert_eq!(
        decode_verified_block(bytes, expected),
        want,
        "decode_verified_block differs from decode_block then verify"
    );
    for chunk in [1, 3] {
        assert_eq!(
            decode_verified_block_split(bytes, expected, 0, chunk),
            want,
            "the split decode for verification differs (chunk {chunk})"
        );
    }
}

fuzz_target!(|input: Input<'_>| {
    match input {
        Input::Bytes(bytes) => {
            same_as_two_walks(bytes, &Expected::default());
            same_as_two_walks(bytes, &Expected::default().allowing_uncommitted());
            same_as_two_walks(bytes, &Expected::round(12).with_genesis(GEN, GH));
            if let Ok(block) = decode_block(bytes) {
                same_as_two_walks(bytes, &Expected::round(block.round));
                let loose = block.verify(bytes, &Expected::default());
                let _ = block.verify(bytes, &Expected::default().allowing_uncommitted());
                if let Err(e) = &loose {
                    assert!(!e.to_string().is_empty());
                }
                let strict = block.verify(bytes, &Expected::round(block.round));
                assert_eq!(loose.is_ok(), strict.is_ok());
            }
        }
        Input::Flip { kind, txns, flips } => {
            let original = block_of(kind, txns);
            let block = decode_block(&original).expect("a synthetic block decodes");
            let network = Expected::round(12).with_genesis(GEN, GH);
            block
                .verify(&original, &network)
                .expect("a synthetic block verifies");
            let mut bytes = original.clone();
            for (at, bit, _) in &flips {
                let len = bytes.len();
                bytes[usize::from(*at) % len] ^= 1 << (bit % 8);
            }
            same_as_two_walks(&bytes, &network);
            same_as_two_walks(&bytes, &Expected::default());
            let Ok(flipped) = decode_block(&bytes) else {
                return;
            };
            if flipped.verify(&bytes, &network).is_err() {
                return;
            }
            let commitments = |b: &Block| {
                let zero = |c: &[u8]| c.iter().all(|&x| x == 0);
                (
                    b.txn_commitment.filter(|c| !zero(c)),
                    b.txn256_commitment.filter(|c| !zero(c)),
                    b.txn512_commitment.filter(|c| !zero(c)),
                )
            };
            let (now, was) = (commitments(&flipped), commitments(&block));
            // A commitment the flipped header still carries as it was (a flipped value, or one
            // that a renamed key brought in, would need a hash collision to verify).
            let kept = (now.0.is_some() && now.0 == was.0)
                || (now.1.is_some() && now.1 == was.1)
                || (now.2.is_some() && now.2 == was.2);
            if !kept {
                // No commitment left: only an empty payset verifies (its commitments are the
                // absent all-zero values).
                assert!(
                    flipped.txns.is_empty(),
                    "a block without commitments verified with a nonempty payset"
                );
                return;
            }
            let ids = |b: &Block| -> Vec<_> { b.txns.iter().map(|t| t.txid).collect() };
            assert_eq!(
                ids(&flipped),
                ids(&block),
                "an accepted flip changed a txid"
            );
            assert_eq!(
                payset_commit_flat(&bytes).ok(),
                payset_commit_flat(&original).ok(),
                "an accepted flip changed the payset"
            );
        }
    }
});
