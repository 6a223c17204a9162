//! `--algod`: the CLI against an in-process stand-in of algod's REST API on 127.0.0.1 serving
//! the real dataset2 blocks (`txgate_testkit::algod`): the same transactions as from the archive,
//! a follow run that ingests every round exactly once while the server makes them, a retried
//! 503, and one clear error line (and exit status) for each failure. The API token never shows.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use common::{DATASET2, SMALL, assert_fails, assert_ok, command, stderr, stdout, txgate};
use serde_json::Value;
use txgate_algorand::source::BlockSource;
use txgate_bloom::Filter;
use txgate_ledger::store::Ledger;
use txgate_testkit::algod::FakeAlgod;

const TOKEN: &str = "4d9fb1c0e2a7-test-token-5f3e";
/// dataset2's rounds are 0..=377.
const LAST: u64 = 377;

/// dataset2's archive and its blocks by round.
fn dataset2() -> (std::path::PathBuf, BTreeMap<u64, Vec<u8>>) {
    let path = txgate_testkit::data_file(DATASET2);
    let blocks = BlockSource::open(&path)
        .unwrap()
        .map(|raw| {
            let raw = raw.unwrap();
            (raw.round.unwrap(), raw.bytes)
        })
        .collect();
    (path, blocks)
}

fn assert_no_token(texts: &[&str]) {
    for text in texts {
        assert!(!text.contains(TOKEN), "the token leaked into {text}");
    }
}

