//! `--rounds`: which rounds of a block source to read, in Rust's range syntax.
//!
//! | written  | rounds                                                       |
//! |----------|--------------------------------------------------------------|
//! | `A..=B`  | A to B, both included                                         |
//! | `A..B`   | A to B - 1                                                    |
//! | `A..`    | from A to the source's end (the node's latest round for algod) |
//! | `..=B`   | from the source's default start to B                         |
//! | `..`     | the source's default                                         |
//! | `N`      | `1..=N`: N rounds of the built-in workload, which starts at 1 (N >= 1) |
//!
//! Defaults per source: the built-in workload `1..=2000`; files and archives every round they
//! hold; algod the last MaxTxnLife + 1 rounds up to its latest round (go-algorand keeps the
//! blocks of that window for its duplicate check, so every node has them).
//!
//! ```text
//! --rounds 1000..=2000    --rounds 377..    --rounds ..=99    --rounds 500
//! ```

use std::fmt;
use std::str::FromStr;

use txgate_algorand::Round;

/// A `--rounds` value: optional inclusive bounds (`None`: the source's default).
///
/// Invariant: `start <= end` when both are set: every value selects at least one round of some
/// source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RoundRange {
    /// First round, included.
    pub(crate) start: Option<Round>,
    /// Last round, included.
    pub(crate) end: Option<Round>,
}

impl RoundRange {
    /// The whole source (`..`).
    pub(crate) const ALL: RoundRange = RoundRange {
        start: None,
        end: None,
    };

    /// Whether `round` is selected.
    pub(crate) fn contains(&self, round: Round) -> bool {
        self.start.is_none_or(|s| round >= s) && self.end.is_none_or(|e| round <= e)
    }

    /// The bounds with the source's defaults filled in.
    pub(crate) fn or(&self, start: Round, end: Round) -> (Round, Round) {
        (self.start.unwrap_or(start), self.end.unwrap_or(end))
    }
}

impl fmt::Display for RoundRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |r: Option<Round>| r.map(|r| r.to_string()).unwrap_or_default();
        if self.end.is_some() {
            write!(f, "{}..={}", show(self.start), show(self.end))
        } else {
            write!(f, "{}..", show(self.start))
        }
    }
}

impl FromStr for RoundRange {
    type Err = String;

    /// Parses the forms of the module docs.
    ///
    /// # Errors
    ///
    /// A message for anything else: not a round number, an empty range (`5..5`, `9..=3`, `..0`,
    /// `0`).
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let num = |t: &str| -> Result<Option<Round>, String> {
            if t.is_empty() {
                return Ok(None);
            }
            t.parse::<Round>()
                .map(Some)
                .map_err(|_| format!("`{t}` is not a round number (0 to {})", u64::MAX))
        };
        let Some((a, b)) = s.split_once("..") else {
            return match num(s)? {
                Some(0) => Err("`0` selects no rounds (N means 1..=N)".into()),
                Some(n) => Ok(RoundRange {
                    start: Some(1),
                    end: Some(n),
                }),
                None => Err("expected A..=B, A..B, A.., ..=B, .. or N".into()),
            };
        };
        let start = num(a)?;
        let end = match b.strip_prefix('=') {
            Some("") => return Err(format!("`{s}`: `..=` needs an end round")),
            Some(b) => num(b)?,
            None => match num(b)? {
                Some(0) => return Err(format!("`{s}` selects no rounds")),
                Some(e) => Some(e - 1),
                None => None,
            },
        };
        if let (Some(a), Some(b)) = (start, end)
            && a > b
        {
            return Err(format!("`{s}` selects no rounds"));
        }
        Ok(RoundRange { start, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> Result<(Option<u64>, Option<u64>), String> {
        s.parse::<RoundRange>().map(|r| (r.start, r.end))
    }

    #[test]
    fn every_form_parses_to_inclusive_bounds() {
        assert_eq!(r("10..=20"), Ok((Some(10), Some(20))));
        assert_eq!(r("10..20"), Ok((Some(10), Some(19))));
        assert_eq!(r("7..=7"), Ok((Some(7), Some(7))));
        assert_eq!(r("377.."), Ok((Some(377), None)));
        assert_eq!(r("..=99"), Ok((None, Some(99))));
        assert_eq!(r("..100"), Ok((None, Some(99))));
        assert_eq!(r(".."), Ok((None, None)));
        assert_eq!(r("500"), Ok((Some(1), Some(500))));
        assert_eq!(r(" 1 "), Ok((Some(1), Some(1))));
        assert_eq!(r("0..=18446744073709551615"), Ok((Some(0), Some(u64::MAX))));
    }

    #[test]
    fn bad_and_empty_ranges_are_errors() {
        for bad in [
            "",
            "x",
            "5..5",
            "9..=3",
            "..0",
            "1..=",
            "-1..4",
            "1...4",
            "1..=2..=3",
            "1e3",
            "0",
        ] {
            assert!(r(bad).is_err(), "{bad:?} parsed");
        }
        assert!(
            r("18446744073709551616")
                .unwrap_err()
                .contains("not a round")
        );
    }

    #[test]
    fn contains_and_defaults() {
        let range: RoundRange = "10..=20".parse().unwrap();
        assert!(!range.contains(9) && range.contains(10) && range.contains(20));
        assert!(!range.contains(21));
        assert_eq!(range.or(0, 99), (10, 20));
        let open: RoundRange = "15..".parse().unwrap();
        assert!(open.contains(u64::MAX) && !open.contains(14));
        assert_eq!(open.or(0, 99), (15, 99));
        assert!(RoundRange::ALL.contains(0));
        assert_eq!(range.to_string(), "10..=20");
        assert_eq!(open.to_string(), "15..");
    }
}
