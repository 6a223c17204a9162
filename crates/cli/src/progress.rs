//! Phase progress on stderr: an indicatif bar when stderr is a terminal, plain lines otherwise
//! (a start line, a line every tenth of a known total, and an end line); nothing with `--quiet`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static QUIET: AtomicBool = AtomicBool::new(false);

/// `--quiet`: no progress from here on.
pub(crate) fn set_quiet(quiet: bool) {
    // Relaxed: set once by `main` before any phase starts.
    QUIET.store(quiet, Ordering::Relaxed);
}

/// Whether `--quiet` was given.
pub(crate) fn quiet() -> bool {
    // Relaxed: see `set_quiet`.
    QUIET.load(Ordering::Relaxed)
}

use indicatif::{ProgressBar, ProgressStyle};

/// Progress of one phase.
pub(crate) struct Progress {
    name: &'static str,
    quiet: bool,
    bar: Option<ProgressBar>,
    total: Option<u64>,
    done: u64,
    next_line: u64,
    start: Instant,
}

impl Progress {
    /// Starts phase `name` with `total` steps (`None`: unknown).
    pub(crate) fn start(name: &'static str, total: Option<u64>) -> Self {
        let quiet = quiet();
        let bar = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let bar = match total {
                Some(n) => ProgressBar::new(n).with_style(
                    ProgressStyle::with_template(
                        "{prefix:>8} [{bar:40}] {pos}/{len} {per_sec} eta {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                ),
                None => ProgressBar::new_spinner(),
            };
            bar.set_prefix(name);
            bar
        });
        if bar.is_none() && !quiet {
            eprintln!("{name}: started");
        }
        Self {
            name,
            quiet,
            bar,
            total,
            done: 0,
            next_line: total.map_or(u64::MAX, |t| t.div_ceil(10).max(1)),
            start: Instant::now(),
        }
    }

    /// Records `n` more steps.
    pub(crate) fn inc(&mut self, n: u64) {
        self.done += n;
        match &self.bar {
            Some(bar) => bar.inc(n),
            None if self.quiet => {}
            None => {
                if let Some(total) = self.total
                    && self.done >= self.next_line
                    && self.done < total
                {
                    eprintln!("{}: {}/{}", self.name, self.done, total);
                    self.next_line = self.done + total.div_ceil(10).max(1);
                }
            }
        }
    }

    /// Ends the phase with a one-line summary.
    pub(crate) fn finish(self, summary: &str) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.quiet {
            return;
        }
        eprintln!(
            "{}: {summary} ({:.2} s)",
            self.name,
            self.start.elapsed().as_secs_f64()
        );
    }
}
