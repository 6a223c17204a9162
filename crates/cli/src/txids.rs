//! `txgate txids`: every transaction of a block source (files or algod, see [`crate::feed`]) as
//! CSV `round,intra,txid,type,app_id`.
//!
//! Columns match the fields of `derived/algorand_private_dataset2_txns.jsonl` in the shared data:
//! `round` (the block's `rnd`), `intra` (0-based position in the block's payset), `txid`
//! (base32, 52 characters), `type` (the txn's `type` field, bytes shown as UTF-8 with invalid
//! sequences replaced) and `app_id`.
//!
//! Every block is verified before its txids are written ([`Block::verify`]: its payset
//! commitments, and the round its source names); a block that fails stops the command.
//!
//! [`Block::verify`]: txgate_algorand::codec::Block::verify
//!
//! **`app_id`**: the transaction's application id (its `apid` field, [`payset_app_ids`]), as
//! the jsonl's `app_id`, except that an absent or zero id (not an app call, or an app creation)
//! is left empty: 0 is not an app. Foreign apps are not shown (the codec's
//! `Txn::app_ids` lists them too; for a creation with foreign apps its first entry would be a
//! foreign app, not the jsonl's `app_id`).

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use txgate_algorand::codec::{Expected, decode_block, payset_app_ids};
use txgate_ledger::store::DEFAULT_MAX_TXN_LIFE;

use crate::error::CliError;
use crate::feed::{Next, SourceArgs};
use crate::rounds::RoundRange;

/// Arguments of `txgate txids`.
#[derive(Debug, clap::Args)]
pub(crate) struct TxidsArgs {
    /// The blocks (one of --blocks and --algod is needed; algod's default range is the last
    /// MaxTxnLife + 1 = 1001 rounds).
    #[command(flatten)]
    pub(crate) source: SourceArgs,
}

/// Writes the CSV of the blocks to `out`; returns the number of transactions.
///
/// # Errors
///
/// [`CliError::Usage`] without a source, or when `--rounds` selects no block of the files; source errors (missing file, corrupt archive, algod),
/// [`CliError::Block`] for a block that does not decode (naming its entry and round),
/// [`CliError::Verify`] for one that fails verification,
/// [`CliError::Io`] when `out` fails.
pub(crate) fn run(args: &TxidsArgs, out: &mut dyn Write) -> Result<u64, CliError> {
    let Some(mut opened) = args.source.open(None, DEFAULT_MAX_TXN_LIFE, false)? else {
        return Err(CliError::Usage(
            "txids needs --blocks PATH or --algod URL".into(),
        ));
    };
    let rounds = args.source.rounds.unwrap_or(RoundRange::ALL);
    let stdout = |e| CliError::Io {
        path: PathBuf::from("<stdout>"),
        source: e,
    };
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record(["round", "intra", "txid", "type", "app_id"])
        .map_err(|e| stdout(e.into()))?;
    let (mut count, mut blocks) = (0, 0u64);
    loop {
        let raw = match opened.feed.next(Duration::from_secs(3600))? {
            Next::Block(raw) => raw,
            Next::Idle => continue,
            Next::End => break,
        };
        let block = decode_block(&raw.bytes).map_err(|source| CliError::Block {
            round: raw.round.or(source.round()),
            name: raw.name.clone(),
            source,
        })?;
        block
            .verify(&raw.bytes, &Expected::default().with_round(raw.round))
            .map_err(|source| CliError::Verify {
                name: raw.name.clone(),
                source,
            })?;
        if !rounds.contains(block.round) {
            continue;
        }
        blocks += 1;
        // One id per payset entry, as `decode_block` gives one txn per entry.
        let apids = payset_app_ids(&raw.bytes).map_err(|source| CliError::Block {
            round: Some(block.round),
            name: raw.name.clone(),
            source,
        })?;
        for (intra, (txn, apid)) in block.txns.iter().zip(apids).enumerate() {
            let app = if apid == 0 {
                String::new()
            } else {
                apid.to_string()
            };
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
    if let Some(range) = args.source.rounds
        && blocks == 0
        && !args.source.blocks.is_empty()
    {
        return Err(CliError::Usage(format!(
            "--rounds {range}: no block of {} is in that range",
            args.source.paths()
        )));
    }
    Ok(count)
}
