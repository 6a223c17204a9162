//! The node configuration file (TOML): go-algorand's names and defaults for the app rate limiter
//! and the transaction backlog, plus the ledger's bloom false-positive rate and MaxTxnLife.
//!
//! ```toml
//! TxBacklogSize = 26000                         # groups the backlog holds
//! TxBacklogAppTxPerSecondRate = 100             # app-call groups per second per (app, peer)
//! TxBacklogServiceRateWindowSeconds = 10        # sliding window of the app limiter, seconds
//! TxBacklogAppTxRateLimiterMaxSize = 1048576    # (app, peer) keys the limiter tracks
//! TxBacklogAppRateLimitingCongestionPct = 10    # limiter runs above this % of the backlog
//! EnableTxBacklogAppRateLimiting = true
//! BloomFalsePositiveRate = 0.001                # target FPR of each round's txid bloom
//! MaxTxnLife = 1000                             # rounds: the blooms' window is MaxTxnLife + 1
//! ```
//!
//! Every key is optional (a missing key takes the default above); in TOML an unknown key is an
//! error, so a typo never silently falls back to a default.
//!
//! **go-algorand's own `config.json`** is read too (a file whose name ends in `.json` or whose
//! text starts with `{`): the node's data directory holds it, with every `config.Local` key of
//! the node, most of which txgate does not use. It is read the way go-algorand reads it
//! (`config.loadConfig`: Go's `encoding/json` into `config.Local`): keys match exactly or else
//! case-insensitively, unknown keys are ignored (counted in the report), and a value of the
//! wrong type is an error. go-algorand's migration of old defaults by `Version` is not applied:
//! values are taken as written.
//!
//! Without `--config`, `$ALGORAND_DATA/config.json` is used when `ALGORAND_DATA` is set and the
//! file exists (goal's and algod's habit); the report says which file was used.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::CliError;

/// The node configuration; field docs give the go-algorand source of each default.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct NodeConfig {
    /// go-algorand `TxBacklogSize` (config.Local, default 26,000): groups the backlog holds.
    #[serde(rename = "TxBacklogSize")]
    pub(crate) tx_backlog_size: usize,
    /// go-algorand `TxBacklogAppTxPerSecondRate` (default 100): admissions per second per
    /// (app, peer) key.
    #[serde(rename = "TxBacklogAppTxPerSecondRate")]
    pub(crate) app_tx_per_second_rate: u64,
    /// go-algorand `TxBacklogServiceRateWindowSeconds` (default 10): the limiter's window.
    #[serde(rename = "TxBacklogServiceRateWindowSeconds")]
    pub(crate) service_rate_window_seconds: u64,
    /// go-algorand `TxBacklogAppTxRateLimiterMaxSize` (default 1,048,576): keys tracked.
    #[serde(rename = "TxBacklogAppTxRateLimiterMaxSize")]
    pub(crate) app_tx_rate_limiter_max_size: usize,
    /// go-algorand `TxBacklogAppRateLimitingCongestionPct` (default 10): the limiter runs when
    /// the backlog holds more than this percentage of `TxBacklogSize`.
    #[serde(rename = "TxBacklogAppRateLimitingCongestionPct")]
    pub(crate) app_rate_limiting_congestion_pct: u32,
    /// go-algorand `EnableTxBacklogAppRateLimiting` (default true).
    #[serde(rename = "EnableTxBacklogAppRateLimiting")]
    pub(crate) enable_app_rate_limiting: bool,
    /// txgate: target false-positive rate of each round's txid bloom (default 0.001).
    #[serde(rename = "BloomFalsePositiveRate")]
    pub(crate) bloom_false_positive_rate: f64,
    /// go-algorand consensus `MaxTxnLife` (default 1000 rounds): the ledger keeps the blooms of
    /// the latest MaxTxnLife + 1 rounds in memory.
    #[serde(rename = "MaxTxnLife")]
    pub(crate) max_txn_life: u64,
}

impl Default for NodeConfig {
    fn default() -> Self {
        Self {
            tx_backlog_size: txgate_ledger::handler::DEFAULT_BACKLOG_CAPACITY,
            app_tx_per_second_rate: 100,
            service_rate_window_seconds: 10,
            app_tx_rate_limiter_max_size: 1 << 20,
            app_rate_limiting_congestion_pct: txgate_ledger::handler::DEFAULT_CONGESTION_PCT,
            enable_app_rate_limiting: true,
            bloom_false_positive_rate: txgate_ledger::store::DEFAULT_FALSE_POSITIVE_RATE,
            max_txn_life: txgate_ledger::store::DEFAULT_MAX_TXN_LIFE,
        }
    }
}

