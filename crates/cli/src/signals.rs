//! SIGINT (Ctrl-C), SIGTERM and SIGHUP, and the temporary ledger they must not leave behind.
//!
//! [`install`] runs first thing in `main`: on Unix it blocks the three signals in the main
//! thread, so every thread started later inherits the mask (POSIX `pthread_sigmask`), and one
//! thread takes them with `sigwait`; elsewhere (no such signals) Ctrl-C comes through `ctrlc`.
//! What a signal does:
//! - while `replay --follow` follows ([`set_following`]), the first one asks the ingest loop to
//!   stop after the round it is adding ([`stop_requested`]; the run then ends with its report,
//!   exit 0); another one ends the process as below;
//! - otherwise the process ends at once: the temporary ledger ([`TempLedger`]) is removed, one
//!   line `txgate: interrupted by SIGINT` goes to stderr, and the exit status is 128 + the
//!   signal's number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP: the shells' convention).
//!   A `--db` ledger stays valid: each `add_block` is one ACID write transaction.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::CliError;

/// A follow run is going on: the first signal asks for a stop.
static FOLLOWING: AtomicBool = AtomicBool::new(false);
/// A stop was asked for.
static STOP: AtomicBool = AtomicBool::new(false);
/// The temporary ledger directory, while there is one. Creating, removing and (on a signal)
/// deleting it happen under this lock, so a signal never finds it half made or half gone.
static TEMP: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Status of a process ended by signal `number` (the shells' 128 + n).
pub(crate) fn exit_status(number: i32) -> i32 {
    128 + number
}

fn temp_lock() -> std::sync::MutexGuard<'static, Option<PathBuf>> {
    // A poisoned lock still holds the path.
    TEMP.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a signal does: see the module docs.
fn on_signal(number: i32, name: &str) {
    // Relaxed: flags read and set by this thread and polled by the ingest loop between rounds;
    // they order nothing else.
    if FOLLOWING.load(Ordering::Relaxed) && !STOP.swap(true, Ordering::Relaxed) {
        eprintln!("txgate: stopping after the current round (again to quit at once)");
        return;
    }
    // Held until the process is gone: the main thread cannot make or remove the directory
    // meanwhile.
    let temp = temp_lock();
    let removed = temp
        .as_deref()
        .is_some_and(|dir| std::fs::remove_dir_all(dir).is_ok());
    let note = if removed {
        "; the temporary ledger was removed"
    } else {
        ""
    };
    eprintln!("txgate: interrupted by {name}{note}");
    std::process::exit(exit_status(number));
}

/// Takes SIGINT, SIGTERM and SIGHUP from here on (see the module docs). Call it before any other
/// thread starts.
///
/// # Errors
///
/// [`CliError::Io`] when the signals cannot be blocked or the thread cannot start.
pub(crate) fn install() -> Result<(), CliError> {
    let fail = |e: std::io::Error| CliError::Io {
        path: "<signal handler>".into(),
        source: e,
    };
    #[cfg(unix)]
    {
        use nix::sys::signal::{SigSet, Signal};
        let mut set = SigSet::empty();
        for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            set.add(signal);
        }
        set.thread_block().map_err(|e| fail(e.into()))?;
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                loop {
                    // `sigwait` fails only for an invalid set; then there is nothing to wait for.
                    let Ok(signal) = set.wait() else { return };
                    on_signal(signal as i32, signal.as_str());
                }
            })
            .map_err(fail)?;
    }
    #[cfg(not(unix))]
    {
        ctrlc::set_handler(|| on_signal(2, "Ctrl-C"))
            .map_err(|e| fail(std::io::Error::other(e)))?;
    }
    Ok(())
}

/// From here on the first signal asks for a stop instead of ending the process (`--follow`).
pub(crate) fn set_following() {
    // Relaxed: see `on_signal`.
    FOLLOWING.store(true, Ordering::Relaxed);
}

/// Whether a stop was asked for (see the module docs).
pub(crate) fn stop_requested() -> bool {
    // Relaxed: see `on_signal`.
    STOP.load(Ordering::Relaxed)
}

/// A temporary ledger directory, removed when this is dropped or when a signal ends the process.
/// One at a time.
#[derive(Debug)]
pub(crate) struct TempLedger {
    dir: Option<tempfile::TempDir>,
}

impl TempLedger {
    /// Makes a fresh directory `txgate-replay-*` in the temporary directory (`$TMPDIR`).
    ///
    /// # Errors
    ///
    /// [`CliError::Io`] naming the temporary directory.
    pub(crate) fn new() -> Result<Self, CliError> {
        let mut temp = temp_lock();
        let dir = tempfile::Builder::new()
            .prefix("txgate-replay-")
            .tempdir()
            .map_err(CliError::io(std::env::temp_dir()))?;
        *temp = Some(dir.path().to_owned());
        Ok(Self { dir: Some(dir) })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }
}

impl Drop for TempLedger {
    fn drop(&mut self) {
        let mut temp = temp_lock();
        *temp = None;
        if let Some(dir) = self.dir.take() {
            // Nothing to report to at this point; a directory that cannot be removed is left.
            let _ = dir.close();
        }
    }
}
