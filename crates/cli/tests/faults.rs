//! Bad input and faults, one test per case, by exit status and message: traces of any time
//! span, configuration values checked before any work (named by go-algorand's key and the file),
//! bounded echoes of input, signals during ingest, a node that does not answer, and usage that
//! would otherwise do nothing. Every run gets a private `TMPDIR` that must be empty afterwards,
//! and a `--db` must still open afterwards.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{DATASET2, SMALL, assert_fails, assert_ok, command, stderr, stdout};
use serde_json::Value;
use txgate_ledger::store::Ledger;

/// A test's directory (its files) and, inside it, the private `TMPDIR` of its runs.
struct Sandbox {
    root: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("tmp")).unwrap();
        Self { root }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    fn tmp(&self) -> PathBuf {
        self.path("tmp")
    }

    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut c = command();
        c.args(args).env("TMPDIR", self.tmp());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().unwrap();
        self.assert_tmp_empty();
        out
    }

    fn assert_tmp_empty(&self) {
        let left: Vec<_> = std::fs::read_dir(self.tmp())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "left in TMPDIR: {left:?}");
    }

    fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        let path = self.path(name);
        std::fs::write(&path, bytes).unwrap();
        path.to_str().unwrap().to_owned()
    }
}

fn with_small<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend_from_slice(SMALL);
    all
}

// --- 2. bounded work for any trace ------------------------------------------------------------

#[test]
fn a_trace_spanning_decades_runs_in_memory_bounded_by_its_messages() {
    let s = Sandbox::new();
    // Rows at 0 and 1.7e18 ns (54 years apart; a dense per-second series would be 1.7e9
    // entries), and three rows a year apart.
    let year = 365 * 86_400 * 1_000_000_000u64;
    let t0 = 1_700_000_000_000_000_000u64;
    let trace = s.write(
        "far.csv",
        format!(
            "ts_ns,origin,app_ids\n0,10.0.0.1,5\n{t0},10.0.0.2,5\n{},10.0.0.3,\n{},10.0.0.3,7\n",
            t0 + year,
            t0 + 2 * year
        ),
    );
    let json = s.path("far.json");
    let out = s.run(&with_small(&[
        "replay",
        "--rounds",
        "2",
        "--txns-per-round",
        "5",
        "--trace",
        &trace,
        "--json",
        json.to_str().unwrap(),
    ]));
    assert_ok(&out);
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(text.len() < 64 << 10, "{} bytes of JSON", text.len());
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["schema_version"], 2);
    let t = &report["traffic"];
    assert_eq!(t["messages"], 4);
    assert_eq!(t["span_ns"], t0 + 2 * year);
    // One entry per second that had a message, counted from the earliest one.
    let seconds = &t["without_limiter"]["classes"][0]["seconds"];
    let want: Vec<Value> = [0, t0, t0 + year, t0 + 2 * year]
        .iter()
        .map(|ns| serde_json::json!([ns / 1_000_000_000, 1, 1]))
        .collect();
    assert_eq!(seconds, &Value::Array(want));
    // `limit` reads the same file.
    assert_ok(&s.run(&["limit", "--trace", &trace]));
}

#[test]
fn errors_echo_at_most_80_characters_of_the_input() {
    let s = Sandbox::new();
    let origin = "f".repeat(1 << 20) + "x";
    let trace = s.write("huge.csv", format!("ts_ns,origin,app_ids\n1,{origin},5\n"));
    for args in [
        vec!["limit", "--trace", &trace],
        vec!["replay", "--rounds", "2", "--trace", &trace],
    ] {
        let out = s.run(&args);
        let line = assert_fails(&out, 2, &["huge.csv", "line 2", "origin `ffff"]);
        assert!(line.len() < 300, "{} bytes: {}", line.len(), &line[..300]);
        assert!(line.contains(&format!("{}...", "f".repeat(80))), "{line}");
        assert!(stderr(&out).len() < 1000);
    }
    // A huge value in a JSON config: the same bound.
    let config = s.write(
        "big.json",
        format!("{{\"TxBacklogSize\": \"{}\"}}", "9".repeat(1 << 20)),
    );
    let out = s.run(&["replay", "--rounds", "2", "--config", &config]);
    let line = assert_fails(&out, 2, &["big.json", "TxBacklogSize"]);
    assert!(line.len() < 400, "{} bytes", line.len());
}

