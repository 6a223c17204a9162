//! Traffic traces: CSV files with the header `ts_ns,origin,app_ids`.
//!
//! - `ts_ns`: receive time, nanoseconds since the Unix epoch (u64). Timestamps may go backwards;
//!   lines are processed in file order, each at its own timestamp.
//! - `origin`: the sending peer, an IPv4 or IPv6 literal (`192.0.2.1`, `2001:db8::1`) or a hex
//!   peer id (an even number of hex digits, 2 to 128 of them). The rate limiter reduces it to its
//!   origin bytes (IPv4: 4 bytes; IPv6: the /64 prefix, or the last 4 bytes when its first 10
//!   bytes are zero, as go-algorand's `wsPeer.RoutingAddr`; peer id: its first 16 bytes).
//! - `app_ids`: the group's application ids, `;`-separated decimal u64 (`12;7`), empty for a
//!   group without app calls.
//!
//! Fields are trimmed of surrounding spaces; blank lines are skipped. A line ends with `\n`,
//! `\r\n` or a lone `\r` (the csv crate's terminator rule, RFC 4180 plus the other two). Line
//! numbers in errors and in `limit --decisions` are 1-based line numbers in the file counted by
//! that rule, the header being line 1.

use std::net::IpAddr;
use std::path::Path;

use txgate_ratelimit::Origin;

use crate::error::{CliError, excerpt};

/// The header every trace starts with.
pub(crate) const HEADER: [&str; 3] = ["ts_ns", "origin", "app_ids"];

/// One message of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceEntry {
    /// 1-based line number in the file (the header is line 1).
    pub(crate) line: u64,
    /// Receive time, ns since the Unix epoch.
    pub(crate) ts_ns: u64,
    /// The sender's rate-limiter origin.
    pub(crate) origin: Origin,
    /// App ids of the group (empty: no app call).
    pub(crate) app_ids: Vec<u64>,
}

/// Reads a whole trace.
///
/// # Errors
///
/// [`CliError::Io`] when the file cannot be opened; as [`parse_trace`] otherwise.
pub(crate) fn read_trace(path: &Path) -> Result<Vec<TraceEntry>, CliError> {
    if path.is_dir() {
        return Err(CliError::Usage(format!(
            "{}: is a directory, not a trace file",
            path.display()
        )));
    }
    let bytes = std::fs::read(path).map_err(CliError::io(path))?;
    parse_trace(path, &bytes)
}

/// Parses the bytes of trace file `path` (named in errors). Memory is bounded by the input's
/// size: a few words per line and per app id.
///
/// # Errors
///
/// [`CliError::Trace`] naming the line for a wrong header, a wrong number of fields, bad UTF-8,
/// a bad timestamp, origin or app id; the message echoes at most [`crate::error::MAX_ECHO`]
/// characters of a field.
pub(crate) fn parse_trace(path: &Path, bytes: &[u8]) -> Result<Vec<TraceEntry>, CliError> {
    // csv's own line numbers do not count blank lines; the physical line is found from the
    // record's byte offset and the offsets of the line ends (csv's: `\n`, `\r\n`, lone `\r`).
    let newlines: Vec<u64> = line_ends(bytes).map(|i| i as u64).collect();
    // A record's position is where the reader started on it, before any blank lines it
    // skipped: step over those first.
    let line_of = |pos: &csv::Position| {
        let mut at = pos.byte() as usize;
        while matches!(bytes.get(at), Some(b'\n' | b'\r')) {
            at += 1;
        }
        newlines.partition_point(|&nl| nl < at as u64) as u64 + 1
    };
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(bytes);
    let bad = |line: u64, message: String| CliError::Trace {
        path: path.to_owned(),
        line,
        message,
    };
    let headers = reader
        .headers()
        .map_err(|e| csv_error(path, e, &line_of))?
        .iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
    if headers != HEADER {
        return Err(bad(
            1,
            format!(
                "header must be `{}`, found `{}`",
                HEADER.join(","),
                excerpt(&headers.join(","))
            ),
        ));
    }
    let mut out = Vec::new();
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(csv_error(path, e, &line_of)),
        }
        let line = record.position().map_or(0, line_of);
        let entry = parse_fields(&record[0], &record[1], &record[2])
            .map_err(|message| bad(line, message))?;
        out.push(TraceEntry {
            line,
            ts_ns: entry.0,
            origin: entry.1,
            app_ids: entry.2,
        });
    }
    Ok(out)
}

/// Offsets of the line ends in `bytes`: each `\n`, and each `\r` not followed by `\n` (the
/// terminators the csv reader splits records at, `\r\n` counted once).
fn line_ends(bytes: &[u8]) -> impl Iterator<Item = usize> + '_ {
    bytes.iter().enumerate().filter_map(|(i, b)| {
        let end = *b == b'\n' || (*b == b'\r' && bytes.get(i + 1) != Some(&b'\n'));
        end.then_some(i)
    })
}

