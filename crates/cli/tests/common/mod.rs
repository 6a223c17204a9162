//! Helpers shared by the CLI's integration tests: running the binary and reading its answers.

// Each test crate uses its own subset.
#![allow(dead_code, missing_docs)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

pub(crate) const DATASET2: &str = "algorand-sdk-testing/private_blocks/dataset2.tar.bz2";
pub(crate) const DATASET2_JSONL: &str = "derived/algorand_private_dataset2_txns.jsonl";

/// Small sizes for every phase, so a replay takes well under a second.
pub(crate) const SMALL: &[&str] = &[
    "--lookups",
    "200",
    "--baseline-lookups",
    "20",
    "--fpr-probes",
    "20000",
    "--traffic-seconds",
    "2",
    "--honest-rate",
    "200",
    "--spam-rate",
    "400",
    "--service-rate",
    "300",
];

/// The binary, with none of the environment variables it reads set (the test machine's own
/// node settings must not leak into the tests).
pub(crate) fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_txgate"));
    c.env_remove("ALGOD_TOKEN").env_remove("ALGORAND_DATA");
    c
}

pub(crate) fn txgate(args: &[&str]) -> Output {
    command().args(args).output().expect("run txgate")
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub(crate) fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(crate) fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "txgate failed: {:?}\n{}",
        out.status,
        stderr(out)
    );
}

/// Exit status `code`, one `txgate: error:` line containing every needle, no panic; returns the
/// line.
pub(crate) fn assert_fails(out: &Output, code: i32, needles: &[&str]) -> String {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    let errors: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("txgate: error: "))
        .collect();
    assert_eq!(errors.len(), 1, "one error line in {err}");
    for needle in needles {
        assert!(
            errors[0].contains(needle),
            "{needle:?} not in {:?}",
            errors[0]
        );
    }
    errors[0].to_owned()
}

/// Exit status 2 (bad input or usage), one error line containing every needle.
pub(crate) fn assert_bad(out: &Output, needles: &[&str]) {
    assert_fails(out, 2, needles);
}

pub(crate) fn replay_json(dir: &Path, extra: &[&str]) -> Value {
    let json = dir.join(format!("report-{}.json", rand_suffix()));
    let mut args = vec!["replay", "--json", json.to_str().unwrap()];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(extra);
    let out = txgate(&args);
    assert_ok(&out);
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

pub(crate) fn rand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Transactions per round of dataset2 (rounds without any are absent), from the derived jsonl.
pub(crate) fn dataset2_txn_counts() -> BTreeMap<u64, u64> {
    let mut counts = BTreeMap::new();
    let path = txgate_testkit::data_file(DATASET2_JSONL);
    for line in std::fs::read_to_string(path).unwrap().lines() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(line).unwrap();
        *counts.entry(v["round"].as_u64().unwrap()).or_default() += 1;
    }
    counts
}

/// Writes `blocks` (round, bytes) as an uncompressed tar of files `blocks/<round>`, the layout of
/// an algod block archive.
pub(crate) fn write_block_tar(out: &Path, blocks: impl IntoIterator<Item = (u64, Vec<u8>)>) {
    let mut builder = tar::Builder::new(std::fs::File::create(out).unwrap());
    for (round, bytes) in blocks {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder
            .append_data(&mut header, format!("blocks/{round}"), &bytes[..])
            .unwrap();
    }
    builder.finish().unwrap();
}
