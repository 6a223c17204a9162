//! The handler on real transactions: the 30 `SignedTxn` vectors of algorand/indexer
//! (`algorand-indexer/txn_vectors/*.txn`, made by real go-algorand nodes; see the data's
//! SOURCES.md), sent as gossip messages and decoded by the real codec. Expected values come from
//! the indexer's `.response` JSON of each vector (its `id`, `first-valid`, `last-valid`,
//! `application-id`, `foreign-apps`), not from the codec.

use std::path::PathBuf;
use std::sync::Arc;

use rmpv::Value;
use txgate_ledger::handler::{CommittedTxids, HandlerConfig, Message, Outcome, Source, TxHandler};
use txgate_ledger::store::{Ledger, LedgerConfig};
use txgate_ledger::{Round, Txid};
use txgate_ratelimit::Origin;
use txgate_testkit::data_file;

mod handler_doubles;

use handler_doubles::{NothingCommitted, RecordingPool};

const NAMES: [&str; 30] = [
    "app_call_1",
    "app_call_2",
    "app_call_3",
    "app_call_box_create",
    "app_call_inner",
    "app_call_inner_acfg",
    "app_call_logs",
    "app_clear",
    "app_close",
    "app_delete",
    "app_foreign",
    "app_foreign_assets",
    "app_optin",
    "app_update",
    "asset_config",
    "asset_freeze",
    "asset_transfer",
    "keyreg",
    "keyregwithsprfkey",
    "multisig",
    "payment",
    "rekey",
    "state_proof",
    "txnaccess_address",
    "txnaccess_app",
    "txnaccess_asset",
    "txnaccess_box",
    "txnaccess_empty",
    "txnaccess_holding",
    "txnaccess_local",
];

/// One vector: its raw message bytes and what the indexer says about it.
struct Vector {
    name: &'static str,
    bytes: Vec<u8>,
    txid: Txid,
    first_valid: Round,
    last_valid: Round,
    app_id: u64,
    foreign_apps: Vec<u64>,
}

/// All 30 vectors (a test that reads them is ignored where the data is missing).
fn vectors() -> Vec<Vector> {
    let mut out = Vec::new();
    for name in NAMES {
        let txn: PathBuf = data_file(&format!("algorand-indexer/txn_vectors/{name}.txn"));
        let resp: PathBuf = data_file(&format!("algorand-indexer/txn_vectors/{name}.response"));
        let json: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&resp).unwrap()).unwrap();
        let t = json.get("transaction").unwrap_or(&json);
        let uint = |v: Option<&serde_json::Value>| v.and_then(serde_json::Value::as_u64);
        let app = t.get("application-transaction");
        out.push(Vector {
            name,
            bytes: std::fs::read(&txn).unwrap(),
            txid: t["id"].as_str().unwrap().parse().unwrap(),
            first_valid: uint(t.get("first-valid")).unwrap_or(0),
            last_valid: uint(t.get("last-valid")).unwrap_or(0),
            app_id: uint(app.and_then(|a| a.get("application-id"))).unwrap_or(0),
            foreign_apps: app
                .and_then(|a| a.get("foreign-apps"))
                .and_then(|f| f.as_array())
                .map(|f| f.iter().filter_map(serde_json::Value::as_u64).collect())
                .unwrap_or_default(),
        });
    }
    out
}