// --- 2. configuration checked before any work -----------------------------------------------

/// `replay` of a million rounds (minutes of work) with `config`: failing at once shows that the
/// check comes before the ingest; returns the error line.
fn refused_config(s: &Sandbox, name: &str, text: &str, needles: &[&str]) -> String {
    let config = s.write(name, text);
    let out = s.run(&["replay", "--rounds", "1000000", "--config", &config]);
    let mut all = vec![name];
    all.extend_from_slice(needles);
    assert_fails(&out, 2, &all)
}

#[test]
fn every_config_value_is_checked_first_and_named_by_its_go_algorand_key() {
    let s = Sandbox::new();
    let line = refused_config(
        &s,
        "node.toml",
        "MaxTxnLife = 10\nTxBacklogSize = 1000000000000000000\n",
        &["line 2", "TxBacklogSize = 1000000000000000000", "4194304"],
    );
    assert!(!line.contains("backlog_capacity"), "{line}");
    // The same value in a go-algorand config.json, its key spelled in another case.
    refused_config(
        &s,
        "config.json",
        "{\n  \"Version\": 38,\n  \"txbacklogsize\": 1000000000000000000\n}\n",
        &["line 3", "TxBacklogSize = 1000000000000000000"],
    );
    let cases: &[(&str, &[&str])] = &[
        ("TxBacklogSize = 0", &["TxBacklogSize = 0", "at least 1"]),
        (
            "TxBacklogAppTxPerSecondRate = 0",
            &["TxBacklogAppTxPerSecondRate = 0"],
        ),
        (
            "TxBacklogServiceRateWindowSeconds = 0",
            &["TxBacklogServiceRateWindowSeconds = 0"],
        ),
        (
            "TxBacklogAppTxPerSecondRate = 4000000",
            &[
                "TxBacklogAppTxPerSecondRate = 4000000",
                "40000000 admissions",
                "33554431",
            ],
        ),
        (
            "TxBacklogAppTxRateLimiterMaxSize = 1",
            &["TxBacklogAppTxRateLimiterMaxSize = 1", "at least 2"],
        ),
        (
            "TxBacklogAppTxRateLimiterMaxSize = 9000000000000000000",
            &[
                "TxBacklogAppTxRateLimiterMaxSize = 9000000000000000000",
                "cannot be allocated",
            ],
        ),
        (
            "TxBacklogAppRateLimitingCongestionPct = 101",
            &["TxBacklogAppRateLimitingCongestionPct = 101", "0 to 100"],
        ),
        (
            "MaxTxnLife = 100000000",
            &["MaxTxnLife = 100000000", "1048576"],
        ),
    ];
    for (text, needles) in cases {
        let mut all = vec!["line 2"];
        all.extend_from_slice(needles);
        refused_config(&s, "node.toml", &format!("# node\n{text}\n"), &all);
    }
    // The false-positive rate names the file and the key, not a temporary directory.
    let line = refused_config(
        &s,
        "node.toml",
        "BloomFalsePositiveRate = 1.5\n",
        &["line 1", "BloomFalsePositiveRate = 1.5", "between 0 and 1"],
    );
    assert!(!line.contains("txgate-replay-"), "{line}");
}

