//! CPU lists in the kernel's text form (`0-3,8,10-11`), as found in
//! `/sys/devices/system/cpu/online`, `shared_cpu_list`, `isolcpus=` and more.

use crate::error::{Error, Result};

/// The most numbers a list may hold: every page color, DRAM bank or
/// controller index of at most 16 address functions (2^16), and far more
/// CPUs than Linux supports (`NR_CPUS` ≤ 8192). The limit keeps a typo such
/// as `0-900000016` from expanding into gigabytes; single large numbers
/// are left to the caller, which knows what exists.
pub const MAX_LIST_LEN: usize = 1 << 16;

/// Parses a kernel CPU list such as `"0-3,8,10-11"` into sorted, unique CPU numbers.
///
/// An empty (or all-whitespace) string is the empty list. Stride syntax
/// (`0-7:2`, used by `isolcpus=`) is accepted: `a-b:s` takes every `s`-th CPU.
/// Lists naming more than [`MAX_LIST_LEN`] numbers (repeats counted) are refused.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>> {
    let trimmed = text.trim();
    let mut cpus = Vec::new();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    let invalid = |reason: String| Error::CpuList {
        text: text.to_string(),
        reason,
    };
    for item in trimmed.split(',') {
        let item = item.trim();
        let (range, stride) = match item.split_once(':') {
            Some((range, stride)) => {
                let stride: u32 = stride
                    .parse()
                    .map_err(|_| invalid(format!("stride {stride:?} is not a number")))?;
                if stride == 0 {
                    return Err(invalid("stride 0".into()));
                }
                (range, stride)
            }
            None => (item, 1),
        };
        let number = |s: &str| -> Result<u32> {
            s.trim()
                .parse()
                .map_err(|_| invalid(format!("{s:?} is not a CPU number")))
        };
        let (first, last) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let n = number(range)?;
                (n, n)
            }
        };
        if last < first {
            return Err(invalid(format!("range {range:?} runs backwards")));
        }
        let count = u64::from(last - first) / u64::from(stride) + 1;
        if cpus.len() as u64 + count > MAX_LIST_LEN as u64 {
            return Err(invalid(format!(
                "{item:?} makes the list longer than {MAX_LIST_LEN} numbers, the most a list may hold"
            )));
        }
        cpus.extend((first..=last).step_by(stride as usize));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Formats CPU numbers in the kernel's compact form: `[0,1,2,3,8]` → `"0-3,8"`.
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ranges_singles_and_strides() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list(" 5 ").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list("0-7:2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse_cpu_list("3,1,3").unwrap(), vec![1, 3]);
    }

    #[test]
    fn rejects_garbage_with_the_reason() {
        for bad in ["a", "3-1", "1-", "0-3:0", "1,,2"] {
            let err = parse_cpu_list(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn formats_compactly_and_round_trips() {
        assert_eq!(format_cpu_list(&[8, 0, 1, 2, 3, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[]), "");
        for text in ["0", "0-1", "0-3,8,10-11", "1,3,5-6"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
    }
}