/// A block of `round` as algod stores it, with `signed` (vectors' `SignedTxn` bytes) as its
/// payset: each entry's `txn` without `gen` and `gh` (the header carries them; `hgi` says the
/// entry had `gen`), so the ledger computes the txids go-algorand does. The header's network is
/// `genesis` (`gen`, nil for none, and `gh`); a vector of another network is refused by the
/// ledger.
fn block(round: Round, genesis: &(Value, Value), signed: &[&[u8]]) -> Vec<u8> {
    let key = |k: &str| Value::from(k);
    let entries: Vec<Value> = signed
        .iter()
        .map(|bytes| {
            let Value::Map(fields) = rmpv::decode::read_value(&mut &bytes[..]).unwrap() else {
                panic!("a SignedTxn is a map");
            };
            let mut had_gen = false;
            let mut entry: Vec<(Value, Value)> = fields
                .into_iter()
                .map(|(k, v)| match (k.as_str(), v) {
                    (Some("txn"), Value::Map(txn)) => {
                        had_gen = txn.iter().any(|(k, _)| k.as_str() == Some("gen"));
                        let txn = txn
                            .into_iter()
                            .filter(|(k, _)| !matches!(k.as_str(), Some("gen" | "gh")))
                            .collect();
                        (k, Value::Map(txn))
                    }
                    (_, v) => (k, v),
                })
                .collect();
            if had_gen {
                entry.push((key("hgi"), Value::Boolean(true)));
            }
            entry.sort_by(|a, b| a.0.as_str().cmp(&b.0.as_str()));
            Value::Map(entry)
        })
        .collect();
    let mut header = Vec::new();
    if !genesis.0.is_nil() {
        header.push((key("gen"), genesis.0.clone()));
    }
    header.push((key("gh"), genesis.1.clone()));
    header.push((key("rnd"), Value::from(round)));
    if !entries.is_empty() {
        header.push((key("txns"), Value::Array(entries)));
    }
    let encode = |header: Vec<(Value, Value)>| {
        let block = Value::Map(vec![
            (key("block"), Value::Map(header)),
            (key("cert"), Value::Map(vec![])),
        ]);
        let mut out = Vec::new();
        rmpv::encode::write_value(&mut out, &block).unwrap();
        out
    };
    // The header commits to the payset (flat, `txn`), as the ledger verifies.
    let flat = txgate_algorand::codec::payset_commit_flat(&encode(header.clone())).unwrap();
    header.push((key("txn"), Value::Binary(flat.to_vec())));
    encode(header)
}

/// The network (`gen`, `gh`) a vector's transaction names (`gen` may be absent: nil).
fn network(v: &Vector) -> (Value, Value) {
    let Value::Map(fields) = rmpv::decode::read_value(&mut &v.bytes[..]).unwrap() else {
        panic!("a SignedTxn is a map");
    };
    let txn = fields
        .into_iter()
        .find(|(k, _)| k.as_str() == Some("txn"))
        .map(|(_, v)| v)
        .unwrap();
    let field = |name: &str| {
        txn.as_map()
            .unwrap()
            .iter()
            .find(|(k, _)| k.as_str() == Some(name))
            .map(|(_, v)| v.clone())
    };
    let gh = field("gh").unwrap_or_else(|| panic!("{}: no gh", v.name));
    (field("gen").unwrap_or(Value::Nil), gh)
}

/// A pool that keeps every group, and no committed transaction.
fn handler(committed: Arc<dyn CommittedTxids + Send + Sync>) -> (TxHandler, Arc<RecordingPool>) {
    let pool = Arc::new(RecordingPool::default());
    let h = TxHandler::new(
        HandlerConfig::default()
            .with_backlog_capacity(64)
            .with_app_rate_limiting(false)
            .with_dedup_salt(Some([5; 16])),
        committed,
        None,
        pool.clone(),
    )
    .unwrap();
    (h, pool)
}

