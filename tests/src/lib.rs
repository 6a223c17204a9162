//! Cross-crate and real-data integration tests for txgate (in `tests/`), the `bloom_rounds` and
//! `fake_algod` examples, and the test support that needs a server: [`algod`], a fake algod HTTP
//! server over recorded blocks, for the CLI's algod source. Not published.
//!
//! The support that the libraries' own tests share is in `txgate-testkit` (published, so that
//! the published crates' tests build from crates.io); the support that one library's tests need
//! is in that crate's `tests/`.

pub mod algod;

/// The workspace README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct WorkspaceReadme;
