//! `txgate txids`: every transaction of a block source as CSV `round,intra,txid,type,app_id`.
//!
//! Columns match the fields of `derived/algorand_private_dataset2_txns.jsonl` in the shared data:
//! `round` (the block's `rnd`), `intra` (0-based position in the block's payset), `txid`
//! (base32, 52 characters), `type` (the txn's `type` field, bytes shown as UTF-8 with invalid
//! sequences replaced) and `app_id`.
//!
//! **`app_id`**: the first non-zero app id of the transaction as the codec reports it (its
//! application id `apid`, else its first foreign app `apfa`, else the first app reference of its
//! access list); empty when there is none: a transaction that is not an app call, or an app
//! creation (application id 0) that references no other app. The jsonl writes `"app_id": 0` for
//! creations; this CSV leaves those empty, because 0 is not an app.

use std::io::Write;
use std::path::PathBuf;

use txgate_ledger::codec::decode_block;
use txgate_ledger::source::BlockSource;

use crate::error::CliError;

/// Arguments of `txgate txids`.
#[derive(Debug, clap::Args)]
pub(crate) struct TxidsArgs {
    /// Blocks to read: one block file, a directory of block files (named by round), or a tar /
    /// tar.bz2 archive of them (nested archives too).
    #[arg(long, value_name = "PATH")]
    pub(crate) blocks: PathBuf,
}

/// Writes the CSV for `args.blocks` to `out`; returns the number of transactions.
///
/// # Errors
///
/// Source errors (missing file, corrupt archive), [`CliError::Block`] for a block that does not
/// decode (naming its entry and round), [`CliError::Io`] when `out` fails.
pub(crate) fn run(args: &TxidsArgs, out: &mut dyn Write) -> Result<u64, CliError> {
    let stdout = |e| CliError::Io {
        path: PathBuf::from("<stdout>"),
        source: e,
    };
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record(["round", "intra", "txid", "type", "app_id"])
        .map_err(|e| stdout(e.into()))?;
    let mut count = 0;
    for raw in BlockSource::open(&args.blocks)? {
        let raw = raw?;
        let block = decode_block(&raw.bytes).map_err(|source| CliError::Block {
            round: raw.round.or(source.round()),
            name: raw.name.clone(),
            source,
        })?;
        for (intra, txn) in block.txns.iter().enumerate() {
            let app = txn.app_ids.first().map(u64::to_string).unwrap_or_default();
            csv.write_record([
                block.round.to_string(),
                intra.to_string(),
                txn.txid.to_string(),
                String::from_utf8_lossy(&txn.tx_type).into_owned(),
                app,
            ])
            .map_err(|e| stdout(e.into()))?;
            count += 1;
        }
    }
    csv.flush().map_err(stdout)?;
    Ok(count)
}
