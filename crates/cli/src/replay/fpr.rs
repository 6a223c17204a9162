//! The bloom false-positive-rate phase: random ids probed against the stored blooms.

use rand::RngCore;
use rand::rngs::SmallRng;
use txgate_algorand::Round;
use txgate_bloom::{Bytes, Filter};
use txgate_ledger::store::{Ledger, LedgerError};

use crate::config::NodeConfig;
use crate::progress::Progress;
use crate::report::BloomReport;

/// Probes the stored blooms ([`Ledger::round_bloom`]) of the window's rounds with random ids,
/// `probes` spread evenly over the rounds that have transactions.
pub(super) fn measure(
    ledger: &Ledger,
    config: &NodeConfig,
    window: Option<(Round, Round)>,
    round_txns: &[(Round, u64)],
    probes: u64,
    rng: &mut SmallRng,
) -> Result<BloomReport, LedgerError> {
    let mut report = BloomReport {
        configured_fpr: config.bloom_false_positive_rate,
        ..BloomReport::default()
    };
    let Some((lo, hi)) = window else {
        return Ok(report);
    };
    let rounds: Vec<(Round, u64)> = round_txns
        .iter()
        .copied()
        .filter(|&(r, n)| n > 0 && (lo..=hi).contains(&r))
        .collect();
    if rounds.is_empty() || probes == 0 {
        return Ok(report);
    }
    let per_round = probes.div_ceil(rounds.len() as u64);
    let mut progress = Progress::start("bloom fpr", Some(rounds.len() as u64));
    let (mut expected_sum, mut bytes, mut txns) = (0.0, 0u64, 0u64);
    for &(round, items) in &rounds {
        let Some(bloom) = ledger.round_bloom(round)? else {
            continue;
        };
        let mut id = [0u8; 32];
        let mut fp = 0;
        for _ in 0..per_round {
            rng.fill_bytes(&mut id);
            fp += u64::from(bloom.contains(Bytes(&id)));
        }
        report.rounds += 1;
        report.probes += per_round;
        report.false_positives += fp;
        expected_sum += bloom.expected_false_positive_rate(items) * per_round as f64;
        bytes += bloom.memory_bytes();
        txns += items;
        progress.inc(1);
    }
    if report.probes > 0 {
        report.measured_fpr = report.false_positives as f64 / report.probes as f64;
        report.expected_fpr = expected_sum / report.probes as f64;
    }
    report.memory_per_txn_bytes = bytes as f64 / txns.max(1) as f64;
    progress.finish(&format!(
        "measured {:.5}, formula {:.5}",
        report.measured_fpr, report.expected_fpr
    ));
    Ok(report)
}
