//! Arbitrary bytes into txgate-algorand's decoders (blocks, transaction messages, the
//! payset check): an error or a value, never a panic; what decodes keeps the codec's promises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txgate_algorand::codec::{Txn, decode_block, decode_txn_message, payset_commit_flat};

fn check(t: &Txn) {
    // `type` is required and an empty value counts as absent.
    assert!(!t.tx_type.is_empty());
    // App ids: no creation id (0), no repeats.
    assert!(!t.app_ids.contains(&0));
    for (i, a) in t.app_ids.iter().enumerate() {
        assert!(!t.app_ids[..i].contains(a));
    }
}

fuzz_target!(|bytes: &[u8]| {
    if let Ok(block) = decode_block(bytes) {
        block.txns.iter().for_each(check);
        // A decodable block can always be located for its payset commitment.
        assert!(payset_commit_flat(bytes).is_ok());
        let _ = block.verify_payset(bytes);
        assert_eq!(decode_block(bytes).ok(), Some(block));
    } else {
        let _ = payset_commit_flat(bytes);
    }
    if let Ok(txns) = decode_txn_message(bytes) {
        assert!(!txns.is_empty());
        txns.iter().for_each(check);
    }
});
