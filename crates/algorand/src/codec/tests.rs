//! Codec unit tests: synthetic round trips, the re-encoding path against real vectors written
//! non-canonically, and error cases.

use proptest::prelude::*;
use rmpv::Value;
use sha2::{Digest, Sha512_256};

use rmp::encode::ByteBuf;

use super::block::{Block, Split, decode_block, decode_located};
use super::error::DecodeError;
use super::gossip::gossip_messages;
use super::msgpack::{self, put_array_len, put_bin, put_bool, put_map_len, put_str, put_uint};
use super::payset;
use super::payset::{payset_entry_txid, payset_offsets};
use super::txn::{decode_txn_message, distinct_app_ids};
use super::verify::{Expected, decode_verify_split};
use crate::ids::Txid;
use crate::synth::{SynthTxn, encode_block, encode_block_with_protocol, encode_txn_message};

const GEN: &str = "synth-v1";
const GH: [u8; 32] = [0x5a; 32];

fn sample_txns() -> Vec<SynthTxn> {
    let group = Some([0x33; 32]);
    vec![
        SynthTxn::payment([1; 32], 100, 1100),
        SynthTxn {
            group,
            note: vec![0xff, 0x00, 0x80],
            ..SynthTxn::app_call([2; 32], 101, 1101, vec![42, 7, 42, 0, 9])
        },
        SynthTxn {
            group,
            ..SynthTxn::app_call([3; 32], 0, 5, vec![0])
        },
        SynthTxn {
            tx_type: b"axfer".to_vec(),
            sender: [0; 32],
            first_valid: 1 << 40,
            last_valid: u64::MAX,
            ..SynthTxn::default()
        },
    ]
}

/// SHA-512/256("TX" || bytes), computed here without the codec.
fn txid_of(bytes: &[u8]) -> Txid {
    let mut h = Sha512_256::new();
    h.update(b"TX");
    h.update(bytes);
    Txid(h.finalize().into())
}

/// Splits a message into its `SignedTxn` values with rmpv and returns each `txn` value's bytes
/// re-encoded by rmpv (which keeps the map order and writes the smallest ints).
fn message_txn_bytes(msg: &[u8]) -> Vec<Vec<u8>> {
    let mut rd = msg;
    let mut out = Vec::new();
    while !rd.is_empty() {
        let v = rmpv::decode::read_value(&mut rd).unwrap();
        let txn = v
            .as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_str() == Some("txn"))
            .unwrap()
            .1
            .clone();
        let mut b = Vec::new();
        rmpv::encode::write_value(&mut b, &txn).unwrap();
        out.push(b);
    }
    out
}

#[test]
fn synthetic_block_round_trips() {
    let txns = sample_txns();
    let bytes = encode_block(77, GEN, &GH, 1_700_000_123, &txns);
    let block = decode_block(&bytes).unwrap();
    assert_eq!(block.round, 77);
    assert_eq!(block.genesis_id, GEN.as_bytes());
    assert_eq!(block.genesis_hash, GH);
    assert_eq!(block.timestamp, 1_700_000_123);
    block.verify_payset(&bytes).unwrap();
    assert_eq!(block.txns.len(), txns.len());

    let msg = encode_txn_message(&txns, GEN, &GH);
    let from_msg = decode_txn_message(&msg).unwrap();
    let independent = message_txn_bytes(&msg);
    for (i, (t, s)) in block.txns.iter().zip(&txns).enumerate() {
        assert_eq!(
            t.txid,
            txid_of(&independent[i]),
            "txn {i}: block txid vs hash of the encoded txn"
        );
        assert_eq!(t.txid, from_msg[i].txid, "txn {i}: block and message forms");
        assert_eq!(t.txid, s.txid(GEN, &GH), "txn {i}");
        assert_eq!(*t, from_msg[i], "txn {i}");
        assert_eq!(t.tx_type, s.tx_type);
        assert_eq!(t.sender, s.sender);
        assert_eq!((t.first_valid, t.last_valid), (s.first_valid, s.last_valid));
        assert_eq!(t.group, s.group);
    }
    assert_eq!(block.txns[0].app_ids, Vec::<u64>::new());
    assert_eq!(
        block.txns[1].app_ids,
        vec![42, 7, 9],
        "distinct, first seen, 0 dropped"
    );
    assert_eq!(block.txns[2].app_ids, Vec::<u64>::new(), "creation");
    // Different networks give different txids (gen and gh are hashed).
    assert_ne!(txns[0].txid(GEN, &GH), txns[0].txid("other", &GH));
    assert_ne!(txns[0].txid(GEN, &GH), txns[0].txid(GEN, &[0; 32]));
}

