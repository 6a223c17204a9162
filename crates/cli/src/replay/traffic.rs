//! The traffic phase: the messages ([`super::messages`]) through a fresh [`TxHandler`] per run,
//! once with the app rate limiter (when enabled) and once without, while a simulated
//! transaction pool drains the backlog at `--service-rate` groups per second of message time.

use std::collections::BTreeMap;
use std::sync::Arc;

use rand::rngs::SmallRng;
use txgate_ledger::handler::{
    Group, HandlerConfig, Message, Outcome, PoolReject, PoolSink, Source, TxHandler,
};
use txgate_ledger::store::Ledger;
use txgate_ratelimit::AppRateLimiter;

use super::args::{ReplayArgs, handler_config};
use super::ingest::Ingested;
use super::messages::{TrafficMsg, synthesize, trace_messages};
use crate::config::NodeConfig;
use crate::error::CliError;
use crate::limit::salt_of_seed;
use crate::progress::Progress;
use crate::report::{ClassReport, RunReport, TrafficReport};

/// Runs the traffic phase: see the module docs.
///
/// # Errors
///
/// [`CliError`] when the limiter or the handler refuses its configuration.
pub(super) fn run(
    args: &ReplayArgs,
    config: &NodeConfig,
    ledger: &Arc<Ledger>,
    ing: &Ingested,
    trace: Option<&[crate::trace::TraceEntry]>,
    rng: &mut SmallRng,
) -> Result<TrafficReport, CliError> {
    let latest = ledger.latest().unwrap_or(0);
    let first_valid = latest.saturating_sub(5).max(1);
    let (msgs, classes, source) = match (trace, &args.trace) {
        (Some(trace), Some(path)) => (
            trace_messages(trace, ing, first_valid, first_valid + config.max_txn_life),
            vec!["trace"],
            format!("trace {}", path.display()),
        ),
        _ => {
            let start = u64::try_from(crate::workload::Workload::timestamp(latest))
                .unwrap_or(0)
                .saturating_mul(1_000_000_000);
            (
                synthesize(args, ing, latest, config.max_txn_life, start, rng),
                vec!["honest", "spam", "resent"],
                "synthesized from the blocks' groups".to_owned(),
            )
        }
    };
    let span_ns = match (
        msgs.iter().map(|m| m.t_ns).min(),
        msgs.iter().map(|m| m.t_ns).max(),
    ) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    let handler_config = handler_config(args, config);
    let mut report = TrafficReport {
        source,
        messages: msgs.len() as u64,
        span_ns,
        service_rate_per_second: args.service_rate,
        congestion_threshold: handler_config.congestion_threshold() as u64,
        ..TrafficReport::default()
    };
    // With the limiter on, the messages are replayed twice (on, then off): the count says so.
    let mut progress = Progress::start(
        if config.enable_app_rate_limiting {
            "traffic, limiter on then off"
        } else {
            "traffic"
        },
        Some(msgs.len() as u64 * (1 + u64::from(config.enable_app_rate_limiting))),
    );
    if config.enable_app_rate_limiting {
        report.with_limiter = Some(simulate(
            &msgs,
            &classes,
            config,
            &handler_config,
            ledger,
            true,
            args,
            &mut progress,
        )?);
    }
    report.without_limiter = simulate(
        &msgs,
        &classes,
        config,
        &handler_config,
        ledger,
        false,
        args,
        &mut progress,
    )?;
    progress.finish(&format!("{} messages per run", msgs.len()));
    Ok(report)
}

/// One run of the messages through a fresh handler; the pool drains the backlog at
/// `args.service_rate` groups per second of message time (capacity unused while the backlog is
/// empty is lost); the clock is the latest message time seen (traces may go backwards).
#[allow(clippy::too_many_arguments)]
fn simulate(
    msgs: &[TrafficMsg],
    classes: &[&str],
    config: &NodeConfig,
    handler_config: &HandlerConfig,
    ledger: &Arc<Ledger>,
    limited: bool,
    args: &ReplayArgs,
    progress: &mut Progress,
) -> Result<RunReport, CliError> {
    let limiter = if limited {
        Some(Arc::new(AppRateLimiter::new(
            config.limiter_config(salt_of_seed(args.seed)),
        )?))
    } else {
        None
    };
    let handler = TxHandler::new(
        handler_config.clone().with_app_rate_limiting(limited),
        // The ledger is the committed check (`find_txid` over each txn's validity window).
        Arc::<Ledger>::clone(ledger),
        limiter,
        Arc::new(AcceptAll),
    )?;
    let mut run = RunReport {
        classes: classes
            .iter()
            .map(|c| ClassReport {
                name: (*c).to_owned(),
                ..ClassReport::default()
            })
            .collect(),
        ..RunReport::default()
    };
    let t0 = msgs.first().map_or(0, |m| m.t_ns);
    // Seconds are counted from the earliest message (a trace may go backwards); one map entry
    // per second that has messages, so memory follows the messages, not their time span.
    let earliest = msgs.iter().map(|m| m.t_ns).min().unwrap_or(0);
    let mut seconds: Vec<BTreeMap<u64, (u64, u64)>> = vec![BTreeMap::new(); classes.len()];
    let mut clock = t0;
    let mut credit = 0.0f64;
    for m in msgs {
        if m.t_ns > clock {
            // At most the backlog is drained, whatever the gap: the loop ends when it is empty.
            credit += (m.t_ns - clock) as f64 * args.service_rate as f64 / 1e9;
            clock = m.t_ns;
            while credit >= 1.0 {
                if !handler.drain_once() {
                    credit = 0.0;
                    break;
                }
                credit -= 1.0;
            }
        }
        let outcome = handler.handle(&Message {
            bytes: &m.bytes,
            source: Source::Peer(m.origin),
            received_ns: m.t_ns,
        });
        let second = (m.t_ns - earliest) / 1_000_000_000;
        let counts = seconds[m.class].entry(second).or_default();
        let class = &mut run.classes[m.class];
        class.offered += 1;
        counts.0 += 1;
        if outcome == Outcome::Enqueued {
            class.admitted += 1;
            counts.1 += 1;
        }
        run.max_backlog = run.max_backlog.max(handler.backlog_len() as u64);
        progress.inc(1);
    }
    for (class, seconds) in run.classes.iter_mut().zip(seconds) {
        class.seconds = seconds
            .into_iter()
            .map(|(second, (offered, admitted))| (second, offered, admitted))
            .collect();
    }
    handler.shutdown();
    let s = handler.stats();
    run.offered = msgs.len() as u64;
    run.admitted = s.enqueued;
    run.duplicate = s.duplicate;
    run.decode_error = s.decode_error;
    run.group_too_large = s.group_too_large;
    run.already_committed = s.already_committed;
    run.rate_limited = s.rate_limited;
    run.backlog_full = s.backlog_full;
    run.limiter_checks = s.limiter_checks;
    run.pool_accepted = s.pool_accepted;
    Ok(run)
}

/// The simulated pool: takes every group.
struct AcceptAll;

impl PoolSink for AcceptAll {
    fn submit(&self, _: &Group) -> Result<(), PoolReject> {
        Ok(())
    }
}
