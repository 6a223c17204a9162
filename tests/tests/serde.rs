//! The libraries' `serde` support: every type round-trips through JSON (a human-readable format)
//! to an equal value, filters load back with the same bits, and what is documented as text is
//! text. The binary forms (a txid's 32 bytes, a filter's serialized bytes) go through MessagePack
//! (rmp-serde, whose serializer is not human-readable), checked byte for byte against the
//! MessagePack spec (github.com/msgpack/msgpack, spec.md): bin 8 is `0xc4` and bin 16 `0xc5`,
//! each followed by the length (big-endian, 1 or 2 bytes) and the bytes; array 16 is `0xdc` and
//! a 2-byte count; a positive fixint is one byte below `0x80`, a uint 8 is `0xcc` and the byte;
//! str 8 is `0xd9` and a 1-byte length.

use std::time::Duration;

use txgate_algorand::Txid;
use txgate_bloom::{
    AnyBloom, AtomicBlockedBloom, Block256, Block512, BlockedBloom, BloomBuilder, Bytes, Filter,
    Layout, Sbbf,
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

/// `value` in MessagePack, binary (not human-readable) as rmp-serde is by default.
fn msgpack<T: serde::Serialize>(value: &T) -> Vec<u8> {
    rmp_serde::to_vec(value).expect("serializes")
}

/// `bytes` as a MessagePack bin 16 (for 256 to 65535 bytes).
fn bin16(bytes: &[u8]) -> Vec<u8> {
    let len = u16::try_from(bytes.len()).expect("at most 65535 bytes");
    assert!(len >= 256, "{len} bytes take a bin 8");
    [&[0xc5][..], &len.to_be_bytes(), bytes].concat()
}

/// The message of a rmp-serde decode error that serde's `de::Error::custom` made (its `Syntax`
/// variant); panics on success or on another variant.
fn syntax_error<T: std::fmt::Debug>(decoded: Result<T, rmp_serde::decode::Error>) -> String {
    match decoded {
        Err(rmp_serde::decode::Error::Syntax(msg)) => msg,
        other => panic!("expected a Syntax error, got {other:?}"),
    }
}

#[test]
fn txid_is_its_32_bytes_in_msgpack() {
    // 0, 8, ..., 248: bytes below 0x80 and above, which a sequence writes differently.
    let bytes: [u8; 32] = std::array::from_fn(|i| (i * 8) as u8);
    let txid = Txid(bytes);
    // bin 8 (0xc4) of length 32 (0x20), then the bytes.
    let want = [&[0xc4, 0x20][..], &bytes].concat();
    assert_eq!(msgpack(&txid), want);
    assert_eq!(rmp_serde::from_slice::<Txid>(&want).unwrap(), txid);

    // A sequence of 32 integers (what formats without a byte type give): array 16 of count 32.
    let mut seq = vec![0xdc, 0x00, 0x20];
    for b in bytes {
        if b < 0x80 {
            seq.push(b);
        } else {
            seq.extend([0xcc, b]);
        }
    }
    assert_eq!(rmp_serde::from_slice::<Txid>(&seq).unwrap(), txid);

    // 31 bytes, and a sequence of 33, are refused with the length.
    let short = [&[0xc4, 31][..], &bytes[..31]].concat();
    assert_eq!(
        syntax_error(rmp_serde::from_slice::<Txid>(&short)),
        "invalid length 31, expected a txid: 52 base32 characters, or 32 bytes"
    );
    let mut long = seq.clone();
    long[2] = 33;
    long.push(7);
    assert_eq!(
        syntax_error(rmp_serde::from_slice::<Txid>(&long)),
        "invalid length 33, expected a txid: 52 base32 characters, or 32 bytes"
    );

    // The choice is the serializer's `is_human_readable`, not the format: rmp-serde told to be
    // human-readable writes the base32 text, a str 8 of 52 (0x34) characters.
    let mut text = Vec::new();
    serde::Serialize::serialize(
        &txid,
        &mut rmp_serde::Serializer::new(&mut text).with_human_readable(),
    )
    .unwrap();
    assert_eq!(
        text,
        [&[0xd9, 0x34][..], txid.to_string().as_bytes()].concat()
    );
}

#[test]
fn filters_are_byte_strings_in_msgpack() {
    let builder = BloomBuilder::with_num_bits(1 << 12).seed(8);
    let mut plain = builder.build().unwrap();
    let mut wide: BlockedBloom<Block512> = builder.layout().build().unwrap();
    let mut sbbf = Sbbf::new(512).unwrap();
    for i in 0..100u32 {
        plain.insert(Bytes(&[i as u8; 32]));
        wide.insert(Bytes(&[i as u8; 32]));
        sbbf.insert(&i.to_le_bytes());
    }

    let encoded = msgpack(&plain);
    assert_eq!(encoded, bin16(&plain.to_bytes()));
    assert_eq!(
        rmp_serde::from_slice::<BlockedBloom>(&encoded).unwrap(),
        plain
    );
    let atomic = AtomicBlockedBloom::from(plain.clone());
    assert_eq!(msgpack(&atomic), encoded);
    let back: AtomicBlockedBloom = rmp_serde::from_slice(&encoded).unwrap();
    assert_eq!(back.to_plain().unwrap(), plain);

    let encoded_wide = msgpack(&wide);
    assert_eq!(encoded_wide, bin16(&wide.to_bytes()));
    assert_eq!(
        rmp_serde::from_slice::<BlockedBloom<Block512>>(&encoded_wide).unwrap(),
        wide
    );
    let any: AnyBloom = rmp_serde::from_slice(&encoded_wide).unwrap();
    assert_eq!(any.layout(), Layout::Block512);
    assert_eq!(msgpack(&any), encoded_wide);

    let encoded_sbbf = msgpack(&sbbf);
    assert_eq!(encoded_sbbf, bin16(&sbbf.to_parquet()));
    let back: Sbbf = rmp_serde::from_slice(&encoded_sbbf).unwrap();
    assert_eq!(back.to_parquet(), sbbf.to_parquet());

    // Damaged bytes fail as `from_bytes` fails, with its message; so does the other layout.
    let mut damaged = plain.to_bytes();
    damaged[100] ^= 1;
    let load_error = BlockedBloom::<Block256>::from_bytes(&damaged).unwrap_err();
    assert_eq!(
        syntax_error(rmp_serde::from_slice::<BlockedBloom>(&bin16(&damaged))),
        load_error.to_string()
    );
    assert_eq!(
        syntax_error(rmp_serde::from_slice::<BlockedBloom<Block512>>(&encoded)),
        BlockedBloom::<Block512>::from_layout_bytes(&plain.to_bytes())
            .unwrap_err()
            .to_string()
    );
    // A Parquet filter with a byte after its bitset.
    let longer = [&sbbf.to_parquet()[..], &[0]].concat();
    assert_eq!(
        syntax_error(rmp_serde::from_slice::<Sbbf>(&bin16(&longer))),
        "1 bytes after the Parquet bloom filter"
    );
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
        .seed(5)
        .build()
        .unwrap();
    let mut wide: BlockedBloom<Block512> = BloomBuilder::with_false_positive_rate(500, 0.01)
        .seed(6)
        .layout()
        .build()
        .unwrap();
    for id in &ids {
        plain.insert(Bytes(id));
        wide.insert(Bytes(id));
    }
    let (json, back): (_, BlockedBloom) = round_trip(&plain);
    // The JSON is the `to_bytes` form, byte for byte.
    let bytes: Vec<u8> = serde_json::from_str(&json).unwrap();
    assert_eq!(bytes, plain.to_bytes());
    assert_eq!(back.to_bytes(), plain.to_bytes());
    assert!(ids.iter().all(|id| back.contains(Bytes(id))));

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