fn csv_error(path: &Path, e: csv::Error, line_of: &dyn Fn(&csv::Position) -> u64) -> CliError {
    let line = e.position().map_or(0, line_of);
    let message = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!("expected {expected_len} fields (ts_ns,origin,app_ids), found {len}"),
        csv::ErrorKind::Utf8 { .. } => "not valid UTF-8".to_owned(),
        csv::ErrorKind::Io(io) => {
            return CliError::Io {
                path: path.to_owned(),
                source: std::io::Error::new(io.kind(), io.to_string()),
            };
        }
        _ => excerpt(&e.to_string()),
    };
    CliError::Trace {
        path: path.to_owned(),
        line,
        message,
    }
}

/// Parses one line's three fields.
fn parse_fields(ts: &str, origin: &str, apps: &str) -> Result<(u64, Origin, Vec<u64>), String> {
    let ts_ns = ts
        .parse::<u64>()
        .map_err(|_| format!("ts_ns `{}` is not a u64 count of nanoseconds", excerpt(ts)))?;
    let origin = parse_origin(origin)?;
    let app_ids = if apps.is_empty() {
        Vec::new()
    } else {
        apps.split(';')
            .map(|a| {
                a.trim().parse::<u64>().map_err(|_| {
                    format!(
                        "app id `{}` in `{}` is not a u64",
                        excerpt(a),
                        excerpt(apps)
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    Ok((ts_ns, origin, app_ids))
}

/// An IP literal or a hex peer id (2 to 128 hex digits, even count).
pub(crate) fn parse_origin(s: &str) -> Result<Origin, String> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Ok(Origin::from_ip(ip));
    }
    let hex = s.as_bytes();
    if hex.len() >= 2
        && hex.len() <= 128
        && hex.len().is_multiple_of(2)
        && hex.iter().all(u8::is_ascii_hexdigit)
    {
        let bytes: Vec<u8> = hex
            .chunks(2)
            .map(|pair| (hex_val(pair[0]) << 4) | hex_val(pair[1]))
            .collect();
        return Ok(Origin::from_peer_id(&bytes));
    }
    Err(format!(
        "origin `{}` is neither an IPv4/IPv6 literal nor a hex peer id",
        excerpt(s)
    ))
}

fn hex_val(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c.to_ascii_lowercase().wrapping_sub(b'a').wrapping_add(10),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_parse() {
        let (ts, o, apps) = parse_fields("5", "192.0.2.1", "7;8").unwrap();
        assert_eq!(
            (ts, o.as_bytes(), apps),
            (5, &[192, 0, 2, 1][..], vec![7, 8])
        );
        let (_, o, apps) = parse_fields("0", "2001:db8:1:2::9", "").unwrap();
        assert_eq!(o.as_bytes(), &[0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2]);
        assert!(apps.is_empty());
        let (_, o, _) = parse_fields("0", "0aFF", "1").unwrap();
        assert_eq!(o.as_bytes(), &[0x0a, 0xff]);
        assert!(parse_fields("x", "1.2.3.4", "").is_err());
        assert!(parse_fields("1", "host.example", "").is_err());
        assert!(parse_fields("1", "abc", "").is_err());
        assert!(parse_fields("1", "1.2.3.4", "1;;2").is_err());
        assert!(parse_fields("1", "1.2.3.4", "-1").is_err());
        // A field of a megabyte echoes 80 characters of it.
        let huge = "z".repeat(1 << 20);
        let e = parse_fields("1", &huge, "").unwrap_err();
        assert!(e.len() < 200 && e.contains(&"z".repeat(80)), "{}", e.len());
        let e = parse_fields(&huge, "1.2.3.4", "").unwrap_err();
        assert!(e.len() < 200, "{}", e.len());
    }

    /// Lines end at `\n`, `\r\n` or a lone `\r`, as the csv reader splits records: the same
    /// messages and the same line numbers whichever ending a file uses, blank lines counted.
    #[test]
    fn lines_end_as_the_csv_reader_splits_them() {
        let lines = [
            "ts_ns,origin,app_ids",
            "1,192.0.2.1,7",
            "",
            "2,192.0.2.2,8;9",
            "",
            "",
            "3,0aff,",
        ];
        let path = Path::new("t.csv");
        for end in ["\n", "\r\n", "\r"] {
            let text = lines.join(end);
            let got: Vec<_> = parse_trace(path, text.as_bytes())
                .unwrap()
                .into_iter()
                .map(|e| (e.line, e.ts_ns, e.origin.as_bytes().to_vec(), e.app_ids))
                .collect();
            let want = vec![
                (2, 1, vec![192, 0, 2, 1], vec![7]),
                (4, 2, vec![192, 0, 2, 2], vec![8, 9]),
                (7, 3, vec![0x0a, 0xff], vec![]),
            ];
            assert_eq!(got, want, "line end {end:?}");
            assert_eq!(line_ends(text.as_bytes()).count(), lines.len() - 1);
            // An error names the same line.
            let bad = text.replace("2,192.0.2.2", "x,192.0.2.2");
            match parse_trace(path, bad.as_bytes()) {
                Err(CliError::Trace { line, .. }) => assert_eq!(line, 4, "line end {end:?}"),
                other => panic!("{other:?}"),
            }
        }
        // A bare `\r` after the header (the fuzzer's find): the next record is line 2.
        let got = parse_trace(path, b"ts_ns,origin,app_ids\r5,0aff,1\n").unwrap();
        assert_eq!(got[0].line, 2);
    }
}
