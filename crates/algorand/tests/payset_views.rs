//! `codec::payset_app_ids` and `codec::gossip_messages` against independent reference
//! implementations over rmpv (a general msgpack value reader and writer, not the codec's own
//! reader), on every block of the real dataset2 archive (../shared/data, see its SOURCES.md),
//! the real betanet block, and synthetic blocks. Data missing: the tests that read it are ignored
//! (they fail under TXGATE_REQUIRE_DATA=1; see txgate-testkit's "Real data").
//!
//! The references parse the block into rmpv values and re-encode them: where the input is
//! canonical (every block a go-algorand node writes) they must agree byte for byte with the
//! codec, which copies canonical values as they are.

use rmpv::Value;
use txgate_algorand::codec::{
    decode_block, decode_txn_message, gossip_messages, payset_app_ids, payset_offsets,
};
use txgate_algorand::source::BlockSource;
use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_testkit::data_file;

const DATASET2: &str = "algorand-sdk-testing/private_blocks/dataset2.tar.bz2";
const BETANET: &str = "algorand-indexer/blocks/stpf_block_high_index.block";

/// The value under the string key `k` of the msgpack map `m` (cloned), if `m` is a map that
/// holds it.
fn map_get(m: &Value, k: &str) -> Option<Value> {
    m.as_map()?
        .iter()
        .find(|(key, _)| key.as_str() == Some(k))
        .map(|(_, v)| v.clone())
}

/// The block map of an algod block file: the `block` of `{block, cert}`, or the value itself.
fn block_of(value: Value) -> Value {
    map_get(&value, "block").unwrap_or(value)
}

