//! Test support shared by txgate's crates: their tests, examples, benches and fuzz targets take
//! it as a dev-dependency (a library never depends on it). It depends on none of txgate's
//! libraries, so each of them can dev-depend on it and still be published; it is published only
//! for that. Its API follows the crates' needs, not semver promises to others: the crates pin
//! its exact version, so a later release never breaks an already-published crate's tests.
//!
//! # Modules
//! - [`rng`]: [`SplitMix64`](rng::SplitMix64), the reproducible generator of well-mixed test
//!   inputs, and its finalizer [`mix`](rng::mix).
//! - [`alloc`]: [`Counting`](alloc::Counting), a per-thread counting global allocator, and
//!   [`allocations_during`](alloc::allocations_during), for "this path allocates nothing" tests.
//! - [`bloom_format`]: the version-1 form of a serialized bloom filter and what a loader must
//!   write back for accepted bytes.
//! - [`algod`]: [`FakeAlgod`](algod::FakeAlgod), a fake algod HTTP server over recorded blocks,
//!   for the CLI's algod source (std only).
//! - This file: the real-data directory ([`data_dir`], [`data_file`]) and the real rounds' txids
//!   ([`real_round_txids`]).
//!
//! # Real data
//! Real data lives outside the repository, in `../shared/data` next to the checkout (see its
//! `SOURCES.md`), or wherever the `TXGATE_DATA` environment variable points. It is never copied
//! into the repository, nor into a published crate: a crate unpacked from crates.io finds no
//! data beside it.
//!
//! A test that reads real data is ignored where the data is missing, a skip the test runners
//! show (`ignored` in `cargo test`, `SKIP` in `cargo nextest`), never a pass. libtest decides
//! what is ignored at compile time, so each crate with real-data tests has a build script that
//! sets `cfg(txgate_no_data)` when the data directory is missing (the rule of
//! [`data_missing`]: the same directory as [`data_dir`], unless `TXGATE_REQUIRE_DATA=1`), and
//! each such test carries
//! `#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]`.
//! With `TXGATE_REQUIRE_DATA=1` (set by `.ci/run`) nothing is ignored and a missing file fails
//! the test that reads it.
//!
//! The build script watches the variables and the directory, so its answer follows them; data
//! laid down where none was (with `TXGATE_DATA` unset) is seen only once the build script runs
//! again (`touch build.rs`, or set `TXGATE_DATA`): cargo cannot watch a path that does not
//! exist without running the script on every build.

use std::path::{Path, PathBuf};

pub mod algod;
pub mod alloc;
pub mod bloom_format;
pub mod rng;

/// The real-data directory: `$TXGATE_DATA` if set, else `<checkout>/../shared/data` (this crate
/// sits at `<checkout>/crates/testkit`).
pub fn data_dir() -> PathBuf {
    match std::env::var_os("TXGATE_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
    }
}

/// Whether real data must be present: `TXGATE_REQUIRE_DATA=1` (`.ci/run` sets it).
pub fn data_required() -> bool {
    std::env::var_os("TXGATE_REQUIRE_DATA").is_some_and(|v| v == "1")
}

/// The rule the crates' build scripts apply to set `cfg(txgate_no_data)`, which makes their
/// real-data tests ignored: the data directory `dir` is missing and `required`
/// ([`data_required`]) is false. Under `required` the tests run, and one whose file is missing
/// fails ([`data_file`]).
///
/// The build scripts repeat this rule in a few lines of `std` (a build-dependency on this crate
/// would be built by every user of the libraries); the crates' tests check that the two agree
/// with [`assert_data_cfg`].
pub fn data_missing(dir: &Path, required: bool) -> bool {
    !required && !dir.is_dir()
}

/// Checks a crate's `cfg(txgate_no_data)` (pass `cfg!(txgate_no_data)`) against
/// [`data_missing`] for [`data_dir`] now.
///
/// # Panics
/// When they disagree: the build script last ran under another data directory or another
/// `TXGATE_REQUIRE_DATA` (run it again with `touch build.rs`), or it does not apply the rule.
pub fn assert_data_cfg(no_data_cfg: bool) {
    let now = data_missing(&data_dir(), data_required());
    assert_eq!(
        no_data_cfg,
        now,
        "cfg(txgate_no_data) is {no_data_cfg} but the data directory {} is {} (TXGATE_REQUIRE_DATA {}): \
         the build script last ran before it changed; `touch build.rs` of this crate",
        data_dir().display(),
        if data_dir().is_dir() {
            "present"
        } else {
            "missing"
        },
        if data_required() { "set" } else { "unset" },
    );
}

/// The path of `relative` inside the real-data directory ([`data_dir`]).
///
/// Call it only from a test that carries
/// `#[cfg_attr(txgate_no_data, ignore = "...")]` (see the crate docs): where the data is
/// missing that test is ignored, so a missing file here means the data directory is incomplete
/// or `TXGATE_REQUIRE_DATA=1` demands data that is not there. Either way the test fails.
///
/// # Panics
/// Panics when the file is missing, naming it.
#[track_caller]
pub fn data_file(relative: &str) -> PathBuf {
    match find_data(&data_dir(), relative) {
        Ok(path) => path,
        Err(missing) => panic!("{missing}"),
    }
}

