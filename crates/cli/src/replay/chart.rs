//! The `--plot` chart of the traffic phase.

use crate::plot::{Series, line_chart};
use crate::report::TrafficReport;

/// The acceptance chart: per class (every class of the report's table, "resent" included),
/// admitted / offered per second, with and without the limiter.
pub(super) fn acceptance_chart(traffic: &TrafficReport) -> String {
    const COLORS: [&str; 3] = ["#1a9850", "#d73027", "#4575b4"];
    let mut series = Vec::new();
    let runs = [
        (traffic.with_limiter.as_ref(), "app limiter on", false),
        (Some(&traffic.without_limiter), "app limiter off", true),
    ];
    for (run, label, dashed) in runs {
        let Some(run) = run else { continue };
        for (k, class) in run.classes.iter().enumerate() {
            let points = class
                .seconds
                .iter()
                .filter(|(_, offered, _)| *offered > 0)
                .map(|&(s, offered, admitted)| (s as f64, 100.0 * admitted as f64 / offered as f64))
                .collect();
            series.push(Series {
                label: format!("{}, {label}", class.name),
                color: COLORS[k % COLORS.len()],
                dashed,
                points,
            });
        }
    }
    line_chart(
        &format!(
            "Acceptance rate: {} (pool takes {} groups/s)",
            traffic.source, traffic.service_rate_per_second
        ),
        "seconds since the earliest message",
        "admitted / offered, %",
        100.0,
        &series,
    )
}
