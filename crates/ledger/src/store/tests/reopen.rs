//! Opening: blooms loaded, damaged or missing ones rebuilt, the other layout, format 1, the index
//! added later.

use super::*;

/// Rounds added with the txid index have no bloom row: their blooms are built from their index
/// rows at open. Bloom rows an earlier build wrote load as they are; a damaged one, one of
/// another seed, or a round with no row to build from is rebuilt from its block, reported, and
/// leaves an index row alone.
#[test]
fn reopen_loads_blooms_and_rebuilds_corrupt_or_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let config = with_life(9);
    let mut rng = SplitMix64(2);
    // Round 25's bloom as `add_block` built it from the block.
    let (model, bytes_25) = {
        let (l, report) = open(dir.path(), config.clone());
        assert_eq!(report.blooms_loaded, 0);
        let model = fill(&l, 0..=29, &mut rng, |r| r as usize % 5 + 1);
        (model, l.round_bloom(25).unwrap().unwrap().to_bytes())
    };
    assert_eq!(bloom_row_rounds(dir.path()), Vec::<Round>::new());
    let (l, report) = open(dir.path(), config.clone());
    assert_eq!(report.latest, Some(29));
    assert_eq!(report.blooms_loaded, 10, "the window is rounds 20..=29");
    assert_eq!(report.blooms_from_index, 10);
    assert_eq!(report.rebuilt, vec![]);
    assert_eq!(report.bloom_seed, DEFAULT_BLOOM_SEED);
    assert_eq!(l.round_bloom(25).unwrap().unwrap().to_bytes(), bytes_25);
    drop(l);
    // Bloom rows as an earlier build wrote them, then: damage round 25's, delete round 27's
    // (its index row stays), give round 28 a valid filter with another seed, damage round 3's
    // (outside the window); delete round 26's bloom and index rows; cut round 24's index row
    // short and delete its bloom row.
    add_legacy_bloom_rows(dir.path(), &config);
    assert_eq!(bloom_row(dir.path(), 25), bytes_25);
    let cut_24 = {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        let cut_24 = {
            let mut t = txn.open_table(BLOOMS).unwrap();
            t.insert(25, &bytes_25[..bytes_25.len() - 1]).unwrap();
            t.remove(27).unwrap();
            let other_seed = BloomBuilder::with_num_blocks(1)
                .seed(DEFAULT_BLOOM_SEED ^ 1)
                .build()
                .unwrap();
            t.insert(28, &other_seed.to_bytes()[..]).unwrap();
            t.insert(3, &b"junk"[..]).unwrap();
            t.remove(26).unwrap();
            t.remove(24).unwrap();
            let mut index = txn.open_table(ROUND_TXIDS).unwrap();
            index.remove(26).unwrap();
            let row = index.get(24).unwrap().unwrap().value().to_vec();
            index.insert(24, &row[..row.len() - 1]).unwrap();
            row.len() - 1
        };
        txn.commit().unwrap();
        cut_24
    };
    let (l, report) = open(dir.path(), config.clone());
    assert_eq!(report.blooms_loaded, 6);
    assert_eq!(report.blooms_from_index, 1, "round 27");
    let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
    assert_eq!(rounds, vec![24, 25, 26, 28]);
    assert_eq!(
        report.rebuilt[0].reason,
        RebuildReason::CorruptIndex { len: cut_24 }
    );
    assert!(matches!(
        report.rebuilt[1].reason,
        RebuildReason::Corrupt(_)
    ));
    assert_eq!(report.rebuilt[2].reason, RebuildReason::Missing);
    assert_eq!(
        report.rebuilt[3].reason,
        RebuildReason::WrongSeed {
            found: DEFAULT_BLOOM_SEED ^ 1
        }
    );
    assert_lookups(&l, &model);
    drop(l);
    // The rebuilds wrote index rows and removed the bad bloom rows; the blooms built from the
    // rows are byte-identical to the ones built from the blocks (deterministic seed).
    let (l, report) = open(dir.path(), config);
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (10, 0));
    assert_eq!(report.blooms_from_index, 5, "rounds 24 to 28");
    assert_eq!(l.round_bloom(25).unwrap().unwrap().to_bytes(), bytes_25);
    assert_lookups(&l, &model);
    drop(l);
    let rows = bloom_row_rounds(dir.path());
    assert!(rows.iter().all(|r| !(24..=28).contains(r)), "{rows:?}");
    assert!(rows.contains(&29) && rows.contains(&3));
}

