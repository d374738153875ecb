//! CPU lists in the kernel's text form (`0-3,8,10-11`), as found in
//! `/sys/devices/system/cpu/online`, `shared_cpu_list`, `isolcpus=` and more:
//! tinct-base's list grammar (`tinct_base::list`, the one reader of the
//! colour, bank and partition lists too), with tinct-sys's error.

use crate::error::{Error, Result};
pub use tinct_base::list::{MAX_LIST_LEN, format_list as format_cpu_list};

/// Parses a kernel CPU list such as `"0-3,8,10-11"` into sorted, unique CPU
/// numbers: `tinct_base::list::parse_list`, whose error becomes
/// [`Error::CpuList`].
///
/// An empty (or all-whitespace) string is the empty list. Stride syntax
/// (`0-7:2`, used by `isolcpus=`) is accepted: `a-b:s` takes every `s`-th CPU.
/// Lists naming more than [`MAX_LIST_LEN`] numbers (repeats counted) are refused.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>> {
    tinct_base::list::parse_list(text).map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_cpu_list_and_name_the_text() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        let err = parse_cpu_list("3-1").unwrap_err().to_string();
        assert_eq!(
            err,
            "invalid CPU list \"3-1\": range \"3-1\" runs backwards"
        );
        assert_eq!(format_cpu_list(&[3, 0, 1, 2]), "0-3");
    }
}