/// Requests for each block round that were answered 200.
fn blocks_served(algod: &FakeAlgod) -> BTreeMap<u64, u32> {
    let mut served = BTreeMap::new();
    for (path, status) in algod.requests() {
        if let Some(rest) = path.strip_prefix("/v2/blocks/")
            && status == 200
        {
            let round: u64 = rest.split('?').next().unwrap().parse().unwrap();
            *served.entry(round).or_default() += 1;
        }
    }
    served
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn txids_from_algod_equal_txids_from_the_archive() {
    let (archive, blocks) = dataset2();
    let algod = FakeAlgod::start(blocks, TOKEN, LAST, Duration::from_secs(1));
    // One 503 on the way: retried after the backoff, the round served once.
    algod.fail_next("/v2/blocks/100?", 503, 1);
    let url = algod.url();
    let from_files = txgate(&["txids", "--blocks", archive.to_str().unwrap()]);
    assert_ok(&from_files);
    // The token from $ALGOD_TOKEN; the default range is the last MaxTxnLife + 1 = 1001 rounds,
    // here all 378.
    let from_algod = command()
        .args(["txids", "--algod", &url])
        .env("ALGOD_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_ok(&from_algod);
    assert_eq!(stdout(&from_algod), stdout(&from_files));
    assert_eq!(stdout(&from_files).lines().count(), 1 + 164);
    let served = blocks_served(&algod);
    assert_eq!(served.len(), 378);
    assert!(served.values().all(|&n| n == 1), "{served:?}");
    let log = algod.requests();
    assert_eq!(
        log.iter()
            .filter(|(p, s)| p == "/v2/blocks/100?format=msgpack" && *s == 503)
            .count(),
        1
    );
    assert_no_token(&[&stderr(&from_algod)]);

    // --rounds selects the same rounds from both sources; the token from the flag.
    let from_files = txgate(&["txids", "-b", archive.to_str().unwrap(), "-r", "10..=30"]);
    let from_algod = txgate(&[
        "txids",
        "-a",
        &url,
        "--algod-token",
        TOKEN,
        "--rounds",
        "10..31",
    ]);
    assert_ok(&from_algod);
    assert_eq!(stdout(&from_algod), stdout(&from_files));
    let rounds: Vec<u64> = stdout(&from_files)
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(!rounds.is_empty());
    assert!(rounds.iter().all(|r| (10..=30).contains(r)), "{rounds:?}");
}

/// Reads the child's stdout lines into a channel, on a thread of its own.
fn lines_of(child: &mut std::process::Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The follow lines' rows: (round, txns, bloom_bytes).
fn follow_rows(lines: &[String]) -> Vec<(u64, u64, u64)> {
    let header = lines
        .iter()
        .position(|l| l.trim_start().starts_with("round "))
        .expect("a follow header");
    lines[header + 1..]
        .iter()
        .map_while(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let round = cols.first()?.parse().ok()?;
            Some((round, cols[1].parse().unwrap(), cols[4].parse().unwrap()))
        })
        .collect()
}

#[cfg(unix)]
#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn replay_follow_ingests_every_round_once_while_the_node_makes_them() {
    let (_, blocks) = dataset2();
    let txns_per_round: BTreeMap<u64, u64> = common::dataset2_txn_counts();
    // Rounds 0..=20 at the start, then one every 10 ms once txgate waits for new ones (rounds
    // 21..=57 hold transactions).
    let mut algod = FakeAlgod::start(blocks, TOKEN, 20, Duration::from_millis(300));
    // With one retry per request (--algod-retries 1): a 503 while following is retried; two in
    // a row exhaust the retries, and following waits for the node (a warning) and goes on at
    // that round. Either way each round is ingested once.
    algod.fail_next("/v2/blocks/300?", 503, 1);
    algod.fail_next("/v2/blocks/330?", 503, 2);
    algod.release_every(Duration::from_millis(10), LAST);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let json = dir.path().join("report.json");
    // The token from the data directory's algod.token.
    let data = dir.path().join("algod-data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(data.join("algod.token"), format!("{TOKEN}\n")).unwrap();
    let mut args = vec![
        "replay".to_owned(),
        "--algod".into(),
        algod.url(),
        "--follow".into(),
        // The node's rounds at the start (as the default range would be): follow goes past it.
        "--rounds".into(),
        "0..=20".into(),
        "--algod-retries".into(),
        "1".into(),
        "--db".into(),
        db.to_str().unwrap().into(),
        "--json".into(),
        json.to_str().unwrap().into(),
    ];
    args.extend(SMALL.iter().map(|s| (*s).to_owned()));
    let mut child = command()
        .args(&args)
        .env("ALGORAND_DATA", &data)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = lines_of(&mut child);
    let mut seen = Vec::new();
    // Hang guard only: the rounds come every 10 ms, 357 of them.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                let done = line.split_whitespace().next() == Some("377");
                seen.push(line);
                if done {
                    break;
                }
            }
            Err(_) => {
                let _ = child.kill();
                let out = child.wait_with_output().unwrap();
                panic!("no line for round 377: {seen:#?}\n{}", stderr(&out));
            }
        }
    }
    // Ctrl-C: SIGINT through the shell's own `kill`.
    let killed = std::process::Command::new("sh")
        .args(["-c", "kill -INT \"$1\"", "sh", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The rest of stdout (the report) until the process closes it.
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!("txgate did not end after SIGINT: {seen:#?}");
            }
        }
    }
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    let table = seen.join("\n");
    let err = stderr(&out);
    assert!(err.contains("stopping after the current round"), "{err}");
    // The report follows the lines.
    assert!(table.contains("== lookups"), "{table}");

    let rows = follow_rows(&seen);
    let first = rows[0].0;
    let followed: Vec<u64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(
        followed,
        (first..=LAST).collect::<Vec<_>>(),
        "each once, in order"
    );
    assert_eq!(first, 21, "the range is the node's rounds at the start");
    for &(round, txns, _) in &rows {
        assert_eq!(
            txns,
            txns_per_round.get(&round).copied().unwrap_or(0),
            "round {round}"
        );
    }
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(report["schema_version"], 2);
    assert_eq!(report["ingest"]["rounds_ingested"], 378);
    assert_eq!(report["ingest"]["txns_ingested"], 164);
    assert_eq!(report["ingest"]["latest_round"], LAST);
    let f = &report["follow"];
    assert_eq!(f["rounds"], rows.len() as u64);
    assert_eq!(f["first_round"], first);
    assert_eq!(f["last_round"], LAST);
    // Every txid of the followed rounds found in its round (the jsonl's count of them).
    let followed_txns: u64 = txns_per_round.range(first..).map(|(_, n)| n).sum();
    assert!(followed_txns > 0);
    assert_eq!(f["txns"], followed_txns);
    assert_eq!(f["hits"], followed_txns);
    assert_eq!(f["hits_found"], followed_txns);
    assert_eq!(f["misses"], rows.len() as u64 * 100);
    assert_eq!(f["misses_found"], 0);
    assert_eq!(report["lookups"]["hits_found"], 164);
    // Every round fetched once with a 200, except that requests already made for the rounds
    // after 330 when its fetch failed may have been abandoned and made again.
    let served = blocks_served(&algod);
    assert_eq!(
        served.keys().copied().collect::<Vec<_>>(),
        (0..=LAST).collect::<Vec<_>>()
    );
    for (&round, &n) in &served {
        let again = (331..331 + 16).contains(&round);
        assert!(
            n == 1 || (again && n == 2),
            "round {round} served {n} times"
        );
    }
    let failed = |path: &str| {
        algod
            .requests()
            .iter()
            .filter(|(p, s)| p == path && *s == 503)
            .count()
    };
    assert_eq!(failed("/v2/blocks/300?format=msgpack"), 1);
    assert_eq!(failed("/v2/blocks/330?format=msgpack"), 2);
    // One warning per retry (of 300 and 330), one when following waits for the node.
    let retries: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("txgate: warning: ") && l.contains("; retry 1 of 1 in 0.25 s"))
        .collect();
    assert_eq!(retries.len(), 2, "{err}");
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("txgate: warning: ") && !l.contains("; retry "))
        .collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("GET /v2/blocks/330?format=msgpack failed 2 times")
            && warnings[0].contains("following again in 0.25 s"),
        "{}",
        warnings[0]
    );

    // The ledger is whole: every round, no bloom to rebuild; the lines' bloom sizes are the
    // stored blooms'.
    let ledger = Ledger::open(&db, Default::default()).unwrap();
    let open = ledger.open_report();
    assert_eq!((open.first, open.latest), (Some(0), Some(LAST)));
    assert!(open.rebuilt.is_empty());
    for &(round, _, bytes) in &rows {
        let bloom = ledger.round_bloom(round).unwrap().expect("a stored bloom");
        assert_eq!(bytes, bloom.memory_bytes(), "round {round}");
    }
    drop(ledger);
    let report_text = std::fs::read_to_string(&json).unwrap();
    assert_no_token(&[&table, &err, &report_text]);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn algod_failures_exit_with_one_clear_line() {
    let (_, blocks) = dataset2();
    let algod = FakeAlgod::start(blocks, TOKEN, LAST, Duration::from_millis(200));
    let url = algod.url();
    // No token, a wrong one: 401, usage (2), the flag and the variable named, no token shown.
    let out = txgate(&["txids", "--algod", &url]);
    assert_fails(
        &out,
        2,
        &[
            &url,
            "401",
            "Invalid API Token",
            "--algod-token",
            "$ALGOD_TOKEN",
        ],
    );
    let out = txgate(&["replay", "--algod", &url, "--algod-token", "wrong"]);
    let line = assert_fails(&out, 2, &["token was refused", "401"]);
    assert!(!line.contains("wrong"), "{line}");
    // `txids` from the node with the right token and `extra` flags.
    let txids = |extra: &[&str]| {
        let mut args = vec!["txids", "--algod", &url, "--algod-token", TOKEN];
        args.extend_from_slice(extra);
        txgate(&args)
    };
    // A round past the node's latest: 404, which round and why.
    let out = txids(&["-r", "370..=380"]);
    assert_fails(
        &out,
        2,
        &[
            "round 378 is not available",
            "failed to retrieve information from the ledger",
            "latest round, 377",
        ],
    );
    // What came before the error was written.
    assert!(stdout(&out).starts_with("round,intra,txid,type,app_id\n"));
    // 5xx on every try: a runtime failure (1) after the retries.
    algod.fail_next("/v2/status", 500, 3);
    let out = txids(&["--algod-retries", "2"]);
    assert_fails(
        &out,
        1,
        &["GET /v2/status failed 3 times", "500 injected failure"],
    );
    // Nobody listening: a runtime failure (1).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = format!("127.0.0.1:{port}");
    let out = txgate(&["txids", "--algod", &closed, "--algod-retries", "1"]);
    assert_fails(&out, 1, &[&format!("http://{closed}"), "failed 2 times"]);
    // Not a URL txgate can use, --follow without --algod, --blocks with --algod: usage (2).
    let out = txgate(&["txids", "--algod", "ftp://node:8080"]);
    assert_fails(&out, 2, &["ftp://node:8080", "http://"]);
    let out = txgate(&["replay", "--follow", "--rounds", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = txgate(&["txids", "--algod", &url, "--blocks", "x.tar"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = txgate(&["txids"]);
    assert_fails(&out, 2, &["--blocks PATH or --algod URL"]);
    // The token shows in no help text, even when it comes from the environment.
    let help = command()
        .args(["replay", "--help"])
        .env("ALGOD_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_ok(&help);
    assert!(stdout(&help).contains("ALGOD_TOKEN"));
    assert_no_token(&[&stdout(&help)]);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_db_of_another_network_is_refused_and_left_alone() {
    let (archive, blocks) = dataset2();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let db = db.to_str().unwrap();
    // Rounds 1..=3 of the built-in workload's network.
    let mut args = vec![
        "replay",
        "--rounds",
        "3",
        "--txns-per-round",
        "5",
        "--db",
        db,
    ];
    args.extend_from_slice(SMALL);
    assert_ok(&txgate(&args));
    let dataset2_net = {
        let block = txgate_algorand::codec::decode_block(&blocks[&0]).unwrap();
        String::from_utf8(block.genesis_id).unwrap()
    };
    // dataset2 from the archive: its rounds 0..=3 are "held" but of another network.
    let out = txgate(&["replay", "--db", db, "--blocks", archive.to_str().unwrap()]);
    assert_fails(
        &out,
        2,
        &[
            "round 0",
            "txgate-synth-v1",
            &format!("network {dataset2_net} (genesis hash "),
        ],
    );
    // From algod: its first new round, 4.
    let algod = FakeAlgod::start(blocks, TOKEN, LAST, Duration::from_millis(200));
    let url = algod.url();
    let out = txgate(&[
        "replay",
        "--db",
        db,
        "--algod",
        &url,
        "--algod-token",
        TOKEN,
    ]);
    assert_fails(
        &out,
        2,
        &["round 4", "txgate-synth-v1", "nothing was written"],
    );
    let ledger = Ledger::open(Path::new(db), Default::default()).unwrap();
    let open = ledger.open_report();
    assert_eq!((open.first, open.latest), (Some(1), Some(3)));
    drop(ledger);
}
