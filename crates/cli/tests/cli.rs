//! Integration tests that run the `txgate` binary: known answers for `limit`, dataset2 through
//! `txids` and `replay`, the built-in workload, `--db` continuation, and every kind of bad input
//! (exit status 2, a one-line message naming the file, line or round, no panic).

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{DATASET2, DATASET2_JSONL, SMALL, assert_bad, assert_ok, replay_json, txgate};
use serde_json::Value;

/// Every run of the traffic phase accounts for every message.
fn assert_traffic_adds_up(report: &Value) {
    let t = &report["traffic"];
    for run in [&t["with_limiter"], &t["without_limiter"]] {
        if run.is_null() {
            continue;
        }
        let sum: u64 = [
            "admitted",
            "duplicate",
            "decode_error",
            "group_too_large",
            "already_committed",
            "rate_limited",
            "backlog_full",
        ]
        .iter()
        .map(|k| run[*k].as_u64().unwrap())
        .sum();
        assert_eq!(sum, run["offered"].as_u64().unwrap());
        assert_eq!(run["offered"], t["messages"]);
        assert_eq!(run["pool_accepted"], run["admitted"]);
    }
}

// --- limit -----------------------------------------------------------------------------------

/// T0 = 1,700,000,000 s, a multiple of the 10 s window: interval I = 170,000,000, offset 0.
const T0: u64 = 1_700_000_000_000_000_000;
const S: u64 = 1_000_000_000;

#[test]
fn limit_known_answer_from_the_sliding_window_rule() {
    let dir = tempfile::tempdir().unwrap();
    // rate 1/s x window 10 s: L = 10. Admit iff prev * (window - offset) / window + cur + 1 <= L.
    let mut lines = vec!["ts_ns,origin,app_ids".to_owned()];
    let mut expected: Vec<&str> = Vec::new();
    // Lines 2-13: 12 calls of app 7 from 192.0.2.1 in interval I (prev 0): cur goes 0..9, so
    // the first 10 pass (0 + cur + 1 <= 10), the 11th and 12th find cur = 10.
    for i in 0..12 {
        lines.push(format!("{},192.0.2.1,7", T0 + i * 1_000));
        expected.push(if i < 10 { "admitted" } else { "dropped" });
    }
    // Line 14: another app from the same peer is another key. Line 15: the same app from another
    // peer too. Line 16: no app call: always admitted.
    lines.push(format!("{T0},192.0.2.1,8"));
    lines.push(format!("{T0},198.51.100.9,7"));
    lines.push(format!("{T0},192.0.2.1,"));
    expected.extend(["admitted"; 3]);
    // Lines 17-24: 8 calls at T0 + 16 s: interval I + 1, offset 6 s, prev = 10, cur = 0:
    // estimate = 10 * (10 - 6) / 10 + cur + 1 = 4 + cur + 1 <= 10 for cur = 0..=5: 6 pass.
    for i in 0..8 {
        lines.push(format!("{},192.0.2.1,7", T0 + 16 * S));
        expected.push(if i < 6 { "admitted" } else { "dropped" });
    }
    // Line 25: the group 7;8: app 7 is at 4 + 6 + 1 = 11 > 10, so the whole group drops.
    lines.push(format!("{},192.0.2.1,7;8", T0 + 16 * S));
    expected.push("dropped");
    // Line 26: out of order, back at T0 + 1 s (one interval behind the key): counted in the
    // key's interval at offset 0: 10 * 10 / 10 + 6 + 1 = 17 > 10: dropped.
    lines.push(format!("{},192.0.2.1,7", T0 + S));
    expected.push("dropped");
    // Line 27: app 8 at T0 + 16 s: prev = 1 (line 14; line 25 added nothing), cur = 0:
    // 1 * 4 / 10 + 0 + 1 = 1 <= 10.
    lines.push(format!("{},192.0.2.1,8", T0 + 16 * S));
    expected.push("admitted");
    // Line 28: app 7 at T0 + 30 s: interval I + 3, two past the key's: reset, admitted.
    lines.push(format!("{},192.0.2.1,7", T0 + 30 * S));
    expected.push("admitted");

    let trace = dir.path().join("trace.csv");
    std::fs::write(&trace, lines.join("\n") + "\n").unwrap();
    let decisions = dir.path().join("decisions.csv");
    let out = txgate(&[
        "limit",
        "--trace",
        trace.to_str().unwrap(),
        "--rate",
        "1",
        "--window",
        "10",
        "--decisions",
        decisions.to_str().unwrap(),
    ]);
    assert_ok(&out);
    let got = std::fs::read_to_string(&decisions).unwrap();
    let want: String = expected
        .iter()
        .enumerate()
        .map(|(i, d)| format!("{},{d}\n", i + 2))
        .collect();
    assert_eq!(got, want);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let field = |name: &str| -> u64 {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("{name} missing in {stdout}"))
            .trim()
            .parse()
            .unwrap()
    };
    assert_eq!(field("offered"), 27);
    assert_eq!(field("admitted"), 21);
    assert_eq!(field("dropped"), 6);
    assert_eq!(field("evicted"), 0);
    // Keys: (7, 192.0.2.1), (8, 192.0.2.1), (7, 198.51.100.9).
    assert_eq!(field("entries"), 3);
}