fn msg(bytes: &[u8]) -> Message<'_> {
    Message {
        bytes,
        source: Source::Peer(Origin::from_peer_id(b"relay-1")),
        received_ns: 1_700_000_000_000_000_000,
    }
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn real_signed_txns_reach_the_pool_with_the_indexer_txids() {
    let vs = vectors();
    let (h, pool) = handler(Arc::new(NothingCommitted));
    for v in &vs {
        assert_eq!(h.handle(&msg(&v.bytes)), Outcome::Enqueued, "{}", v.name);
    }
    for v in &vs {
        assert_eq!(h.handle(&msg(&v.bytes)), Outcome::Duplicate, "{}", v.name);
    }
    assert_eq!(h.drain(), 30);
    let seen = pool.groups();
    for (v, g) in vs.iter().zip(seen.iter()) {
        assert_eq!(g.txns.len(), 1, "{}", v.name);
        let t = &g.txns[0];
        assert_eq!(t.txid, v.txid, "{}", v.name);
        assert_eq!(
            (t.first_valid, t.last_valid),
            (v.first_valid, v.last_valid),
            "{}",
            v.name
        );
        if v.app_id != 0 {
            assert_eq!(g.app_ids.first(), Some(&v.app_id), "{}", v.name);
        }
        for f in &v.foreign_apps {
            assert!(g.app_ids.contains(f), "{}: foreign app {f}", v.name);
        }
        assert!(!g.app_ids.contains(&0), "{}", v.name);
    }
    let st = h.stats();
    assert_eq!((st.enqueued, st.duplicate, st.pool_accepted), (30, 30, 30));
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn real_txns_committed_inside_their_window_are_dropped() {
    let vs = vectors();
    let by_name = |n: &str| vs.iter().find(|v| v.name == n).unwrap();
    let (call, upd) = (by_name("app_call_2"), by_name("app_update"));
    // The committed check is the real ledger's (`impl CommittedTxids for Ledger`), over blocks
    // of rounds 4..=500 of the vectors' network (no genesis id, one genesis hash).
    // app_call_2 is valid in [28, 1028]: committed at 500 is inside. app_update is valid in
    // [5, 1005]: a commit at round 4 is outside its window.
    let genesis = network(call);
    assert_eq!(network(upd), genesis, "both vectors are of one network");
    assert_eq!(genesis.0, Value::Nil, "the vectors carry no genesis id");
    assert_eq!(
        [
            (call.first_valid, call.last_valid),
            (upd.first_valid, upd.last_valid)
        ],
        [(28, 1028), (5, 1005)]
    );
    let dir = tempfile::tempdir().unwrap();
    let ledger = Ledger::open(dir.path(), LedgerConfig::default()).unwrap();
    for round in 4..=500 {
        let signed: &[&[u8]] = match round {
            4 => &[&upd.bytes],
            500 => &[&call.bytes],
            _ => &[],
        };
        ledger.add_block(&block(round, &genesis, signed)).unwrap();
    }
    // The ledger computed the indexer's txids from the blocks.
    let found = |txid| ledger.find_txid(txid, 0..=500).unwrap().map(|r| r.round);
    assert_eq!((found(&call.txid), found(&upd.txid)), (Some(500), Some(4)));
    let (h, _pool) = handler(Arc::new(ledger));
    assert_eq!(h.handle(&msg(&call.bytes)), Outcome::AlreadyCommitted);
    assert_eq!(h.handle(&msg(&upd.bytes)), Outcome::Enqueued);
    // In a group, the committed member drops the whole message.
    let group = [upd.bytes.clone(), call.bytes.clone()].concat();
    assert_eq!(h.handle(&msg(&group)), Outcome::AlreadyCommitted);
    let st = h.stats();
    assert_eq!((st.already_committed, st.enqueued), (2, 1));
}

#[test]
#[cfg_attr(txgate_no_data, ignore = "real data missing: set TXGATE_DATA")]
fn real_groups_of_16_pass_and_17_are_too_large() {
    let vs = vectors();
    let (h, pool) = handler(Arc::new(NothingCommitted));
    let g16: Vec<u8> = vs[..16].iter().flat_map(|v| v.bytes.clone()).collect();
    let g17: Vec<u8> = vs[..17].iter().flat_map(|v| v.bytes.clone()).collect();
    assert_eq!(h.handle(&msg(&g16)), Outcome::Enqueued);
    assert_eq!(h.handle(&msg(&g17)), Outcome::GroupTooLarge);
    // A truncated message is a decode error, never a panic.
    assert_eq!(h.handle(&msg(&g16[..g16.len() - 1])), Outcome::DecodeError);
    assert_eq!(h.drain(), 1);
    let seen = pool.groups();
    let ids: Vec<Txid> = seen[0].txns.iter().map(|t| t.txid).collect();
    let want: Vec<Txid> = vs[..16].iter().map(|v| v.txid).collect();
    assert_eq!(ids, want);
}
