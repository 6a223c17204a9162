//! Writes every fuzz target's seed corpus from the real data, at fuzz time (nothing of the data
//! is committed):
//!
//! ```text
//! cargo run -p txgate-fuzz-seed -- DATA_DIR OUT_DIR      (fuzz/seed.sh runs it)
//! ```
//!
//! `DATA_DIR` is the real-data directory (`../shared/data` beside the checkout, see its
//! `SOURCES.md`); each target's seeds go to `OUT_DIR/<target>/`, named after what they hold
//! (cargo-fuzz's default corpus is `fuzz/corpus/<target>`):
//!
//! - `algorand_decode`: real blocks (dataset2's rounds with transactions, a few empty ones, the
//!   betanet block), the gossip messages of their groups (`codec::gossip_messages`: the
//!   `SignedTxn` maps peers send), and the indexer's 30 `SignedTxn` vectors.
//! - `block_verify`: the same blocks.
//! - `bloom_load`: serialized filters of every real round's txids (both block layouts, format
//!   versions 2 and 1), parquet-mr's SBBF file and its bitset.
//! - `cli_trace`: traces in the CLI's CSV form (`ts_ns,origin,app_ids`) made from dataset2's
//!   transactions (the derived JSONL): one row per group at the block's time, the sender as a
//!   hex peer id, an IPv4 or an IPv6 origin, the group's app ids.
//! - `cli_config`: TOML configurations with go-algorand's key names and defaults, and
//!   go-algorand-style `config.json` files.
//! - `bloom_ops`, `ledger_ops`, `ratelimit_model`: these read their input through `arbitrary`,
//!   whose byte form has no stable encoder, so their seeds are real bytes only (a round's txids,
//!   a trace's app ids and senders) that `arbitrary` turns into operations.

use std::collections::BTreeMap;
use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;
use txgate_algorand::codec::{decode_block, gossip_messages};
use txgate_algorand::source::BlockSource;
use txgate_bloom::{Block256, Block512, BlockLayout, BloomBuilder, Bytes, Filter};
use txgate_testkit::bloom_format::version_1;

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const DATASET2: &str = "algorand-sdk-testing/private_blocks/dataset2.tar.bz2";
const BETANET: &str = "algorand-indexer/blocks/stpf_block_high_index.block";
const VECTORS: &str = "algorand-indexer/txn_vectors";
const JSONL: &str = "derived/algorand_private_dataset2_txns.jsonl";
const PUBLIC_TXIDS: &str = "derived/algorand_public_round_txids.json";
const PARQUET_SBBF: &str = "parquet-testing/bloom_filter.xxhash.bin";
/// Bytes of the parquet-mr file's Thrift header before its bitset (SOURCES.md, section 3).
const PARQUET_HEADER: usize = 16;
/// Empty dataset2 blocks kept as seeds (the 333 empty rounds differ only in their headers).
const EMPTY_BLOCKS: usize = 4;
/// Rounds whose txids seed the structured targets.
const BYTE_SEEDS: usize = 12;

/// The seed files of one target, by name.
type Seeds = BTreeMap<String, Vec<u8>>;

