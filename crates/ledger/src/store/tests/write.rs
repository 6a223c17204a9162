//! Writes: sequencing, the network check, pruning, configuration and seed, readers racing the
//! writer.

use super::*;

#[test]
fn sequencing_errors_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (l, _) = open(dir.path(), LedgerConfig::default());
        // An empty ledger takes any first round.
        l.add_block(&encode(5, &[Txid([1; 32])])).unwrap();
        // A round the ledger holds (or held) is its own error; a gap is out of order.
        for held in [4, 5, 0] {
            let err = l.add_block(&encode(held, &[Txid([9; 32])])).unwrap_err();
            assert!(
                matches!(err, LedgerError::AlreadyHeld { round, latest: 5 } if round == held),
                "{err}"
            );
        }
        for bad in [7, u64::MAX] {
            let err = l.add_block(&encode(bad, &[Txid([9; 32])])).unwrap_err();
            assert!(
                matches!(err, LedgerError::OutOfOrder { expected: 6, got } if got == bad),
                "{err}"
            );
        }
        assert!(matches!(
            l.add_block(b"garbage"),
            Err(LedgerError::Decode { round: None, .. })
        ));
        assert_eq!(l.latest(), Some(5));
        assert_eq!(l.first(), Some(5));
        // The rejected txid is nowhere.
        assert_eq!(l.find_txid(&Txid([9; 32]), 0..=100).unwrap(), None);
        l.add_block(&encode(6, &[])).unwrap();
    }
    assert_eq!(block_rounds(dir.path()), vec![5, 6]);
    let (l, report) = open(dir.path(), LedgerConfig::default());
    assert_eq!((report.first, report.latest), (Some(5), Some(6)));
    assert!(matches!(
        l.add_block(&encode(8, &[])),
        Err(LedgerError::OutOfOrder {
            expected: 7,
            got: 8
        })
    ));
}

#[test]
fn blocks_of_another_network_are_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let other = |round: Round, hash: [u8; 32]| {
        let mut b = block(round, &[Txid([9; 32])]);
        b.genesis_id = b"mainnet-v1.0".to_vec();
        b.genesis_hash = hash;
        b
    };
    let test_net = Genesis {
        id: b"test".to_vec(),
        hash: [1; 32],
    };
    {
        let (l, _) = open(dir.path(), LedgerConfig::default());
        assert_eq!(l.genesis(), None);
        l.add_block(&encode(5, &[Txid([1; 32])])).unwrap();
        assert_eq!(l.genesis(), Some(test_net.clone()));
        let err = l
            .add_decoded_block(&other(6, [3; 32]), &encode(6, &[Txid([9; 32])]))
            .unwrap_err();
        match &err {
            LedgerError::OtherNetwork {
                round: 6,
                block,
                ledger,
            } => {
                assert_eq!(block.id, b"mainnet-v1.0");
                assert_eq!(**ledger, test_net);
            }
            e => panic!("{e}"),
        }
        // A round the ledger holds is checked for its network before it is called held.
        assert!(matches!(
            l.add_decoded_block(&other(5, [3; 32]), &encode(5, &[])),
            Err(LedgerError::OtherNetwork { round: 5, .. })
        ));
        assert!(matches!(
            l.add_decoded_block(&block(5, &[]), &encode(5, &[])),
            Err(LedgerError::AlreadyHeld {
                round: 5,
                latest: 5
            })
        ));
        // Both networks by name and base64 genesis hash, on one line.
        let msg = err.to_string();
        assert!(msg.contains("mainnet-v1.0 (genesis hash AwMD"), "{msg}");
        assert!(msg.contains("test (genesis hash AQEB"), "{msg}");
        assert!(!msg.contains('\n'));
        // The same id with another hash is another network; a zero hash is "not set".
        assert!(l.check_network(&other(6, [1; 32])).is_err());
        let same_id = |hash| {
            let mut b = block(6, &[]);
            b.genesis_hash = hash;
            b
        };
        assert!(l.check_network(&same_id([2; 32])).is_err());
        assert!(l.check_network(&same_id([0; 32])).is_ok());
        assert_eq!(l.latest(), Some(5));
        assert_eq!(l.find_txid(&Txid([9; 32]), 0..=100).unwrap(), None);
    }
    assert_eq!(block_rounds(dir.path()), vec![5]);
    // Reopened, the ledger still knows its network, also when the rows are gone (a ledger
    // written before the chain table existed learns it from its first block).
    for drop_rows in [false, true] {
        if drop_rows {
            let db = Database::create(dir.path().join(DB_FILE)).unwrap();
            let txn = db.begin_write().unwrap();
            txn.delete_table(CHAIN).unwrap();
            txn.commit().unwrap();
        }
        let (l, _) = open(dir.path(), LedgerConfig::default());
        assert_eq!(
            l.genesis(),
            Some(test_net.clone()),
            "rows dropped: {drop_rows}"
        );
        assert!(matches!(
            l.add_decoded_block(&other(6, [3; 32]), &encode(6, &[])),
            Err(LedgerError::OtherNetwork { round: 6, .. })
        ));
        assert_eq!(l.latest(), Some(5));
    }
    let (l, _) = open(dir.path(), LedgerConfig::default());
    l.add_block(&encode(6, &[])).unwrap();
    drop(l);
    assert_eq!(block_rounds(dir.path()), vec![5, 6]);
}

