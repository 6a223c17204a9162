//! Lookups: exact answers through the blooms and the compact index, the window of `find_txid`, the
//! blooms-disabled baseline.

use super::*;

#[test]
fn lookups_are_exact_and_errors_are_typed() {
    let dir = tempfile::tempdir().unwrap();
    // A high false-positive rate, so many misses go through the exact check.
    let config = LedgerConfig {
        false_positive_rate: 0.3,
        ..LedgerConfig::default()
    };
    let (l, _) = open(dir.path(), config);
    assert!(matches!(
        l.lookup_txid(&Txid([0; 32]), 0),
        Err(LedgerError::BeyondLatest {
            round: 0,
            latest: None
        })
    ));
    let mut rng = SplitMix64(1);
    let model = fill(&l, 100..=139, &mut rng, |r| (r % 7) as usize * 30);
    for (&round, ids) in &model {
        for (i, id) in ids.iter().enumerate() {
            let want = Some(TxRecord {
                round,
                index: i as u32,
            });
            assert_eq!(l.lookup_txid(id, round).unwrap(), want);
            assert_eq!(l.find_txid(id, 0..=u64::MAX).unwrap(), want);
            assert_eq!(l.find_txid(id, round..=round).unwrap(), want);
            assert_eq!(l.find_txid(id, round + 1..=200).unwrap(), None);
            // In every other round: absent.
            for other in [100, round.saturating_sub(1).max(100), 139] {
                if other != round {
                    assert_eq!(l.lookup_txid(id, other).unwrap(), None);
                }
            }
        }
    }
    // Absent txids: the blooms say "maybe" for ~30 % of them; the index says no.
    let mut maybes = 0;
    for _ in 0..300 {
        let id = txid(&mut rng);
        let round = 100 + rng.next_u64() % 40;
        let reader = l.window.reader();
        if let Probe::Hit(bloom) = reader.get(round) {
            maybes += usize::from(bloom.as_ref().unwrap().contains(Bytes(id.as_bytes())));
        }
        drop(reader);
        assert_eq!(l.lookup_txid(&id, round).unwrap(), None);
        assert_eq!(l.find_txid(&id, 0..=1000).unwrap(), None);
    }
    assert!(maybes > 20, "{maybes} false positives");
    assert!(matches!(
        l.lookup_txid(&Txid([0; 32]), 140),
        Err(LedgerError::BeyondLatest {
            round: 140,
            latest: Some(139)
        })
    ));
    assert!(matches!(
        l.lookup_txid(&Txid([0; 32]), 99),
        Err(LedgerError::NotKept {
            round: 99,
            first: 100
        })
    ));
}

#[test]
fn find_txid_is_newest_first_within_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let config = with_life(4);
    let (l, _) = open(dir.path(), config);
    let id = Txid([5; 32]);
    for round in 0..=9 {
        let ids = if round % 3 == 0 {
            vec![Txid([1; 32]), id]
        } else {
            vec![]
        };
        l.add_block(&encode(round, &ids)).unwrap();
    }
    // id is in rounds 0, 3, 6, 9; the window is 5..=9.
    let find = |r: RangeInclusive<Round>| l.find_txid(&id, r).unwrap().map(|t| t.round);
    assert_eq!(find(0..=100), Some(9));
    assert_eq!(find(0..=8), Some(6));
    assert_eq!(find(0..=5), None, "round 3 is outside the window");
    assert_eq!(find(7..=8), None);
    #[allow(clippy::reversed_empty_ranges)]
    let empty = 9..=6;
    assert_eq!(find(empty), None);
    // lookup_txid still answers for archival rounds outside the window (from the index).
    assert_eq!(
        l.lookup_txid(&id, 3).unwrap(),
        Some(TxRecord { round: 3, index: 1 })
    );
    assert_eq!(l.lookup_txid(&id, 4).unwrap(), None);
}

