//! Task-set files: TOML and JSON with one schema.
//!
//! ```toml
//! [platform]
//! cores = 4
//! partitions = 32        # N_P
//! memory = "1GiB"        # M_total
//! refill = "45.3us"      # Δ (optional when a calibration is given)
//!
//! [[task]]
//! name = "streamcluster"
//! period = "40ms"
//! deadline = "40ms"      # optional, defaults to the period
//! memory = "18MiB"
//! wcet = { 1 = "22.76ms", 8 = "11.94ms", 12 = "10.30ms" }
//! priority = 1           # optional, 1 is the highest; default deadline-monotonic
//! core = 0               # optional
//! partitions = [1, 2, 3] # optional S(i)
//! ```
//!
//! Every error names the file, the line and the field, what was expected and
//! what was found.
//!
//! The DRAM mapping file a task set can name (`[platform] dram_map`,
//! [`crate::dram_map::DramMap`]) is read and written here too.

mod dram_map;
mod locate;
mod raw;
mod references;
mod validate;
mod write;

use crate::model::TaskSet;
use std::path::Path;

pub use locate::{Seg, SourceIndex};
pub use references::relocated;
pub use write::{to_json, to_text, to_toml, write_file};

/// A task-set file that could not be read, parsed or validated: tinct's
/// one input-error type (file, line, field, expected, found), tinct-base's.
pub use tinct_base::InputError;

/// The syntax of a task-set file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// TOML (`.toml`, and the default).
    Toml,
    /// JSON (`.json`).
    Json,
}

impl Syntax {
    /// Chosen by the file name's extension: `.json` is JSON, anything else TOML.
    pub fn from_path(path: &Path) -> Syntax {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("json") => Syntax::Json,
            _ => Syntax::Toml,
        }
    }
}

/// What a caller can supply for keys a file may leave out.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// Δ to use when `[platform]` has no `refill` (from `tinct bench calibrate`).
    pub default_refill: Option<RefillCalibration>,
}

/// A measured refill time Δ and the partition count it was measured for.
///
/// A partition is LLC / N_P, and refilling it is a sweep over its lines, so
/// Δ scales with the partition size: a task set with another N_P gets
/// Δ · N_P(calibration) / N_P(set), rounded up.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RefillCalibration {
    /// Δ as measured.
    pub refill: crate::units::Nanos,
    /// N_P it was measured with.
    pub partitions: u32,
}

impl RefillCalibration {
    /// Δ for a platform with `partitions` partitions.
    pub fn for_partitions(&self, partitions: u32) -> crate::units::Nanos {
        let scaled = u128::from(self.refill.0) * u128::from(self.partitions);
        crate::units::Nanos(
            u64::try_from(scaled.div_ceil(u128::from(partitions.max(1)))).unwrap_or(u64::MAX),
        )
    }
}

/// A task set and what was filled in from [`LoadOptions`].
#[derive(Clone, Debug, PartialEq)]
pub struct Loaded {
    /// The validated set.
    pub set: TaskSet,
    /// Δ came from the calibration: the file has no `refill` key.
    pub refill_from_calibration: bool,
}

/// Reads, parses and validates a task-set file (which must give `refill`).
pub fn load(path: &Path) -> Result<TaskSet, InputError> {
    load_with(path, &LoadOptions::default()).map(|loaded| loaded.set)
}

/// The largest task-set file tinct reads: 16 MiB (about 100 000 tasks of
/// typical size; a larger file is refused before it is read whole).
pub const MAX_FILE_BYTES: u64 = 16 << 20;

/// The limits a task-set file can break, in their one home
/// ([`crate::limits`]).
pub use crate::limits::{MAX_BUFFER_BYTES, MAX_RUN_TIME_NS, MAX_TASKS, MIN_WORKING_SET_BYTES};

/// The longest task name, in bytes (names are printed in tables).
pub const MAX_NAME_BYTES: usize = 256;

/// Reads at most `limit` bytes of UTF-8 text from `path`, refusing a longer
/// file (regular or not: a pipe, or a device such as /dev/zero, is read up
/// to the limit and no further). `what` names the file kind in messages.
pub fn read_text(path: &Path, limit: u64, what: &str) -> Result<String, InputError> {
    use std::io::Read;
    let file = path.display().to_string();
    let error = |expected: String, found: String| InputError {
        file: file.clone(),
        line: None,
        field: "file".into(),
        expected,
        found,
    };
    let readable = || format!("a readable {what}");
    let handle = std::fs::File::open(path).map_err(|e| error(readable(), e.to_string()))?;
    let mut bytes = Vec::new();
    handle
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| error(readable(), e.to_string()))?;
    if bytes.len() as u64 > limit {
        return Err(error(
            format!("a {what} of at most {limit} bytes"),
            "a larger file (or an endless one, such as a device)".into(),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        error(
            format!("a {what} in UTF-8"),
            format!("invalid UTF-8 at byte {}", e.utf8_error().valid_up_to()),
        )
    })
}

/// Reads, parses and validates a task-set file, with defaults for the keys
/// it may leave out. Files above [`MAX_FILE_BYTES`] are refused.
pub fn load_with(path: &Path, options: &LoadOptions) -> Result<Loaded, InputError> {
    let file = path.display().to_string();
    let text = read_text(path, MAX_FILE_BYTES, "task-set file")?;
    parse_with(&text, &file, Syntax::from_path(path), options)
}

/// Parses and validates task-set text; `file` is only used in messages.
pub fn parse(text: &str, file: &str, syntax: Syntax) -> Result<TaskSet, InputError> {
    parse_with(text, file, syntax, &LoadOptions::default()).map(|loaded| loaded.set)
}