/// The bloom built from a round's index row at open is the one `add_block` built from its
/// block: same bits, layout, size and seed, for rounds of 0 to 63 txns.
#[test]
fn blooms_built_from_index_rows_equal_the_blooms_built_from_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let config = with_life(9);
    let mut rng = SplitMix64(21);
    let at_add: Vec<Vec<u8>> = {
        let (l, _) = open(dir.path(), config.clone());
        fill(&l, 0..=9, &mut rng, |r| r as usize * 7);
        (0..=9)
            .map(|r| l.round_bloom(r).unwrap().unwrap().to_bytes())
            .collect()
    };
    let (l, report) = open(dir.path(), config);
    assert_eq!((report.blooms_loaded, report.blooms_from_index), (10, 10));
    for (r, bytes) in (0..).zip(&at_add) {
        assert_eq!(
            &l.round_bloom(r).unwrap().unwrap().to_bytes(),
            bytes,
            "round {r}"
        );
    }
}

/// A stored bloom row (as an earlier build wrote them) with one altered byte (in its blocks, or
/// one bit of its seed) fails its checksum at open, is rebuilt from its block and reported;
/// lookups stay exact, and the rebuilt bloom is the original one again (now built from the
/// index row, the bloom row gone).
#[test]
fn a_damaged_bloom_row_fails_its_checksum_and_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let config = with_life(9);
    let mut rng = SplitMix64(8);
    let (model, good_4, good_6) = {
        let (l, _) = open(dir.path(), config.clone());
        let model = fill(&l, 0..=9, &mut rng, |_| 50);
        let bytes = |r| l.round_bloom(r).unwrap().unwrap().to_bytes();
        (model, bytes(4), bytes(6))
    };
    add_legacy_bloom_rows(dir.path(), &config);
    assert_eq!(bloom_row(dir.path(), 4), good_4);
    assert_eq!(bloom_row(dir.path(), 6), good_6);
    {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut t = txn.open_table(BLOOMS).unwrap();
            let mut bad = good_4.clone();
            bad[txgate_bloom::format::HEADER_BYTES + 7] ^= 0x10; // a block byte
            t.insert(4, bad.as_slice()).unwrap();
            let mut bad = good_6.clone();
            bad[16] ^= 1; // one bit of the seed
            t.insert(6, bad.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let (l, report) = open(dir.path(), config.clone());
    let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
    assert_eq!(rounds, vec![4, 6]);
    for rebuilt in &report.rebuilt {
        assert!(
            matches!(
                rebuilt.reason,
                RebuildReason::Corrupt(LoadError::ChecksumMismatch { .. })
            ),
            "{rebuilt:?}"
        );
    }
    assert_eq!(report.blooms_loaded, 8);
    assert_lookups(&l, &model);
    for _ in 0..200 {
        assert_eq!(l.lookup_txid(&txid(&mut rng), 4).unwrap(), None);
    }
    drop(l);
    let rows = bloom_row_rounds(dir.path());
    assert_eq!(rows, vec![0, 1, 2, 3, 5, 7, 8, 9]);
    let (l, report) = open(dir.path(), config);
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (10, 0));
    assert_eq!(report.blooms_from_index, 2);
    assert_eq!(l.round_bloom(4).unwrap().unwrap().to_bytes(), good_4);
    assert_eq!(l.round_bloom(6).unwrap().unwrap().to_bytes(), good_6);
}