/// The txid index compares whole txids: txids sharing their first 8 bytes (the scan's first
/// compare) or all but their last byte, and a txid the payset repeats, are told apart; an
/// absent txid that agrees with a present one in all but one byte is absent.
#[test]
fn index_matches_whole_txids_only() {
    let dir = tempfile::tempdir().unwrap();
    // A high false-positive rate, so that absent txids get past the bloom to the index.
    let config = LedgerConfig {
        false_positive_rate: 0.5,
        ..LedgerConfig::default()
    };
    let (l, _) = open(dir.path(), config);
    let mut rng = SplitMix64(10);
    let shared = |rng: &mut SplitMix64| {
        let mut id = txid(rng);
        id.0[..8].copy_from_slice(&[9; 8]);
        id
    };
    let mut ids: Vec<Txid> = (0..40).map(|_| shared(&mut rng)).collect();
    ids.extend((0..40).map(|_| txid(&mut rng)));
    let mut near = ids[5];
    near.0[31] ^= 1;
    ids.push(near);
    ids.push(ids[3]); // repeated: found at its first position
    ids.push(ids[50]);
    l.add_block(&encode(0, &ids)).unwrap();
    let model = HashMap::from([(0, ids.clone())]);
    assert_lookups(&l, &model);
    assert_eq!(
        l.lookup_txid(&ids[3], 0).unwrap(),
        Some(TxRecord { round: 0, index: 3 })
    );
    assert_eq!(
        l.lookup_txid(&near, 0).unwrap(),
        Some(TxRecord {
            round: 0,
            index: 80
        })
    );
    let mut maybes = 0;
    for i in 0..1000 {
        let mut absent = shared(&mut rng);
        if i % 2 == 0 {
            // All but one byte of a present txid.
            absent = ids[i % 80];
            absent.0[8 + i % 24] ^= 0x80;
        }
        let reader = l.window.reader();
        if let Probe::Hit(bloom) = reader.get(0) {
            maybes += usize::from(bloom.as_ref().unwrap().contains(Bytes(absent.as_bytes())));
        }
        drop(reader);
        assert_eq!(l.lookup_txid(&absent, 0).unwrap(), None, "{absent}");
    }
    assert!(maybes > 40, "{maybes} absent txids got past the bloom");
}

/// [`search_txids`] against a plain scan, for rows of every length around a few txids, txids
/// that agree in their first 8 bytes, and malformed rows.
#[test]
fn txid_row_search_is_a_first_match_scan() {
    let mut rng = SplitMix64(14);
    for n in 0..40usize {
        // Txids from a small alphabet that agree in their first 8 bytes: frequent head matches.
        let ids: Vec<Txid> = (0..n)
            .map(|_| {
                let mut id = [7u8; 32];
                id[8 + (rng.next_u64() % 24) as usize] = (rng.next_u64() % 3) as u8;
                Txid(id)
            })
            .collect();
        let row: Vec<u8> = ids.iter().flat_map(|t| t.0).collect();
        assert_eq!(row.len(), n * TXID_BYTES);
        for probe in ids.iter().chain(&[Txid([7; 32]), Txid([0; 32])]) {
            let want = ids.iter().position(|t| t == probe).map(|i| i as u32);
            assert_eq!(search_txids(&row, probe), Some(want), "n {n}");
        }
        if n > 0 {
            assert_eq!(search_txids(&row[..row.len() - 1], &ids[0]), None);
        }
    }
}

/// A txid index row whose length is not a whole number of txids (a damaged file) is not
/// trusted: the block answers, exactly.
#[test]
fn a_malformed_index_row_is_answered_from_the_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64(13);
    let model = fill_closed(dir.path(), LedgerConfig::default(), 0..=1, &mut rng, |_| 20);
    {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(ROUND_TXIDS).unwrap();
            let row = t.get(1).unwrap().unwrap().value().to_vec();
            t.insert(1, &row[..row.len() - 1]).unwrap();
        }
        txn.commit().unwrap();
    }
    let (l, _) = open(dir.path(), LedgerConfig::default());
    assert_lookups(&l, &model);
    assert_eq!(l.lookup_txid(&txid(&mut rng), 1).unwrap(), None);
}