/// [`data_file`]'s rule with the directory given: the path, or the message naming what is
/// missing.
fn find_data(dir: &Path, relative: &str) -> Result<PathBuf, String> {
    let path = dir.join(relative);
    if path.exists() {
        return Ok(path);
    }
    Err(format!(
        "real data {} is missing (set TXGATE_DATA, or lay ../shared/data beside the checkout; \
         a test that reads real data carries #[cfg_attr(txgate_no_data, ignore = \"...\")])",
        path.display()
    ))
}

/// One round's transaction ids from the real data.
#[derive(Debug, Clone)]
pub struct RoundTxids {
    /// Network name (`tbd` for the private dataset2 network).
    pub network: String,
    /// Round number.
    pub round: u64,
    /// The round's txids, in block order, as raw 32 bytes.
    pub txids: Vec<[u8; 32]>,
}

/// Decodes an Algorand txid: 52 characters of unpadded RFC 4648 base32 for 32 bytes.
///
/// # Panics
/// Panics on anything else (real-data files only).
pub fn decode_txid(base32: &str) -> [u8; 32] {
    let bytes = data_encoding::BASE32_NOPAD
        .decode(base32.as_bytes())
        .expect("txid base32");
    bytes.try_into().expect("txid is 32 bytes")
}

/// Every real round with txids in `../shared/data/derived`: the 45 non-empty rounds of the private
/// dataset2 network (164 txids) and 7 real testnet/betanet rounds (287 txids).
///
/// # Panics
/// Panics on a malformed data file, and as [`data_file`] does when one is missing.
#[track_caller]
pub fn real_round_txids() -> Vec<RoundTxids> {
    let jsonl =
        std::fs::read_to_string(data_file("derived/algorand_private_dataset2_txns.jsonl")).unwrap();
    let public =
        std::fs::read_to_string(data_file("derived/algorand_public_round_txids.json")).unwrap();
    let mut rounds: Vec<RoundTxids> = Vec::new();
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("jsonl line");
        let round = v["round"].as_u64().expect("round");
        let txid = decode_txid(v["txid"].as_str().expect("txid"));
        match rounds.last_mut() {
            Some(last) if last.round == round => last.txids.push(txid),
            _ => rounds.push(RoundTxids {
                network: "tbd".into(),
                round,
                txids: vec![txid],
            }),
        }
    }
    let public: serde_json::Value = serde_json::from_str(&public).expect("public round json");
    for r in public.as_array().expect("array of rounds") {
        let txids = r["txids"]
            .as_array()
            .expect("txids")
            .iter()
            .map(|t| {
                let id = decode_txid(t["txid"].as_str().expect("txid"));
                let hex = t["txid_hex"].as_str().expect("txid_hex");
                let from_hex = data_encoding::HEXLOWER_PERMISSIVE
                    .decode(hex.as_bytes())
                    .expect("hex");
                assert_eq!(&id[..], &from_hex[..], "base32 and hex txids disagree");
                id
            })
            .collect();
        rounds.push(RoundTxids {
            network: r["network"].as_str().expect("network").into(),
            round: r["round"].as_u64().expect("round"),
            txids,
        });
    }
    rounds
}

/// The crate README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory that holds no data: a fresh, empty one under the system's temporary directory,
    /// as a crate unpacked from crates.io has no `../shared/data` beside it.
    fn empty_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("txgate-testkit-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn present_file_is_found() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        assert_eq!(find_data(dir, "Cargo.toml"), Ok(dir.join("Cargo.toml")));
    }

    #[test]
    fn missing_file_is_named() {
        let dir = empty_dir("missing");
        let err = find_data(&dir, "derived/none.json").unwrap_err();
        assert!(err.contains("derived/none.json"), "{err}");
        assert!(err.starts_with("real data "), "{err}");
        // Nor does a directory that does not exist answer otherwise.
        assert!(find_data(&dir.join("no/such/dir"), "x").is_err());
    }

    #[test]
    fn data_is_missing_only_without_its_directory_and_unless_required() {
        let dir = empty_dir("rule");
        assert!(!data_missing(&dir, false));
        assert!(!data_missing(&dir, true));
        let none = dir.join("no/such/dir");
        assert!(data_missing(&none, false));
        assert!(!data_missing(&none, true), "required data is never skipped");
        // A file is not a data directory.
        assert!(data_missing(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"),
            false
        ));
    }

    #[test]
    fn this_crates_cfg_follows_the_rule() {
        assert_data_cfg(cfg!(txgate_no_data));
    }

    #[test]
    #[should_panic(expected = "cfg(txgate_no_data) is")]
    fn a_stale_cfg_is_reported() {
        assert_data_cfg(!cfg!(txgate_no_data));
    }

    #[test]
    fn txid_decodes_from_base32() {
        // RFC 4648 base32 of 32 zero bytes is 52 'A's (unpadded); of 32 bytes 0xff, 51 '7's
        // (31, five one bits each) and a 'Q' (the last of the 256 bits, then four zero bits: 16).
        assert_eq!(decode_txid(&"A".repeat(52)), [0; 32]);
        assert_eq!(decode_txid(&format!("{}Q", "7".repeat(51))), [0xff; 32]);
    }

    #[test]
    #[should_panic(expected = "txid is 32 bytes")]
    fn short_txid_is_refused() {
        // 31 zero bytes: 50 characters of unpadded base32.
        decode_txid(&"A".repeat(50));
    }
}
