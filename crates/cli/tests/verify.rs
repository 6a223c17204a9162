//! Every block is verified before its txids are used: a real dataset2 block with one bit of a
//! transaction flipped (it still decodes, to other txids) is refused by `txids` and by `replay`
//! from a file and from an archive, with exit 2 and one line naming the source, the round and
//! the commitment; the `--db` keeps the rounds before it and continues; nothing is left in a
//! private TMPDIR. A stand-in algod that answers every `GET /v2/blocks/{r}` with round 5 is
//! refused at the first round asked.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use common::{DATASET2, SMALL, assert_bad, assert_ok, command, replay_json};
use txgate_algorand::codec::decode_block;
use txgate_algorand::source::BlockSource;
use txgate_ledger::store::Ledger;
use txgate_testkit::algod::FakeAlgod;

const TOKEN: &str = "verify-test-token-91c2";

fn dataset2() -> BTreeMap<u64, Vec<u8>> {
    let path = txgate_testkit::data_file(DATASET2);
    BlockSource::open(&path)
        .unwrap()
        .map(|raw| {
            let raw = raw.unwrap();
            (raw.round.unwrap(), raw.bytes)
        })
        .collect()
}

/// Round 2 (dataset2's first block with transactions) with one bit of its first txn's `fee`
/// flipped: it decodes, to another first txid.
fn flipped_round_2(blocks: &BTreeMap<u64, Vec<u8>>) -> Vec<u8> {
    let bytes = &blocks[&2];
    let at = bytes.windows(4).position(|w| w == b"\xa3fee").unwrap() + 5;
    let mut flipped = bytes.clone();
    flipped[at] ^= 1;
    let (a, b) = (
        decode_block(bytes).unwrap(),
        decode_block(&flipped).unwrap(),
    );
    assert_eq!(a.round, 2);
    assert_ne!(a.txns[0].txid, b.txns[0].txid, "the flip changes a txid");
    flipped
}

/// `txgate args...` with TMPDIR set to `tmp`.
fn txgate_in(tmp: &Path, args: &[&str]) -> Output {
    command()
        .env("TMPDIR", tmp)
        .args(args)
        .output()
        .expect("run txgate")
}

fn assert_empty(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(left.is_empty(), "left in TMPDIR: {left:?}");
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_bit_flipped_block_file_is_refused_by_txids_and_replay() {
    let blocks = dataset2();
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let file = dir.path().join("2");
    std::fs::write(&file, flipped_round_2(&blocks)).unwrap();
    let file = file.to_str().unwrap();
    assert_bad(
        &txgate_in(&tmp, &["txids", "--blocks", file]),
        &[
            file,
            "fails verification",
            "round 2:",
            "payset commitment `txn`",
            "mismatch: header ",
        ],
    );
    // The unflipped block passes.
    std::fs::write(dir.path().join("2"), &blocks[&2]).unwrap();
    assert_ok(&txgate_in(&tmp, &["txids", "--blocks", file]));
    assert_empty(&tmp);
}

/// A tar of dataset2's rounds 0..=5, round 2 flipped when `flip`.
fn tar_of(blocks: &BTreeMap<u64, Vec<u8>>, out: &Path, flip: bool) {
    common::write_block_tar(
        out,
        (0..=5u64).map(|round| {
            let bytes = if flip && round == 2 {
                flipped_round_2(blocks)
            } else {
                blocks[&round].clone()
            };
            (round, bytes)
        }),
    );
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_bit_flipped_block_in_an_archive_stops_replay_and_the_db_continues() {
    let blocks = dataset2();
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let (bad, good) = (dir.path().join("bad.tar"), dir.path().join("good.tar"));
    tar_of(&blocks, &bad, true);
    tar_of(&blocks, &good, false);
    let db = dir.path().join("db");
    let db_s = db.to_str().unwrap();
    let mut args = vec!["replay", "--db", db_s, "--blocks", bad.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    assert_bad(
        &txgate_in(&tmp, &args),
        &[
            "blocks/2",
            "round 2:",
            "payset commitment `txn`",
            "nothing of it was written",
        ],
    );
    assert_empty(&tmp);
    {
        // Rounds 0 and 1 are in the db, which opens cleanly; round 2 is not.
        let ledger = Ledger::open(&db, Default::default()).unwrap();
        let open = ledger.open_report();
        assert_eq!((open.first, open.latest), (Some(0), Some(1)));
        assert!(open.rebuilt.is_empty());
        drop(ledger);
    }
    let report = replay_json(
        dir.path(),
        &["--db", db_s, "--blocks", good.to_str().unwrap()],
    );
    assert_eq!(report["ingest"]["rounds_skipped"], 2);
    assert_eq!(report["ingest"]["rounds_ingested"], 4);
    assert_eq!(report["ingest"]["latest_round"], 5);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn an_algod_answering_another_round_is_refused() {
    let blocks = dataset2();
    // Every round answers with round 5's block.
    let five = blocks[&5].clone();
    let served: BTreeMap<u64, Vec<u8>> = (0..=20).map(|r| (r, five.clone())).collect();
    let algod = FakeAlgod::start(served, TOKEN, 20, Duration::from_millis(200));
    let url = algod.url();
    let out = command()
        .args([
            "txids",
            "--algod",
            &url,
            "--algod-token",
            TOKEN,
            "--rounds",
            "3..=8",
        ])
        .output()
        .unwrap();
    assert_bad(&out, &["algod round 3", "round 5: expected round 3"]);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let mut args = vec![
        "replay",
        "--db",
        db.to_str().unwrap(),
        "--algod",
        &url,
        "--algod-token",
        TOKEN,
        "--rounds",
        "3..=8",
    ];
    args.extend_from_slice(SMALL);
    let out = command().args(&args).output().unwrap();
    assert_bad(&out, &["algod round 3", "round 5: expected round 3"]);
    // Nothing was ingested.
    let ledger = Ledger::open(&db, Default::default()).unwrap();
    let open = ledger.open_report();
    assert_eq!(open.latest, None);
    // The honest answer for round 5 alone passes.
    let out = command()
        .args([
            "txids",
            "--algod",
            &url,
            "--algod-token",
            TOKEN,
            "--rounds",
            "5..=5",
        ])
        .output()
        .unwrap();
    assert_ok(&out);
}
