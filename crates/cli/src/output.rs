//! `--json TARGET`: the report for machines, to a file or (`-`) to stdout.
//!
//! Every JSON report is one object whose first field is `"schema_version"`
//! ([`SCHEMA_VERSION`]); the README's "JSON reports" section documents the fields. Field names
//! carry their unit: `_ns` (nanoseconds, integers unless a mean), `_bytes`, `_per_second`;
//! `_fpr` fields are fractions in [0, 1]; other numbers are counts or rounds.

use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::error::CliError;

/// Version of the JSON reports' schema: raised when a field changes meaning or goes away (new
/// fields may appear without a raise). Version 2: a traffic class's dense `per_second` array
/// became the sparse `seconds` list.
pub(crate) const SCHEMA_VERSION: u32 = 2;

/// Where `--json` (and `--plot`) writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JsonTarget {
    /// `-`: stdout (the table is then not printed, so stdout is the JSON alone).
    Stdout,
    /// A file, created or truncated.
    File(PathBuf),
}

impl JsonTarget {
    /// Writes `report` as pretty JSON and a newline.
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] naming the file (or `<stdout>`).
    pub(crate) fn write(&self, report: &impl Serialize) -> Result<(), CliError> {
        let path = match self {
            JsonTarget::Stdout => PathBuf::from("<stdout>"),
            JsonTarget::File(path) => path.clone(),
        };
        let json = serde_json::to_string_pretty(report)
            .map_err(|e| CliError::io(&path)(std::io::Error::other(e)))?
            + "\n";
        match self {
            JsonTarget::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(json.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(CliError::io(path))
            }
            JsonTarget::File(p) => std::fs::write(p, json).map_err(CliError::io(path)),
        }
    }
}

impl JsonTarget {
    /// Writes `text` as it is (the `--plot` SVG).
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] naming the file (or `<stdout>`).
    pub(crate) fn write_text(&self, text: &str) -> Result<(), CliError> {
        match self {
            JsonTarget::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(CliError::io("<stdout>"))
            }
            JsonTarget::File(p) => std::fs::write(p, text).map_err(CliError::io(p)),
        }
    }
}

/// clap's value parser for [`JsonTarget`]: `-` is stdout, anything else a path.
pub(crate) fn json_target(s: &str) -> Result<JsonTarget, std::convert::Infallible> {
    Ok(if s == "-" {
        JsonTarget::Stdout
    } else {
        JsonTarget::File(PathBuf::from(s))
    })
}
