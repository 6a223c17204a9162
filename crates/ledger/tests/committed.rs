//! The ledger as the handler's committed check (`impl CommittedTxids for Ledger`): a txid is
//! committed when its round is in the asked validity range and in the ledger's window; an empty
//! range, rounds outside the range, rounds that left the window or were pruned, and rounds the
//! ledger never had answer `false`.

use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ledger::Txid;
use txgate_ledger::handler::CommittedTxids;
use txgate_ledger::store::{Ledger, LedgerConfig, LedgerError};

const GEN: &str = "committed-v1";
const GH: [u8; 32] = [3; 32];

/// A payment from `sender` valid in rounds 1..=2000.
fn txn(sender: u8) -> SynthTxn {
    SynthTxn::payment([sender; 32], 1, 2000)
}

fn txid(sender: u8) -> Txid {
    txn(sender).txid(GEN, &GH)
}

/// Rounds `rounds` of one txn each: round r holds the payment of sender `r % 256`.
fn fill(ledger: &Ledger, rounds: std::ops::RangeInclusive<u64>) {
    for r in rounds {
        let raw = encode_block(r, GEN, &GH, 0, &[txn((r % 256) as u8)]);
        assert_eq!(ledger.add_block(&raw).unwrap(), r);
    }
}

#[test]
fn committed_in_the_range_and_the_window_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = LedgerConfig::default().with_max_txn_life(10);
    let ledger = Ledger::open(dir.path(), config).unwrap();
    let check: &dyn CommittedTxids = &ledger;
    // Empty ledger: nothing is committed.
    assert!(!check.is_committed(&txid(20), 0, u64::MAX));
    fill(&ledger, 1..=20);
    // The window is rounds 10..=20. Round 20 holds sender 20's payment.
    assert!(check.is_committed(&txid(20), 20, 20));
    assert!(check.is_committed(&txid(20), 1, 2000));
    assert!(check.is_committed(&txid(15), 15, 15));
    assert!(
        check.is_committed(&txid(10), 10, 30),
        "the window's oldest round"
    );
    // Outside the validity range: just before, just after.
    assert!(!check.is_committed(&txid(15), 16, 2000));
    assert!(!check.is_committed(&txid(15), 1, 14));
    // first > last: an empty range, even around the round that holds it.
    assert!(!check.is_committed(&txid(15), 16, 15));
    assert!(!check.is_committed(&txid(15), 15, 14));
    // Round 9 is kept (archival) but before the window: not searched.
    assert_eq!(
        ledger.lookup_txid(&txid(9), 9).unwrap().map(|r| r.round),
        Some(9)
    );
    assert!(!check.is_committed(&txid(9), 1, 2000));
    // A txid in no block.
    assert!(!check.is_committed(&txid(200), 0, u64::MAX));
    // Rounds after the latest are not errors: nothing there.
    assert!(!check.is_committed(&txid(20), 21, u64::MAX));
}

#[test]
fn pruned_rounds_are_not_committed() {
    let dir = tempfile::tempdir().unwrap();
    let config = LedgerConfig::default()
        .with_max_txn_life(10)
        .with_archival(false);
    let ledger = Ledger::open(dir.path(), config).unwrap();
    fill(&ledger, 1..=30);
    // Rounds 1..=19 were pruned; 20..=30 remain.
    assert_eq!(ledger.first(), Some(20));
    assert!(matches!(
        ledger.lookup_txid(&txid(5), 5),
        Err(LedgerError::NotKept {
            round: 5,
            first: 20
        })
    ));
    assert!(!ledger.is_committed(&txid(5), 1, 2000));
    assert!(!ledger.is_committed(&txid(19), 19, 19));
    assert!(ledger.is_committed(&txid(20), 19, 21));
    assert!(ledger.is_committed(&txid(30), 30, 30));
}
