//! Per-round bloom filters over real Algorand txids: every txid is found in its own round, and
//! asking every round about every other round's txids gives false positives at no more than
//! the configured rate.

use txgate_bloom::{BlockedBloom, BloomBuilder, Bytes, Filter};
use txgate_testkit::real_round_txids;

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn per_round_filters_over_real_txids() {
    let rounds = real_round_txids();
    assert_eq!(rounds.iter().filter(|r| r.network == "tbd").count(), 45);
    assert_eq!(
        rounds.iter().map(|r| r.txids.len()).sum::<usize>(),
        164 + 287
    );
    let fpr = 0.001;
    let filters: Vec<BlockedBloom> = rounds
        .iter()
        .map(|r| {
            let mut f = BloomBuilder::with_false_positive_rate(r.txids.len() as u64, fpr)
                .seed(r.round)
                .build()
                .unwrap();
            for t in &r.txids {
                f.insert(Bytes(t));
            }
            f
        })
        .collect();
    let mut queries = 0u64;
    let mut false_positives = 0u64;
    for (i, r) in rounds.iter().enumerate() {
        for t in &r.txids {
            assert!(
                filters[i].contains(Bytes(t)),
                "round {} lost a txid",
                r.round
            );
            for (j, f) in filters.iter().enumerate() {
                if j != i && !rounds[j].txids.contains(t) {
                    queries += 1;
                    false_positives += u64::from(f.contains(Bytes(t)));
                }
            }
        }
    }
    // Each round is sized for <= 0.1 %; allow 5 standard deviations of a binomial above it.
    let mean = fpr * queries as f64;
    assert!(queries > 20_000, "{queries}");
    assert!(
        (false_positives as f64) <= mean + 5.0 * mean.sqrt() + 2.0,
        "{false_positives} of {queries}"
    );
}
