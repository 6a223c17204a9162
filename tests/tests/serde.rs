//! The libraries' `serde` support: every type round-trips through JSON (a human-readable format)
//! to an equal value, filters load back with the same bits, and what is documented as text is
//! text.

use std::time::Duration;

use txgate_algorand::Txid;
use txgate_bloom::{
    AnyBloom, AtomicBlockedBloom, Block512, BlockedBloom, BloomBuilder, Layout, Sbbf,
};
use txgate_ledger::handler::{HandlerConfig, HandlerStats};
use txgate_ledger::store::LedgerConfig;
use txgate_ratelimit::{Config, Stats};

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> (String, T) {
    let json = serde_json::to_string(value).expect("serializes");
    let back = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{json}: {e}"));
    (json, back)
}

#[test]
fn txid_is_its_base32_text() {
    let text = "6A6YYXT62SYZVUJH2QZW4BXUQ567H5GHJRMZ3EYRJPSIZRYDJTVQ";
    let txid: Txid = text.parse().unwrap();
    let (json, back) = round_trip(&txid);
    assert_eq!(json, format!("\"{text}\""));
    assert_eq!(back, txid);
    assert!(serde_json::from_str::<Txid>("\"AAAA\"").is_err());
    assert!(serde_json::from_str::<Txid>("7").is_err());
}

#[test]
fn filters_are_their_serialized_bytes() {
    let ids: Vec<[u8; 32]> = (0..500u32)
        .map(|i| {
            let mut id = [0; 32];
            id[..4].copy_from_slice(&i.to_le_bytes());
            id
        })
        .collect();
    let mut plain = BloomBuilder::with_false_positive_rate(500, 0.01)
        .unwrap()
        .seed(5)
        .build()
        .unwrap();
    let mut wide: BlockedBloom<Block512> = BloomBuilder::with_false_positive_rate(500, 0.01)
        .unwrap()
        .seed(6)
        .layout()
        .unwrap()
        .build()
        .unwrap();
    for id in &ids {
        plain.insert_id(id);
        wide.insert_id(id);
    }
    let (json, back): (_, BlockedBloom) = round_trip(&plain);
    // The JSON is the `to_bytes` form, byte for byte.
    let bytes: Vec<u8> = serde_json::from_str(&json).unwrap();
    assert_eq!(bytes, plain.to_bytes());
    assert_eq!(back.to_bytes(), plain.to_bytes());
    assert!(ids.iter().all(|id| back.contains_id(id)));

    let (_, back): (_, BlockedBloom<Block512>) = round_trip(&wide);
    assert_eq!(back.to_bytes(), wide.to_bytes());
    let any: AnyBloom = serde_json::from_str(&serde_json::to_string(&wide).unwrap()).unwrap();
    assert_eq!(any.layout(), Layout::Block512);
    assert_eq!(round_trip(&any).1.to_bytes(), wide.to_bytes());
    assert_eq!(any.to_bytes(), wide.to_bytes());

    let atomic = AtomicBlockedBloom::from(plain.clone());
    let (_, back): (_, AtomicBlockedBloom) = round_trip(&atomic);
    assert_eq!(back.to_bytes(), plain.to_bytes());

    // A damaged byte fails the checksum, as `from_bytes` does; the layout is checked too.
    let mut damaged = plain.to_bytes();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    let err = serde_json::from_str::<BlockedBloom>(&serde_json::to_string(&damaged).unwrap())
        .unwrap_err();
    assert!(err.to_string().contains("checksum"), "{err}");
    assert!(serde_json::from_str::<BlockedBloom<Block512>>(&json).is_err());

    let mut sbbf = Sbbf::with_ndv_fpp(500, 0.01).unwrap();
    for id in &ids {
        sbbf.insert(id);
    }
    let (json, back): (_, Sbbf) = round_trip(&sbbf);
    assert_eq!(back.to_parquet(), sbbf.to_parquet());
    let mut longer: Vec<u8> = serde_json::from_str(&json).unwrap();
    longer.push(0);
    assert!(serde_json::from_str::<Sbbf>(&serde_json::to_string(&longer).unwrap()).is_err());
}

#[test]
fn configs_and_stats_round_trip_and_default_missing_fields() {
    let limiter = Config::default()
        .with_max_size(4096)
        .with_rate_per_second(7)
        .with_window(Duration::from_millis(1500))
        .with_shards(16)
        .with_salt(Some([9; 16]));
    assert_eq!(round_trip(&limiter).1, limiter);
    let partial: Config = serde_json::from_str(r#"{"rate_per_second": 3}"#).unwrap();
    assert_eq!(partial, Config::default().with_rate_per_second(3));
    let stats = Stats::default();
    assert_eq!(round_trip(&stats).1, stats);

    let ledger = LedgerConfig::default()
        .with_false_positive_rate(0.002)
        .with_bloom_layout(Layout::Block512)
        .with_max_txn_life(320)
        .with_archival(false);
    let (json, back) = round_trip(&ledger);
    assert_eq!(back, ledger);
    assert!(json.contains(r#""bloom_layout":"Block512""#), "{json}");
    let partial: LedgerConfig = serde_json::from_str(r#"{"blooms": false}"#).unwrap();
    assert_eq!(partial, LedgerConfig::default().with_blooms(false));

    let handler = HandlerConfig::default()
        .with_backlog_capacity(100)
        .with_congestion_pct(50)
        .with_dedup_interval(Duration::from_secs(5))
        .with_dedup_salt(Some([1; 16]));
    let (json, back) = round_trip(&handler);
    assert!(!json.contains("decoder"), "{json}");
    assert_eq!(
        (
            back.backlog_capacity,
            back.congestion_pct,
            back.dedup_interval,
            back.dedup_salt
        ),
        (100, 50, Duration::from_secs(5), Some([1; 16]))
    );
    assert_eq!(
        back.max_message_size,
        HandlerConfig::default().max_message_size
    );
    assert!(back.validate().is_ok());
    let stats = HandlerStats::default();
    assert_eq!(round_trip(&stats).1, stats);
}