/// Reference: the `apid` of every payset entry, 0 when absent.
fn reference_app_ids(raw: &[u8]) -> Result<Vec<u64>, String> {
    let value = rmpv::decode::read_value(&mut &raw[..]).map_err(|e| e.to_string())?;
    let block = block_of(value);
    let entries = match map_get(&block, "txns") {
        None | Some(Value::Nil) => return Ok(Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(_) => return Err("`txns` is not an array".into()),
    };
    entries
        .iter()
        .map(|entry| {
            let txn = map_get(entry, "txn").ok_or("a payset entry has no `txn`")?;
            match map_get(&txn, "apid") {
                None => Ok(0),
                Some(v) => v
                    .as_u64()
                    .ok_or_else(|| "`txn.apid` is not a u64".to_owned()),
            }
        })
        .collect()
}

/// Reference: each entry's `txn` with `gen` (when `hgi`) and `gh` put back, keys sorted, next to
/// its `lsig/msig/sgnr/sig`; consecutive entries sharing `grp` concatenated.
fn reference_messages(raw: &[u8]) -> Vec<Vec<u8>> {
    let Ok(value) = rmpv::decode::read_value(&mut &raw[..]) else {
        return Vec::new();
    };
    let get = map_get;
    let block = block_of(value);
    let genesis_id = get(&block, "gen");
    let genesis_hash = get(&block, "gh");
    let Some(Value::Array(entries)) = get(&block, "txns") else {
        return Vec::new();
    };
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut last_group: Option<Value> = None;
    for entry in &entries {
        let Some(Value::Map(mut txn)) = get(entry, "txn") else {
            continue;
        };
        if get(entry, "hgi") == Some(Value::Boolean(true))
            && let Some(g) = &genesis_id
        {
            txn.push((Value::from("gen"), g.clone()));
        }
        if let Some(gh) = &genesis_hash {
            txn.push((Value::from("gh"), gh.clone()));
        }
        txn.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
        let group = txn
            .iter()
            .find(|(k, _)| k.as_str() == Some("grp"))
            .map(|(_, v)| v.clone());
        let mut signed: Vec<(Value, Value)> = ["lsig", "msig", "sgnr", "sig"]
            .iter()
            .filter_map(|k| get(entry, k).map(|v| (Value::from(*k), v)))
            .collect();
        signed.push((Value::from("txn"), Value::Map(txn)));
        signed.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
        let mut bytes = Vec::new();
        if rmpv::encode::write_value(&mut bytes, &Value::Map(signed)).is_err() {
            continue;
        }
        match (&group, &last_group, out.last_mut()) {
            (Some(g), Some(prev), Some(msg)) if g == prev => msg.extend_from_slice(&bytes),
            _ => out.push(bytes),
        }
        last_group = group;
    }
    out
}

/// Checks both views of one block against the references and the messages against the
/// block's txids; returns (entries, messages).
fn check_block(name: &str, raw: &[u8]) -> (usize, usize) {
    let block = decode_block(raw).unwrap_or_else(|e| panic!("{name}: {e}"));
    let ids = payset_app_ids(raw).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(Ok(ids.clone()), reference_app_ids(raw), "{name}: app ids");
    assert_eq!(ids.len(), block.txns.len(), "{name}");
    for (id, txn) in ids.iter().zip(&block.txns) {
        // The codec's `app_ids` start with `apid` whenever it is not 0.
        if *id != 0 {
            assert_eq!(txn.app_ids.first(), Some(id), "{name}");
        }
    }
    let messages = gossip_messages(raw).unwrap_or_else(|e| panic!("{name}: {e}"));
    let reference = reference_messages(raw);
    assert_eq!(messages.len(), reference.len(), "{name}: message count");
    for (i, (m, r)) in messages.iter().zip(&reference).enumerate() {
        assert!(m == r, "{name}: message {i} differs from the reference");
    }
    // Each message decodes to its group's transactions, in order, with the block's txids.
    let sent: Vec<_> = messages
        .iter()
        .flat_map(|m| decode_txn_message(m).unwrap_or_else(|e| panic!("{name}: {e}")))
        .collect();
    assert_eq!(
        sent, block.txns,
        "{name}: messages decode to the block's txns"
    );
    (block.txns.len(), messages.len())
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn dataset2_views_match_the_references() {
    let path = data_file(DATASET2);
    let (mut blocks, mut entries, mut messages, mut app_calls) = (0, 0, 0, 0);
    for raw in BlockSource::open(&path).expect("open dataset2") {
        let raw = raw.expect("read dataset2 entry");
        let (e, m) = check_block(&raw.name, &raw.bytes);
        app_calls += payset_app_ids(&raw.bytes)
            .unwrap()
            .iter()
            .filter(|&&a| a != 0)
            .count();
        blocks += 1;
        entries += e;
        messages += m;
    }
    // SOURCES.md: dataset2 holds rounds with transactions, groups among them, app calls too.
    assert!(blocks > 0 && entries > 0, "{blocks} blocks, {entries} txns");
    assert!(messages < entries, "no groups in {entries} txns");
    assert!(app_calls > 0, "no app calls in {entries} txns");
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn betanet_block_views_match_the_references() {
    let path = data_file(BETANET);
    let raw = std::fs::read(&path).unwrap();
    assert_eq!(check_block(BETANET, &raw), (1, 1));
}

#[test]
fn synthetic_block_views_match_the_references() {
    let (a, b) = (Some([0x11; 32]), Some([0x22; 32]));
    let txns = vec![
        SynthTxn::payment([1; 32], 10, 1010),
        SynthTxn {
            group: a,
            ..SynthTxn::app_call([2; 32], 10, 1010, vec![42, 7])
        },
        SynthTxn {
            group: a,
            note: vec![0xff, 0x00],
            ..SynthTxn::payment([3; 32], 10, 1010)
        },
        // Another group right after the first: a message of its own.
        SynthTxn {
            group: b,
            ..SynthTxn::app_call([4; 32], 10, 1010, vec![0, 9])
        },
        SynthTxn {
            group: b,
            ..SynthTxn::payment([5; 32], 10, 1010)
        },
        SynthTxn::app_call([6; 32], 10, 1010, vec![u64::MAX]),
        SynthTxn {
            group: a,
            ..SynthTxn::payment([7; 32], 10, 1010)
        },
    ];
    assert_eq!(
        check_block(
            "synthetic",
            &encode_block(11, "synth-v1", &[9; 32], 1, &txns)
        ),
        (7, 5)
    );
    assert_eq!(
        payset_app_ids(&encode_block(11, "synth-v1", &[9; 32], 1, &txns)).unwrap(),
        vec![0, 42, 0, 0, 0, u64::MAX, 0]
    );
    // No genesis id: entries without `hgi`, txns without `gen`.
    check_block("no genesis id", &encode_block(12, "", &[9; 32], 0, &txns));
    // An empty block: no ids, no messages.
    let empty = encode_block(13, "synth-v1", &[9; 32], 1, &[]);
    assert_eq!(check_block("empty", &empty), (0, 0));
    assert!(payset_offsets(&empty).unwrap().is_empty());
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let txns = [SynthTxn::app_call([2; 32], 10, 1010, vec![42])];
    let raw = encode_block(11, "synth-v1", &[9; 32], 1, &txns);
    for cut in 0..raw.len() {
        let _ = payset_app_ids(&raw[..cut]);
        assert!(gossip_messages(&raw[..cut]).is_err(), "cut at {cut}");
    }
    assert!(payset_app_ids(&[0xc1]).is_err());
    assert!(gossip_messages(&[0x90]).is_err());
}

/// A bare block `{gh, rnd, txns: [entry]}` around one payset entry, written with rmpv.
fn block_with_entry(entry: Vec<(Value, Value)>) -> Vec<u8> {
    let block = Value::Map(vec![
        (Value::from("gh"), Value::Binary(vec![9; 32])),
        (Value::from("rnd"), Value::from(5)),
        (Value::from("txns"), Value::Array(vec![Value::Map(entry)])),
    ]);
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &block).unwrap();
    out
}

#[test]
fn non_canonical_entries_read_as_the_decoder_reads_them() {
    let txn = |apid: Value| {
        Value::Map(vec![
            (Value::from("apid"), apid),
            (Value::from("type"), Value::from("appl")),
        ])
    };
    // An empty `apid` (nil, 0, false) is absent for the decoder, and so here.
    for empty in [Value::Nil, Value::from(0), Value::Boolean(false)] {
        let raw = block_with_entry(vec![(Value::from("txn"), txn(empty.clone()))]);
        let block = decode_block(&raw).unwrap();
        assert!(block.txns[0].app_ids.is_empty(), "{empty}");
        assert_eq!(payset_app_ids(&raw).unwrap(), vec![0], "{empty}");
    }
    let raw = block_with_entry(vec![(Value::from("txn"), txn(Value::from("x")))]);
    assert!(decode_block(&raw).is_err() && payset_app_ids(&raw).is_err());
    // A signature with a duplicate key has no canonical form: copied as stored, and the
    // message still decodes to the block's txn.
    let msig = Value::Map(vec![
        (Value::from("v"), Value::from(1)),
        (Value::from("v"), Value::from(2)),
    ]);
    let raw = block_with_entry(vec![
        (Value::from("msig"), msig.clone()),
        (Value::from("txn"), txn(Value::from(7))),
    ]);
    let block = decode_block(&raw).unwrap();
    let messages = gossip_messages(&raw).unwrap();
    assert_eq!(decode_txn_message(&messages[0]).unwrap(), block.txns);
    let mut stored = Vec::new();
    rmpv::encode::write_value(&mut stored, &msig).unwrap();
    assert!(messages[0].windows(stored.len()).any(|w| w == stored));
}

/// The build script's `cfg(txgate_no_data)` follows txgate-testkit's rule for the data here.
#[test]
fn the_data_cfg_follows_the_data() {
    txgate_testkit::assert_data_cfg(cfg!(txgate_no_data));
}