#[test]
fn empty_and_round_zero_blocks_round_trip() {
    let bytes = encode_block(0, GEN, &GH, 0, &[]);
    let block = decode_block(&bytes).unwrap();
    assert_eq!((block.round, block.timestamp, block.txns.len()), (0, 0, 0));
    block.verify_payset(&bytes).unwrap();
    // Without a genesis id: no `gen`, no `hgi`, same txids as the message form.
    let txns = sample_txns();
    let block = decode_block(&encode_block(3, "", &GH, 1, &txns)).unwrap();
    let msg = decode_txn_message(&encode_txn_message(&txns, "", &GH)).unwrap();
    assert_eq!(block.txns, msg);
}

#[test]
fn a_thousand_txn_round_round_trips() {
    let txns: Vec<SynthTxn> = (0..1000u64)
        .map(|i| SynthTxn {
            note: i.to_be_bytes().to_vec(),
            ..SynthTxn::app_call([(i % 251) as u8; 32], 10, 1010, vec![i % 17 + 1])
        })
        .collect();
    let bytes = encode_block(11, GEN, &GH, 5, &txns);
    let block = decode_block(&bytes).unwrap();
    block.verify_payset(&bytes).unwrap();
    let mut ids: Vec<Txid> = block.txns.iter().map(|t| t.txid).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 1000);
    assert_eq!(block.txns[999].app_ids, vec![999 % 17 + 1]);
}

/// Writes `v` as loosely as msgpack allows: widest integer, str and bin forms, map entries in
/// reverse order, and an extra empty entry in every map. Canonical re-encoding must undo it all.
pub(super) fn write_loose(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Nil => out.push(0xc0),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => match i.as_u64() {
            Some(u) => {
                out.push(0xcf);
                out.extend(u.to_be_bytes());
            }
            None => {
                out.push(0xd3);
                out.extend(i.as_i64().unwrap().to_be_bytes());
            }
        },
        Value::String(s) => {
            out.push(0xdb);
            out.extend((s.as_bytes().len() as u32).to_be_bytes());
            out.extend(s.as_bytes());
        }
        Value::Binary(b) => {
            out.push(0xc6);
            out.extend((b.len() as u32).to_be_bytes());
            out.extend(b);
        }
        Value::Array(a) => {
            out.push(0xdd);
            out.extend((a.len() as u32).to_be_bytes());
            for x in a {
                write_loose(x, out);
            }
        }
        Value::Map(m) => {
            out.push(0xdf);
            out.extend((m.len() as u32 + 1).to_be_bytes());
            out.extend([0xa8]);
            out.extend(b"zz-empty");
            out.extend([0xcd, 0, 0]);
            for (k, x) in m.iter().rev() {
                write_loose(k, out);
                write_loose(x, out);
            }
        }
        other => panic!("no {other:?} in Algorand data"),
    }
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn loosely_written_real_vectors_keep_their_txids() {
    let dir = txgate_testkit::data_file("algorand-indexer/txn_vectors");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "txn") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let want = decode_txn_message(&bytes).unwrap()[0].clone();
        // The real bytes are canonical: the scan says so and the re-encoder reproduces them.
        let stxn = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
        let txn = &stxn
            .as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_str() == Some("txn"))
            .unwrap()
            .1;
        let mut raw = Vec::new();
        rmpv::encode::write_value(&mut raw, txn).unwrap();
        let mut r = msgpack::Reader::new(&raw);
        assert!(r.scan(0).unwrap().canonical, "{}", path.display());
        let mut again = ByteBuf::new();
        msgpack::write_canonical(&mut msgpack::Reader::new(&raw), &mut again, 0).unwrap();
        assert_eq!(again.as_slice(), &raw[..], "{}", path.display());
        // Written loosely, the txn decodes to the same txid and fields.
        let mut loose = vec![0x81, 0xa3, b't', b'x', b'n'];
        write_loose(txn, &mut loose);
        let got = decode_txn_message(&loose).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(got[0], want, "{}", path.display());
        checked += 1;
    }
    assert_eq!(checked, 30);
}

/// The `txn` value of `t`'s entry in a synthetic block (no `gen`, no `gh`), via rmpv.
fn block_txn_bytes(t: &SynthTxn) -> Vec<u8> {
    let bytes = encode_block(1, GEN, &GH, 1, std::slice::from_ref(t));
    let v = rmpv::decode::read_value(&mut &bytes[..]).unwrap();
    let get = |v: &Value, key: &str| -> Value {
        v.as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .unwrap()
            .1
            .clone()
    };
    let stib = get(&get(&v, "block"), "txns").as_array().unwrap()[0].clone();
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &get(&stib, "txn")).unwrap();
    out
}