fn main() -> ExitCode {
    let args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let [data, out] = &args[..] else {
        eprintln!("usage: txgate-fuzz-seed DATA_DIR OUT_DIR");
        return ExitCode::from(2);
    };
    match seeds(data).and_then(|targets| write(out, &targets)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("txgate-fuzz-seed: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Reads `relative` in the data directory, naming the file on failure.
fn read(data: &Path, relative: &str) -> Result<Vec<u8>> {
    let path = data.join(relative);
    std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()).into())
}

/// Every target's seeds.
fn seeds(data: &Path) -> Result<BTreeMap<&'static str, Seeds>> {
    let mut targets: BTreeMap<&'static str, Seeds> = BTreeMap::new();
    let blocks = blocks(data)?;
    let rounds = round_txids(data)?;
    let trace = Trace::read(data)?;

    let decode = targets.entry("algorand_decode").or_default();
    for (name, bytes) in &blocks {
        decode.insert(name.clone(), bytes.clone());
        let messages = gossip_messages(bytes).map_err(|e| format!("{name}: {e}"))?;
        for (i, message) in messages.into_iter().enumerate() {
            decode.insert(format!("{name}-message-{i}"), message);
        }
    }
    let dir = data.join(VECTORS);
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "txn") {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            decode.insert(format!("vector-{name}"), std::fs::read(&path)?);
        }
    }
    targets.insert("block_verify", blocks.iter().cloned().collect());

    let load = targets.entry("bloom_load").or_default();
    for (name, txids) in &rounds {
        filters::<Block256>(load, &format!("{name}-256"), txids)?;
        filters::<Block512>(load, &format!("{name}-512"), txids)?;
    }
    let parquet = read(data, PARQUET_SBBF)?;
    load.insert("parquet-mr-sbbf".into(), parquet.clone());
    load.insert(
        "parquet-mr-sbbf-bitset".into(),
        parquet.get(PARQUET_HEADER..).unwrap_or_default().to_vec(),
    );

    let ops = targets.entry("bloom_ops").or_default();
    for (name, txids) in rounds.iter().take(BYTE_SEEDS) {
        ops.insert(format!("{name}-txids"), txids.concat());
    }
    targets.insert("ledger_ops", targets["bloom_ops"].clone());
    targets.insert("ratelimit_model", trace.bytes_by_round(BYTE_SEEDS));
    targets.insert("cli_trace", trace.csv_files());
    targets.insert("cli_config", configs());
    Ok(targets)
}

/// dataset2's blocks with transactions, its first few empty ones and the betanet block, by name.
fn blocks(data: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut empty = 0;
    for raw in BlockSource::open(data.join(DATASET2))? {
        let raw = raw?;
        let block = decode_block(&raw.bytes).map_err(|e| format!("{}: {e}", raw.name))?;
        if block.txns.is_empty() {
            if empty == EMPTY_BLOCKS {
                continue;
            }
            empty += 1;
        }
        out.push((format!("dataset2-round-{:04}", block.round), raw.bytes));
    }
    out.push(("betanet-block".into(), read(data, BETANET)?));
    Ok(out)
}

/// Every real round's txids (raw 32 bytes, block order), by name: dataset2's from its JSONL and
/// the public rounds'.
fn round_txids(data: &Path) -> Result<Vec<(String, Vec<[u8; 32]>)>> {
    let mut rounds: Vec<(String, Vec<[u8; 32]>)> = Vec::new();
    let jsonl = String::from_utf8(read(data, JSONL)?)?;
    for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)?;
        let name = format!("dataset2-round-{:04}", field_u64(&v, "round")?);
        let txid = txid(field_str(&v, "txid")?)?;
        match rounds.last_mut() {
            Some((last, txids)) if *last == name => txids.push(txid),
            _ => rounds.push((name, vec![txid])),
        }
    }
    let public: Value = serde_json::from_slice(&read(data, PUBLIC_TXIDS)?)?;
    for r in public.as_array().ok_or("public rounds: not an array")? {
        let name = format!(
            "{}-round-{}",
            field_str(r, "network")?,
            field_u64(r, "round")?
        );
        let txids = r["txids"]
            .as_array()
            .ok_or("public rounds: no txids")?
            .iter()
            .map(|t| txid(field_str(t, "txid")?))
            .collect::<Result<_>>()?;
        rounds.push((name, txids));
    }
    Ok(rounds)
}

/// A round's filters in layout `B`: format version 2 (plain and atomic variants write the
/// same bytes) and its version-1 form.
fn filters<B: BlockLayout>(seeds: &mut Seeds, name: &str, txids: &[[u8; 32]]) -> Result<()> {
    let mut filter = BloomBuilder::with_false_positive_rate(txids.len() as u64, 0.01)
        .seed(txids.len() as u64)
        .layout::<B>()
        .build()?;
    for t in txids {
        filter.insert(Bytes(t));
    }
    let v2 = filter.to_bytes();
    seeds.insert(format!("{name}-v1"), version_1(&v2));
    seeds.insert(format!("{name}-v2"), v2);
    Ok(())
}

