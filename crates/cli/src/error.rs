//! The CLI's typed errors. Every variant names the file, the line or the round it is about;
//! `main` prints it with its causes ([`one_line`]) as `txgate: error: ...` and exits with
//! [`CliError::exit_code`]: 2 for bad input or usage, 1 for a runtime failure.
//!
//! Each error's `Display` says what failed and leaves its cause to `source()` (the Rust API
//! guidelines' rule, C-GOOD-ERR), so a chain prints each cause once.

use std::path::PathBuf;

use txgate_algorand::Round;
use txgate_algorand::codec::{DecodeError, VerifyError};
use txgate_algorand::source::SourceError;
use txgate_ledger::handler::HandlerConfigError;
use txgate_ledger::store::LedgerError;

/// Everything that makes a command fail.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CliError {
    /// A file or directory could not be read or written.
    #[error("{}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A block source (file, directory, tar, tar.bz2) could not be opened or read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A block does not decode.
    #[error("{name}{}: block does not decode", fmt_round(*.round))]
    Block {
        /// The file, or the entry inside an archive.
        name: String,
        /// The round from the file name or the block, when known.
        round: Option<Round>,
        /// The codec's error.
        #[source]
        source: DecodeError,
    },
    /// A block fails verification: a payset commitment, its protocol's rule, or the round the
    /// source named (the file name, the round asked of algod).
    #[error("{name}: block fails verification; nothing of it was written")]
    Verify {
        /// The file, the entry inside an archive, or `algod round N`.
        name: String,
        /// What did not match (it names the round).
        #[source]
        source: VerifyError,
    },
    /// The ledger refused a block, or its database failed.
    #[error("{context}")]
    Ledger {
        /// What was being done: the ledger directory, and the block's file and round.
        context: String,
        /// The ledger's error.
        #[source]
        source: LedgerError,
    },
    /// A trace CSV line is malformed.
    #[error("{}: line {line}: {message}", .path.display())]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// 1-based line number in the file, the header being line 1.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The configuration file is malformed (unknown key, wrong type, bad value).
    #[error("{}{}: {message}", .path.display(), fmt_line(*.line))]
    Config {
        /// The TOML file.
        path: PathBuf,
        /// 1-based line of the offending key, when known.
        line: Option<u64>,
        /// What is wrong.
        message: String,
    },
    /// The rate limiter refused its configuration.
    #[error("invalid app rate limiter configuration")]
    Limiter(#[from] txgate_ratelimit::ConfigError),
    /// The tx handler refused its configuration.
    #[error("invalid tx handler configuration")]
    Handler(#[from] HandlerConfigError),
    /// An algod request failed (the message never holds the API token).
    #[error(transparent)]
    Algod(#[from] crate::algod::AlgodError),
    /// A command-line value is out of range (clap checks the syntax; this is the meaning).
    #[error("{0}")]
    Usage(String),
}

/// Exit status for bad input or usage (clap's own usage errors exit with 2 too).
pub(crate) const EXIT_USAGE: i32 = 2;
/// Exit status for a runtime failure: I/O, the network, the database.
pub(crate) const EXIT_FAILURE: i32 = 1;

fn fmt_round(round: Option<Round>) -> String {
    round.map(|r| format!(" (round {r})")).unwrap_or_default()
}

fn fmt_line(line: Option<u64>) -> String {
    line.map(|l| format!(": line {l}")).unwrap_or_default()
}

impl CliError {
    /// [`EXIT_USAGE`] when the user can fix the command or its input: a bad flag or
    /// configuration, a malformed trace, a block that does not decode or fails verification
    /// (including algod answering with another round than asked), a corrupt archive, a file
    /// named that does not exist, blocks out of order or of another network than the `--db`, a
    /// refused algod token, a round the node does not have. [`EXIT_FAILURE`] otherwise: other
    /// I/O errors, an unreachable or failing node, a database that cannot be opened or written.
    /// Whether this is a write to a pipe whose reader has gone (EPIPE): the output was cut
    /// short on purpose, not a failure.
    pub(crate) fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }

    pub(crate) fn exit_code(&self) -> i32 {
        use std::io::ErrorKind::NotFound;
        use txgate_ledger::store::LedgerError as L;
        let usage = match self {
            CliError::Io { source, .. } => source.kind() == NotFound,
            CliError::Source(SourceError::Io { source, .. }) => source.kind() == NotFound,
            CliError::Source(_) => true,
            CliError::Ledger { source, .. } => matches!(
                source,
                L::FalsePositiveRate(_)
                    | L::MaxTxnLife { .. }
                    | L::Format { .. }
                    | L::OutOfOrder { .. }
                    | L::AlreadyHeld { .. }
                    | L::OtherNetwork { .. }
                    | L::Verify { .. }
                    | L::Decode { round: None, .. }
            ),
            CliError::Algod(e) => e.is_usage(),
            // The OS random source failing is a runtime failure, not a bad configuration.
            CliError::Limiter(txgate_ratelimit::ConfigError::Salt(_))
            | CliError::Handler(HandlerConfigError::Salt(_)) => false,
            CliError::Block { .. }
            | CliError::Verify { .. }
            | CliError::Trace { .. }
            | CliError::Config { .. }
            | CliError::Limiter(_)
            | CliError::Handler(_)
            | CliError::Usage(_) => true,
        };
        if usage { EXIT_USAGE } else { EXIT_FAILURE }
    }

    /// An [`CliError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> CliError {
        let path = path.into();
        move |source| CliError::Io { path, source }
    }
}

/// Most characters of the user's input an error message echoes.
pub(crate) const MAX_ECHO: usize = 80;

/// `input` as an error message echoes it: control characters (line breaks included) as spaces,
/// and at most [`MAX_ECHO`] characters, a longer input cut with `...` and its full length, so a
/// 1 MB field prints as 80 characters.
pub(crate) fn excerpt(input: &str) -> String {
    let clean = |c: char| if c.is_control() { ' ' } else { c };
    let count = input.chars().count();
    if count <= MAX_ECHO {
        return input.chars().map(clean).collect();
    }
    let mut out: String = input.chars().take(MAX_ECHO).map(clean).collect();
    out.push_str(&format!("... ({count} characters)"));
    out
}

/// `error` and its causes (`source()`, recursively) on one line, joined by `": "`: what the CLI
/// prints. Line breaks inside a message become spaces.
pub(crate) fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        line.push_str(": ");
        line.push_str(&e.to_string());
        cause = e.source();
    }
    line.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_bounded() {
        assert_eq!(excerpt("a\nb\tc"), "a b c");
        let long = "é".repeat(1 << 20);
        let e = excerpt(&long);
        assert_eq!(
            e,
            format!("{}... ({} characters)", "é".repeat(MAX_ECHO), 1 << 20)
        );
        assert_eq!(excerpt(&"x".repeat(MAX_ECHO)), "x".repeat(MAX_ECHO));
    }

    #[test]
    fn one_line_prints_each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone\nreally");
        let e = CliError::Io {
            path: "/x/y".into(),
            source: io,
        };
        assert_eq!(e.to_string(), "/x/y");
        assert_eq!(one_line(&e), "/x/y: gone really");
        let nested = CliError::Ledger {
            context: "ledger /d".into(),
            source: LedgerError::MaxTxnLife {
                max_txn_life: 7_000_000,
                limit: 1 << 20,
            },
        };
        assert_eq!(
            one_line(&nested),
            "ledger /d: invalid ledger configuration: MaxTxnLife 7000000 is above the limit 1048576"
        );
        assert_eq!(nested.exit_code(), EXIT_USAGE);
    }
}