#[test]
fn a_config_that_is_not_utf8_or_is_a_directory_is_bad_input() {
    let s = Sandbox::new();
    let config = s.write("latin1.toml", b"# caf\xe9\nTxBacklogSize = 10\n");
    let out = s.run(&["replay", "--rounds", "2", "--config", &config]);
    assert_fails(&out, 2, &["latin1.toml", "line 1", "not valid UTF-8"]);
    let dir = s.path("confdir");
    std::fs::create_dir(&dir).unwrap();
    let out = s.run(&["replay", "--rounds", "2", "--config", dir.to_str().unwrap()]);
    assert_fails(&out, 2, &["confdir", "is a directory"]);
    let out = s.run(&["limit", "--trace", dir.to_str().unwrap()]);
    assert_fails(&out, 2, &["confdir", "is a directory"]);
}

// --- 3. signals and temporary files -------------------------------------------------------------

/// Starts a long replay (a million rounds) and returns once it is ingesting: its stderr said
/// so, its ledger (the temporary one in the private TMPDIR, or `db`) is open.
fn start_long_replay(s: &Sandbox, db: Option<&Path>) -> (Child, mpsc::Receiver<String>) {
    let mut args = vec!["replay", "--rounds", "1000000", "--txns-per-round", "20"];
    if let Some(db) = db {
        args.extend(["--db", db.to_str().unwrap()]);
    }
    let mut child = s
        .command(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // Hang guard only.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the replay reports its ingest phase");
        // Plain progress lines (stderr is a pipe): `ingest: started` once the ledger is open
        // and the first block is on its way.
        if line == "ingest: started" {
            break;
        }
    }
    // A few rounds in.
    std::thread::sleep(Duration::from_millis(300));
    (child, rx)
}

fn signal(child: &Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// Waits (at most 30 s) for the child; its status code and the rest of its stderr.
fn finish(mut child: Child, rx: &mpsc::Receiver<String>) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("txgate did not end after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let rest: Vec<String> = rx.iter().collect();
    (status.code(), rest.join("\n"))
}

#[cfg(unix)]
#[test]
fn sigint_and_sigterm_during_ingest_remove_the_temporary_ledger() {
    for (name, code) in [("INT", 130), ("TERM", 143)] {
        let s = Sandbox::new();
        let (child, rx) = start_long_replay(&s, None);
        // The temporary ledger exists while ingesting.
        assert_eq!(std::fs::read_dir(s.tmp()).unwrap().count(), 1);
        signal(&child, name);
        let (status, err) = finish(child, &rx);
        assert_eq!(status, Some(code), "SIG{name}: {err}");
        let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("txgate: ")).collect();
        assert_eq!(
            lines,
            [format!(
                "txgate: interrupted by SIG{name}; the temporary ledger was removed"
            )],
            "{err}"
        );
        s.assert_tmp_empty();
    }
}

#[cfg(unix)]
#[test]
fn sigterm_with_a_db_leaves_a_valid_ledger() {
    let s = Sandbox::new();
    let db = s.path("db");
    let (child, rx) = start_long_replay(&s, Some(&db));
    signal(&child, "TERM");
    let (status, err) = finish(child, &rx);
    assert_eq!(status, Some(143), "{err}");
    assert!(err.contains("txgate: interrupted by SIGTERM"), "{err}");
    assert!(!err.contains("temporary ledger"), "{err}");
    s.assert_tmp_empty();
    let ledger = Ledger::open(&db, Default::default()).unwrap();
    let open = ledger.open_report();
    // Rounds 1..=N for the N the run committed (each add_block one transaction).
    assert!(
        open.first.is_none() || open.first == Some(1),
        "{:?}",
        open.first
    );
    assert!(open.rebuilt.is_empty());
    drop(ledger);
}

#[test]
fn error_exits_remove_the_temporary_ledger() {
    let s = Sandbox::new();
    // A runtime failure after every phase ran: the JSON report cannot be written.
    let json_dir = s.path("report-dir");
    std::fs::create_dir(&json_dir).unwrap();
    let out = s.run(&with_small(&[
        "replay",
        "--rounds",
        "3",
        "--txns-per-round",
        "5",
        "--json",
        json_dir.to_str().unwrap(),
    ]));
    assert_fails(&out, 1, &["report-dir"]);
    // Bad input found during ingest: a block that does not decode.
    let blocks = s.write("blocks.bin", b"\x81\xa5block\xc1");
    let out = s.run(&["replay", "--blocks", &blocks]);
    assert_fails(&out, 2, &["blocks.bin"]);
}

