//! The ledger verifies every block before anything is computed or written: a block whose payset
//! does not match its header (a real dataset2 block with one bit of a transaction flipped, a
//! synthetic Merkle block with a changed root) or that carries no commitment is refused with
//! `LedgerError::Verify` naming the round, and the ledger is as before (same latest round, no
//! row of the round, reopen clean). `add_verified_block` is the explicit way past the check.

use txgate_algorand::codec::{Commitment, Expected, VerifyError, decode_block};
use txgate_algorand::source::BlockSource;
use txgate_algorand::synth::{SynthTxn, encode_block, encode_block_with_protocol};
use txgate_ledger::store::{Ledger, LedgerConfig, LedgerError, VerifiedBlock};
use txgate_testkit::data_file;

const DATASET2: &str = "algorand-sdk-testing/private_blocks/dataset2.tar.bz2";
const GEN: &str = "verify-v1";
const GH: [u8; 32] = [5; 32];

fn txns(round: u64) -> Vec<SynthTxn> {
    (0..4)
        .map(|i| SynthTxn {
            note: format!("{round}/{i}").into_bytes(),
            ..SynthTxn::payment([i + 1; 32], round, round + 1000)
        })
        .collect()
}

fn assert_refused(
    ledger: &Ledger,
    err: LedgerError,
    round: u64,
    latest: Option<u64>,
) -> VerifyError {
    let LedgerError::Verify { round: r, source } = err else {
        panic!("not a verification error: {err:?}");
    };
    assert_eq!(r, round);
    assert_eq!(
        ledger.latest(),
        latest,
        "nothing of round {round} was written"
    );
    assert!(matches!(
        ledger.block(round),
        Err(LedgerError::BeyondLatest { .. })
    ));
    source
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_bit_flipped_real_block_is_refused_and_nothing_is_written() {
    let path = data_file(DATASET2);
    let blocks: Vec<Vec<u8>> = BlockSource::open(&path)
        .unwrap()
        .take(4)
        .map(|r| r.unwrap().bytes)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    {
        let ledger = Ledger::open(dir.path(), LedgerConfig::default()).unwrap();
        for raw in &blocks[..2] {
            ledger.add_block(raw).unwrap();
        }
        // Round 2 with one bit of its first txn's `fee` flipped: it decodes, to other txids.
        let at = blocks[2].windows(4).position(|w| w == b"\xa3fee").unwrap() + 5;
        let mut flipped = blocks[2].clone();
        flipped[at] ^= 1;
        let damaged = decode_block(&flipped).unwrap();
        assert_ne!(
            damaged.txns[0].txid,
            decode_block(&blocks[2]).unwrap().txns[0].txid
        );
        let e = ledger.add_block(&flipped).unwrap_err();
        let source = assert_refused(&ledger, e, 2, Some(1));
        assert!(matches!(
            source,
            VerifyError::Mismatch {
                round: 2,
                commitment: Commitment::Flat,
                ..
            }
        ));
        // Its txids are nowhere.
        assert_eq!(
            ledger.find_txid(&damaged.txns[0].txid, 0..=5).unwrap(),
            None
        );
        let e = ledger.add_decoded_block(&damaged, &flipped).unwrap_err();
        assert_refused(&ledger, e, 2, Some(1));
        // The undamaged round goes in after it.
        ledger.add_block(&blocks[2]).unwrap();
    }
    let ledger = Ledger::open(dir.path(), LedgerConfig::default()).unwrap();
    let open = ledger.open_report();
    assert_eq!((open.first, open.latest), (Some(0), Some(2)));
    assert!(open.rebuilt.is_empty());
    ledger.add_block(&blocks[3]).unwrap();
}

#[test]
fn every_commitment_kind_is_checked_and_uncommitted_blocks_need_the_opt_out() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path(), LedgerConfig::default()).unwrap();
    // Rounds 1..=4: flat (none), v25 flat, v30 Merkle, v42 all three: each verifies.
    ledger
        .add_block(&encode_block(1, GEN, &GH, 0, &txns(1)))
        .unwrap();
    for (round, version) in [(2, 25), (3, 30), (4, 42)] {
        let raw = encode_block_with_protocol(round, GEN, &GH, 0, &txns(round), version);
        ledger.add_block(&raw).unwrap();
    }
    // A v42 block whose header's `txn512` does not match: refused.
    let raw = encode_block_with_protocol(5, GEN, &GH, 0, &txns(5), 42);
    let mut block = decode_block(&raw).unwrap();
    block.txn512_commitment.as_mut().unwrap()[0] ^= 1;
    let e = ledger.add_decoded_block(&block, &raw).unwrap_err();
    let source = assert_refused(&ledger, e, 5, Some(4));
    assert!(matches!(
        source,
        VerifyError::Mismatch {
            commitment: Commitment::Sha512,
            ..
        }
    ));
    // No commitment at all: refused, unless the caller says so explicitly.
    let uncommitted = decode_block(&raw)
        .unwrap()
        .with_txn_commitment(None)
        .with_vector_commitments(None, None)
        .with_protocol("future");
    let e = ledger.add_decoded_block(&uncommitted, &raw).unwrap_err();
    let source = assert_refused(&ledger, e, 5, Some(4));
    assert_eq!(source, VerifyError::NoCommitment { round: 5, txns: 4 });
    assert!(VerifiedBlock::verify(&uncommitted, &raw, &Expected::default()).is_err());
    let opted = VerifiedBlock::verify(
        &uncommitted,
        &raw,
        &Expected::round(5).allowing_uncommitted(),
    )
    .unwrap();
    assert_eq!(ledger.add_verified_block(&opted).unwrap(), 5);
    // A verified block still has to be the next round of the ledger's network.
    let raw6 = encode_block(7, GEN, &GH, 0, &txns(7));
    let b6 = decode_block(&raw6).unwrap();
    let v = VerifiedBlock::assume_verified(&b6, &raw6);
    assert!(matches!(
        ledger.add_verified_block(&v),
        Err(LedgerError::OutOfOrder {
            expected: 6,
            got: 7
        })
    ));
    let other = encode_block(6, "other-v1", &GH, 0, &txns(6));
    let ob = decode_block(&other).unwrap();
    assert!(matches!(
        ledger.add_verified_block(&VerifiedBlock::assume_verified(&ob, &other)),
        Err(LedgerError::OtherNetwork { .. })
    ));
    let found = ledger
        .find_txid(&decode_block(&raw).unwrap().txns[0].txid, 0..=6)
        .unwrap();
    assert_eq!(found.map(|r| r.round), Some(5));
}
