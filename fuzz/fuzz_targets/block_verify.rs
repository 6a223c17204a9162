//! Block verification (`Block::verify`) under two inputs:
//! - arbitrary bytes: decode, then verify against nothing expected and against the decoded
//!   round: an error or success, never a panic, and a block that verifies verifies again;
//! - a valid synthetic block (flat, Merkle or with every commitment, by a selector byte) with
//!   bytes flipped at fuzzer-chosen offsets: either decoding or verification refuses it, or its
//!   txids and payset bytes are the original's (the flips fell outside what the commitments
//!   cover: the certificate and header fields the txids do not depend on).
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use txgate_algorand::codec::{Expected, decode_block, payset_commit_flat};
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

fuzz_target!(|input: Input<'_>| {
    match input {
        Input::Bytes(bytes) => {
            if let Ok(block) = decode_block(bytes) {
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
            let Ok(flipped) = decode_block(&bytes) else {
                return;
            };
            if flipped.verify(&bytes, &network).is_err() {
                return;
            }
            let ids = |b: &txgate_algorand::codec::Block| -> Vec<_> {
                b.txns.iter().map(|t| t.txid).collect()
            };
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