// --- 4. a node that does not answer -----------------------------------------------------------

/// A node that accepts connections and then `answer`s each one on a thread of its own.
fn stand_in(answer: fn(std::net::TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || answer(stream));
        }
    });
    url
}

/// Reads the request, then never answers (until the client goes away).
fn hang(mut stream: std::net::TcpStream) {
    let mut buf = [0; 4096];
    while matches!(stream.read(&mut buf), Ok(n) if n > 0) {}
}

/// Reads the request, then answers one byte every 200 ms of a status that never ends.
fn trickle(mut stream: std::net::TcpStream) {
    let mut buf = [0; 4096];
    let _ = stream.read(&mut buf);
    let head =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n";
    for byte in head.iter().chain(std::iter::repeat(&b' ')) {
        if stream.write_all(&[*byte]).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A run against an unanswering node: it must end on its own within the hang guard.
fn run_bounded(s: &Sandbox, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = s
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Hang guard only (the budget below is 3 s).
    let deadline = started + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("txgate waited on a silent node past the hang guard");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    s.assert_tmp_empty();
    (out, started.elapsed())
}

#[test]
fn a_node_that_never_answers_fails_with_a_warning_per_retry() {
    let s = Sandbox::new();
    for (url, what) in [(stand_in(hang), "hang"), (stand_in(trickle), "trickle")] {
        for command in ["txids", "replay"] {
            let (out, _) = run_bounded(
                &s,
                &[
                    command,
                    "--algod",
                    &url,
                    "--algod-timeout",
                    "0.5",
                    "--algod-max-wait",
                    "3",
                    "--algod-retries",
                    "10",
                ],
            );
            let line = assert_fails(
                &out,
                1,
                &[
                    &url,
                    "GET /v2/status failed",
                    "no whole answer within 0.5 s (--algod-timeout)",
                ],
            );
            let err = stderr(&out);
            let warnings: Vec<&str> = err
                .lines()
                .filter(|l| l.starts_with("txgate: warning: "))
                .collect();
            // Tries at 0, 0.75, 1.75 and 3.25 s (0.5 s each, then 0.25, 0.5, 1 s waits): the
            // fourth would start after the 3 s budget, so 3 tries and 2 retries announced.
            assert_eq!(warnings.len(), 2, "{what} {command}: {err}");
            assert!(
                warnings[0].contains("retry 1 of 10 in 0.25 s"),
                "{}",
                warnings[0]
            );
            assert!(
                warnings[1].contains("retry 2 of 10 in 0.50 s"),
                "{}",
                warnings[1]
            );
            assert!(line.contains("failed 3 times"), "{what} {command}: {line}");
        }
    }
}

#[test]
fn help_says_the_waits_and_exit_statuses() {
    let out = command().arg("help").output().unwrap();
    assert_ok(&out);
    let help = stdout(&out);
    for needle in [
        "--algod-timeout (default 15 s)",
        "--algod-max-wait (default 60 s)",
        "130 / 143 / 129",
        "2 bad input or usage",
    ] {
        assert!(help.contains(needle), "{needle:?} not in {help}");
    }
}

// --- 5. usage that would silently do nothing --------------------------------------------------

#[test]
fn flags_that_would_do_nothing_are_usage_errors() {
    let s = Sandbox::new();
    let out = s.run(&["replay", "--rounds", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("`0` selects no rounds"),
        "{}",
        stderr(&out)
    );
    let out = s.run(&["replay", "--follow", "--rounds", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--algod"), "{}", stderr(&out));
    let blocks = s.write("none.bin", b"");
    let out = s.run(&["replay", "--blocks", &blocks, "--txns-per-round", "5"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--txns-per-round"),
        "{}",
        stderr(&out)
    );
    let out = s.run(&["replay", "--rounds", "2", "--plot", "-", "--json", "-"]);
    assert_fails(&out, 2, &["--json - and --plot -"]);
}

#[test]
fn plot_dash_writes_the_chart_to_stdout_as_json_dash_does() {
    let s = Sandbox::new();
    let out = s.run(&with_small(&[
        "replay",
        "-q",
        "--rounds",
        "3",
        "--txns-per-round",
        "10",
        "--plot",
        "-",
    ]));
    assert_ok(&out);
    let svg = stdout(&out);
    assert!(
        svg.starts_with("<svg") && svg.ends_with("</svg>\n"),
        "{svg}"
    );
    // Three classes (honest, spam, resent), with and without the limiter: the table's rows.
    assert_eq!(svg.matches("<polyline").count(), 6, "{svg}");
    for class in ["honest", "spam", "resent"] {
        assert!(
            svg.contains(&format!(">{class}, app limiter on<")),
            "{class}"
        );
    }
    assert!(!svg.contains("== ingest"));
    assert!(!s.path("-").exists());
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn rounds_beyond_the_archive_are_a_usage_error() {
    let archive = txgate_testkit::data_file(DATASET2);
    let s = Sandbox::new();
    let archive = archive.to_str().unwrap();
    let db = s.path("db");
    let out = s.run(&[
        "replay",
        "--blocks",
        archive,
        "--rounds",
        "400..=500",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_fails(
        &out,
        2,
        &["--rounds 400..=500", "no block of", "dataset2.tar.bz2"],
    );
    let out = s.run(&["txids", "--blocks", archive, "--rounds", "400..=500"]);
    assert_fails(&out, 2, &["--rounds 400..=500", "no block of"]);
    // The --db is still a valid (empty) ledger.
    let ledger = Ledger::open(&db, Default::default()).unwrap();
    let open = ledger.open_report();
    assert_eq!((open.first, open.latest), (None, None));
    drop(ledger);
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn a_db_that_starts_late_samples_lookups_from_the_rounds_it_keeps() {
    let archive = txgate_testkit::data_file(DATASET2);
    let s = Sandbox::new();
    let archive = archive.to_str().unwrap();
    let db = s.path("db");
    let db = db.to_str().unwrap();
    let json = s.path("late.json");
    assert_ok(&s.run(&with_small(&[
        "replay", "--blocks", archive, "--rounds", "30..=40", "--db", db,
    ])));
    let out = s.run(&with_small(&[
        "replay",
        "--blocks",
        archive,
        "--db",
        db,
        "--json",
        json.to_str().unwrap(),
    ]));
    assert_ok(&out);
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let ingest = &report["ingest"];
    assert_eq!(ingest["rounds_read"], 378);
    assert_eq!(ingest["rounds_skipped"], 41);
    assert_eq!(ingest["rounds_ingested"], 337);
    assert_eq!(ingest["first_round"], 30);
    // Every txid of rounds 30..=377 is a hit (fewer than --lookups 200), and each is found;
    // none of rounds 2..=29, which hold transactions but are not in the ledger.
    let counts = common::dataset2_txn_counts();
    assert!(counts.range(..30).map(|(_, n)| n).sum::<u64>() > 0);
    let want: u64 = counts.range(30..).map(|(_, n)| n).sum();
    assert!(want > 0);
    let l = &report["lookups"];
    assert_eq!(l["hits"], want);
    assert_eq!(l["hits_found"], want);
    assert_eq!(l["baseline_hits_found"], l["baseline_hits"]);
    let ledger = Ledger::open(Path::new(db), Default::default()).unwrap();
    let open = ledger.open_report();
    assert_eq!((open.first, open.latest), (Some(30), Some(377)));
    drop(ledger);
}
