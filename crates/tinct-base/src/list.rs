//! Lists of numbers in the kernel's text form, `0-3,8,10-11`: CPUs
//! (`/sys/devices/system/cpu/online`, `shared_cpu_list`, `isolcpus=`),
//! page colours (`--colors 0-15`, `TINCT_COLORS`), colour bits
//! (`TINCT_COLOR_BITS=12-16`), DRAM banks and controllers, a task's
//! partitions (`partitions = "1-8,12"`) and the bit ranges of a perf PMU's
//! format files (`config:0-7,32-35`). One grammar, read here:
//!
//! - items separated by `,`, each a number `n`, a range `a-b` (inclusive,
//!   `a ≤ b`) or a range with a stride `a-b:s` (every `s`-th number from
//!   `a`, as `isolcpus=` writes it; `s ≥ 1`);
//! - spaces around items and numbers are allowed; an empty (or
//!   all-whitespace) text is the empty list, an empty item is an error.
//!
//! [`parse_spans`] gives the items as written, unexpanded (a reader that
//! checks bounds before it walks a range: `1-99999999999` is one span);
//! [`parse_list`] expands them into sorted, unique numbers, at most
//! [`MAX_LIST_LEN`] of them; [`format_list`] writes numbers back in the
//! compact form.
//!
//! ```
//! use tinct_base::list::{Span, format_list, parse_list, parse_spans};
//!
//! assert_eq!(parse_list("0-3,8,10-11")?, vec![0, 1, 2, 3, 8, 10, 11]);
//! assert_eq!(parse_list("0-7:2")?, vec![0, 2, 4, 6]);
//! assert_eq!(format_list(&[8, 0, 1, 2, 3]), "0-3,8");
//! assert_eq!(
//!     parse_spans("1-8,12")?,
//!     vec![Span::range(1, 8), Span::single(12)]
//! );
//! # Ok::<(), tinct_base::list::ListError>(())
//! ```

/// The most numbers a list may hold: every page color, DRAM bank or
/// controller index of at most 16 address functions (2^16), and far more
/// CPUs than Linux supports (`NR_CPUS` ≤ 8192). The limit keeps a typo such
/// as `0-900000016` from expanding into gigabytes; single large numbers
/// are left to the caller, which knows what exists.
pub const MAX_LIST_LEN: usize = 1 << 16;

/// A text that is not a list, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid list {text:?}: {reason}")]
pub struct ListError {
    /// The whole text that was read.
    pub text: String,
    /// What is wrong with it, naming the item.
    pub reason: String,
}

/// One item of a list: the numbers from `first` to `last` (inclusive),
/// every `stride`-th (`first ≤ last`, `stride ≥ 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The first number.
    pub first: u64,
    /// The last number the range reaches (taken if the stride lands on it).
    pub last: u64,
    /// The step, at least 1.
    pub stride: u64,
}

impl Span {
    /// One number, `n`.
    pub const fn single(n: u64) -> Self {
        Self::range(n, n)
    }

    /// Every number from `first` to `last`, `a-b`.
    pub const fn range(first: u64, last: u64) -> Self {
        Self {
            first,
            last,
            stride: 1,
        }
    }

    /// How many numbers the span takes.
    pub const fn count(&self) -> u64 {
        ((self.last - self.first) / self.stride).saturating_add(1)
    }

    /// The numbers the span takes, in increasing order.
    pub fn numbers(&self) -> impl Iterator<Item = u64> + use<> {
        let stride = usize::try_from(self.stride).unwrap_or(usize::MAX);
        (self.first..=self.last).step_by(stride)
    }
}

/// The items of `text` with the text of each, in the order written.
fn spans_with_text(text: &str) -> Result<Vec<(&str, Span)>, ListError> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let invalid = |reason: String| ListError {
        text: text.to_string(),
        reason,
    };
    let number = |s: &str| -> Result<u64, ListError> {
        s.trim()
            .parse()
            .map_err(|_| invalid(format!("{s:?} is not a number")))
    };
    let mut spans = Vec::new();
    for item in trimmed.split(',') {
        let item = item.trim();
        let (range, stride) = match item.split_once(':') {
            Some((range, stride)) => {
                let stride: u64 = stride
                    .trim()
                    .parse()
                    .map_err(|_| invalid(format!("stride {stride:?} is not a number")))?;
                if stride == 0 {
                    return Err(invalid("stride 0".into()));
                }
                (range, stride)
            }
            None => (item, 1),
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
        spans.push((
            item,
            Span {
                first,
                last,
                stride,
            },
        ));
    }
    Ok(spans)
}

/// The items of a list as written, in order, not expanded: for a reader
/// that checks each span's bounds before it takes a number (a task's
/// partitions, a PMU format's bits). An empty text is no spans.
pub fn parse_spans(text: &str) -> Result<Vec<Span>, ListError> {
    Ok(spans_with_text(text)?
        .into_iter()
        .map(|(_, span)| span)
        .collect())
}

/// Parses a list such as `"0-3,8,10-11"` into sorted, unique numbers.
///
/// An empty (or all-whitespace) string is the empty list. Stride syntax
/// (`0-7:2`, used by `isolcpus=`) is accepted: `a-b:s` takes every `s`-th
/// number. Numbers above `u32::MAX` and lists naming more than
/// [`MAX_LIST_LEN`] numbers (repeats counted) are refused, the latter
/// before anything is expanded.
pub fn parse_list(text: &str) -> Result<Vec<u32>, ListError> {
    let mut numbers = Vec::new();
    let mut count = 0u64;
    for (item, span) in spans_with_text(text)? {
        let invalid = |reason: String| ListError {
            text: text.to_string(),
            reason,
        };
        if span.last > u64::from(u32::MAX) {
            return Err(invalid(format!(
                "{item:?} names {}, above {}, the largest number of a list",
                span.last,
                u32::MAX
            )));
        }
        count += span.count();
        if count > MAX_LIST_LEN as u64 {
            return Err(invalid(format!(
                "{item:?} makes the list longer than {MAX_LIST_LEN} numbers, the most a list may hold"
            )));
        }
        // Checked against u32::MAX above.
        numbers.extend(span.numbers().map(|n| n as u32));
    }
    numbers.sort_unstable();
    numbers.dedup();
    Ok(numbers)
}

