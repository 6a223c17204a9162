//! Arbitrary bytes into the CLI's trace reader (`txgate replay --trace`, `txgate limit --trace`):
//! an error or the messages, never a panic; errors echo a bounded part of the input; what reads
//! writes back (origins as hex peer ids) and reads again to the same messages.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txgate::fuzzing::trace;

fuzz_target!(|bytes: &[u8]| {
    match trace(bytes) {
        Err(message) => {
            // The path, the line, a fixed text and at most two 80-character excerpts.
            assert!(
                message.chars().count() < 600,
                "{} characters",
                message.len()
            );
            assert!(!message.contains('\n'));
        }
        Ok(lines) => {
            // Line ends as the csv reader splits records: `\n`, `\r\n`, a lone `\r`.
            let newlines = (0..bytes.len())
                .filter(|&i| {
                    bytes[i] == b'\n' || (bytes[i] == b'\r' && bytes.get(i + 1) != Some(&b'\n'))
                })
                .count() as u64;
            let mut previous = 1;
            for (line, _, origin, _) in &lines {
                // Data lines come after the header, in file order.
                assert!(*line > previous && *line <= newlines + 1, "line {line}");
                previous = *line;
                assert!((1..=16).contains(&origin.len()));
            }
            let mut text = String::from("ts_ns,origin,app_ids\n");
            for (_, ts, origin, apps) in &lines {
                let hex: String = origin.iter().map(|b| format!("{b:02x}")).collect();
                let apps: Vec<String> = apps.iter().map(u64::to_string).collect();
                text.push_str(&format!("{ts},{hex},{}\n", apps.join(";")));
            }
            let again = trace(text.as_bytes()).expect("written messages read back");
            assert_eq!(again.len(), lines.len());
            for (a, b) in again.iter().zip(&lines) {
                assert_eq!((a.1, &a.2, &a.3), (b.1, &b.2, &b.3));
            }
        }
    }
});
