//! Arbitrary bytes into the CLI's configuration readers (`--config FILE`: TOML, and go-algorand's
//! config.json): an error or a configuration whose every value passed the checks, never a panic;
//! errors echo a bounded part of the input; a configuration read writes back as TOML and as
//! JSON and reads again to the same values.
#![no_main]

use libfuzzer_sys::fuzz_target;
use txgate::fuzzing::{config, config_to_json, config_to_toml};

fuzz_target!(|bytes: &[u8]| {
    for json in [false, true] {
        match config(bytes, json) {
            Err((_, message)) => {
                assert!(
                    message.chars().count() < 400,
                    "{} characters",
                    message.len()
                );
                assert!(!message.contains('\n'));
            }
            Ok((values, format, ignored)) => {
                assert!(format == "json" || ignored == 0);
                let toml = config_to_toml(&values).expect("a read configuration writes as TOML");
                let (again, format, _) =
                    config(toml.as_bytes(), false).expect("written TOML reads back");
                assert_eq!(format, "toml");
                assert_eq!(again, values);
                let text = config_to_json(&values).expect("a read configuration writes as JSON");
                let (again, format, ignored) =
                    config(text.as_bytes(), true).expect("written JSON reads back");
                assert_eq!((format, ignored), ("json", 0));
                assert_eq!(again, values);
            }
        }
    }
});
