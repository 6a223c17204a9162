//! Differential fuzzing of the txgate-ledger store against a plain model (a `BTreeMap` of kept
//! rounds): add the next round (real msgpack blocks from `txgate_algorand::synth`, txids drawn
//! from a small space so they repeat across and within rounds), out-of-order adds, lookups,
//! window searches and reopening (with blooms switched on or off), in a temporary directory.
//! Every answer, including the typed errors, must match the model.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use txgate_algorand::synth::{SynthTxn, encode_block};
use txgate_ledger::store::{Ledger, LedgerConfig, LedgerError, TxRecord};
use txgate_ledger::{Round, Txid};

const GEN: &str = "fuzz-v1";
const GH: [u8; 32] = [0x11; 32];

#[derive(Arbitrary, Debug)]
struct Input {
    /// MaxTxnLife = 1 + this % 8.
    max_txn_life: u8,
    archival: bool,
    blooms: bool,
    /// A high false-positive rate (0.3) makes the exact check run often.
    high_fpr: bool,
    first_round: u8,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    /// Adds the next round with these txns (ids % 32; at most 12).
    Add(Vec<u8>),
    /// Adds a round that is not the next one: latest + 1 + (1 + delta), or latest - delta.
    AddWrong { ahead: bool, delta: u8 },
    /// Looks id up in round first_round + offset.
    Lookup { id: u8, offset: u8 },
    /// Finds id in first_round + lo ..= first_round + lo + len.
    Find { id: u8, lo: u8, len: u8 },
    /// Reopens, with blooms switched when `toggle`.
    Reopen { toggle: bool },
}

fn synth(id: u8) -> SynthTxn {
    SynthTxn {
        note: vec![id % 32],
        ..SynthTxn::payment([1; 32], 1, 2000)
    }
}

fn txid(id: u8) -> Txid {
    synth(id).txid(GEN, &GH)
}

struct Model {
    mtl: u64,
    archival: bool,
    /// Kept rounds and their txids.
    rounds: BTreeMap<Round, Vec<Txid>>,
    latest: Option<Round>,
}

impl Model {
    fn first(&self) -> Option<Round> {
        self.rounds.keys().next().copied()
    }

    fn add(&mut self, round: Round, ids: Vec<Txid>) {
        self.rounds.insert(round, ids);
        self.latest = Some(round);
        if !self.archival {
            let start = round.saturating_sub(self.mtl);
            self.rounds.retain(|&r, _| r >= start);
        }
    }

    fn lookup(&self, id: &Txid, round: Round) -> Result<Option<TxRecord>, (Round, Option<Round>)> {
        match (self.first(), self.latest) {
            (Some(first), Some(latest)) if (first..=latest).contains(&round) => Ok(self.rounds
                [&round]
                .iter()
                .position(|t| t == id)
                .map(|i| TxRecord {
                    round,
                    index: i as u32,
                })),
            (first, latest) => Err((first.unwrap_or(0), latest)),
        }
    }

    fn find(&self, id: &Txid, lo: Round, hi: Round) -> Option<TxRecord> {
        let latest = self.latest?;
        let lo = lo.max(latest.saturating_sub(self.mtl));
        let hi = hi.min(latest);
        (lo..=hi)
            .rev()
            .find_map(|r| self.lookup(id, r).ok().flatten())
    }
}

fuzz_target!(|input: Input| {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LedgerConfig::default()
        .with_max_txn_life(1 + u64::from(input.max_txn_life % 8))
        .with_archival(input.archival)
        .with_blooms(input.blooms)
        .with_false_positive_rate(if input.high_fpr { 0.3 } else { 0.001 });
    let mut model = Model {
        mtl: config.max_txn_life,
        archival: config.archival,
        rounds: BTreeMap::new(),
        latest: None,
    };
    let base = Round::from(input.first_round);
    let mut ledger = Ledger::open(dir.path(), config.clone()).unwrap();
    for op in input.ops.into_iter().take(64) {
        match op {
            Op::Add(ids) => {
                let round = model.latest.map_or(base, |l| l + 1);
                let txns: Vec<SynthTxn> = ids.iter().take(12).map(|&i| synth(i)).collect();
                let raw = encode_block(round, GEN, &GH, 1_700_000_000, &txns);
                assert_eq!(ledger.add_block(&raw).unwrap(), round);
                model.add(round, txns.iter().map(|t| t.txid(GEN, &GH)).collect());
            }
            Op::AddWrong { ahead, delta } => {
                let Some(latest) = model.latest else { continue };
                let round = if ahead {
                    latest + 2 + u64::from(delta)
                } else {
                    latest.saturating_sub(u64::from(delta))
                };
                let raw = encode_block(round, GEN, &GH, 1, &[synth(0)]);
                let err = ledger.add_block(&raw).unwrap_err();
                if ahead {
                    assert!(matches!(err, LedgerError::OutOfOrder { expected, got }
                        if expected == latest + 1 && got == round));
                } else {
                    assert!(
                        matches!(err, LedgerError::AlreadyHeld { round: r, latest: l }
                        if r == round && l == latest)
                    );
                }
            }
            Op::Lookup { id, offset } => {
                let round = base + Round::from(offset);
                let got = ledger.lookup_txid(&txid(id), round);
                match (model.lookup(&txid(id), round), got) {
                    (Ok(want), Ok(got)) => assert_eq!(got, want, "round {round}"),
                    (Err((_, latest)), Err(LedgerError::BeyondLatest { latest: l, .. })) => {
                        assert!(latest.is_none_or(|latest| round > latest));
                        assert_eq!(l, latest);
                    }
                    (Err((first, _)), Err(LedgerError::NotKept { first: f, .. })) => {
                        assert!(round < first);
                        assert_eq!(f, first);
                    }
                    (want, got) => panic!("round {round}: model {want:?}, ledger {got:?}"),
                }
            }
            Op::Find { id, lo, len } => {
                let lo = base + Round::from(lo);
                let hi = lo + Round::from(len);
                assert_eq!(
                    ledger.find_txid(&txid(id), lo..=hi).unwrap(),
                    model.find(&txid(id), lo, hi),
                    "{lo}..={hi}"
                );
            }
            Op::Reopen { toggle } => {
                drop(ledger);
                if toggle {
                    config.blooms = !config.blooms;
                }
                let l = Ledger::open(dir.path(), config.clone()).unwrap();
                let report = l.open_report();
                assert_eq!(report.latest, model.latest);
                assert_eq!(report.first, model.first());
                ledger = l;
            }
        }
    }
});