/// The layout is a setting for the blooms the ledger builds: bloom rows stored in the other
/// layout (by an earlier build) load as they are (no rebuild), blooms built from index rows at
/// open follow the setting, and lookups are exact across rounds of both.
#[test]
fn stored_blooms_of_the_other_layout_still_load() {
    let dir = tempfile::tempdir().unwrap();
    let with = |layout| LedgerConfig {
        bloom_layout: layout,
        max_txn_life: 20,
        ..LedgerConfig::default()
    };
    let mut rng = SplitMix64(9);
    let mut model = fill_closed(dir.path(), with(Layout::Block256), 0..=5, &mut rng, |r| {
        r as usize * 40
    });
    add_legacy_bloom_rows(dir.path(), &with(Layout::Block256));
    let layouts = |l: &Ledger| -> Vec<Layout> {
        (0..=8)
            .map(|r| {
                let bytes = l.round_bloom(r).unwrap().unwrap().to_bytes();
                txgate_bloom::format::layout_of(&bytes).unwrap()
            })
            .collect()
    };
    let (l, report) = open(dir.path(), with(Layout::Block512));
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (6, 0));
    assert_eq!(report.blooms_from_index, 0);
    model.extend(fill(&l, 6..=8, &mut rng, |_| 100));
    assert_lookups(&l, &model);
    let stored = layouts(&l);
    assert_eq!(stored[..6], [Layout::Block256; 6]);
    assert_eq!(stored[6..], [Layout::Block512; 3]);
    drop(l);
    let (l, report) = open(dir.path(), with(Layout::Block256));
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (9, 0));
    assert_eq!(
        report.blooms_from_index, 3,
        "rounds 6 to 8 have no bloom row"
    );
    assert_eq!(layouts(&l), [Layout::Block256; 9]);
    assert_lookups(&l, &model);
    assert_eq!(
        l.find_txid(&model[&7][3], 0..=8).unwrap(),
        Some(TxRecord { round: 7, index: 3 })
    );
}

/// A ledger a format-1 build wrote (36-byte rows in `txids`, format 1 in `meta`) opens as
/// format 3: its rows still answer, new rounds get `round_txids` rows, and a later format is
/// refused.
#[test]
fn format_1_ledgers_open_and_answer_from_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64(11);
    let mut model = {
        let (l, _) = open(dir.path(), LedgerConfig::default());
        let mut model = fill(&l, 0..=4, &mut rng, |r| r as usize * 3 + 1);
        // A repeated txid: format 1 kept its first position.
        let mut ids: Vec<Txid> = (0..5).map(|_| txid(&mut rng)).collect();
        ids.push(ids[1]);
        l.add_block(&encode(5, &ids)).unwrap();
        model.insert(5, ids);
        model
    };
    add_legacy_bloom_rows(dir.path(), &LedgerConfig::default());
    {
        // Rewrite it as format 1 wrote it (with the bloom rows it wrote).
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut old = txn.open_table(TXIDS).unwrap();
            for (&round, ids) in &model {
                let mut rows: Vec<([u8; 32], u32)> = ids
                    .iter()
                    .enumerate()
                    .map(|(i, t)| (t.0, i as u32))
                    .collect();
                rows.sort_unstable();
                rows.dedup_by_key(|r| r.0);
                let row: Vec<u8> = rows
                    .iter()
                    .flat_map(|(t, i)| t.iter().copied().chain(i.to_le_bytes()))
                    .collect();
                old.insert(round, row.as_slice()).unwrap();
            }
            txn.open_table(ROUND_TXIDS)
                .unwrap()
                .retain(|_, _| false)
                .unwrap();
            txn.open_table(META)
                .unwrap()
                .insert(META_FORMAT, FORMAT_VERSION_1)
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let (l, report) = open(dir.path(), LedgerConfig::default());
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (6, 0));
    assert_lookups(&l, &model);
    model.extend(fill(&l, 6..=7, &mut rng, |_| 9));
    assert_lookups(&l, &model);
    drop(l);
    {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let meta = txn.open_table(META).unwrap();
            assert_eq!(
                meta.get(META_FORMAT).unwrap().unwrap().value(),
                FORMAT_VERSION
            );
            let rows = txn.open_table(ROUND_TXIDS).unwrap();
            let rounds: Vec<Round> = rows.iter().unwrap().map(|r| r.unwrap().0.value()).collect();
            assert_eq!(rounds, vec![6, 7]);
        }
        txn.open_table(META)
            .unwrap()
            .insert(META_FORMAT, FORMAT_VERSION + 1)
            .unwrap();
        txn.commit().unwrap();
    }
    assert!(matches!(
        Ledger::open_with_codec(dir.path(), LedgerConfig::default(), TEST_CODEC),
        Err(LedgerError::Format { found, .. }) if found == FORMAT_VERSION + 1
    ));
}

