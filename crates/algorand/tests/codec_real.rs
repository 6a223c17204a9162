//! The codec and the block sources against real Algorand data (../shared/data, see its
//! SOURCES.md): the indexer's 30 txid vectors, every transaction and every payset commitment of
//! the private dataset2 network, and the betanet block. Data missing: the tests that read it are ignored (they fail under
//! TXGATE_REQUIRE_DATA=1; see txgate-testkit's "Real data").

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use txgate_algorand::Txid;
use txgate_algorand::codec::{
    Block, DecodeError, PaysetError, decode_block, decode_txn_message, payset_entry_txid,
    payset_offsets,
};
use txgate_algorand::source::{BlockSource, SourceError};
use txgate_testkit::data_file;

const DATASET2: &str = "algorand-sdk-testing/private_blocks/dataset2.tar.bz2";
const JSONL: &str = "derived/algorand_private_dataset2_txns.jsonl";
const VECTORS: &str = "algorand-indexer/txn_vectors";
const BETANET: &str = "algorand-indexer/blocks/stpf_block_high_index.block";

/// 32 address bytes of an Algorand address (base32 of pk || 4-byte checksum).
fn address(s: &str) -> [u8; 32] {
    let b = data_encoding::BASE32_NOPAD
        .decode(s.as_bytes())
        .expect("address base32");
    assert_eq!(b.len(), 36, "{s}");
    b[..32].try_into().unwrap()
}

fn b64_32(s: &str) -> [u8; 32] {
    let b = data_encoding::BASE64.decode(s.as_bytes()).expect("base64");
    b.try_into().expect("32 bytes")
}

