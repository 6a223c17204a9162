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

use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use txgate_ledger::handler::HandlerConfig;
use txgate_ledger::store::{LedgerConfig, LedgerError};
use txgate_ratelimit::AppRateLimiter;

use crate::error::{CliError, excerpt, one_line};

/// A parse error: (1-based line when known, one-line message).
pub(crate) type ParseError = (Option<u64>, String);

/// A check's error: the key and `KEY = VALUE: message`.
fn said((key, value): (&'static str, impl Display), message: String) -> (&'static str, String) {
    (key, format!("{key} = {value}: {message}"))
}

/// The 1-based line where `key` is set: in TOML the first line that starts with it (then spaces
/// or `=`), in JSON the first line holding it quoted, compared as go-algorand's loader compares
/// names (exactly, else case-insensitively).
fn line_of_key(text: &str, key: &str, json: bool) -> Option<u64> {
    let quoted = format!("\"{}\"", key.to_ascii_lowercase());
    let position = text.lines().position(|line| {
        if json {
            line.to_ascii_lowercase().contains(&quoted)
        } else {
            line.trim_start()
                .strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        }
    });
    position.map(|p| p as u64 + 1)
}

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

impl NodeConfig {
    /// The values in force as (go-algorand's name, value as the JSON report writes it), in
    /// [`KEYS`]' order.
    pub(crate) fn values(&self) -> [(&'static str, String); 8] {
        [
            ("TxBacklogSize", self.tx_backlog_size.to_string()),
            (
                "TxBacklogAppTxPerSecondRate",
                self.app_tx_per_second_rate.to_string(),
            ),
            (
                "TxBacklogServiceRateWindowSeconds",
                self.service_rate_window_seconds.to_string(),
            ),
            (
                "TxBacklogAppTxRateLimiterMaxSize",
                self.app_tx_rate_limiter_max_size.to_string(),
            ),
            (
                "TxBacklogAppRateLimitingCongestionPct",
                self.app_rate_limiting_congestion_pct.to_string(),
            ),
            (
                "EnableTxBacklogAppRateLimiting",
                self.enable_app_rate_limiting.to_string(),
            ),
            (
                "BloomFalsePositiveRate",
                self.bloom_false_positive_rate.to_string(),
            ),
            ("MaxTxnLife", self.max_txn_life.to_string()),
        ]
    }
}

/// The values in force for the report's table: two lines, each indented by two spaces, of
/// `Name=value` by go-algorand's names in [`KEYS`]' order (the backlog size and the limiter's
/// rate, window and size; then the congestion percentage, the switch and the ledger's two).
impl Display for NodeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in self.values().chunks(4) {
            write!(f, " ")?;
            for (name, value) in line {
                write!(f, " {name}={value}")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

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
    /// Reads, parses and checks `path`: go-algorand JSON when its name ends in `.json` or its
    /// text starts with `{`, else TOML. Returns the configuration, its format (`toml` or `json`)
    /// and the number of JSON keys ignored.
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] when the file cannot be read; [`CliError::Config`] (with the line of the
    /// offending key when known) for a directory, text that is not UTF-8, TOML or JSON syntax
    /// errors, unknown TOML keys, wrongly typed values, and values out of range ([`Self::check`]).
    pub(crate) fn load(path: &Path) -> Result<(Self, &'static str, u64), CliError> {
        let bad = |line: Option<u64>, message: String| CliError::Config {
            path: path.to_owned(),
            line,
            message,
        };
        if path.is_dir() {
            return Err(bad(None, "is a directory, not a configuration file".into()));
        }
        let bytes = std::fs::read(path).map_err(CliError::io(path))?;
        let (config, format, ignored, text) =
            Self::parse_bytes(path, &bytes).map_err(|(line, message)| bad(line, message))?;
        config
            .check()
            .map_err(|(key, message)| bad(line_of_key(&text, key, format == "json"), message))?;
        Ok((config, format, ignored))
    }

    /// Parses a file's bytes (`path` only chooses the format, by its extension): the
    /// configuration, its format, the JSON keys ignored and the text. Values are not checked
    /// ([`Self::check`]). The error is (1-based line, one-line message).
    pub(crate) fn parse_bytes(
        path: &Path,
        bytes: &[u8],
    ) -> Result<(Self, &'static str, u64, String), ParseError> {
        let text = match std::str::from_utf8(bytes) {
            Ok(text) => text.to_owned(),
            Err(e) => {
                let at = e.valid_up_to();
                let line = bytes[..at].iter().filter(|b| **b == b'\n').count() as u64 + 1;
                return Err((
                    Some(line),
                    "not valid UTF-8 (a configuration file is UTF-8 text)".into(),
                ));
            }
        };
        let json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"))
            || text.trim_start().starts_with('{');
        if json {
            let (config, ignored) = Self::parse_json(&text)?;
            Ok((config, "json", ignored, text))
        } else {
            Ok((Self::parse(&text)?, "toml", 0, text))
        }
    }

    /// Checks every value before any work, with the checks of the libraries that use them
    /// ([`HandlerConfig::validate`], [`LedgerConfig::validate`], and the limiter's own, which
    /// allocates its tables to see that they fit). The error is (the key as go-algorand spells
    /// it, a one-line message starting with `KEY = VALUE: `).
    pub(crate) fn check(&self) -> Result<(), (&'static str, String)> {
        use txgate_ledger::handler::HandlerConfigError as H;
        let handler = HandlerConfig::default()
            .with_backlog_capacity(self.tx_backlog_size)
            .with_congestion_pct(self.app_rate_limiting_congestion_pct)
            .with_dedup_salt(Some([0; 16]));
        let size = ("TxBacklogSize", self.tx_backlog_size);
        if let Err(e) = handler.validate() {
            return Err(match e {
                H::ZeroBacklogCapacity => said(size, "must be at least 1 (groups)".into()),
                H::BacklogCapacityTooLarge { max, .. } => said(
                    size,
                    format!(
                        "is above {max}, the largest backlog txgate allocates (it is allocated in full)"
                    ),
                ),
                H::CongestionPct(_) => said(
                    (
                        "TxBacklogAppRateLimitingCongestionPct",
                        self.app_rate_limiting_congestion_pct,
                    ),
                    "must be 0 to 100 (percent of TxBacklogSize)".into(),
                ),
                other => said(size, one_line(&other)),
            });
        }
        let ledger = LedgerConfig::default()
            .with_false_positive_rate(self.bloom_false_positive_rate)
            .with_max_txn_life(self.max_txn_life);
        match ledger.validate() {
            Ok(()) => {}
            Err(LedgerError::FalsePositiveRate(_)) => {
                return Err(said(
                    ("BloomFalsePositiveRate", self.bloom_false_positive_rate),
                    "must be between 0 and 1, both excluded".into(),
                ));
            }
            Err(LedgerError::MaxTxnLife { limit, .. }) => {
                return Err(said(
                    ("MaxTxnLife", self.max_txn_life),
                    format!("is above the limit, {limit} rounds"),
                ));
            }
            Err(other) => return Err(said(("MaxTxnLife", self.max_txn_life), one_line(&other))),
        }
        self.check_limiter()
    }

    /// The limiter's part of [`Self::check`].
    fn check_limiter(&self) -> Result<(), (&'static str, String)> {
        use txgate_ratelimit::ConfigError as R;
        let rate = ("TxBacklogAppTxPerSecondRate", self.app_tx_per_second_rate);
        let window = (
            "TxBacklogServiceRateWindowSeconds",
            self.service_rate_window_seconds,
        );
        let size = (
            "TxBacklogAppTxRateLimiterMaxSize",
            self.app_tx_rate_limiter_max_size,
        );
        let Err(e) = AppRateLimiter::new(self.limiter_config([0; 16])) else {
            return Ok(());
        };
        Err(match e {
            R::ZeroRate => said(rate, "must be at least 1 (per second)".into()),
            R::ZeroWindow => said(window, "must be at least 1 (seconds)".into()),
            R::WindowTooLong { .. } => said(
                window,
                "is longer than the limiter's clock spans (2^64 ns, about 584 years)".into(),
            ),
            R::ZeroMaxSize | R::MaxSizeBelowShards { .. } => {
                said(size, "must be at least 2 (keys)".into())
            }
            R::TableTooLarge { bytes } => said(
                size,
                format!(
                    "the limiter's tables for that many keys ({bytes} bytes) cannot be allocated"
                ),
            ),
            R::LimitTooLarge { limit, max } => said(
                rate,
                format!(
                    "x TxBacklogServiceRateWindowSeconds {} = {limit} admissions per window, above the limiter's maximum {max}",
                    self.service_rate_window_seconds
                ),
            ),
            other => said(rate, one_line(&other)),
        })
    }

    /// The app rate limiter's configuration: go-algorand's parameters, 128 shards (its bucket
    /// count; fewer for a max size below 256, each shard holding at least 2 keys), key
    /// derivation salted with `salt`.
    pub(crate) fn limiter_config(&self, salt: [u8; 16]) -> txgate_ratelimit::Config {
        let max_size = self.app_tx_rate_limiter_max_size;
        let mut shards = 128;
        while shards > 1 && max_size < 2 * shards {
            shards /= 2;
        }
        txgate_ratelimit::Config::default()
            .with_max_size(max_size)
            .with_rate_per_second(self.app_tx_per_second_rate)
            .with_window(Duration::from_secs(self.service_rate_window_seconds))
            .with_shards(shards)
            .with_salt(Some(salt))
    }

    /// Parses a go-algorand `config.json` (see the module docs); returns the configuration and
    /// the number of keys ignored. The error is (1-based line, one-line message).
    pub(crate) fn parse_json(text: &str) -> Result<(Self, u64), (Option<u64>, String)> {
        use serde_json::Value;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| (Some(e.line() as u64), excerpt(&e.to_string())))?;
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
                return Err((line_of(&key), format!("{key}: {}", excerpt(&e.to_string()))));
            }
            known.insert((*canonical).to_owned(), value);
        }
        let config = serde_json::from_value(Value::Object(known))
            .map_err(|e| (None, excerpt(&e.to_string())))?;
        Ok((config, ignored))
    }

    /// Parses TOML text; the error is (1-based line, one-line message).
    pub(crate) fn parse(text: &str) -> Result<Self, (Option<u64>, String)> {
        toml::from_str(text).map_err(|e: toml::de::Error| {
            let line = e
                .span()
                .map(|span| text[..span.start.min(text.len())].matches('\n').count() as u64 + 1);
            (line, excerpt(e.message()))
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
    fn values_are_the_json_s_names_and_values_in_two_lines() {
        let c = NodeConfig::parse(
            "TxBacklogSize = 400\nBloomFalsePositiveRate = 0.01\n\
             EnableTxBacklogAppRateLimiting = false\nMaxTxnLife = 7\n",
        )
        .unwrap();
        let json = serde_json::to_value(&c).unwrap();
        let values = c.values();
        assert_eq!(values.clone().map(|(name, _)| name), KEYS);
        for (name, value) in &values {
            assert_eq!(*value, json[name].to_string(), "{name}");
        }
        assert_eq!(
            c.to_string(),
            "  TxBacklogSize=400 TxBacklogAppTxPerSecondRate=100 \
             TxBacklogServiceRateWindowSeconds=10 TxBacklogAppTxRateLimiterMaxSize=1048576\n  \
             TxBacklogAppRateLimitingCongestionPct=10 EnableTxBacklogAppRateLimiting=false \
             BloomFalsePositiveRate=0.01 MaxTxnLife=7\n"
        );
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

    /// go-algorand accepts `TxBacklogAppTxPerSecondRate: 10000` (L = 100,000 over its default 10 s
    /// window); so does txgate, and its limiter counts to that limit.
    #[test]
    fn a_rate_of_10000_per_second_is_accepted() {
        let (c, _) = NodeConfig::parse_json(r#"{"TxBacklogAppTxPerSecondRate": 10000}"#).unwrap();
        assert_eq!(c.check(), Ok(()));
        let limiter = AppRateLimiter::new(c.limiter_config([0; 16])).unwrap();
        assert_eq!(limiter.limit(), 100_000);
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