fn field_u64(v: &Value, key: &str) -> Result<u64> {
    v[key]
        .as_u64()
        .ok_or_else(|| format!("no `{key}` in {v}").into())
}

fn field_str<'a>(v: &'a Value, key: &str) -> Result<&'a str> {
    v[key]
        .as_str()
        .ok_or_else(|| format!("no `{key}` in {v}").into())
}

/// An Algorand txid: 52 characters of unpadded base32 for 32 bytes.
fn txid(base32: &str) -> Result<[u8; 32]> {
    let bytes = data_encoding::BASE32_NOPAD.decode(base32.as_bytes())?;
    bytes
        .try_into()
        .map_err(|_| format!("txid {base32} is not 32 bytes").into())
}

/// dataset2's transactions as gossip traffic: one message per group.
struct Trace {
    messages: Vec<Message>,
}

/// One group as a trace row: when, who sent it, which apps it calls.
struct Message {
    round: u64,
    ts_ns: u64,
    /// The first sender's 32-byte public key.
    sender: [u8; 32],
    /// Distinct app ids, in order (0, an app creation, is no app).
    app_ids: Vec<u64>,
}

impl Trace {
    fn read(data: &Path) -> Result<Self> {
        let jsonl = String::from_utf8(read(data, JSONL)?)?;
        let mut messages: Vec<Message> = Vec::new();
        let mut last_group: Option<(u64, String)> = None;
        for line in jsonl.lines().filter(|l| !l.trim().is_empty()) {
            let v: Value = serde_json::from_str(line)?;
            let round = field_u64(&v, "round")?;
            let app = v["app_id"].as_u64().filter(|&a| a != 0);
            let group = v["group"].as_str().map(|g| (round, g.to_owned()));
            if group.is_some() && group == last_group {
                let message = messages.last_mut().ok_or("a group continues nothing")?;
                if let Some(a) = app.filter(|a| !message.app_ids.contains(a)) {
                    message.app_ids.push(a);
                }
                continue;
            }
            last_group = group;
            // An Algorand address: base32 of the 32-byte key and a 4-byte checksum.
            let address =
                data_encoding::BASE32_NOPAD.decode(field_str(&v, "sender")?.as_bytes())?;
            let sender: [u8; 32] = address
                .get(..32)
                .and_then(|k| k.try_into().ok())
                .ok_or("an address holds 36 bytes")?;
            messages.push(Message {
                round,
                // The block's time (seconds), one microsecond apart per transaction.
                ts_ns: field_u64(&v, "timestamp")? * 1_000_000_000
                    + field_u64(&v, "intra")? * 1_000,
                sender,
                app_ids: app.into_iter().collect(),
            });
        }
        Ok(Self { messages })
    }

    /// Trace files: the whole trace with each origin form, and one per round.
    fn csv_files(&self) -> Seeds {
        let mut files = Seeds::new();
        let all: Vec<&Message> = self.messages.iter().collect();
        for form in [Origin::PeerId, Origin::V4, Origin::V6] {
            files.insert(format!("dataset2-{}", form.name()), csv(&all, form));
        }
        let mut by_round: BTreeMap<u64, Vec<&Message>> = BTreeMap::new();
        for m in &self.messages {
            by_round.entry(m.round).or_default().push(m);
        }
        for (round, messages) in by_round {
            files.insert(
                format!("dataset2-round-{round:04}"),
                csv(&messages, Origin::PeerId),
            );
        }
        files
    }

    /// Per round (the first `rounds` with transactions), each message's app ids and sender as
    /// little-endian bytes.
    fn bytes_by_round(&self, rounds: usize) -> Seeds {
        let mut by_round: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        for m in &self.messages {
            let bytes = by_round.entry(m.round).or_default();
            for a in &m.app_ids {
                bytes.extend_from_slice(&a.to_le_bytes());
            }
            bytes.extend_from_slice(&m.sender[..8]);
        }
        by_round
            .into_iter()
            .take(rounds)
            .map(|(round, bytes)| (format!("dataset2-round-{round:04}-apps"), bytes))
            .collect()
    }
}