/// The keys of [`NodeConfig`], as spelt in go-algorand's `config.Local` (and txgate's two).
pub(crate) const KEYS: [&str; 8] = [
    "TxBacklogSize",
    "TxBacklogAppTxPerSecondRate",
    "TxBacklogServiceRateWindowSeconds",
    "TxBacklogAppTxRateLimiterMaxSize",
    "TxBacklogAppRateLimitingCongestionPct",
    "EnableTxBacklogAppRateLimiting",
    "BloomFalsePositiveRate",
    "MaxTxnLife",
];

/// Where the configuration came from, in the report's `config_source`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub(crate) struct ConfigSource {
    /// The file read (`null`: none, go-algorand's defaults).
    pub(crate) path: Option<String>,
    /// `--config`, `ALGORAND_DATA` (its `config.json`), or `defaults`.
    pub(crate) from: &'static str,
    /// `toml` or `json` (`null`: no file).
    pub(crate) format: Option<&'static str>,
    /// Keys of a go-algorand `config.json` that txgate does not use (ignored, as go-algorand
    /// ignores keys it does not know).
    pub(crate) ignored_keys: u64,
}

impl ConfigSource {
    /// One line for the table: `PATH (from $ALGORAND_DATA; go-algorand config.json, N keys
    /// txgate does not use ignored)`.
    pub(crate) fn describe(&self) -> String {
        let Some(path) = &self.path else {
            return "go-algorand defaults".into();
        };
        let mut notes = Vec::new();
        if self.from == "ALGORAND_DATA" {
            notes.push("from $ALGORAND_DATA".to_owned());
        }
        if self.format == Some("json") {
            notes.push(format!(
                "go-algorand config.json, {} keys txgate does not use ignored",
                self.ignored_keys
            ));
        }
        if notes.is_empty() {
            path.clone()
        } else {
            format!("{path} ({})", notes.join("; "))
        }
    }
}

/// The configuration of a run: `--config` when given, else `$ALGORAND_DATA/config.json` when the
/// variable is set and the file exists, else the defaults.
///
/// # Errors
///
/// As [`NodeConfig::load`].
pub(crate) fn resolve(arg: Option<&Path>) -> Result<(NodeConfig, ConfigSource), CliError> {
    let (path, from): (PathBuf, &'static str) = match arg {
        Some(path) => (path.to_owned(), "--config"),
        None => match std::env::var_os("ALGORAND_DATA") {
            Some(dir) if Path::new(&dir).join("config.json").is_file() => {
                (Path::new(&dir).join("config.json"), "ALGORAND_DATA")
            }
            _ => {
                return Ok((
                    NodeConfig::default(),
                    ConfigSource {
                        from: "defaults",
                        ..ConfigSource::default()
                    },
                ));
            }
        },
    };
    let (config, format, ignored_keys) = NodeConfig::load(&path)?;
    Ok((
        config,
        ConfigSource {
            path: Some(path.display().to_string()),
            from,
            format: Some(format),
            ignored_keys,
        },
    ))
}

