//! Sets `cfg(txgate_no_data)` when the real data the tests read is missing, so that those tests
//! are ignored (a skip the test runner shows) instead of passing without it. The rule is
//! txgate-testkit's `data_missing` (its crate docs, "Real data"), repeated here in `std` alone:
//! a build-dependency would be built by every user of this crate. The tests check that the two
//! agree (`txgate_testkit::assert_data_cfg`).

use std::path::PathBuf;

/// The data directory when `TXGATE_DATA` is unset, from this crate's directory
/// (`<checkout>/crates/ledger`): `../shared/data` beside the checkout.
const BESIDE_CHECKOUT: &str = "../../../shared/data";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=TXGATE_DATA");
    println!("cargo::rerun-if-env-changed=TXGATE_REQUIRE_DATA");
    let dir = match std::env::var_os("TXGATE_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"))
            .join(BESIDE_CHECKOUT),
    };
    let required = std::env::var_os("TXGATE_REQUIRE_DATA").is_some_and(|v| v == "1");
    if dir.is_dir() {
        // Cargo runs the script again when anything in the directory changes.
        println!("cargo::rerun-if-changed={}", dir.display());
    } else if !required {
        println!("cargo::rustc-cfg=txgate_no_data");
    }
}
