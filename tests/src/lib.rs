//! Helpers shared by txgate's real-data integration tests.
//!
//! Real data lives outside the repository, in `../shared/data` next to the checkout (see its
//! `SOURCES.md`), or wherever the `TXGATE_DATA` environment variable points. It is never copied
//! into the repository.

use std::path::PathBuf;

/// The real-data directory: `$TXGATE_DATA` if set, else `<workspace>/../shared/data`.
pub fn data_dir() -> PathBuf {
    match std::env::var_os("TXGATE_DATA") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
    }
}

/// The path of `relative` inside the real-data directory, or `None` when it is missing.
///
/// A missing file is a skip (printed, with the reason) on a developer's machine, and a failure
/// under `CI=true`, where the data must be present.
///
/// # Panics
/// Panics under `CI=true` when the file is missing.
pub fn data_file(relative: &str) -> Option<PathBuf> {
    let path = data_dir().join(relative);
    if path.exists() {
        return Some(path);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
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