#[test]
fn limit_evicts_when_the_table_is_full() {
    // max size 2 in one shard: a third key evicts one. 3 keys, 3 messages, all admitted.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(
        &trace,
        format!("ts_ns,origin,app_ids\n{T0},10.0.0.1,1\n{T0},10.0.0.2,1\n{T0},10.0.0.3,1\n"),
    )
    .unwrap();
    let out = txgate(&[
        "limit",
        "--trace",
        trace.to_str().unwrap(),
        "--max-size",
        "2",
        "--shards",
        "1",
    ]);
    assert_ok(&out);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("admitted  3"), "{stdout}");
    assert!(stdout.contains("evicted   1"), "{stdout}");
    assert!(stdout.contains("entries   2"), "{stdout}");
}

// --- dataset2 --------------------------------------------------------------------------------

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn txids_of_dataset2_equal_the_jsonl() {
    let blocks = txgate_testkit::data_file(DATASET2);
    let jsonl = txgate_testkit::data_file(DATASET2_JSONL);
    let out = txgate(&["txids", "--blocks", blocks.to_str().unwrap()]);
    assert_ok(&out);
    let csv = String::from_utf8(out.stdout).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("round,intra,txid,type,app_id"));
    let got: Vec<&str> = lines.collect();
    let want: Vec<String> = std::fs::read_to_string(jsonl)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            // app_id: the jsonl's application id, except 0 (a creation), which is no app.
            let app = match v["app_id"].as_u64() {
                None | Some(0) => String::new(),
                Some(a) => a.to_string(),
            };
            format!(
                "{},{},{},{},{app}",
                v["round"],
                v["intra"],
                v["txid"].as_str().unwrap(),
                v["type"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(want.len(), 164);
    assert_eq!(got, want);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn replay_of_dataset2_reports_the_data_s_counts() {
    let blocks = txgate_testkit::data_file(DATASET2);
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("acceptance.svg");
    let report = replay_json(
        dir.path(),
        &[
            "--blocks",
            blocks.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ],
    );
    let ingest = &report["ingest"];
    assert_eq!(ingest["rounds_read"], 378);
    assert_eq!(ingest["rounds_ingested"], 378);
    assert_eq!(ingest["rounds_skipped"], 0);
    assert_eq!(ingest["txns_read"], 164);
    assert_eq!(ingest["txns_ingested"], 164);
    assert_eq!(ingest["first_round"], 0);
    assert_eq!(ingest["latest_round"], 377);
    let l = &report["lookups"];
    // Every txid of the data (164 < --lookups 200), each found in its round at its index.
    assert_eq!(l["hits"], 164);
    assert_eq!(l["hits_found"], 164);
    assert_eq!(l["misses"], 200);
    assert_eq!(l["misses_found"], 0);
    assert_eq!(l["baseline_hits"], 20);
    assert_eq!(l["baseline_hits_found"], 20);
    assert_eq!(l["baseline_misses_found"], 0);
    // The bloom window is the latest MaxTxnLife + 1 = 1001 rounds: all 378, so every hit is in
    // it.
    assert_eq!(l["window_first_round"], 0);
    assert_eq!(l["blooms_hit_window"]["count"], 164);
    assert_eq!(l["blooms_hit_older"]["count"], 0);
    // 45 of the 378 rounds hold transactions (the jsonl's non-empty rounds).
    assert_eq!(report["bloom"]["rounds"], 45);
    assert_eq!(report["bloom"]["configured_fpr"], 0.001);
    assert_traffic_adds_up(&report);
    let svg = std::fs::read_to_string(plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("<polyline"));
}

/// `blooms_hit` split at the bloom window: `blooms_hit_window` and `blooms_hit_older` count the
/// hits in the window's rounds and in older rounds, `count`s that add up to `blooms_hit`'s.
fn hit_split(report: &Value) -> (u64, u64) {
    let l = &report["lookups"];
    let count = |k: &str| l[k]["count"].as_u64().unwrap();
    let (window, older) = (count("blooms_hit_window"), count("blooms_hit_older"));
    assert_eq!(window + older, count("blooms_hit"));
    assert_eq!(count("blooms_hit"), l["hits"].as_u64().unwrap());
    (window, older)
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn dataset2_hits_split_at_the_bloom_window() {
    let blocks = txgate_testkit::data_file(DATASET2);
    let dir = tempfile::tempdir().unwrap();
    // MaxTxnLife 350: the window is rounds 377 - 350 = 27 ..= 377.
    let config = dir.path().join("node.toml");
    std::fs::write(&config, "MaxTxnLife = 350\n").unwrap();
    let report = replay_json(
        dir.path(),
        &[
            "--blocks",
            blocks.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
    );
    assert_eq!(report["lookups"]["window_first_round"], 27);
    // All 164 txids are sampled (--lookups 200): the split is the jsonl's counts by round.
    let counts = common::dataset2_txn_counts();
    let older: u64 = counts.range(..27).map(|(_, n)| n).sum();
    let window: u64 = counts.range(27..).map(|(_, n)| n).sum();
    assert!(older > 0 && window > 0, "{older} {window}");
    assert_eq!(hit_split(&report), (window, older));
    assert_eq!(report["lookups"]["hits_found"], 164);
}

#[test]
fn builtin_workload_hits_split_at_the_bloom_window() {
    let dir = tempfile::tempdir().unwrap();
    // MaxTxnLife 4 over rounds 1..=12: the window is rounds 8..=12.
    let config = dir.path().join("node.toml");
    std::fs::write(&config, "MaxTxnLife = 4\n").unwrap();
    let config = config.to_str().unwrap();
    // The table and the JSON of one run (`--json FILE` prints the table too).
    let run = |lookups: &str| {
        let json = dir.path().join(format!("report-{lookups}.json"));
        let out = txgate(&[
            "replay",
            "--json",
            json.to_str().unwrap(),
            "--rounds",
            "12",
            "--txns-per-round",
            "40",
            "--config",
            config,
            "--lookups",
            lookups,
            "--baseline-lookups",
            "20",
            "--fpr-probes",
            "1000",
            "--traffic-seconds",
            "1",
        ]);
        assert_ok(&out);
        let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        (report, common::stdout(&out))
    };
    // 480 txids, all sampled: 5 rounds x 40 in the window, 7 x 40 older.
    let (all, table) = run("1000");
    assert_eq!(all["lookups"]["window_first_round"], 8);
    assert_eq!(all["lookups"]["hits_found"], 480);
    assert_eq!(hit_split(&all), (200, 280));
    // A sample of 100: the split still covers every hit.
    let (sampled, _) = run("100");
    assert_eq!(sampled["lookups"]["hits"], 100);
    hit_split(&sampled);
    // The table shows the two rows with the same counts.
    let count_of = |label: &str| {
        let line = table
            .lines()
            .find(|l| l.starts_with(label) && l[label.len()..].starts_with(' '))
            .unwrap_or_else(|| panic!("no row {label:?} in\n{table}"));
        line[label.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(count_of("hit, blooms"), "480");
    assert_eq!(count_of("hit, blooms, in window"), "200");
    assert_eq!(count_of("hit, blooms, older rounds"), "280");
}

#[test]
fn a_txid_repeated_in_a_block_is_one_hit_at_its_first_index() {
    use txgate_algorand::synth::{SynthTxn, encode_block};
    let txn = |n: u8| {
        let mut t = SynthTxn::payment([n; 32], 1, 1001);
        t.note = vec![n];
        t
    };
    // Round 1: a, b, a, c (a at indexes 0 and 2); round 2: d, d.
    let r1 = encode_block(
        1,
        "repeat-v1",
        &[3; 32],
        0,
        &[txn(1), txn(2), txn(1), txn(3)],
    );
    let r2 = encode_block(2, "repeat-v1", &[3; 32], 3, &[txn(4), txn(4)]);
    let dir = tempfile::tempdir().unwrap();
    let tar = dir.path().join("repeat.tar");
    common::write_block_tar(&tar, [(1, r1), (2, r2)]);
    let report = replay_json(dir.path(), &["--blocks", tar.to_str().unwrap()]);
    assert_eq!(report["ingest"]["txns_read"], 6);
    // Every distinct txid is sampled once (4 < --lookups 200), each found at its first index.
    let l = &report["lookups"];
    assert_eq!(l["hits"], 4);
    assert_eq!(l["hits_found"], 4);
    assert_eq!(hit_split(&report), (4, 0));
}

// --- built-in workload and --db ----------------------------------------------------------------

#[test]
fn builtin_workload_replay_and_db_continuation() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    // A 1,000-group backlog (limiter above 100 queued): 600 msgs/s into a 300/s pool congests
    // it; 10 calls per second per key (L = 100 per 10 s) is below the spammer's 400/s.
    let config = dir.path().join("node.toml");
    std::fs::write(
        &config,
        "TxBacklogSize = 1000\nTxBacklogAppTxPerSecondRate = 10\n",
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let small = ["--txns-per-round", "40", "--db", db, "--config", config];
    let first = replay_json(dir.path(), &[&["--rounds", "12"][..], &small].concat());
    assert_eq!(first["ingest"]["rounds_ingested"], 12);
    assert_eq!(first["ingest"]["txns_ingested"], 480);
    assert_eq!(first["ingest"]["first_round"], 1);
    assert_eq!(first["ingest"]["latest_round"], 12);
    assert_eq!(first["lookups"]["hits"], 200);
    assert_eq!(first["lookups"]["hits_found"], 200);
    assert_eq!(first["lookups"]["misses_found"], 0);
    assert_eq!(first["bloom"]["rounds"], 12);
    assert_traffic_adds_up(&first);
    // The synthesized spam is one peer on one app: with the limiter some of it is rate limited,
    // without it none is.
    let t = &first["traffic"];
    assert!(
        t["with_limiter"]["rate_limited"].as_u64().unwrap() > 0,
        "{t}"
    );
    assert_eq!(t["without_limiter"]["rate_limited"], 0);
    // Exact resends of committed groups are caught by the committed check.
    assert!(
        t["without_limiter"]["already_committed"].as_u64().unwrap() > 0,
        "{t}"
    );

    // Continue: rounds 1..=12 are skipped, 13..=20 added.
    let second = replay_json(dir.path(), &[&["--rounds", "20"][..], &small].concat());
    assert_eq!(second["ingest"]["rounds_read"], 20);
    assert_eq!(second["ingest"]["rounds_skipped"], 12);
    assert_eq!(second["ingest"]["rounds_ingested"], 8);
    assert_eq!(second["ingest"]["txns_ingested"], 320);
    assert_eq!(second["ingest"]["latest_round"], 20);
    assert_eq!(second["lookups"]["hits_found"], second["lookups"]["hits"]);
}

#[test]
fn replay_with_a_trace_runs_its_lines_through_the_handler() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    let mut text = String::from("ts_ns,origin,app_ids\n");
    for i in 0..50u64 {
        text.push_str(&format!("{},2001:db8::{i},{}\n", T0 + i * 1_000_000, i % 3));
    }
    text.push_str(&format!("{T0},00ff,\n"));
    std::fs::write(&trace, text).unwrap();
    let report = replay_json(
        dir.path(),
        &[
            "--rounds",
            "3",
            "--txns-per-round",
            "10",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    let t = &report["traffic"];
    assert_eq!(t["messages"], 51);
    // 51 distinct messages, far below the backlog: all admitted in both runs.
    assert_eq!(t["with_limiter"]["admitted"], 51);
    assert_eq!(t["without_limiter"]["admitted"], 51);
    assert_traffic_adds_up(&report);
}

/// A reader that stops early (`txgate txids ... | head -3`): txgate stops quietly with status 0
/// (EPIPE on its stdout is not a failure), after the reader had the header and the first rows.
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_reader_that_stops_early_is_not_an_error() {
    use std::io::{BufRead, BufReader};
    let blocks = txgate_testkit::data_file(DATASET2);
    let mut child = common::command()
        .args(["txids", "--blocks", blocks.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run txgate");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "round,intra,txid,type,app_id"
    );
    let row = lines.next().unwrap().unwrap();
    assert_eq!(row.split(',').count(), 5, "a CSV row: {row}");
    // The reader goes away with most of the CSV unread (dataset2 has thousands of rows, more
    // than a pipe buffers).
    drop(lines);
    let out = child.wait_with_output().expect("wait for txgate");
    assert_eq!(common::stderr(&out), "", "nothing on stderr");
    assert!(out.status.success(), "status {:?}", out.status);
}

// --- bad input ---------------------------------------------------------------------------------

#[test]
fn missing_blocks_file_is_a_clear_error() {
    let out = txgate(&["replay", "--blocks", "/nonexistent/blocks.tar.bz2"]);
    assert_bad(&out, &["/nonexistent/blocks.tar.bz2"]);
    let out = txgate(&["txids", "--blocks", "/nonexistent/x"]);
    assert_bad(&out, &["/nonexistent/x"]);
    let out = txgate(&["limit", "--trace", "/nonexistent/t.csv"]);
    assert_bad(&out, &["/nonexistent/t.csv"]);
}

#[test]
fn unreadable_archive_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("broken.tar.bz2");
    std::fs::write(&bad, b"BZh91AY&SYthis is not a bzip2 stream at all").unwrap();
    let out = txgate(&["replay", "--blocks", bad.to_str().unwrap()]);
    assert_bad(&out, &["broken.tar.bz2"]);
    let out = txgate(&["txids", "--blocks", bad.to_str().unwrap()]);
    assert_bad(&out, &["broken.tar.bz2"]);
}

/// Writes a tar of dataset2's rounds 0..=20, with round 10's bytes replaced when `corrupt`.
fn dataset2_tar(blocks: &Path, out: &Path, corrupt: bool) {
    let rounds = txgate_algorand::source::BlockSource::open(blocks)
        .unwrap()
        .map(|raw| raw.unwrap())
        .map(|raw| (raw.round.unwrap(), raw.bytes))
        .filter(|&(round, _)| round <= 20)
        .map(|(round, bytes)| {
            if corrupt && round == 10 {
                (round, b"\x82\xa5block\x81\xa3rnd\xc1 not msgpack".to_vec())
            } else {
                (round, bytes)
            }
        });
    common::write_block_tar(out, rounds);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn corrupt_block_mid_archive_keeps_earlier_rounds_and_the_db_continues() {
    let blocks = txgate_testkit::data_file(DATASET2);
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("corrupt.tar");
    let good = dir.path().join("good.tar");
    dataset2_tar(&blocks, &corrupt, true);
    dataset2_tar(&blocks, &good, false);
    let db: PathBuf = dir.path().join("db");
    let mut args = vec![
        "replay",
        "--db",
        db.to_str().unwrap(),
        "--blocks",
        corrupt.to_str().unwrap(),
    ];
    args.extend_from_slice(SMALL);
    let out = txgate(&args);
    assert_bad(&out, &["blocks/10", "round 10"]);
    {
        // Rounds 0..=9 are in the db, which opens cleanly.
        let ledger = txgate_ledger::store::Ledger::open(&db, Default::default()).unwrap();
        let open = ledger.open_report();
        assert_eq!((open.first, open.latest), (Some(0), Some(9)));
        assert!(open.rebuilt.is_empty());
        drop(ledger);
    }
    let report = replay_json(
        dir.path(),
        &[
            "--db",
            db.to_str().unwrap(),
            "--blocks",
            good.to_str().unwrap(),
        ],
    );
    assert_eq!(report["ingest"]["rounds_read"], 21);
    assert_eq!(report["ingest"]["rounds_skipped"], 10);
    assert_eq!(report["ingest"]["rounds_ingested"], 11);
    assert_eq!(report["ingest"]["first_round"], 0);
    assert_eq!(report["ingest"]["latest_round"], 20);
    assert_eq!(report["lookups"]["hits_found"], report["lookups"]["hits"]);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn missing_round_in_a_source_names_the_round() {
    let blocks = txgate_testkit::data_file(DATASET2);
    let dir = tempfile::tempdir().unwrap();
    // A directory with rounds 0..=4 and 6: round 6 is out of order.
    let blockdir = dir.path().join("blocks");
    std::fs::create_dir(&blockdir).unwrap();
    for raw in txgate_algorand::source::BlockSource::open(&blocks).unwrap() {
        let raw = raw.unwrap();
        let round = raw.round.unwrap();
        if round <= 6 && round != 5 {
            std::fs::write(blockdir.join(round.to_string()), raw.bytes).unwrap();
        }
    }
    let out = txgate(&["replay", "--blocks", blockdir.to_str().unwrap()]);
    assert_bad(&out, &["round 6", "next round is 5"]);
}

/// `txgate replay --rounds 2 <flag> <path>`: a short replay that reads one input file.
fn replay_two_rounds_with(flag: &str, path: &Path) -> Output {
    txgate(&["replay", "--rounds", "2", flag, path.to_str().unwrap()])
}

#[test]
fn malformed_trace_lines_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            "ts_ns,origin,app_ids\n1,10.0.0.1,5\nabc,10.0.0.1,5\n",
            "line 3",
        ),
        (
            "ts_ns,origin,app_ids\n1,10.0.0.1,5\n\n2,not-a-peer,5\n",
            "line 4",
        ),
        ("ts_ns,origin,app_ids\n1,10.0.0.1,5;x\n", "line 2"),
        ("ts_ns,origin,app_ids\n1,10.0.0.1,5\n2,10.0.0.1\n", "line 3"),
        ("time,peer,apps\n1,10.0.0.1,5\n", "line 1"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let trace = dir.path().join(format!("bad{i}.csv"));
        std::fs::write(&trace, text).unwrap();
        let name = format!("bad{i}.csv");
        let out = txgate(&["limit", "--trace", trace.to_str().unwrap()]);
        assert_bad(&out, &[&name, needle]);
        let out = replay_two_rounds_with("--trace", &trace);
        assert_bad(&out, &[&name, needle]);
    }
}

#[test]
fn unknown_config_key_names_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("node.toml");
    std::fs::write(&config, "TxBacklogSize = 1000\nTxBacklogSise = 5\n").unwrap();
    let out = replay_two_rounds_with("--config", &config);
    assert_bad(&out, &["node.toml", "line 2", "TxBacklogSise"]);
    std::fs::write(&config, "MaxTxnLife = -3\n").unwrap();
    let out = replay_two_rounds_with("--config", &config);
    assert_bad(&out, &["node.toml", "line 1"]);
    let out = txgate(&["replay", "--config", "/nonexistent/node.toml"]);
    assert_bad(&out, &["/nonexistent/node.toml"]);
}

#[test]
fn config_values_take_effect() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("node.toml");
    std::fs::write(
        &config,
        "TxBacklogSize = 400\nTxBacklogAppRateLimitingCongestionPct = 50\n\
         EnableTxBacklogAppRateLimiting = false\nBloomFalsePositiveRate = 0.01\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "replay",
        "--rounds",
        "4",
        "--txns-per-round",
        "20",
        "--config",
        config.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(SMALL);
    let out = txgate(&args);
    assert_ok(&out);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The table shows every value in force under `config:`, the file's and the defaults, as
    // the JSON has them.
    let table = common::stdout(&out);
    let lines: Vec<&str> = table.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("config: ") && l.ends_with("node.toml"))
        .expect("a config: line naming the file");
    let shown = format!("{} {}", lines[at + 1], lines[at + 2]);
    let pairs: Vec<&str> = shown.split_whitespace().collect();
    assert_eq!(
        pairs,
        [
            "TxBacklogSize=400",
            "TxBacklogAppTxPerSecondRate=100",
            "TxBacklogServiceRateWindowSeconds=10",
            "TxBacklogAppTxRateLimiterMaxSize=1048576",
            "TxBacklogAppRateLimitingCongestionPct=50",
            "EnableTxBacklogAppRateLimiting=false",
            "BloomFalsePositiveRate=0.01",
            "MaxTxnLife=1000",
        ]
    );
    for pair in pairs {
        let (name, value) = pair.split_once('=').unwrap();
        assert_eq!(report["config"][name].to_string(), value, "{name}");
    }
    assert_eq!(lines[at + 3], "", "two lines of values, then the sections");
    assert_eq!(report["config"]["TxBacklogSize"], 400);
    assert_eq!(report["traffic"]["congestion_threshold"], 200);
    assert!(report["traffic"]["with_limiter"].is_null());
    assert_eq!(report["bloom"]["configured_fpr"], 0.01);
    // 600 msgs/s offered to a 300/s pool for 2 s into a 400-group backlog: some drop.
    assert!(
        report["traffic"]["without_limiter"]["backlog_full"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn out_of_range_values_fail_before_ingest_and_edge_sizes_run() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("node.toml");
    let c = config.to_str().unwrap();
    for (text, needle) in [
        ("TxBacklogSize = 0\n", "TxBacklogSize = 0"),
        (
            "TxBacklogAppTxPerSecondRate = 0\n",
            "TxBacklogAppTxPerSecondRate = 0",
        ),
        (
            "TxBacklogAppRateLimitingCongestionPct = 101\n",
            "TxBacklogAppRateLimitingCongestionPct = 101",
        ),
        (
            "BloomFalsePositiveRate = 1.5\n",
            "BloomFalsePositiveRate = 1.5",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        // 10^6 rounds would take minutes: failing fast proves the check comes first.
        let out = txgate(&["replay", "--rounds", "1000000", "--config", c]);
        assert_bad(&out, &[needle]);
    }
    let out = txgate(&["replay", "--rounds", "1000000", "--service-rate", "0"]);
    assert_bad(&out, &["--service-rate"]);
    let out = txgate(&["replay", "--honest-rate", "18446744073709551615"]);
    assert_bad(&out, &["--traffic-seconds"]);
    let out = txgate(&["replay", "--bogus-flag"]);
    assert_eq!(out.status.code(), Some(2));
    // Empty rounds: a report of nothing, no failure (`--rounds 0` is a usage error: faults.rs).
    let empty = replay_json(dir.path(), &["--rounds", "3", "--txns-per-round", "0"]);
    assert_eq!(empty["ingest"]["rounds_ingested"], 3);
    assert_eq!(empty["bloom"]["rounds"], 0);
}

// --- machine-readable output, config.json, exit status -----------------------------------------

#[test]
fn json_to_stdout_carries_the_schema_version_and_nothing_else() {
    let mut args = vec![
        "replay",
        "--json",
        "-",
        "-q",
        "--rounds",
        "3",
        "--txns-per-round",
        "10",
    ];
    args.extend_from_slice(SMALL);
    let out = txgate(&args);
    assert_ok(&out);
    // stdout is the JSON alone; --quiet leaves stderr empty.
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["schema_version"], 2);
    assert_eq!(report["ingest"]["rounds_ingested"], 3);
    assert_eq!(report["ingest"]["txns_ingested"], 30);
    assert!(report["ingest"]["add_block_ns"].as_u64().unwrap() > 0);
    assert!(report["ingest"]["time_ns"].as_u64() >= report["ingest"]["add_block_ns"].as_u64());
    assert_eq!(report["traffic"]["service_rate_per_second"], 300);
    assert!(report["follow"].is_null());
    assert_eq!(report["config_source"]["from"], "defaults");
    assert!(out.stderr.is_empty(), "{}", common::stderr(&out));

    // limit: the same figures as its text report.
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.csv");
    std::fs::write(
        &trace,
        format!("ts_ns,origin,app_ids\n{T0},10.0.0.1,1\n{T0},10.0.0.1,1\n{T0},10.0.0.2,\n"),
    )
    .unwrap();
    let t = trace.to_str().unwrap();
    let out = txgate(&["limit", "-t", t, "--rate", "1", "--window", "1", "-j", "-"]);
    assert_ok(&out);
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["schema_version"], 2);
    assert_eq!(json["window_ns"], 1_000_000_000u64);
    // L = 1 per key and window: the second call of app 1 from 10.0.0.1 drops.
    assert_eq!(
        (
            &json["offered"],
            &json["admitted"],
            &json["dropped"],
            &json["limit_per_window"]
        ),
        (
            &Value::from(3),
            &Value::from(2),
            &Value::from(1),
            &Value::from(1)
        )
    );
    let text =
        String::from_utf8(txgate(&["limit", "-t", t, "--rate", "1", "--window", "1"]).stdout)
            .unwrap();
    assert!(
        text.contains("admitted  2") && text.contains("dropped   1"),
        "{text}"
    );
}

#[test]
fn go_algorand_config_json_from_the_flag_or_algorand_data() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(
        data.join("config.json"),
        "{\n  \"Version\": 38,\n  \"Archival\": false,\n  \"TxBacklogSize\": 400,\n  \
         \"txbacklogapprateLimitingcongestionpct\": 50\n}\n",
    )
    .unwrap();
    let json = dir.path().join("r.json");
    let mut args = vec![
        "replay",
        "--rounds",
        "3",
        "--txns-per-round",
        "10",
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(SMALL);
    let out = common::command()
        .args(&args)
        .env("ALGORAND_DATA", &data)
        .output()
        .unwrap();
    assert_ok(&out);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(
        table.contains("config.json (from $ALGORAND_DATA; go-algorand config.json, 2 keys"),
        "{table}"
    );
    assert!(
        table.contains("  TxBacklogSize=400 TxBacklogAppTxPerSecondRate=100 ")
            && table.contains("  TxBacklogAppRateLimitingCongestionPct=50 "),
        "{table}"
    );
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["config"]["TxBacklogSize"], 400);
    assert_eq!(
        report["config"]["TxBacklogAppRateLimitingCongestionPct"],
        50
    );
    assert_eq!(report["traffic"]["congestion_threshold"], 200);
    let source = &report["config_source"];
    assert_eq!(
        (&source["from"], &source["format"]),
        (&Value::from("ALGORAND_DATA"), &Value::from("json"))
    );
    assert_eq!(source["ignored_keys"], 2);
    // --config wins over $ALGORAND_DATA; a wrongly typed value names the key and its line.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        "{\n  \"Archival\": false,\n  \"TxBacklogSize\": \"big\"\n}\n",
    )
    .unwrap();
    let out = common::command()
        .args(["replay", "--rounds", "2", "-c", bad.to_str().unwrap()])
        .env("ALGORAND_DATA", &data)
        .output()
        .unwrap();
    assert_bad(&out, &["bad.json", "line 3", "TxBacklogSize"]);
}

#[test]
fn runtime_failures_exit_with_1_and_bad_input_with_2() {
    let dir = tempfile::tempdir().unwrap();
    // The JSON report cannot be written: a directory is in the way (an I/O failure).
    let mut args = vec![
        "replay",
        "--rounds",
        "1",
        "--txns-per-round",
        "1",
        "--json",
        dir.path().to_str().unwrap(),
    ];
    args.extend_from_slice(SMALL);
    let out = txgate(&args);
    common::assert_fails(&out, 1, &[dir.path().to_str().unwrap()]);
    // Bad --rounds values are usage errors.
    let out = txgate(&["replay", "--rounds", "9..=3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("selects no rounds"));
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn rounds_select_from_archives() {
    let blocks = txgate_testkit::data_file(DATASET2);
    let report = replay_json(
        Path::new(&std::env::temp_dir()),
        &["--blocks", blocks.to_str().unwrap(), "--rounds", "5..=30"],
    );
    assert_eq!(report["ingest"]["rounds_read"], 26);
    assert_eq!(report["ingest"]["first_round"], 5);
    assert_eq!(report["ingest"]["latest_round"], 30);
    // Rounds 5..=30 of the jsonl.
    let want: u64 = common::dataset2_txn_counts()
        .range(5..=30)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(report["ingest"]["txns_ingested"], want);
}

/// The build script's `cfg(txgate_no_data)` follows txgate-testkit's rule for the data here.
#[test]
fn the_data_cfg_follows_the_data() {
    txgate_testkit::assert_data_cfg(cfg!(txgate_no_data));
}