#[test]
fn non_archival_ledgers_prune_rounds_that_leave_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let config = LedgerConfig {
        max_txn_life: 3,
        archival: false,
        ..LedgerConfig::default()
    };
    let mut rng = SplitMix64(3);
    let model = {
        let (l, _) = open(dir.path(), config.clone());
        let model = fill(&l, 10..=19, &mut rng, |_| 4);
        assert_eq!(l.first(), Some(16));
        for round in 10..=19 {
            let id = model[&round][0];
            let got = l.lookup_txid(&id, round);
            if round < 16 {
                assert!(matches!(got, Err(LedgerError::NotKept { first: 16, .. })));
            } else {
                assert_eq!(got.unwrap(), Some(TxRecord { round, index: 0 }));
            }
        }
        model
    };
    assert_eq!(block_rounds(dir.path()), vec![16, 17, 18, 19]);
    {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(ROUND_TXIDS).unwrap();
        let rows: Vec<(Round, usize)> = t
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.value(), v.value().len())
            })
            .collect();
        // The 4 txids, 32 bytes each.
        let len = 4 * TXID_BYTES;
        assert_eq!(rows, vec![(16, len), (17, len), (18, len), (19, len)]);
        // No bloom rows: each round's index row stands for its bloom.
        let t = txn.open_table(BLOOMS).unwrap();
        assert_eq!(t.iter().unwrap().count(), 0);
    }
    // Reopening with a shorter MaxTxnLife prunes at open.
    let (l, report) = open(
        dir.path(),
        LedgerConfig {
            max_txn_life: 1,
            ..config
        },
    );
    assert_eq!(report.first, Some(18));
    assert_eq!(report.blooms_loaded, 2);
    assert!(l.lookup_txid(&model[&17][0], 17).is_err());
    assert_eq!(
        l.lookup_txid(&model[&18][1], 18).unwrap(),
        Some(TxRecord {
            round: 18,
            index: 1
        })
    );
    drop(l);
    assert_eq!(block_rounds(dir.path()), vec![18, 19]);
}

#[test]
fn ledger_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Ledger>();
}

#[test]
fn bad_configuration_is_a_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    for config in [
        LedgerConfig {
            false_positive_rate: 0.0,
            ..LedgerConfig::default()
        },
        LedgerConfig {
            false_positive_rate: f64::NAN,
            ..LedgerConfig::default()
        },
        LedgerConfig {
            max_txn_life: MAX_WINDOW_ROUNDS + 1,
            ..LedgerConfig::default()
        },
    ] {
        let err = Ledger::open(dir.path(), config.clone()).unwrap_err();
        match err {
            LedgerError::FalsePositiveRate(p) => {
                assert!(p.is_nan() || p == config.false_positive_rate)
            }
            LedgerError::MaxTxnLife {
                max_txn_life,
                limit,
            } => assert_eq!(
                (max_txn_life, limit),
                (MAX_WINDOW_ROUNDS + 1, MAX_WINDOW_ROUNDS)
            ),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn the_seed_is_fixed_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    let (l, report) = open(
        dir.path(),
        LedgerConfig {
            bloom_seed: 42,
            ..LedgerConfig::default()
        },
    );
    assert_eq!((report.bloom_seed, l.bloom_seed()), (42, 42));
    l.add_block(&encode(0, &[Txid([3; 32])])).unwrap();
    drop(l);
    let (l, report) = open(dir.path(), LedgerConfig::default());
    assert_eq!(report.bloom_seed, 42);
    assert_eq!(
        l.find_txid(&Txid([3; 32]), 0..=0).unwrap(),
        Some(TxRecord { round: 0, index: 0 })
    );
}

#[test]
fn readers_race_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let config = LedgerConfig {
        max_txn_life: 8,
        archival: false,
        ..LedgerConfig::default()
    };
    let (l, _) = open(dir.path(), config);
    let id = |round: Round| Txid([(round % 251) as u8; 32]);
    std::thread::scope(|s| {
        s.spawn(|| {
            for round in 0..200 {
                l.add_block(&encode(round, &[id(round)])).unwrap();
            }
        });
        s.spawn(|| {
            while l.latest() != Some(199) {
                let Some(latest) = l.latest() else { continue };
                // A round the reader saw as latest is found, whole, or (if the writer
                // went on past the window since) not kept; never "absent".
                match l.lookup_txid(&id(latest), latest) {
                    Ok(found) => assert_eq!(
                        found,
                        Some(TxRecord {
                            round: latest,
                            index: 0
                        })
                    ),
                    Err(LedgerError::NotKept { round, first }) => assert!(round < first),
                    Err(e) => panic!("{e}"),
                }
                // An older round is found, or (if the writer pruned it since) not kept;
                // never "absent".
                let old = latest.saturating_sub(3);
                match l.lookup_txid(&id(old), old) {
                    Ok(found) => assert!(found.is_some()),
                    Err(LedgerError::NotKept { round, first }) => assert!(round < first),
                    Err(e) => panic!("{e}"),
                }
            }
        });
    });
}
