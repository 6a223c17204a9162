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
//! Every key is optional (a missing key takes the default above); an unknown key is an error,
//! so a typo never silently falls back to a default.

use std::path::Path;

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

impl NodeConfig {
    /// Reads and parses `path`.
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] when the file cannot be read; [`CliError::Config`] (with the line of
    /// the offending key) for TOML syntax errors, unknown keys and wrongly typed values.
    pub(crate) fn load(path: &Path) -> Result<Self, CliError> {
        let text = std::fs::read_to_string(path).map_err(CliError::io(path))?;
        Self::parse(&text).map_err(|(line, message)| CliError::Config {
            path: path.to_owned(),
            line,
            message,
        })
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