impl NodeConfig {
    /// Reads and parses `path`: go-algorand JSON when its name ends in `.json` or its text starts
    /// with `{`, else TOML. Returns the configuration, its format (`toml` or `json`) and the
    /// number of JSON keys ignored.
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] when the file cannot be read; [`CliError::Config`] (with the line of
    /// the offending key) for TOML syntax errors, unknown keys and wrongly typed values.
    pub(crate) fn load(path: &Path) -> Result<(Self, &'static str, u64), CliError> {
        let text = std::fs::read_to_string(path).map_err(CliError::io(path))?;
        let json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
            || text.trim_start().starts_with('{');
        let parsed = if json {
            Self::parse_json(&text).map(|(c, ignored)| (c, "json", ignored))
        } else {
            Self::parse(&text).map(|c| (c, "toml", 0))
        };
        parsed.map_err(|(line, message)| CliError::Config {
            path: path.to_owned(),
            line,
            message,
        })
    }

    /// Parses a go-algorand `config.json` (see the module docs); returns the configuration and
    /// the number of keys ignored. The error is (1-based line, one-line message).
    pub(crate) fn parse_json(text: &str) -> Result<(Self, u64), (Option<u64>, String)> {
        use serde_json::Value;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| (Some(e.line() as u64), e.to_string().replace('\n', " ")))?;
        let Value::Object(map) = value else {
            return Err((
                Some(1),
                "a go-algorand config.json is one JSON object".into(),
            ));
        };
        // The key as written, and where it is, for messages.
        let line_of = |key: &str| {
            text.find(&format!("\"{key}\""))
                .map(|at| text[..at].matches('\n').count() as u64 + 1)
        };
        let mut known = serde_json::Map::new();
        let mut ignored = 0;
        for (key, value) in map {
            // Go's encoding/json prefers an exact match, else takes a case-insensitive one.
            let canonical = KEYS
                .iter()
                .find(|k| **k == key)
                .or_else(|| KEYS.iter().find(|k| k.eq_ignore_ascii_case(&key)));
            let Some(canonical) = canonical else {
                ignored += 1;
                continue;
            };
            let one = serde_json::Map::from_iter([((*canonical).to_owned(), value.clone())]);
            if let Err(e) = serde_json::from_value::<NodeConfig>(Value::Object(one)) {
                return Err((line_of(&key), format!("{key}: {e}")));
            }
            known.insert((*canonical).to_owned(), value);
        }
        let config =
            serde_json::from_value(Value::Object(known)).map_err(|e| (None, e.to_string()))?;
        Ok((config, ignored))
    }

    /// Parses TOML text; the error is (1-based line, one-line message).
    pub(crate) fn parse(text: &str) -> Result<Self, (Option<u64>, String)> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() as u64 + 1);
            (line, e.message().replace('\n', " "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_go_algorand_s() {
        let c = NodeConfig::parse("").unwrap();
        assert_eq!(c.tx_backlog_size, 26_000);
        assert_eq!(c.app_tx_per_second_rate, 100);
        assert_eq!(c.service_rate_window_seconds, 10);
        assert_eq!(c.app_tx_rate_limiter_max_size, 1_048_576);
        assert_eq!(c.app_rate_limiting_congestion_pct, 10);
        assert!(c.enable_app_rate_limiting);
        assert_eq!(c.bloom_false_positive_rate, 0.001);
        assert_eq!(c.max_txn_life, 1000);
    }

    #[test]
    fn keys_are_the_serialized_names() {
        let v = serde_json::to_value(NodeConfig::default()).unwrap();
        let mut names: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        names.sort_unstable();
        let mut keys = KEYS.to_vec();
        keys.sort_unstable();
        assert_eq!(names, keys);
    }

    #[test]
    fn go_algorand_config_json_is_read_as_go_algorand_reads_it() {
        // A node's config.json: keys txgate does not use are ignored, case-insensitive names
        // match, the others keep go-algorand's defaults.
        let text = r#"{
    "Version": 38,
    "Archival": true,
    "GossipFanout": 4,
    "TxBacklogSize": 5000,
    "txbacklogapptxpersecondrate": 7,
    "EnableTxBacklogAppRateLimiting": false,
    "DNSBootstrapID": "<network>.algorand.network"
}"#;
        let (c, ignored) = NodeConfig::parse_json(text).unwrap();
        assert_eq!(ignored, 4);
        assert_eq!(c.tx_backlog_size, 5000);
        assert_eq!(c.app_tx_per_second_rate, 7);
        assert!(!c.enable_app_rate_limiting);
        assert_eq!(c.service_rate_window_seconds, 10);
        assert_eq!(c.max_txn_life, 1000);
        // A wrong type names the key and its line; bad JSON its line.
        let (line, msg) =
            NodeConfig::parse_json("{\n  \"Archival\": 1,\n  \"TxBacklogSize\": \"big\"\n}")
                .unwrap_err();
        assert_eq!(line, Some(3));
        assert!(msg.starts_with("TxBacklogSize: "), "{msg}");
        let (line, _) = NodeConfig::parse_json("{\n\"TxBacklogSize\": 1,,\n}").unwrap_err();
        assert_eq!(line, Some(2));
        assert!(NodeConfig::parse_json("[1]").is_err());
    }

    #[test]
    fn keys_override_and_unknown_keys_fail_with_their_line() {
        let c = NodeConfig::parse("TxBacklogSize = 100\nMaxTxnLife = 7\n").unwrap();
        assert_eq!((c.tx_backlog_size, c.max_txn_life), (100, 7));
        let (line, msg) =
            NodeConfig::parse("TxBacklogSize = 100\nTxBacklogSise = 5\n").unwrap_err();
        assert_eq!(line, Some(2));
        assert!(msg.contains("TxBacklogSise"), "{msg}");
        let (line, _) = NodeConfig::parse("MaxTxnLife = \"x\"\n").unwrap_err();
        assert_eq!(line, Some(1));
    }
}
