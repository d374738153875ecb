//! Shard files on disk: `--shard I/N` as text ([`Shard`]'s `FromStr`), and
//! the files of `tinct experiment random --shard I/N` read and merged into
//! the results one unsharded run computes ([`merge_files`]), every error
//! naming the file.

use super::random::{Params, Point, Shard, ShardFile, merge};
use crate::format::read_text;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use tinct_base::InputError;

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
pub fn read_shard_file(path: &Path) -> Result<ShardFile, InputError> {
    let text = read_text(path, MAX_SHARD_BYTES, "shard file")?;
    serde_json::from_str(&text).map_err(|e| {
        InputError::new(
            path.display().to_string(),
            "",
            "a shard file of `tinct experiment random --shard`",
            e.to_string(),
        )
        .at_line(Some(e.line()))
    })
}

/// Reads the shard files at `paths` and merges them (they must cover one
/// experiment exactly once); an error names the file at fault.
pub fn merge_files(paths: &[PathBuf]) -> Result<(Params, Vec<Point>), InputError> {
    let files = paths
        .iter()
        .map(|path| read_shard_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    merge(&files).map_err(|e| e.input_error(&|i| paths[i].display().to_string()))
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
            merge_files(&[]).unwrap_err().to_string(),
            format!("shards: {}", super::super::random::MergeError::Empty)
        );
        let missing = PathBuf::from("/nonexistent/shard-1-of-2.json");
        let error = merge_files(std::slice::from_ref(&missing)).unwrap_err();
        assert_eq!(error.file, "/nonexistent/shard-1-of-2.json", "{error}");

        // A shard that is not JSON: its file and line, what was expected.
        let dir = std::env::temp_dir().join(format!("tinct-shards-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad = dir.join("shard-1-of-1.json");
        std::fs::write(&bad, "{\n  \"shard\": x\n}").unwrap();
        let error = merge_files(std::slice::from_ref(&bad)).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(error.file, bad.display().to_string());
        assert_eq!(error.line, Some(2));
        assert_eq!(
            error.expected,
            "a shard file of `tinct experiment random --shard`"
        );
    }

    #[test]
    fn a_merge_error_names_the_shard_at_fault_as_the_file() {
        use super::super::random::MergeError;
        let name = |i: usize| format!("shard-{}.json", i + 1);
        let twice = MergeError::Twice {
            index: 2,
            first: 0,
            shard: 1,
            shards: 3,
        };
        let error = twice.input_error(&name);
        assert_eq!(error.file, "shard-3.json");
        assert_eq!(error.field, "shard");
        assert_eq!(error.found, "1/3 again");
        assert!(error.expected.contains("shard-1.json"), "{error}");
        let missing = MergeError::Missing {
            shards: 3,
            missing: vec![3],
            more: 0,
        };
        assert_eq!(
            missing.input_error(&name).to_string(),
            "shards: expected all 3 shards, found 2 of them, missing 3"
        );
    }
}