/// A bare block `{"gen": GEN, "gh": GH, "rnd": 5, "txns": [` written up to its one payset
/// entry, which the caller writes.
fn round_5_with_one_entry() -> ByteBuf {
    let mut b = ByteBuf::new();
    put_map_len(&mut b, 4);
    put_str(&mut b, b"gen");
    put_str(&mut b, GEN.as_bytes());
    put_str(&mut b, b"gh");
    put_bin(&mut b, &GH);
    put_str(&mut b, b"rnd");
    put_uint(&mut b, 5);
    put_str(&mut b, b"txns");
    put_array_len(&mut b, 1);
    b
}

#[test]
fn hgi_after_txn_is_still_honoured() {
    // A SignedTxnInBlock {"txn": {...}, "hgi": true} in that (non-canonical) order.
    let t = SynthTxn::payment([4; 32], 1, 2);
    let canonical = decode_block(&encode_block(5, GEN, &GH, 9, std::slice::from_ref(&t))).unwrap();
    let txn_value = &block_txn_bytes(&t);
    let mut b = round_5_with_one_entry();
    put_map_len(&mut b, 2);
    put_str(&mut b, b"txn");
    b.as_mut_vec().extend_from_slice(txn_value);
    put_str(&mut b, b"hgi");
    put_bool(&mut b, true);
    let bare = decode_block(b.as_slice()).unwrap();
    assert_eq!(bare.txns[0].txid, canonical.txns[0].txid);
    assert_eq!(bare.txns[0].txid, t.txid(GEN, &GH));
}

#[test]
fn a_repeated_signature_key_keeps_the_first_and_still_decodes() {
    // {"hgi": true, "sig": <64 x 1>, "sig": <64 x 2>, "txn": {...}}: go-algorand never writes
    // the repeat; the txid does not cover signatures, so the entry decodes, and its gossip
    // message carries the first signature.
    let t = SynthTxn::payment([4; 32], 1, 2);
    let txn_value = &block_txn_bytes(&t);
    let mut b = round_5_with_one_entry();
    put_map_len(&mut b, 4);
    put_str(&mut b, b"hgi");
    put_bool(&mut b, true);
    put_str(&mut b, b"sig");
    put_bin(&mut b, &[1; 64]);
    put_str(&mut b, b"sig");
    put_bin(&mut b, &[2; 64]);
    put_str(&mut b, b"txn");
    b.as_mut_vec().extend_from_slice(txn_value);
    let block = decode_block(b.as_slice()).unwrap();
    assert_eq!(block.txns[0].txid, t.txid(GEN, &GH));
    let offsets = payset_offsets(b.as_slice()).unwrap();
    assert_eq!(
        payset_entry_txid(b.as_slice(), offsets[0], GEN.as_bytes(), &GH).unwrap(),
        t.txid(GEN, &GH)
    );
    let messages = gossip_messages(b.as_slice()).unwrap();
    let first = [&[0xc4, 64][..], &[1; 64]].concat();
    let second = [&[0xc4, 64][..], &[2; 64]].concat();
    let has = |needle: &[u8]| messages[0].windows(needle.len()).any(|w| w == needle);
    assert!(has(&first) && !has(&second));
    assert_eq!(
        decode_txn_message(&messages[0]).unwrap()[0].txid,
        t.txid(GEN, &GH)
    );
}

