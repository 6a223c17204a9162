//! Serves a block archive the way algod serves its blocks (see `txgate_testkit::algod`), on
//! 127.0.0.1, releasing one round at a time: something to point `txgate replay --algod` at
//! without a node.
//!
//! ```text
//! cargo run -p txgate-tests --example fake_algod -- [ARCHIVE] [LATEST] [EVERY_MS] [TOKEN]
//! ```
//!
//! ARCHIVE defaults to dataset2 from the real data (`../shared/data`, or `$TXGATE_DATA`);
//! rounds up to LATEST (default 300) are there at once, then one more every EVERY_MS
//! milliseconds (default 1000) until the last; TOKEN defaults to `txgate-demo-token`. It prints
//! its URL and runs until killed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use txgate_algorand::source::BlockSource;
use txgate_testkit::algod::FakeAlgod;

fn main() {
    let mut args = std::env::args().skip(1);
    let archive = args.next().map(PathBuf::from).unwrap_or_else(|| {
        let dataset2 =
            txgate_testkit::data_dir().join("algorand-sdk-testing/private_blocks/dataset2.tar.bz2");
        if !dataset2.is_file() {
            eprintln!("fake_algod: no archive given and the real data is missing");
            std::process::exit(2)
        }
        dataset2
    });
    let number = |arg: Option<String>, default: u64| -> u64 {
        arg.map_or(default, |a| {
            a.parse().unwrap_or_else(|_| {
                eprintln!("fake_algod: `{a}` is not a number");
                std::process::exit(2)
            })
        })
    };
    let latest = number(args.next(), 300);
    let every = Duration::from_millis(number(args.next(), 1000));
    let token = args
        .next()
        .unwrap_or_else(|| "txgate-demo-token".to_owned());
    let mut blocks = BTreeMap::new();
    let source = BlockSource::open(&archive).unwrap_or_else(|e| {
        eprintln!("fake_algod: {e}");
        std::process::exit(2)
    });
    for raw in source {
        match raw {
            Ok(raw) => {
                if let Some(round) = raw.round {
                    blocks.insert(round, raw.bytes);
                }
            }
            Err(e) => {
                eprintln!("fake_algod: {e}");
                std::process::exit(2)
            }
        }
    }
    let last = blocks.keys().next_back().copied().unwrap_or(0);
    let mut algod = FakeAlgod::start(blocks, &token, latest.min(last), Duration::from_secs(60));
    algod.release_every(every, last);
    println!(
        "fake algod on {} (token {token}): rounds up to {} now, one more every {} ms until {last}",
        algod.url(),
        algod.latest(),
        every.as_millis()
    );
    loop {
        std::thread::park();
    }
}
