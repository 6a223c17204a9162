//! Block sources: one block file, a directory of block files, or a tar / tar.bz2 archive of them
//! (archives may nest), read as raw blocks in round order.
//!
//! [`BlockSource::open`] decides what a path is:
//! - a directory: its regular files whose names are rounds (the rule below), read one at a time
//!   in increasing round order; subdirectories and other files are skipped;
//! - a file starting with the bzip2 magic `BZh` (a tar.bz2) or holding the ustar magic at byte
//!   257 (a tar): an archive;
//! - any other file: one block (its round from its name when the name is a round, else unknown).
//!
//! Inside an archive, an entry is a nested archive when its name ends in `.tar`, `.tar.bz2`,
//! `.tbz2` or `.tbz` (nesting up to [`MAX_NESTING`] deep), a block when its name is a round,
//! and skipped otherwise (directories, `genesis.json`, sqlite files...). algod's own archives
//! look like that: `dataset2.tar.bz2` holds `algod/genesis.json`, a sqlite file and
//! `blocktars/0_377.tar.bz2`, whose entries are named `0` to `377`.
//!
//! **Round names**: a file or entry is a block when the last component of its name, up to its
//! first `.`, is 1 to 20 ASCII digits that fit a u64 (`135`, `000135`, `135.msgp`, `135.block`);
//! that number is its round. Two blocks of the same round in one source are an error.
//!
//! **Streaming and memory**: an archive is read once, as a stream (bzip2 is decompressed on the
//! fly, nested archives are read from inside the outer stream, skipped entries are never kept),
//! but tar entries come in any order (algod's archives are not sorted), so the blocks of an
//! archive are held in memory until the archive has been read, then yielded in round order.
//! Directories hold only the file list.
//!
//! ```no_run
//! use txgate_algorand::source::BlockSource;
//! for raw in BlockSource::open("dataset2.tar.bz2")? {
//!     let raw = raw?;
//!     println!("{} (round {:?}): {} bytes", raw.name, raw.round, raw.bytes.len());
//! }
//! # Ok::<(), txgate_algorand::source::SourceError>(())
//! ```

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek};
use std::path::{Path, PathBuf};

use crate::ids::Round;

/// How deep archives may nest inside an archive (the outer one is level 0).
pub const MAX_NESTING: usize = 4;

/// One block's bytes and where they came from.
///
/// `#[non_exhaustive]`: a [`BlockSource`] yields them, and a later version may say more about
/// where a block came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RawBlock {
    /// The file path, or the entry path inside the archive (nested archives joined with `/`,
    /// e.g. `blocktars/0_377.tar.bz2/135`).
    pub name: String,
    /// The round its name says (see the module docs), `None` for a single file whose name is
    /// not a round.
    pub round: Option<Round>,
    /// The block's msgpack bytes, as stored.
    pub bytes: Vec<u8>,
}

/// Why a source cannot be read. Every variant names the file, and the archive entry when there
/// is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The path cannot be opened or read.
    #[error("cannot read {}", .path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The archive is corrupt or truncated (bad bzip2 stream, bad tar header...).
    #[error("{}: corrupt archive{}", .path.display(), in_entry(.entry))]
    Archive {
        /// The archive file.
        path: PathBuf,
        /// The entry being read, when the damage is inside one.
        entry: Option<String>,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Two blocks of the same round.
    #[error("{}: round {round} appears twice: {first} and {second}", .path.display())]
    DuplicateRound {
        /// The directory or archive.
        path: PathBuf,
        /// The round.
        round: Round,
        /// The first file or entry.
        first: String,
        /// The second.
        second: String,
    },
    /// Archives nested deeper than [`MAX_NESTING`].
    #[error("{}: entry {entry}: archives nested more than {MAX_NESTING} deep", .path.display())]
    TooDeep {
        /// The outer archive file.
        path: PathBuf,
        /// The nested archive entry.
        entry: String,
    },
}

fn in_entry(entry: &Option<String>) -> String {
    entry
        .as_ref()
        .map(|e| format!(" in entry {e}"))
        .unwrap_or_default()
}

/// The round a file or entry name stands for (see the module docs), or `None` if it is not a
/// block's name.
pub fn round_of_name(name: &str) -> Option<Round> {
    let last = name.rsplit(['/', '\\']).next()?;
    let stem = last.split('.').next()?;
    if stem.is_empty() || stem.len() > 20 || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// Whether an archive entry name is a nested archive, and whether it is bzip2-compressed.
fn nested_archive(name: &str) -> Option<bool> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tar.bz2") || lower.ends_with(".tbz2") || lower.ends_with(".tbz") {
        Some(true)
    } else if lower.ends_with(".tar") {
        Some(false)
    } else {
        None
    }
}

