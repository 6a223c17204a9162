//! One variant of the handler bench (`benches/handler.rs`) in a loop, for profilers: the same
//! traffic, rig and timed region, without criterion, so that `perf record` of one variant and
//! of another, over the same number of iterations, compare sample for sample.
//!
//! ```text
//! cargo run --profile bench -p txgate-benches --example handler_variant -- <variant> [iterations]
//! perf record -g -- target/release/examples/handler_variant limiter_on 40
//! ```
//!
//! `variant`: `limiter_off`, `limiter_on`, `limiter_on_spam` or `limiter_on_no_key_cache` (the
//! criterion rows' names); `iterations` (default 20) timed iterations after one warm-up. Prints
//! the wall-clock time and the producer threads' summed CPU time per message (median and mean
//! over the iterations).

use std::process::ExitCode;

// The ledger's test doubles, shared with its tests.
#[path = "../../crates/ledger/tests/handler_doubles/mod.rs"]
mod handler_doubles;

#[path = "../benches/common/gossip.rs"]
mod gossip;

#[path = "../benches/common/handler_rig.rs"]
mod rig;

use rig::{Rig, Variant, Workload};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let variant = match args.next().as_deref() {
        Some("limiter_off") => Variant::Off,
        Some("limiter_on") => Variant::On,
        Some("limiter_on_spam") => Variant::Spam,
        Some("limiter_on_no_key_cache") => Variant::OnNoKeyCache,
        other => {
            eprintln!(
                "handler_variant: unknown variant {other:?}; one of limiter_off, limiter_on, \
                 limiter_on_spam, limiter_on_no_key_cache"
            );
            return ExitCode::from(2);
        }
    };
    let iterations: usize = match args.next().map(|a| a.parse()) {
        None => 20,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("handler_variant: iterations must be a positive integer");
            return ExitCode::from(2);
        }
    };
    let w = Workload::new();
    let mut rig = Rig::new(variant, &w);
    rig.run(&w); // warm: keys tracked, cache filled
    let n = w.msgs(variant).len() as f64;
    let runs: Vec<_> = (0..iterations).map(|_| rig.run(&w)).collect();
    let per_message = |f: fn(&rig::Timing) -> std::time::Duration| {
        let mut ns: Vec<f64> = runs.iter().map(|t| f(t).as_secs_f64() * 1e9 / n).collect();
        let mean = ns.iter().sum::<f64>() / ns.len() as f64;
        ns.sort_by(f64::total_cmp);
        (ns[ns.len() / 2], mean)
    };
    let (wall, wall_mean) = per_message(|t| t.wall);
    let (cpu, cpu_mean) = per_message(|t| t.cpu);
    println!(
        "{variant:?}: {iterations} iterations of {n} messages; per message: wall {wall:.0} ns \
         (median; mean {wall_mean:.0}), producers' CPU {cpu:.0} ns (median; mean {cpu_mean:.0})"
    );
    ExitCode::SUCCESS
}