/// [`parse`] with defaults for the keys a file may leave out. Text above
/// [`MAX_FILE_BYTES`] is refused before parsing.
pub fn parse_with(
    text: &str,
    file: &str,
    syntax: Syntax,
    options: &LoadOptions,
) -> Result<Loaded, InputError> {
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(InputError {
            file: file.into(),
            line: None,
            field: "file".into(),
            expected: format!("a task-set file of at most {MAX_FILE_BYTES} bytes"),
            found: format!("{} bytes", text.len()),
        });
    }
    let (raw, index) = match syntax {
        Syntax::Toml => {
            let raw = toml::from_str::<raw::RawTaskSet>(text).map_err(|e| {
                let index = SourceIndex::toml("");
                let line = e.span().map(|s| line_in(text, s.start, &index));
                parse_error(file, line, e.message())
            })?;
            (raw, SourceIndex::toml(text))
        }
        Syntax::Json => {
            let raw = serde_json::from_str::<raw::RawTaskSet>(text).map_err(|e| {
                if let Some(error) = json_token_error(text, file, &e) {
                    return error;
                }
                let message = e.to_string();
                let message = message
                    .rsplit_once(" at line ")
                    .map_or(message.as_str(), |(m, _)| m)
                    .to_string();
                parse_error(file, Some(e.line()), &message)
            })?;
            (raw, SourceIndex::json(text))
        }
    };
    let refill_from_calibration = raw.platform.refill.is_none();
    let set = validate::validate(raw, file, &index, options)?;
    Ok(Loaded {
        set,
        refill_from_calibration,
    })
}

fn line_in(text: &str, offset: usize, _index: &SourceIndex) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// A JSON syntax error at a token a person may well write, in plain words
/// (serde_json says "expected value" for all of them): a byte-order mark
/// at the start, `NaN` or `Infinity` (JSON has neither); `None` for any
/// other error.
fn json_token_error(text: &str, file: &str, e: &serde_json::Error) -> Option<InputError> {
    if !e.is_syntax() {
        return None;
    }
    let error = |expected: &str, found: String| InputError {
        file: file.into(),
        line: Some(e.line()),
        field: "syntax".into(),
        expected: expected.into(),
        found,
    };
    if text.starts_with('\u{feff}') && e.line() == 1 {
        return Some(error(
            "a task-set file (see docs/FORMAT.md) in UTF-8 without a byte-order mark",
            "a byte-order mark (the bytes EF BB BF, U+FEFF) at the start of the file: save it \
             without one"
                .into(),
        ));
    }
    // The token the error points at: serde_json's column is 1-based, in
    // bytes of its line (at or just past the token's start).
    let line_start = text
        .split_inclusive('\n')
        .take(e.line().saturating_sub(1))
        .map(str::len)
        .sum::<usize>();
    let at = (line_start + e.column().saturating_sub(1)).min(text.len());
    let word = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.' | b'_');
    let bytes = text.as_bytes();
    let mut start = at;
    while start > line_start && bytes.get(start - 1).copied().is_some_and(word) {
        start -= 1;
    }
    let end = start + bytes[start..].iter().take_while(|&&b| word(b)).count();
    let token = &text[start..end];
    let bare = token.trim_start_matches(['-', '+']);
    if ["nan", "infinity", "inf"]
        .iter()
        .any(|name| bare.eq_ignore_ascii_case(name))
    {
        return Some(error(
            "a number, or a duration or size as a string such as \"40ms\" (JSON has no NaN or \
             infinity)",
            token.to_string(),
        ));
    }
    // serde_json's "expected value" (or "expected ident", past the first
    // letter of true, false or null): say what stands where a value belongs.
    let message = e.to_string();
    if !message.starts_with("expected value") && !message.starts_with("expected ident") {
        return None;
    }
    let found = match text[at..].chars().next() {
        _ if !token.is_empty() => format!("`{token}` where a value belongs"),
        None => "the end of the text where a value belongs".to_string(),
        Some(c) => format!("{c:?} where a value belongs"),
    };
    Some(error(
        "a value: a string, a number, true, false, a list [...] or a table {...}",
        found,
    ))
}

/// Turns a serde message ("unknown field `x`, expected one of ...") into an
/// [`InputError`] that still names the field.
fn parse_error(file: &str, line: Option<usize>, message: &str) -> InputError {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (field, expected) = rest
            .split_once(", expected ")
            .unwrap_or((rest, "a known key"));
        return InputError {
            file: file.into(),
            line,
            field: format!("unknown key {field}"),
            expected: format!("{expected} (tinct rejects unknown keys rather than ignore them)"),
            found: field.to_string(),
        };
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return InputError {
            file: file.into(),
            line,
            field: format!("missing key {rest}"),
            expected: format!("the required key {rest}"),
            found: "no such key".into(),
        };
    }
    // "invalid type: integer `5`, expected struct RawTaskSet": serde's
    // names of tinct's types are no words for a user.
    if let Some((found, expected)) = message
        .strip_prefix("invalid type: ")
        .and_then(|rest| rest.split_once(", expected "))
        && expected.starts_with("struct Raw")
    {
        let expected = if expected == "struct RawTaskSet" {
            "a task set: a table with [platform] and [[task]] (see docs/FORMAT.md)"
        } else {
            "a table of keys (see docs/FORMAT.md)"
        };
        return InputError {
            file: file.into(),
            line,
            field: "syntax".into(),
            expected: expected.into(),
            found: found.replace('\n', " "),
        };
    }
    InputError {
        file: file.into(),
        line,
        field: "syntax".into(),
        expected: "a task-set file (see docs/FORMAT.md)".into(),
        found: message.replace('\n', " "),
    }
}