/// Raw blocks from a file, a directory or an archive, in round order (see the module docs).
///
/// Iterating yields `Err` for an unreadable file or a corrupt archive; after an archive error
/// the iterator ends.
#[derive(Debug)]
pub struct BlockSource {
    state: State,
}

#[derive(Debug)]
enum State {
    /// Files to read one by one, in order.
    Files(std::vec::IntoIter<(Option<Round>, PathBuf)>),
    /// An archive not read yet.
    Archive {
        path: PathBuf,
        file: File,
        bzip2: bool,
    },
    /// The blocks of an archive, read.
    Blocks(std::collections::btree_map::IntoIter<Round, RawBlock>),
    Done,
}

impl BlockSource {
    /// Opens `path` as a block source (see the module docs for what each kind of path gives).
    ///
    /// # Errors
    /// [`SourceError::Io`] when the path does not exist or cannot be read;
    /// [`SourceError::DuplicateRound`] for a directory with two files of one round. Damage
    /// inside an archive shows up while iterating.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SourceError> {
        let path = path.as_ref();
        let io_err = |source| SourceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.is_dir() {
            return Self::open_dir(path);
        }
        let mut file = File::open(path).map_err(io_err)?;
        let mut head = [0u8; 262];
        let n = read_up_to(&mut file, &mut head).map_err(io_err)?;
        file.rewind().map_err(io_err)?;
        let head = &head[..n];
        let state = if head.starts_with(b"BZh") {
            State::Archive {
                path: path.to_path_buf(),
                file,
                bzip2: true,
            }
        } else if head.len() >= 262 && &head[257..262] == b"ustar" {
            State::Archive {
                path: path.to_path_buf(),
                file,
                bzip2: false,
            }
        } else {
            let round = round_of_name(&path.to_string_lossy());
            State::Files(vec![(round, path.to_path_buf())].into_iter())
        };
        Ok(Self { state })
    }

    fn open_dir(dir: &Path) -> Result<Self, SourceError> {
        let io_err = |path: &Path, source| SourceError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut files: Vec<(Round, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
            let entry = entry.map_err(|e| io_err(dir, e))?;
            let path = entry.path();
            let Some(round) = round_of_name(&entry.file_name().to_string_lossy()) else {
                continue;
            };
            // Follows symlinks: a link to a block file is a block file.
            if std::fs::metadata(&path)
                .map_err(|e| io_err(&path, e))?
                .is_file()
            {
                files.push((round, path));
            }
        }
        files.sort();
        if let Some(w) = files.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(SourceError::DuplicateRound {
                path: dir.to_path_buf(),
                round: w[0].0,
                first: w[0].1.display().to_string(),
                second: w[1].1.display().to_string(),
            });
        }
        let files: Vec<_> = files.into_iter().map(|(r, p)| (Some(r), p)).collect();
        Ok(Self {
            state: State::Files(files.into_iter()),
        })
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Iterator for BlockSource {
    type Item = Result<RawBlock, SourceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match &mut self.state {
                State::Files(files) => {
                    let (round, path) = files.next()?;
                    return Some(
                        std::fs::read(&path)
                            .map(|bytes| RawBlock {
                                name: path.display().to_string(),
                                round,
                                bytes,
                            })
                            .map_err(|source| SourceError::Io { path, source }),
                    );
                }
                State::Archive { .. } => {
                    let State::Archive { path, file, bzip2 } =
                        std::mem::replace(&mut self.state, State::Done)
                    else {
                        return None;
                    };
                    let mut blocks = BTreeMap::new();
                    let mut reader = BufReader::new(file);
                    let read = if bzip2 {
                        let mut bz = bzip2::read::MultiBzDecoder::new(reader);
                        read_archive(&mut bz, &path, "", 0, &mut blocks)
                    } else {
                        read_archive(&mut reader, &path, "", 0, &mut blocks)
                    };
                    if let Err(e) = read {
                        return Some(Err(e));
                    }
                    self.state = State::Blocks(blocks.into_iter());
                }
                State::Blocks(blocks) => return blocks.next().map(|(_, b)| Ok(b)),
                State::Done => return None,
            }
        }
    }
}