/// Formats numbers in the kernel's compact form: `[0,1,2,3,8]` → `"0-3,8"`
/// (sorted, repeats once); [`parse_list`] reads it back.
pub fn format_list(numbers: &[u32]) -> String {
    let mut sorted = numbers.to_vec();
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
            parse_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_list("").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_list(" 5 ").unwrap(), vec![5]);
        assert_eq!(parse_list("0-7:2").unwrap(), vec![0, 2, 4, 6]);
        assert_eq!(parse_list("3,1,3").unwrap(), vec![1, 3]);
    }

    #[test]
    fn rejects_garbage_with_the_reason() {
        for bad in ["a", "3-1", "1-", "0-3:0", "1,,2"] {
            let err = parse_list(bad).unwrap_err().to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
        let err = parse_list("3-1").unwrap_err();
        assert_eq!(err.reason, "range \"3-1\" runs backwards");
        assert_eq!(
            parse_list("0-3:x").unwrap_err().reason,
            "stride \"x\" is not a number"
        );
        assert_eq!(parse_list("0-3:0").unwrap_err().reason, "stride 0");
        assert!(
            parse_list("4294967296")
                .unwrap_err()
                .reason
                .contains("4294967295")
        );
    }

    #[test]
    fn formats_compactly_and_round_trips() {
        assert_eq!(format_list(&[8, 0, 1, 2, 3, 10, 11]), "0-3,8,10-11");
        assert_eq!(format_list(&[]), "");
        for text in ["0", "0-1", "0-3,8,10-11", "1,3,5-6"] {
            assert_eq!(format_list(&parse_list(text).unwrap()), text);
        }
    }

    /// The colour lists of `--colors` and `TINCT_COLORS` (every other
    /// colour of 512: `0-510:2`), colour bits and bank lists read alike.
    #[test]
    fn colour_bit_and_bank_lists() {
        let even = parse_list("0-510:2").unwrap();
        assert_eq!(even.len(), 256);
        assert_eq!((even[0], even[255]), (0, 510));
        assert_eq!(format_list(&parse_list("12-16").unwrap()), "12-16");
        assert_eq!(parse_list("0-3, 6").unwrap(), vec![0, 1, 2, 3, 6]);
        assert_eq!(parse_list("1-7:3").unwrap(), vec![1, 4, 7]);
        assert_eq!(
            parse_list("1-8:3").unwrap(),
            vec![1, 4, 7],
            "8 is not on the stride"
        );
    }

    /// The task set's partition strings (`partitions = "1-8,12"`): spans in
    /// the order written, a huge range one span (its bound is checked
    /// before anything is walked), spaces allowed.
    #[test]
    fn spans_keep_the_order_and_do_not_expand() {
        assert_eq!(
            parse_spans("1-8,12").unwrap(),
            vec![Span::range(1, 8), Span::single(12)]
        );
        assert_eq!(
            parse_spans(" 5 , 1 - 2 ").unwrap(),
            vec![Span::single(5), Span::range(1, 2)]
        );
        let huge = parse_spans("1-99999999999").unwrap();
        assert_eq!(huge, vec![Span::range(1, 99_999_999_999)]);
        assert_eq!(huge[0].count(), 99_999_999_999);
        assert_eq!(parse_spans("").unwrap(), Vec::new());
        assert!(parse_spans("3-1").is_err());
        assert!(parse_spans("-1").is_err(), "no negative numbers");
        let strided = parse_spans("0-7:2").unwrap()[0];
        assert_eq!(strided.numbers().collect::<Vec<_>>(), vec![0, 2, 4, 6]);
        assert_eq!(strided.count(), 4);
    }

    /// A PMU format file's bit ranges (`config:0-7,32-35`): the part after
    /// the colon is a list of spans.
    #[test]
    fn pmu_bit_ranges_are_spans() {
        assert_eq!(
            parse_spans("0-7,32-35").unwrap(),
            vec![Span::range(0, 7), Span::range(32, 35)]
        );
        assert_eq!(parse_spans("18").unwrap(), vec![Span::single(18)]);
        assert!(parse_spans("a-b").is_err());
        assert!(parse_spans("8-7").is_err());
    }

    #[test]
    fn huge_lists_are_refused_before_expanding_naming_the_item() {
        let err = parse_list("0-900000016,3").unwrap_err();
        assert!(
            err.reason.contains("\"0-900000016\"") && err.reason.contains("65536"),
            "{err}"
        );
        let err = parse_list("0-65535,70000-70001").unwrap_err();
        assert!(err.reason.contains("\"70000-70001\""), "{err}");
        assert_eq!(
            parse_list(&format!("0-{}", MAX_LIST_LEN - 1))
                .unwrap()
                .len(),
            MAX_LIST_LEN
        );
        assert_eq!(
            parse_list("0-4294967295:65536").unwrap().len(),
            MAX_LIST_LEN
        );
        assert_eq!(parse_list("4294967295").unwrap(), vec![u32::MAX]);
    }
}