/// A ledger a format-2 build wrote (compact rows in `txid_prefixes`: 4-byte prefixes and entry
/// offsets into the stored block, format 2 in `meta`) opens as format 3: its rows still answer
/// (each prefix match verified against its entry in the block), and new rounds get
/// `round_txids` rows.
#[test]
fn format_2_ledgers_open_and_answer_from_their_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = SplitMix64(16);
    let mut model = {
        let (l, _) = open(dir.path(), LedgerConfig::default());
        let mut model = fill(&l, 0..=3, &mut rng, |r| r as usize * 5 + 2);
        let mut ids: Vec<Txid> = (0..4).map(|_| txid(&mut rng)).collect();
        ids.push(ids[2]); // repeated: found at its first position
        l.add_block(&encode(4, &ids)).unwrap();
        model.insert(4, ids);
        model
    };
    add_legacy_bloom_rows(dir.path(), &LedgerConfig::default());
    {
        // Rewrite it as format 2 wrote it (with the bloom rows it wrote): the header (txn count, the genesis id "test" and
        // hash of the test blocks), the prefixes, the offsets (txid i at byte 10 + 32 i).
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut old = txn.open_table(TXID_PREFIXES).unwrap();
            for (&round, ids) in &model {
                let mut row = Vec::new();
                row.extend_from_slice(&(ids.len() as u32).to_le_bytes());
                row.extend_from_slice(&4u32.to_le_bytes());
                row.extend_from_slice(b"test");
                row.extend_from_slice(&[1; 32]);
                for id in ids {
                    row.extend_from_slice(&id.0[..4]);
                }
                for i in 0..ids.len() as u32 {
                    row.extend_from_slice(&(10 + 32 * i).to_le_bytes());
                }
                assert_eq!(row.len(), 44 + ids.len() * PREFIX_ENTRY_BYTES);
                old.insert(round, row.as_slice()).unwrap();
            }
            txn.open_table(ROUND_TXIDS)
                .unwrap()
                .retain(|_, _| false)
                .unwrap();
            txn.open_table(META)
                .unwrap()
                .insert(META_FORMAT, FORMAT_VERSION_2)
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let (l, report) = open(dir.path(), LedgerConfig::default());
    assert_eq!((report.blooms_loaded, report.rebuilt.len()), (5, 0));
    assert_lookups(&l, &model);
    model.extend(fill(&l, 5..=6, &mut rng, |_| 7));
    assert_lookups(&l, &model);
    drop(l);
    let db = Database::create(dir.path().join(DB_FILE)).unwrap();
    let txn = db.begin_read().unwrap();
    assert_eq!(
        txn.open_table(META)
            .unwrap()
            .get(META_FORMAT)
            .unwrap()
            .unwrap()
            .value(),
        FORMAT_VERSION
    );
    let rounds = |t: redb::ReadOnlyTable<u64, &[u8]>| -> Vec<Round> {
        t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
    };
    assert_eq!(rounds(txn.open_table(ROUND_TXIDS).unwrap()), vec![5, 6]);
    assert_eq!(
        rounds(txn.open_table(TXID_PREFIXES).unwrap()),
        vec![0, 1, 2, 3, 4]
    );
}

