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
//! data beside it, and its real-data tests skip (or fail, under `CI=true`).

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

/// The path of `relative` inside the real-data directory ([`data_dir`]), or `None` when it is
/// missing.
///
/// A missing file is a skip (printed, with the reason) on a developer's machine, and a failure
/// under `CI=true`, where the data must be present.
///
/// # Panics
/// Panics under `CI=true` when the file is missing.
pub fn data_file(relative: &str) -> Option<PathBuf> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    find_data(&data_dir(), relative, ci)
}

/// [`data_file`]'s rule with the directory and the CI flag given.
fn find_data(dir: &Path, relative: &str, ci: bool) -> Option<PathBuf> {
    let path = dir.join(relative);
    if path.exists() {
        return Some(path);
    }
    assert!(
        !ci,
        "real data {} is missing under CI=true (set TXGATE_DATA or lay ../shared/data beside the checkout)",
        path.display()
    );
    eprintln!(
        "SKIP: real data {} is missing (set TXGATE_DATA)",
        path.display()
    );
    None
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
/// dataset2 network (164 txids) and 7 real testnet/betanet rounds (287 txids). `None` (printed
/// skip, or a failure under `CI=true`) when the data is missing.
///
/// # Panics
/// Panics on a malformed data file, and as [`data_file`] does.
pub fn real_round_txids() -> Option<Vec<RoundTxids>> {
    let jsonl = std::fs::read_to_string(data_file("derived/algorand_private_dataset2_txns.jsonl")?)
        .unwrap();
    let public =
        std::fs::read_to_string(data_file("derived/algorand_public_round_txids.json")?).unwrap();
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
    Some(rounds)
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
    fn present_file_is_found_in_and_out_of_ci() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        for ci in [false, true] {
            assert_eq!(
                find_data(dir, "Cargo.toml", ci),
                Some(dir.join("Cargo.toml"))
            );
        }
    }

    #[test]
    fn missing_file_is_a_skip_outside_ci() {
        let dir = empty_dir("skip");
        assert_eq!(find_data(&dir, "derived/none.json", false), None);
        // Nor does a directory that does not exist panic.
        assert_eq!(find_data(&dir.join("no/such/dir"), "x", false), None);
    }

    #[test]
    #[should_panic(expected = "is missing under CI=true")]
    fn missing_file_fails_under_ci() {
        find_data(&empty_dir("ci"), "derived/none.json", true);
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
