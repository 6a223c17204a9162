//! Cross-crate and real-data integration tests for txgate (in `tests/`) and the `bloom_rounds`
//! and `fake_algod` examples. Not published.
//!
//! The support that the crates' own tests share is in `txgate-testkit` (published, so that the
//! published crates' tests build from crates.io); the support that one library's tests need is
//! in that crate's `tests/`.

/// The workspace README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;