/// A hit, in a round of the window or an older one, reads the round's txid index row and no
/// block: with every block row deleted (a damaged file), every txid is still found at its
/// position and absent ones that pass the bloom are not; the lookups that need the block
/// (blooms disabled) report it missing.
#[test]
fn hits_read_no_block_in_any_kept_round() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64(15);
    // Window 6..=9; rounds 0..=5 are older (archival).
    let config = LedgerConfig {
        false_positive_rate: 0.5,
        ..with_life(3)
    };
    let model = fill_closed(dir.path(), config.clone(), 0..=9, &mut rng, |r| {
        80 + r as usize
    });
    {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(BLOCKS)
            .unwrap()
            .retain(|_, _| false)
            .unwrap();
        txn.commit().unwrap();
    }
    let (l, report) = open(dir.path(), config.clone());
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (4, 0));
    assert_lookups(&l, &model);
    // Absent txids the blooms let through ("maybe"), five per round: the index alone settles
    // them.
    for round in 0..=9 {
        let bloom = l.round_bloom(round).unwrap().unwrap();
        let mut maybes = 0;
        for _ in 0..1_000_000 {
            let absent = txid(&mut rng);
            if bloom.contains(Bytes(absent.as_bytes())) {
                assert_eq!(l.lookup_txid(&absent, round).unwrap(), None);
                maybes += 1;
                if maybes == 5 {
                    break;
                }
            }
        }
        assert_eq!(maybes, 5, "round {round}");
    }
    drop(l);
    let (l, _) = open(
        dir.path(),
        LedgerConfig {
            blooms: false,
            ..config
        },
    );
    assert!(matches!(
        l.lookup_txid(&model[&2][0], 2),
        Err(LedgerError::Missing {
            what: "block",
            round: 2
        })
    ));
}

#[test]
fn blooms_disabled_gives_identical_answers() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let base = with_life(7);
    let (with, _) = open(a.path(), base.clone());
    let (without, _) = open(
        b.path(),
        LedgerConfig {
            blooms: false,
            ..base
        },
    );
    let mut rng = SplitMix64(4);
    let mut all = Vec::new();
    for round in 0..20 {
        let mut ids: Vec<Txid> = (0..round % 4).map(|_| txid(&mut rng)).collect();
        if round % 5 == 0 {
            ids.push(Txid([0xEE; 32])); // one txid in several rounds
        }
        with.add_block(&encode(round, &ids)).unwrap();
        without.add_block(&encode(round, &ids)).unwrap();
        all.extend(ids);
    }
    all.extend((0..20).map(|_| txid(&mut rng)));
    for id in &all {
        for round in 0..=20 {
            let (x, y) = (with.lookup_txid(id, round), without.lookup_txid(id, round));
            match (x, y) {
                (Ok(x), Ok(y)) => assert_eq!(x, y),
                (Err(x), Err(y)) => assert_eq!(x.to_string(), y.to_string()),
                (x, y) => panic!("{x:?} vs {y:?}"),
            }
        }
        for (lo, hi) in [(0, 19), (10, 15), (0, 100), (14, 14)] {
            assert_eq!(
                with.find_txid(id, lo..=hi).unwrap(),
                without.find_txid(id, lo..=hi).unwrap()
            );
        }
    }
    assert_eq!(
        without.find_txid(&Txid([0xEE; 32]), 0..=100).unwrap(),
        Some(TxRecord {
            round: 15,
            index: 3
        })
    );
}

/// The compact index's prefix scan (sixteen at a time into a mask, then the rest one by one)
/// yields exactly the positions a plain scan finds, in order, for every row length around the
/// chunk boundaries and keys that match none, some or all prefixes.
#[test]
fn prefix_scan_finds_every_match_in_payset_order() {
    let mut rng = SplitMix64(11);
    for n in 0..80usize {
        // Prefixes from a 3-value alphabet, so that matches are frequent.
        let prefixes: Vec<u32> = (0..n).map(|_| (rng.next_u64() % 3) as u32).collect();
        let mut row = Vec::new();
        row.extend_from_slice(&(n as u32).to_le_bytes());
        row.extend_from_slice(&3u32.to_le_bytes());
        row.extend_from_slice(b"net");
        row.extend_from_slice(&[7; 32]);
        for p in &prefixes {
            row.extend_from_slice(&p.to_le_bytes());
        }
        for i in 0..n as u32 {
            row.extend_from_slice(&(10 + 32 * i).to_le_bytes());
        }
        let index = PrefixIndex::parse(&row).expect("a well-formed row");
        for key in 0..4 {
            let want: Vec<usize> = (0..n).filter(|&i| prefixes[i] == key).collect();
            let got: Vec<usize> = index.matches(key).collect();
            assert_eq!(got, want, "n {n} key {key}");
        }
        // A row one byte short does not parse.
        assert!(PrefixIndex::parse(&row[..row.len() - 1]).is_none());
    }
}