/// Blooms without the txid index: bloom rows instead of index rows are written and a "maybe"
/// decodes the block; opening with the index again indexes the window's rounds that lack a row
/// (their bloom rows then go: the index rows stand for them).
#[test]
fn blooms_without_the_index_decode_and_are_indexed_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let config = |txid_index| LedgerConfig {
        txid_index,
        max_txn_life: 5,
        ..LedgerConfig::default()
    };
    let mut rng = SplitMix64(12);
    let mut model = fill_closed(dir.path(), config(true), 0..=2, &mut rng, |_| 6);
    {
        let (l, report) = open(dir.path(), config(false));
        assert_eq!(report.rebuilt, vec![]);
        model.extend(fill(&l, 3..=8, &mut rng, |_| 6));
        assert_lookups(&l, &model);
    }
    let index_rounds = |dir: &Path| -> Vec<Round> {
        let db = Database::create(dir.join(DB_FILE)).unwrap();
        let txn = db.begin_read().unwrap();
        let t = txn.open_table(ROUND_TXIDS).unwrap();
        t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
    };
    assert_eq!(index_rounds(dir.path()), vec![0, 1, 2]);
    assert_eq!(bloom_row_rounds(dir.path()), (3..=8).collect::<Vec<_>>());
    let (l, report) = open(dir.path(), config(true));
    let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
    assert_eq!(rounds, vec![3, 4, 5, 6, 7, 8], "the window is 3..=8");
    assert!(
        report
            .rebuilt
            .iter()
            .all(|r| r.reason == RebuildReason::MissingIndex)
    );
    assert_lookups(&l, &model);
    drop(l);
    assert_eq!(index_rounds(dir.path()), (0..=8).collect::<Vec<_>>());
    assert_eq!(bloom_row_rounds(dir.path()), Vec::<Round>::new());
    let (_, report) = open(dir.path(), config(true));
    assert_eq!(report.rebuilt, vec![]);
    assert_eq!((report.blooms_loaded, report.blooms_from_index), (6, 6));
}

#[test]
fn switching_blooms_on_rebuilds_the_window_and_decodes_older_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let off = LedgerConfig {
        blooms: false,
        max_txn_life: 4,
        ..LedgerConfig::default()
    };
    let mut rng = SplitMix64(5);
    let model = fill_closed(dir.path(), off, 0..=11, &mut rng, |_| 2);
    let on = with_life(4);
    let (l, report) = open(dir.path(), on);
    let rounds: Vec<_> = report.rebuilt.iter().map(|r| r.round).collect();
    assert_eq!(rounds, vec![7, 8, 9, 10, 11]);
    assert!(
        report
            .rebuilt
            .iter()
            .all(|r| r.reason == RebuildReason::Missing)
    );
    for (&round, ids) in &model {
        assert_eq!(
            l.lookup_txid(&ids[1], round).unwrap(),
            Some(TxRecord { round, index: 1 })
        );
        assert_eq!(l.lookup_txid(&ids[1], (round + 1) % 12).unwrap(), None);
    }
}

/// A database error names the operation that failed and the round: a `blooms` table of another
/// key type (a damaged or foreign file) fails at open as a table that does not open, of no round.
#[test]
fn store_errors_name_the_operation_and_the_round() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (l, _) = open(dir.path(), LedgerConfig::default());
        l.add_block(&encode(3, &[Txid([1; 32])])).unwrap();
    }
    {
        let db = Database::create(dir.path().join(DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        txn.delete_table(BLOOMS).unwrap();
        let other: redb::TableDefinition<'_, &str, u64> = redb::TableDefinition::new("blooms");
        txn.open_table(other).unwrap().insert("x", 1).unwrap();
        txn.commit().unwrap();
    }
    let err = Ledger::open_with_codec(dir.path(), LedgerConfig::default(), TEST_CODEC).unwrap_err();
    assert!(
        matches!(
            err,
            LedgerError::Store {
                round: None,
                op: StoreOp::OpenTable,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "ledger store error while opening a table");
    // A row operation of a round, from redb's own error type.
    let rows: Result<(), _> = Err(redb::StorageError::Corrupted("test".into()));
    let err = super::super::error::At::at(rows, 7).unwrap_err();
    assert!(matches!(
        err,
        LedgerError::Store {
            round: Some(7),
            op: StoreOp::Rows,
            ..
        }
    ));
    assert_eq!(
        err.to_string(),
        "ledger store error while accessing rows (round 7)"
    );
}