/// How a trace row names its sender (the trace format's three origin forms).
#[derive(Clone, Copy)]
enum Origin {
    /// The sender's key as a hex peer id.
    PeerId,
    /// An IPv4 documentation address (RFC 5737) from the key's last byte.
    V4,
    /// An IPv6 documentation address (RFC 3849) from the key's first bytes.
    V6,
}

impl Origin {
    fn name(self) -> &'static str {
        match self {
            Origin::PeerId => "peer-id",
            Origin::V4 => "ipv4",
            Origin::V6 => "ipv6",
        }
    }

    fn write(self, key: &[u8; 32], out: &mut String) {
        let _ = match self {
            Origin::PeerId => write!(out, "{}", data_encoding::HEXLOWER.encode(key)),
            Origin::V4 => write!(out, "192.0.2.{}", key[31]),
            Origin::V6 => write!(
                out,
                "2001:db8:{:x}:{:x}::1",
                u16::from_be_bytes([key[0], key[1]]),
                u16::from_be_bytes([key[2], key[3]])
            ),
        };
    }
}

/// A trace in the CLI's CSV form.
fn csv(messages: &[&Message], origin: Origin) -> Vec<u8> {
    let mut out = String::from("ts_ns,origin,app_ids\n");
    for m in messages {
        let _ = write!(out, "{},", m.ts_ns);
        origin.write(&m.sender, &mut out);
        let ids: Vec<String> = m.app_ids.iter().map(u64::to_string).collect();
        let _ = writeln!(out, ",{}", ids.join(";"));
    }
    out.into_bytes()
}

/// go-algorand's names and defaults of the keys the CLI reads (SOURCES.md, "Parsing notes"),
/// and txgate's own two.
const KEYS: [(&str, &str); 8] = [
    ("TxBacklogSize", "26000"),
    ("TxBacklogAppTxPerSecondRate", "100"),
    ("TxBacklogServiceRateWindowSeconds", "10"),
    ("TxBacklogAppTxRateLimiterMaxSize", "1048576"),
    ("TxBacklogAppRateLimitingCongestionPct", "10"),
    ("EnableTxBacklogAppRateLimiting", "true"),
    ("BloomFalsePositiveRate", "0.001"),
    ("MaxTxnLife", "1000"),
];

/// Configuration files: TOML (every key, each key alone) and go-algorand-style `config.json`
/// (the keys among other `config.Local` keys a node's file holds, and in another case, which
/// go-algorand's reader accepts).
fn configs() -> Seeds {
    let mut files = Seeds::new();
    let toml: String = KEYS.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
    files.insert("all-keys.toml".into(), toml.into_bytes());
    for (k, v) in KEYS {
        files.insert(format!("{k}.toml"), format!("{k} = {v}\n").into_bytes());
    }
    let json = |keys: &mut dyn Iterator<Item = String>| {
        let body: Vec<String> = keys.collect();
        format!("{{\n{}\n}}\n", body.join(",\n")).into_bytes()
    };
    let others = [
        ("Version", "38"),
        ("Archival", "false"),
        ("GossipFanout", "4"),
        ("NetAddress", "\"\""),
        ("EnableDeveloperAPI", "false"),
        ("BaseLoggerDebugLevel", "4"),
    ];
    files.insert(
        "config.json".into(),
        json(
            &mut others
                .iter()
                .chain(KEYS.iter())
                .map(|(k, v)| format!("    \"{k}\": {v}")),
        ),
    );
    files.insert(
        "config-lowercase.json".into(),
        json(
            &mut KEYS
                .iter()
                .map(|(k, v)| format!("    \"{}\": {v}", k.to_lowercase())),
        ),
    );
    files.insert("empty.json".into(), b"{}\n".to_vec());
    files
}

/// Writes each target's seeds into `out/<target>/`.
fn write(out: &Path, targets: &BTreeMap<&'static str, Seeds>) -> Result<()> {
    for (target, seeds) in targets {
        let dir = out.join(target);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for (name, bytes) in seeds {
            let path = dir.join(format!("seed-{name}"));
            std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        println!("{target}: {} seeds in {}", seeds.len(), dir.display());
    }
    Ok(())
}
