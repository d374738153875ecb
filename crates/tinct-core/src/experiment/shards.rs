//! Shard files on disk: `--shard I/N` as text ([`Shard`]'s `FromStr`), and
//! the files of `tinct experiment random --shard I/N` read and merged into
//! the results one unsharded run computes ([`merge_files`]), every error
//! naming the file.

use super::random::{MergeError, Params, Point, Shard, ShardFile, merge};
use crate::format::read_text;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Shard files hold counts per utilization point: far below this.
const MAX_SHARD_BYTES: u64 = 64 << 20;

impl FromStr for Shard {
    type Err = String;

    /// `I/N` with 1 ≤ I ≤ N, e.g. `3/10`.
    fn from_str(text: &str) -> Result<Shard, String> {
        let bad = || format!("expected I/N with 1 ≤ I ≤ N (e.g. 3/10), found {text:?}");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let (index, count): (u64, u64) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Reads one shard file.
pub fn read_shard_file(path: &Path) -> Result<ShardFile, String> {
    let text = read_text(path, MAX_SHARD_BYTES, "shard file").map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}: expected a shard file of `tinct experiment random --shard`, found {e}",
            path.display(),
            e.line()
        )
    })
}

/// Reads the shard files at `paths` and merges them (they must cover one
/// experiment exactly once); an error names the file at fault.
pub fn merge_files(paths: &[PathBuf]) -> Result<(Params, Vec<Point>), String> {
    let files = paths
        .iter()
        .map(|path| read_shard_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    merge(&files).map_err(|e| {
        let name = |i: usize| paths[i].display().to_string();
        match &e {
            MergeError::Different { index } => format!("{}: {e} as {}", name(*index), name(0)),
            MergeError::OutOfRange { index, .. } | MergeError::Counts { index, .. } => {
                format!("{}: {e}", name(*index))
            }
            MergeError::Twice { index, first, .. } => {
                format!("{}: {e} (also as {})", name(*index), name(*first))
            }
            MergeError::Empty | MergeError::Missing { .. } => format!("shards: {e}"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_is_i_of_n_with_i_in_range() {
        assert_eq!(
            "3/10".parse(),
            Ok(Shard {
                index: 3,
                count: 10
            })
        );
        assert_eq!(" 1 / 1 ".parse(), Ok(Shard::ALL));
        for bad in ["0/3", "4/3", "3", "a/b", ""] {
            let error = bad.parse::<Shard>().unwrap_err();
            assert!(error.starts_with("expected I/N"), "{bad}: {error}");
        }
    }

    #[test]
    fn no_shards_and_unreadable_shards_are_refused_naming_them() {
        assert_eq!(
            merge_files(&[]).unwrap_err(),
            format!("shards: {}", MergeError::Empty)
        );
        let missing = PathBuf::from("/nonexistent/shard-1-of-2.json");
        let error = merge_files(std::slice::from_ref(&missing)).unwrap_err();
        assert!(error.contains("/nonexistent/shard-1-of-2.json"), "{error}");
    }
}