#[test]
fn a_timestamp_that_is_not_an_integer_says_so() {
    // `ts` of the wrong type is "an integer"; a uint above i64::MAX "an int64".
    for (value, expected) in [
        (&[0xa1, b'x'][..], "an integer"),
        (
            &[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff][..],
            "an int64",
        ),
    ] {
        let mut b = ByteBuf::new();
        put_map_len(&mut b, 2);
        put_str(&mut b, b"gh");
        put_bin(&mut b, &GH);
        put_str(&mut b, b"ts");
        b.as_mut_vec().extend_from_slice(value);
        match decode_block(b.as_slice()) {
            Err(DecodeError::WrongType {
                field: "ts",
                expected: e,
                ..
            }) => assert_eq!(e, expected),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn header_after_txns_is_still_used() {
    // A bare block with `txns` before `gh` and `gen` (non-canonical order): decoded after the map.
    let t = SynthTxn::payment([4; 32], 1, 2);
    let txn_value = &block_txn_bytes(&t);
    let mut b = ByteBuf::new();
    put_map_len(&mut b, 3);
    put_str(&mut b, b"txns");
    put_array_len(&mut b, 1);
    put_map_len(&mut b, 2);
    put_str(&mut b, b"hgi");
    put_bool(&mut b, true);
    put_str(&mut b, b"txn");
    b.as_mut_vec().extend_from_slice(txn_value);
    put_str(&mut b, b"gh");
    put_bin(&mut b, &GH);
    put_str(&mut b, b"gen");
    put_str(&mut b, GEN.as_bytes());
    let block = decode_block(b.as_slice()).unwrap();
    assert_eq!(block.round, 0);
    assert_eq!(block.txns[0].txid, t.txid(GEN, &GH));
}

/// A bare block `{"gh": GH, "rnd": 9, "txns": [ {"txn": <txn>} ]}`.
fn bare_block_with_txn(txn: &[u8]) -> Vec<u8> {
    let mut b = ByteBuf::new();
    put_map_len(&mut b, 3);
    put_str(&mut b, b"gh");
    put_bin(&mut b, &GH);
    put_str(&mut b, b"rnd");
    put_uint(&mut b, 9);
    put_str(&mut b, b"txns");
    put_array_len(&mut b, 1);
    put_map_len(&mut b, 1);
    put_str(&mut b, b"txn");
    b.as_mut_vec().extend_from_slice(txn);
    b.into_vec()
}

#[test]
fn errors_are_typed_and_carry_the_round() {
    let txns = sample_txns();
    let good = encode_block(42, GEN, &GH, 1, &txns);
    // Truncation anywhere is an error with the round (rnd precedes txns) or without (too early).
    for cut in 0..good.len() {
        let e = decode_block(&good[..cut]).unwrap_err();
        if cut > good.len() / 2 {
            assert_eq!(e.round(), Some(42), "cut {cut}: {e}");
        }
    }
    // Trailing bytes.
    let mut long = good.clone();
    long.extend([0x90, 0x90]);
    assert_eq!(
        decode_block(&long).unwrap_err(),
        DecodeError::TrailingBytes {
            round: Some(42),
            offset: good.len(),
            len: 2
        }
    );
    // Not a map; reserved byte; too deep.
    assert!(matches!(
        decode_block(&[0x93, 1, 2, 3]),
        Err(DecodeError::WrongType { field: "block", .. })
    ));
    assert!(matches!(
        decode_block(&[0xc1]),
        Err(DecodeError::ReservedMarker { offset: 0, .. })
    ));
    let mut deep = vec![0x81, 0xa1, b'x'];
    deep.extend(std::iter::repeat_n(0x91, 100));
    deep.push(0);
    assert!(matches!(
        decode_block(&deep),
        Err(DecodeError::TooDeep { .. })
    ));
    // Missing gh.
    let mut b = ByteBuf::new();
    put_map_len(&mut b, 1);
    put_str(&mut b, b"rnd");
    put_uint(&mut b, 8);
    assert_eq!(
        decode_block(b.as_slice()).unwrap_err(),
        DecodeError::MissingField {
            round: Some(8),
            field: "gh"
        }
    );
    // A txn without a type; a txn that holds gh itself; a snd of the wrong length.
    type Field<'f> = (&'f [u8], &'f dyn Fn(&mut ByteBuf));
    let txn = |entries: &[Field<'_>]| {
        let mut t = ByteBuf::new();
        put_map_len(&mut t, entries.len());
        for (k, w) in entries {
            put_str(&mut t, k);
            w(&mut t);
        }
        t.into_vec()
    };
    let no_type = txn(&[(b"fv", &|b| put_uint(b, 3))]);
    assert!(matches!(
        decode_block(&bare_block_with_txn(&no_type)),
        Err(DecodeError::MissingField {
            round: Some(9),
            field: "txn.type"
        })
    ));
    let with_gh = txn(&[
        (b"gh", &|b| put_bin(b, &GH)),
        (b"type", &|b| put_str(b, b"pay")),
    ]);
    assert!(matches!(
        decode_block(&bare_block_with_txn(&with_gh)),
        Err(DecodeError::GenesisInBlockTxn {
            intra: 0,
            field: "gh",
            ..
        })
    ));
    let short_snd = txn(&[
        (b"snd", &|b| put_bin(b, &[1; 31])),
        (b"type", &|b| put_str(b, b"pay")),
    ]);
    assert!(matches!(
        decode_block(&bare_block_with_txn(&short_snd)),
        Err(DecodeError::WrongType {
            field: "txn.snd",
            ..
        })
    ));
    let dup = txn(&[
        (b"type", &|b| put_str(b, b"pay")),
        (b"type", &|b| put_str(b, b"appl")),
    ]);
    assert!(matches!(
        decode_block(&bare_block_with_txn(&dup)),
        Err(DecodeError::DuplicateKey { round: Some(9), .. })
    ));
    // Messages: empty, missing txn, garbage after a good one.
    assert_eq!(decode_txn_message(&[]), Err(DecodeError::EmptyMessage));
    assert!(matches!(
        decode_txn_message(&[0x80]),
        Err(DecodeError::MissingField { field: "txn", .. })
    ));
    let mut msg = encode_txn_message(&txns[..1], GEN, &GH);
    msg.push(0x07);
    assert!(matches!(
        decode_txn_message(&msg),
        Err(DecodeError::WrongType {
            field: "SignedTxn",
            ..
        })
    ));
    // Errors print their round.
    let e = decode_block(&good[..good.len() - 3]).unwrap_err();
    assert!(e.to_string().starts_with("round 42: "), "{e}");
}

proptest! {
    /// Synthetic blocks and messages, cut and bit-flipped: Ok or Err, never a panic.
    #[test]
    fn mutated_synthetic_blocks_never_panic(
        n in 0usize..12,
        cut in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
    ) {
        let txns: Vec<SynthTxn> = sample_txns().into_iter().cycle().take(n).collect();
        // A flat block, a block of the current protocol (three trees), a message.
        for bytes in [
            encode_block(3, GEN, &GH, 4, &txns),
            encode_block_with_protocol(3, GEN, &GH, 4, &txns, 42),
            encode_txn_message(&txns, GEN, &GH),
        ] {
            if bytes.is_empty() {
                prop_assert_eq!(decode_txn_message(&bytes), Err(DecodeError::EmptyMessage));
                continue;
            }
            let mut m = bytes.clone();
            for (at, bit) in &flips {
                let len = m.len();
                m[at.index(len)] ^= 1 << bit;
            }
            let one = decode_block(&m);
            // With a helper: the same block, or the same error; decoded for verification and
            // verified, the same verdict.
            #[cfg(feature = "parallel")]
            {
                for chunk in [1, 2, 5] {
                    prop_assert_eq!(&decode_split(&m, 0, chunk), &one);
                }
                let two = Split::small(0, 1).for_verify();
                let expected = Expected::default();
                prop_assert_eq!(
                    decode_verify_split(&m, two, &expected).map(|(b, _)| b),
                    decode_verify_split(&m, Split::ONE, &expected).map(|(b, _)| b)
                );
            }
            let _ = one.map(|b| b.verify_payset(&m));
            let _ = decode_txn_message(&m);
            let c = &bytes[..cut.index(bytes.len())];
            prop_assert!(decode_block(c).is_err());
            #[cfg(feature = "parallel")]
            prop_assert_eq!(decode_split(c, 0, 1), decode_block(c));
            let _ = decode_txn_message(c);
        }
    }

    /// Random synthetic transactions: block and message forms agree, and the txid is the hash of
    /// the message's `txn` bytes.
    #[test]
    fn block_and_message_txids_agree(
        fv in any::<u64>(),
        life in 0u64..2000,
        apps in prop::collection::vec(any::<u64>(), 0..5),
        note in prop::collection::vec(any::<u8>(), 0..40),
        sender in any::<[u8; 32]>(),
        grouped in any::<bool>(),
    ) {
        let t = SynthTxn {
            note,
            group: grouped.then_some([9; 32]),
            ..SynthTxn::app_call(sender, fv, fv.saturating_add(life), apps)
        };
        let block = decode_block(&encode_block(1, GEN, &GH, 1, std::slice::from_ref(&t))).unwrap();
        let msg = encode_txn_message(std::slice::from_ref(&t), GEN, &GH);
        let decoded = decode_txn_message(&msg).unwrap();
        prop_assert_eq!(&block.txns, &decoded);
        prop_assert_eq!(block.txns[0].txid, txid_of(&message_txn_bytes(&msg)[0]));
    }
}

/// `bytes` decoded with a helper for paysets of at least `min_entries` entries, claimed `chunk`
/// at a time.
#[cfg(feature = "parallel")]
fn decode_split(bytes: &[u8], min_entries: usize, chunk: u32) -> Result<Block, DecodeError> {
    decode_located(bytes, Split::small(min_entries, chunk)).map(|(b, _)| b)
}

/// The real blocks (every dataset2 block and the betanet block), decoded with a helper in
/// chunks of every size, decode to the blocks one thread decodes; cut inside their payset they
/// give one thread's error.
#[test]
#[cfg(feature = "parallel")]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn real_blocks_split_over_threads_decode_as_on_one() {
    let dataset2 =
        txgate_testkit::data_file("algorand-sdk-testing/private_blocks/dataset2.tar.bz2");
    let mut blocks: Vec<Vec<u8>> = crate::source::BlockSource::open(&dataset2)
        .unwrap()
        .map(|r| r.unwrap().bytes)
        .collect();
    blocks.push(
        std::fs::read(txgate_testkit::data_file(
            "algorand-indexer/blocks/stpf_block_high_index.block",
        ))
        .unwrap(),
    );
    let mut split_blocks = 0;
    let mut cuts = 0;
    for bytes in &blocks {
        let want = decode_block(bytes).unwrap();
        let n = want.txns.len();
        if n >= 2 {
            split_blocks += 1;
        }
        for min in [0, 1, 2, n] {
            for chunk in [1u32, 2, 3, 16] {
                assert_eq!(decode_split(bytes, min, chunk).as_ref(), Ok(&want));
            }
        }
        // Cut at, and one byte after, each entry's start: the error one thread meets first.
        for &at in &want.entry_offsets {
            for cut in [at, at + 1] {
                let cut = &bytes[..cut];
                let one = decode_block(cut);
                assert!(one.is_err());
                for chunk in [1, 2, 16] {
                    assert_eq!(decode_split(cut, 0, chunk), one);
                }
                cuts += 1;
            }
        }
    }
    // dataset2's blocks with two entries or more, and the betanet block's.
    assert!(split_blocks >= 2, "{split_blocks} blocks to split");
    assert!(cuts >= 4, "{cuts} cuts");
}

/// A parallel decode for verification has the helper compute the payset's flat commitment when
/// the header's rule is flat (a known flat protocol, or an unknown one with `txn` alone), and
/// only then; the verification takes it: the same answers as one thread, on good blocks and on
/// blocks whose payset was damaged. (Whether the helper runs before the caller is done is the
/// scheduler's choice: each flat block is decoded until it has, at most 2,000 times.)
#[test]
#[cfg(feature = "parallel")]
fn a_parallel_decode_for_verify_hashes_flat_paysets_on_the_side() {
    let txns: Vec<SynthTxn> = (0..400)
        .map(|i| SynthTxn::payment([7; 32], 10, 1000 + i))
        .collect();
    let split = Split::small(4, 3).for_verify();
    let expected = Expected::default();
    // (block, whether its verification hashes the payset flat)
    let cases = [
        (encode_block(11, GEN, &GH, 4, &txns), true),
        (encode_block_with_protocol(11, GEN, &GH, 4, &txns, 25), true),
        (
            encode_block_with_protocol(11, GEN, &GH, 4, &txns, 38),
            false,
        ),
    ];
    for (bytes, flat) in &cases {
        let payset = payset::locate_payset(bytes).unwrap().payset;
        let want = flat.then(|| payset::payset_digest(payset));
        let mut hashed = false;
        // The helper hashes only if it starts before the caller has decoded every entry: on a
        // loaded machine many trials can pass first (each yields, to let it run). A payset the
        // helper must not hash is tried 50 times.
        for _ in 0..if *flat { 2000 } else { 50 } {
            std::thread::yield_now();
            let (block, digest) = decode_verify_split(bytes, split, &expected).unwrap();
            assert_eq!(block, decode_block(bytes).unwrap());
            // Computed or not, never another value, never for a Merkle protocol.
            assert!(digest.is_none() || digest == want, "{digest:?}");
            if digest.is_some() {
                hashed = true;
                break;
            }
        }
        assert_eq!(hashed, *flat, "the helper hashed the payset");
        // Without `for_verify`, or on one thread, nothing is hashed.
        let plain = Split::small(4, 3);
        assert_eq!(
            decode_verify_split(bytes, plain, &expected).unwrap().1,
            None
        );
        assert_eq!(
            decode_verify_split(bytes, Split::ONE, &expected).unwrap().1,
            None
        );
        // Bytes of the payset flipped in turn: the same verdict as one thread's.
        let at = bytes.len() - payset.len();
        for i in (at..bytes.len()).step_by(997) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x01;
            let one = decode_verify_split(&bad, Split::ONE, &expected).map(|(b, _)| b);
            let split = decode_verify_split(&bad, split, &expected).map(|(b, _)| b);
            assert_eq!(split, one, "byte {i}");
        }
    }
}

/// Distinct app ids keep first-seen order and drop zeros, on both sides of the switch from a
/// linear scan to a set, equal to a naive quadratic reference.
#[test]
fn distinct_app_ids_match_a_naive_reference() {
    for n in [0usize, 1, 5, 16, 17, 40, 5000] {
        let ids: Vec<u64> = (0..n as u64).map(|i| (i * 7919) % 23).collect();
        let mut naive: Vec<u64> = Vec::new();
        for &id in &ids {
            if id != 0 && !naive.contains(&id) {
                naive.push(id);
            }
        }
        assert_eq!(distinct_app_ids(ids.iter().copied()), naive, "n = {n}");
    }
    // Many distinct ids (a hostile message): linear time, every id kept once.
    let many: Vec<u64> = (1..=100_000).chain(1..=100_000).collect();
    let out = distinct_app_ids(many.into_iter());
    assert_eq!(out, (1..=100_000).collect::<Vec<u64>>());
}

/// A key held as bin with the header length of its str form (bin8 and str8 are both two bytes
/// for a key of 32 to 255 bytes) is re-encoded as str, not hashed from the input verbatim; and
/// entries the input holds out of key order are written in key order. Reference: the map built
/// canonically by hand and hashed whole.
#[test]
fn keys_not_in_canonical_form_are_rewritten_before_hashing() {
    let long = [b'k'; 40];
    let entry = |out: &mut ByteBuf, key: &[u8], bin: bool, v: u64| {
        if bin {
            put_bin(out, key);
        } else {
            put_str(out, key);
        }
        put_uint(out, v);
    };
    let mut canonical = ByteBuf::new();
    put_map_len(&mut canonical, 3);
    entry(&mut canonical, b"fee", false, 1000);
    entry(&mut canonical, &long, false, 7);
    put_str(&mut canonical, b"type");
    put_str(&mut canonical, b"pay");
    let want = txid_of(canonical.as_slice());
    for (bin, order) in [(true, [0, 1]), (false, [1, 0]), (true, [1, 0])] {
        let mut msg = ByteBuf::new();
        put_map_len(&mut msg, 1);
        put_str(&mut msg, b"txn");
        put_map_len(&mut msg, 3);
        for i in order {
            match i {
                0 => entry(&mut msg, b"fee", false, 1000),
                _ => entry(&mut msg, &long, bin, 7),
            }
        }
        put_str(&mut msg, b"type");
        put_str(&mut msg, b"pay");
        let txns = decode_txn_message(msg.as_slice()).unwrap();
        assert_eq!(txns[0].txid, want, "bin key {bin}, order {order:?}");
    }
}

/// A field of interest holding a non-empty scalar of the wrong type is a `WrongType` naming the
/// field, what it must be and the value's offset; a wrong value after a container is found
/// at its offset too; the same value of the right type decodes.
#[test]
fn wrong_scalar_fields_name_the_field_the_type_and_the_offset() {
    type Put = fn(&mut ByteBuf);
    let put_true: Put = |b| put_bool(b, true);
    let put_7: Put = |b| put_uint(b, 7);
    let put_str_x: Put = |b| put_str(b, b"x");
    let put_bin_31: Put = |b| put_bin(b, &[1; 31]);
    let cases: [(&[u8], Put, &str, &str); 8] = [
        (b"type", put_7, "txn.type", "a string"),
        (b"snd", put_bin_31, "txn.snd", "32 bytes of bin"),
        (b"fv", put_str_x, "txn.fv", "an unsigned integer"),
        (b"lv", put_true, "txn.lv", "an unsigned integer"),
        (b"grp", put_7, "txn.grp", "32 bytes of bin"),
        (b"apid", put_str_x, "txn.apid", "an unsigned integer"),
        (b"apfa", put_7, "txn.apfa", "an array"),
        (b"al", put_true, "txn.al", "an array"),
    ];
    for (key, put, field, expected) in cases {
        // {"txn": {"apfa": [1, 2], key: value}}: the value after a container.
        let mut m = ByteBuf::new();
        put_map_len(&mut m, 1);
        put_str(&mut m, b"txn");
        put_map_len(&mut m, 2);
        put_str(&mut m, b"zzz");
        put_array_len(&mut m, 2);
        put_uint(&mut m, 1);
        put_uint(&mut m, 2);
        put_str(&mut m, key);
        let offset = m.as_slice().len();
        put(&mut m);
        assert_eq!(
            decode_txn_message(m.as_slice()).unwrap_err(),
            DecodeError::WrongType {
                round: None,
                offset,
                field,
                expected
            },
            "{field}"
        );
    }
    // The right types decode into the fields.
    let mut m = ByteBuf::new();
    put_map_len(&mut m, 1);
    put_str(&mut m, b"txn");
    put_map_len(&mut m, 7);
    put_str(&mut m, b"apfa");
    put_array_len(&mut m, 1);
    put_uint(&mut m, 9);
    put_str(&mut m, b"apid");
    put_uint(&mut m, 70_000);
    put_str(&mut m, b"fv");
    put_uint(&mut m, 300);
    put_str(&mut m, b"grp");
    put_bin(&mut m, &[4; 32]);
    put_str(&mut m, b"lv");
    put_uint(&mut m, 1300);
    put_str(&mut m, b"snd");
    put_bin(&mut m, &[5; 32]);
    put_str(&mut m, b"type");
    put_str(&mut m, b"appl");
    let t = &decode_txn_message(m.as_slice()).unwrap()[0];
    assert_eq!(t.app_ids, vec![70_000, 9]);
    assert_eq!((t.first_valid, t.last_valid), (300, 1300));
    assert_eq!((t.group, t.sender), (Some([4; 32]), [5; 32]));
    assert_eq!(*t.tx_type, *b"appl");
}

/// A block entry's `txn` is hashed from its own bytes while they stand canonical, with `gen`
/// and `gh` spliced in where their keys sort, and re-encoded entry by entry from the first one
/// that is not: both give the txid of the completed map written canonically by hand, wherever
/// the first non-canonical entry is, and whether the completed map's header outgrows a fixmap
/// (15 entries) or not.
#[test]
fn a_txn_map_breaking_canonical_form_at_any_entry_hashes_as_the_canonical_one() {
    for extra in [0usize, 7, 8, 9, 12] {
        // Keys in order, around "gen" < "gf" < "gh": values are uints but `type`'s.
        let mut keys: Vec<Vec<u8>> = ["amt", "fee", "fv", "gf", "lv", "type"]
            .iter()
            .map(|k| k.as_bytes().to_vec())
            .collect();
        keys.extend((0..extra).map(|i| format!("x{i:02}").into_bytes()));
        let put_value = |out: &mut ByteBuf, i: usize, loose: bool| {
            if keys[i] == b"type" {
                put_str(out, b"pay");
            } else if loose {
                // 16-bit form of a value that fits 7 bits: not the smallest.
                out.as_mut_vec().extend([0xcd, 0, i as u8 + 1]);
            } else {
                put_uint(out, i as u64 + 1);
            }
        };
        // The reference: the completed map, canonical, by hand.
        let mut want = ByteBuf::new();
        put_map_len(&mut want, keys.len() + 2);
        let mut done = [false; 2];
        for (i, key) in keys.iter().enumerate() {
            if !done[0] && b"gen"[..] < key[..] {
                put_str(&mut want, b"gen");
                put_str(&mut want, GEN.as_bytes());
                done[0] = true;
            }
            if !done[1] && b"gh"[..] < key[..] {
                put_str(&mut want, b"gh");
                put_bin(&mut want, &GH);
                done[1] = true;
            }
            put_str(&mut want, key);
            put_value(&mut want, i, false);
        }
        let want = txid_of(want.as_slice());
        // `None`: canonical; `Some(i)`: entry i loose (a wide integer), or, for `type`, swapped
        // with the entry before it (out of key order).
        for broken in std::iter::once(None).chain((0..keys.len()).map(Some)) {
            let mut order: Vec<usize> = (0..keys.len()).collect();
            if let Some(i) = broken
                && keys[i] == b"type"
            {
                order.swap(i - 1, i);
            }
            let mut b = round_5_with_one_entry();
            put_map_len(&mut b, 2);
            put_str(&mut b, b"hgi");
            put_bool(&mut b, true);
            put_str(&mut b, b"txn");
            put_map_len(&mut b, keys.len());
            for &i in &order {
                put_str(&mut b, &keys[i]);
                put_value(&mut b, i, broken == Some(i));
            }
            let block = decode_block(b.as_slice()).unwrap();
            assert_eq!(
                block.txns[0].txid, want,
                "{extra} extra keys, broken {broken:?}"
            );
            assert_eq!(
                (block.txns[0].first_valid, block.txns[0].last_valid),
                (3, 5)
            );
        }
    }
}
