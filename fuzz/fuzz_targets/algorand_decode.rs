//! Arbitrary bytes into txgate-algorand's decoders (blocks, transaction messages, the
//! payset check, the payset's app ids and gossip messages): an error or a value, never a panic;
//! what decodes keeps the codec's promises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txgate_algorand::codec::{
    Txn, decode_block, decode_block_split, decode_txn_message, gossip_messages, payset_app_ids,
    payset_commit_flat,
};

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
    let decoded = decode_block(bytes);
    // Decoded on two threads, even a payset of a few entries, one or three entries claimed at
    // a time: the same block or the same error.
    for chunk in [1, 3] {
        assert_eq!(decode_block_split(bytes, 0, chunk), decoded);
    }
    if let Ok(block) = decoded {
        block.txns.iter().for_each(check);
        // A decodable block can always be located for its payset commitment.
        assert!(payset_commit_flat(bytes).is_ok());
        let _ = block.verify_payset(bytes);
        // One app id per entry, the first of the txn's apps when not 0.
        let ids = payset_app_ids(bytes).expect("a decodable block gives its app ids");
        assert_eq!(ids.len(), block.txns.len());
        for (id, t) in ids.iter().zip(&block.txns) {
            assert!(*id == 0 || t.app_ids.first() == Some(id));
        }
        // The groups as gossip decode back to the block's txns, txids included.
        let messages = gossip_messages(bytes).expect("a decodable block gives its messages");
        let sent: Vec<Txn> = messages
            .iter()
            .flat_map(|m| decode_txn_message(m).expect("a gossip message decodes"))
            .collect();
        assert_eq!(sent, block.txns);
        assert_eq!(decode_block(bytes).ok(), Some(block));
    } else {
        let _ = payset_commit_flat(bytes);
        let _ = payset_app_ids(bytes);
        assert!(gossip_messages(bytes).is_err());
    }
    if let Ok(txns) = decode_txn_message(bytes) {
        assert!(!txns.is_empty());
        txns.iter().for_each(check);
    }
});