/// Reads a tar stream, adding its blocks (and those of nested archives) to `out`.
fn read_archive(
    reader: &mut dyn Read,
    path: &Path,
    prefix: &str,
    depth: usize,
    out: &mut BTreeMap<Round, RawBlock>,
) -> Result<(), SourceError> {
    let archive_err = |entry: Option<&str>, source| SourceError::Archive {
        path: path.to_path_buf(),
        entry: entry.map(str::to_owned),
        source,
    };
    let mut archive = tar::Archive::new(reader);
    let entries = archive.entries().map_err(|e| archive_err(None, e))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| archive_err(None, e))?;
        let entry_path = entry
            .path()
            .map(|p| p.to_string_lossy().into_owned())
            .map_err(|e| archive_err(None, e))?;
        let name = format!("{prefix}{entry_path}");
        if !entry.header().entry_type().is_file() {
            continue;
        }
        if let Some(bz) = nested_archive(&entry_path) {
            if depth + 1 > MAX_NESTING {
                return Err(SourceError::TooDeep {
                    path: path.to_path_buf(),
                    entry: name,
                });
            }
            let nested_prefix = format!("{name}/");
            if bz {
                let mut bz = bzip2::read::MultiBzDecoder::new(&mut entry);
                read_archive(&mut bz, path, &nested_prefix, depth + 1, out)?;
            } else {
                read_archive(&mut entry, path, &nested_prefix, depth + 1, out)?;
            }
            continue;
        }
        let Some(round) = round_of_name(&entry_path) else {
            continue;
        };
        // The header's size bounds the first allocation; a lying header only costs a regrow.
        let hint = usize::try_from(entry.size()).unwrap_or(0).min(1 << 24);
        let mut bytes = Vec::with_capacity(hint);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| archive_err(Some(&name), e))?;
        if let Some(first) = out.get(&round) {
            return Err(SourceError::DuplicateRound {
                path: path.to_path_buf(),
                round,
                first: first.name.clone(),
                second: name,
            });
        }
        out.insert(
            round,
            RawBlock {
                name,
                round: Some(round),
                bytes,
            },
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_names() {
        assert_eq!(round_of_name("135"), Some(135));
        assert_eq!(round_of_name("blocktars/000135.msgp"), Some(135));
        assert_eq!(round_of_name("dir/7.block.gz"), Some(7));
        assert_eq!(round_of_name("18446744073709551615"), Some(u64::MAX));
        assert_eq!(round_of_name("18446744073709551616"), None);
        for not in [
            "",
            ".5",
            "0_377.tar.bz2",
            "genesis.json",
            "12a",
            "-1",
            "dir/",
        ] {
            assert_eq!(round_of_name(not), None, "{not}");
        }
        assert_eq!(nested_archive("blocktars/0_377.tar.bz2"), Some(true));
        assert_eq!(nested_archive("x.TAR"), Some(false));
        assert_eq!(nested_archive("135"), None);
    }

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data).unwrap();
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn nested_tar_in_round_order_skipping_non_blocks() {
        let inner = tar_of(&[("10", b"ten"), ("2", b"two"), ("notes.txt", b"x")]);
        let mut bz = Vec::new();
        {
            let mut w = bzip2::write::BzEncoder::new(&mut bz, bzip2::Compression::fast());
            std::io::Write::write_all(&mut w, &inner).unwrap();
            w.finish().unwrap();
        }
        let outer = tar_of(&[
            ("a/genesis.json", b"{}"),
            ("a/in.tar.bz2", &bz),
            ("5.block", b"five"),
        ]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outer.tar");
        std::fs::write(&path, &outer).unwrap();
        let got: Vec<RawBlock> = BlockSource::open(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let view: Vec<(&str, Option<u64>, &[u8])> = got
            .iter()
            .map(|b| (b.name.as_str(), b.round, &b.bytes[..]))
            .collect();
        assert_eq!(
            view,
            vec![
                ("a/in.tar.bz2/2", Some(2), &b"two"[..]),
                ("5.block", Some(5), b"five"),
                ("a/in.tar.bz2/10", Some(10), b"ten"),
            ]
        );

        let dup = tar_of(&[("3", b"a"), ("x/3.msgp", b"b")]);
        std::fs::write(&path, &dup).unwrap();
        let err = BlockSource::open(&path)
            .unwrap()
            .next()
            .unwrap()
            .unwrap_err();
        assert!(
            matches!(err, SourceError::DuplicateRound { round: 3, .. }),
            "{err}"
        );
    }
}