/// All dataset2 blocks as (raw name, bytes), in round order.
fn dataset2_raw() -> Vec<(u64, Vec<u8>)> {
    let path = data_file(DATASET2);
    BlockSource::open(&path)
        .expect("open dataset2")
        .map(|r| {
            let r = r.expect("read dataset2 entry");
            (r.round.expect("entries are named by round"), r.bytes)
        })
        .collect()
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn all_indexer_vectors_give_their_txids_and_fields() {
    let dir = data_file(VECTORS);
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txn"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 30);
    let mut with_apps = 0;
    for txn_path in &names {
        let bytes = std::fs::read(txn_path).unwrap();
        let response: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(txn_path.with_extension("response")).unwrap(),
        )
        .unwrap();
        // A .txn file is one SignedTxnInBlock map; its txid is over its `txn` value as is, which
        // is what decoding it as a one-transaction message computes.
        let txns =
            decode_txn_message(&bytes).unwrap_or_else(|e| panic!("{}: {e}", txn_path.display()));
        assert_eq!(txns.len(), 1);
        let t = &txns[0];
        let name = txn_path.display();
        assert_eq!(
            t.txid.to_string(),
            response["id"].as_str().unwrap(),
            "{name}"
        );
        assert_eq!(
            t.tx_type,
            response["tx-type"].as_str().unwrap().as_bytes(),
            "{name}"
        );
        assert_eq!(
            t.sender,
            address(response["sender"].as_str().unwrap()),
            "{name}"
        );
        assert_eq!(
            t.first_valid,
            response["first-valid"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            t.last_valid,
            response["last-valid"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(t.group, response["group"].as_str().map(b64_32), "{name}");
        // App ids from the indexer's JSON: application-id, foreign-apps, access[].application-id.
        let mut want: Vec<u64> = Vec::new();
        if let Some(app) = response.get("application-transaction") {
            let ids = std::iter::once(app["application-id"].as_u64().unwrap_or(0))
                .chain(
                    app["foreign-apps"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|v| v.as_u64().unwrap()),
                )
                .chain(
                    app["access"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|r| r.get("application-id").and_then(|v| v.as_u64())),
                );
            for id in ids {
                if id != 0 && !want.contains(&id) {
                    want.push(id);
                }
            }
        }
        with_apps += usize::from(!want.is_empty());
        assert_eq!(t.app_ids, want, "{name}");
    }
    // Not vacuous: many vectors carry app ids (calls, foreign apps, access lists).
    assert!(with_apps >= 10, "{with_apps}");
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn access_list_app_references_are_app_ids() {
    let dir = data_file(VECTORS);
    let t = &decode_txn_message(&std::fs::read(dir.join("txnaccess_app.txn")).unwrap()).unwrap()[0];
    // The indexer's JSON: application-id 123, access [{application-id: 456}].
    assert_eq!(t.app_ids, vec![123, 456]);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn every_dataset2_txn_matches_the_jsonl() {
    let (blocks, jsonl) = (dataset2_raw(), data_file(JSONL));
    assert_eq!(blocks.len(), 378);
    assert_eq!(blocks.first().map(|b| b.0), Some(0));
    assert_eq!(blocks.last().map(|b| b.0), Some(377));
    let mut ours = BTreeMap::new();
    for (round, bytes) in &blocks {
        let block = decode_block(bytes).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(block.round, *round);
        assert_eq!(block.genesis_id, b"tbd-v1");
        assert_eq!(
            block.genesis_hash,
            b64_32("7iETbAkbHk1hPv6SM7X9/PcKw9uZbBmEgjJmUjLK+tQ=")
        );
        for (intra, t) in block.txns.into_iter().enumerate() {
            ours.insert((*round, intra as u64), (block.timestamp, t));
        }
    }
    let text = std::fs::read_to_string(jsonl).unwrap();
    let mut seen = 0;
    let mut app_checked = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let key = (v["round"].as_u64().unwrap(), v["intra"].as_u64().unwrap());
        let (ts, t) = ours
            .get(&key)
            .unwrap_or_else(|| panic!("{key:?} not decoded"));
        assert_eq!(t.txid.to_string(), v["txid"].as_str().unwrap(), "{key:?}");
        assert_eq!(t.tx_type, v["type"].as_str().unwrap().as_bytes(), "{key:?}");
        assert_eq!(t.sender, address(v["sender"].as_str().unwrap()), "{key:?}");
        assert_eq!(t.first_valid, v["first_valid"].as_u64().unwrap(), "{key:?}");
        assert_eq!(t.last_valid, v["last_valid"].as_u64().unwrap(), "{key:?}");
        assert_eq!(*ts, v["timestamp"].as_i64().unwrap(), "{key:?}");
        assert_eq!(
            t.group,
            v.get("group").and_then(|g| g.as_str()).map(b64_32),
            "{key:?}"
        );
        if let Some(app) = v.get("app_id").and_then(|a| a.as_u64()) {
            // The jsonl's app_id is the call's `apid`: first in app_ids, or (0 = creation)
            // dropped, leaving only foreign apps if any.
            if app == 0 {
                assert!(!t.app_ids.contains(&0), "{key:?}");
            } else {
                assert_eq!(t.app_ids.first(), Some(&app), "{key:?}");
                app_checked += 1;
            }
        }
        seen += 1;
    }
    assert_eq!(seen, 164);
    assert_eq!(
        ours.len(),
        164,
        "the blocks hold exactly the jsonl's transactions"
    );
    assert_eq!(
        app_checked,
        87 - 11,
        "76 calls to existing apps (SOURCES.md)"
    );
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn every_nonempty_dataset2_payset_matches_its_commitment() {
    let blocks = dataset2_raw();
    let mut nonempty = 0;
    for (round, bytes) in &blocks {
        let block = decode_block(bytes).unwrap();
        if block.txns.is_empty() {
            continue;
        }
        nonempty += 1;
        block
            .verify_payset(bytes)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
    }
    assert_eq!(nonempty, 45);
}

/// The ledger's compact txid index points at payset entries by byte offset and verifies a
/// match by the txid of that one entry: on every real block, the offsets are one per txn and
/// each entry's txid is the one the whole-block decode gives (entries with and without `hgi`).
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn every_dataset2_entry_txid_matches_the_block_decode() {
    let blocks = dataset2_raw();
    let mut entries = 0;
    for (round, bytes) in &blocks {
        let block = decode_block(bytes).unwrap();
        let offsets = payset_offsets(bytes).unwrap();
        assert_eq!(offsets.len(), block.txns.len(), "round {round}");
        assert_eq!(
            block.entry_offsets, offsets,
            "round {round}: the decoder's offsets"
        );
        assert!(offsets.windows(2).all(|w| w[0] < w[1]), "round {round}");
        for (txn, &offset) in block.txns.iter().zip(&offsets) {
            let txid =
                payset_entry_txid(bytes, offset, &block.genesis_id, &block.genesis_hash).unwrap();
            assert_eq!(txid, txn.txid, "round {round} at byte {offset}");
            entries += 1;
        }
        // An offset inside an entry is not an entry.
        if let Some(&first) = offsets.first() {
            assert!(
                payset_entry_txid(bytes, first + 1, &block.genesis_id, &block.genesis_hash)
                    .is_err()
            );
        }
    }
    assert_eq!(entries, 164);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn empty_dataset2_paysets_commit_to_nil() {
    let blocks = dataset2_raw();
    let mut checked = 0;
    for (round, bytes) in &blocks {
        let block = decode_block(bytes).unwrap();
        if block.txns.is_empty() && block.txn_commitment.is_some() {
            block
                .verify_payset(bytes)
                .unwrap_or_else(|e| panic!("round {round}: {e}"));
            checked += 1;
        }
    }
    assert_eq!(checked, 378 - 45, "every empty block carries a commitment");
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_tampered_payset_fails_its_commitment() {
    let blocks = dataset2_raw();
    let (_, bytes) = blocks
        .iter()
        .find(|(_, b)| !decode_block(b).unwrap().txns.is_empty())
        .unwrap();
    let block = decode_block(bytes).unwrap();
    // Flip the last byte of the block's first note (or any txn byte): still decodes, no longer
    // matches. The `fee` field's value follows the `fee` key.
    let at = bytes.windows(4).position(|w| w == b"\xa3fee").unwrap() + 5;
    let mut tampered = bytes.clone();
    tampered[at] ^= 1;
    let other = decode_block(&tampered).unwrap();
    assert_ne!(other.txns[0].txid, block.txns[0].txid);
    assert!(matches!(
        other.verify_payset(&tampered),
        Err(PaysetError::Mismatch { .. })
    ));
    // And bytes of another round are refused.
    let (_, b0) = &blocks[0];
    assert!(matches!(
        block.verify_payset(b0),
        Err(PaysetError::OtherBlock { .. })
    ));
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn betanet_block_decodes() {
    let path = data_file(BETANET);
    let bytes = std::fs::read(path).unwrap();
    let block = decode_block(&bytes).unwrap();
    assert_eq!(block.round, 20028291);
    assert_eq!(block.genesis_id, b"betanet-v1.0");
    assert_eq!(
        block.genesis_hash,
        b64_32("mFgazF+2uRS1tMiL9dsj01hJGySEmPN28B/TjjvpVW0=")
    );
    assert_eq!(block.timestamp, 1660957596);
    assert_eq!(block.txns.len(), 1);
    assert_eq!(*block.txns[0].tx_type, *b"stpf");
    // SOURCES.md: with `gh` re-inserted from the header (go-algorand DecodeSignedTxn).
    let want: Txid = "3QOJMVZNYEHRE7VTUKQXWKOANBNEL5ZCBXMZFQORDXCODIHOXG2Q"
        .parse()
        .unwrap();
    assert_eq!(block.txns[0].txid, want);
    // The payset was trimmed to one transaction, so the commitment cannot match.
    assert!(matches!(
        block.verify_payset(&bytes),
        Err(PaysetError::Mismatch { .. })
    ));
}

/// Unpacks `archive` (tar.bz2) into `dir` with the tar crate directly (not through BlockSource).
fn unpack(archive: &Path, dir: &Path) {
    let f = std::fs::File::open(archive).unwrap();
    tar::Archive::new(bzip2::read::MultiBzDecoder::new(f))
        .unpack(dir)
        .unwrap();
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_directory_unpacked_from_the_archive_gives_the_same_blocks() {
    let path = data_file(DATASET2);
    let tmp = tempfile::tempdir().unwrap();
    unpack(&path, tmp.path());
    let blocks_dir = tmp.path().join("blocks");
    unpack(&tmp.path().join("blocktars/0_377.tar.bz2"), &blocks_dir);
    let from_dir: Vec<(Option<u64>, Vec<u8>)> = BlockSource::open(&blocks_dir)
        .unwrap()
        .map(|r| r.map(|b| (b.round, b.bytes)).unwrap())
        .collect();
    let from_archive: Vec<(Option<u64>, Vec<u8>)> = BlockSource::open(&path)
        .unwrap()
        .map(|r| r.map(|b| (b.round, b.bytes)).unwrap())
        .collect();
    assert_eq!(from_dir.len(), 378);
    assert_eq!(from_dir, from_archive);
    let rounds: Vec<u64> = from_dir.iter().map(|b| b.0.unwrap()).collect();
    assert_eq!(
        rounds,
        (0..=377).collect::<Vec<_>>(),
        "round order, not name order"
    );
    // A single file is one block, named by its path.
    let one: Vec<_> = BlockSource::open(blocks_dir.join("135")).unwrap().collect();
    assert_eq!(one.len(), 1);
    let one = one.into_iter().next().unwrap().unwrap();
    assert_eq!(one.round, Some(135));
    assert_eq!(one.bytes, from_dir[135].1);
    // The names say where a block came from.
    let named = BlockSource::open(&path).unwrap().nth(7).unwrap().unwrap();
    assert_eq!(named.name, "blocktars/0_377.tar.bz2/7");
}

#[test]
fn missing_and_corrupt_sources_name_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("no-such-blocks.tar.bz2");
    let err = BlockSource::open(&missing).unwrap_err();
    assert!(matches!(err, SourceError::Io { .. }));
    assert!(err.to_string().contains("no-such-blocks.tar.bz2"), "{err}");

    let garbage = tmp.path().join("garbage.tar.bz2");
    std::fs::write(&garbage, b"BZh91AY&SY this is not a bzip2 stream").unwrap();
    let err = BlockSource::open(&garbage)
        .unwrap()
        .find_map(Result::err)
        .expect("an error");
    assert!(err.to_string().contains("garbage.tar.bz2"), "{err}");
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_truncated_archive_names_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let path = data_file(DATASET2);
    let bytes = std::fs::read(path).unwrap();
    let cut = tmp.path().join("cut.tar.bz2");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let results: Vec<_> = BlockSource::open(&cut).unwrap().collect();
    let err = results
        .iter()
        .find_map(|r| r.as_ref().err())
        .expect("a truncated archive is an error");
    assert!(matches!(err, SourceError::Archive { .. }), "{err}");
    assert!(err.to_string().contains("cut.tar.bz2"), "{err}");
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn broken_blocks_are_typed_errors_with_the_round() {
    let blocks = dataset2_raw();
    let (round, bytes) = blocks.iter().find(|(r, _)| *r == 6).unwrap();
    let block: Block = decode_block(bytes).unwrap();
    assert!(block.txns.len() > 5);
    // Truncated inside the payset: the round (read before `txns`) is in the error.
    let err = decode_block(&bytes[..bytes.len() - 40]).unwrap_err();
    assert!(
        matches!(err, DecodeError::Truncated { round: Some(6), .. }),
        "{err}"
    );
    assert!(err.to_string().starts_with("round 6: "), "{err}");
    // Trailing garbage after the block.
    let mut long = bytes.clone();
    long.push(0);
    let err = decode_block(&long).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::TrailingBytes {
                round: Some(6),
                len: 1,
                ..
            }
        ),
        "{err}"
    );
    // A wrong type: `rnd` as a str.
    let at = bytes.windows(4).position(|w| w == b"\xa3rnd").unwrap() + 4;
    let mut wrong = bytes.clone();
    wrong[at] = 0xa0; // the fixint 6 becomes the empty fixstr
    let err = decode_block(&wrong).unwrap_err();
    assert!(
        matches!(err, DecodeError::WrongType { field: "rnd", .. }),
        "{err} (round {round})"
    );
}

/// A few real blocks to mutate: an empty one, a payment one, an app one, the betanet one.
fn corpus() -> &'static [Vec<u8>] {
    static CORPUS: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    CORPUS.get_or_init(load_corpus)
}

fn load_corpus() -> Vec<Vec<u8>> {
    let blocks = dataset2_raw();
    let mut out: Vec<Vec<u8>> = [0, 2, 4, 6, 10]
        .iter()
        .map(|&r| blocks[r].1.clone())
        .collect();
    out.push(std::fs::read(data_file(BETANET)).unwrap());
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Truncations and bit flips of real blocks, and random bytes: Ok or Err, never a panic; an
    /// Ok from a mutated block is still a self-consistent block.
    #[test]
    #[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
    fn mutated_real_blocks_never_panic(
        pick in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 0..4),
        random in prop::collection::vec(any::<u8>(), 0..256),
    ) {
        let corpus = corpus();
        let _ = decode_block(&random);
        let _ = decode_txn_message(&random);
        let original = pick.get(corpus);
        let truncated = &original[..cut.index(original.len())];
        prop_assert!(decode_block(truncated).is_err(), "a strict prefix of a block is not a block");
        let mut flipped = original.clone();
        for (at, bit) in &flips {
            let len = flipped.len();
            flipped[at.index(len)] ^= 1 << bit;
        }
        if let Ok(block) = decode_block(&flipped) {
            let _ = block.verify_payset(&flipped);
        }
        let _ = decode_txn_message(&flipped);
    }
}
