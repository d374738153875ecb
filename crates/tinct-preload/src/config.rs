//! The shim's settings, read from the environment once, when the pool is
//! built. Every error names the variable, what was expected and what was
//! found.

use std::path::PathBuf;

/// `TINCT_COLORS`: the page colors to serve the heap from, e.g. `0-15,32`.
pub const COLORS: &str = "TINCT_COLORS";
/// `TINCT_BANKS`: DRAM banks (not supported by the shim yet: refused).
pub const BANKS: &str = "TINCT_BANKS";
/// `TINCT_COLOR_BITS`: physical address bits that select the color, e.g.
/// `12-20` (default: derived from the last-level cache geometry).
pub const COLOR_BITS: &str = "TINCT_COLOR_BITS";
/// `TINCT_POOL`: the pool size, e.g. `512MiB` (all colors are mapped, only
/// the requested ones are kept).
pub const POOL: &str = "TINCT_POOL";
/// `TINCT_STRICT=1`: a full pool fails the allocation (ENOMEM) instead of
/// falling back to uncolored memory.
pub const STRICT: &str = "TINCT_STRICT";
/// `TINCT_STATS=1`: print a summary on stderr at exit.
pub const STATS: &str = "TINCT_STATS";
/// `TINCT_ALLOW_UNCOLORED=1`: run even when frame numbers are unreadable.
pub const ALLOW_UNCOLORED: &str = "TINCT_ALLOW_UNCOLORED";
/// `TINCT_PAGE_REPORT=PATH`: at exit, write every heap page handed out to
/// `PATH.<pid>` and stop (SIGSTOP) until continued, so that another process
/// can translate the pages through `/proc/<pid>/pagemap` while they are
/// still mapped. For tests and audits. In this mode freed multi-page blocks
/// are kept where they were handed out (reused, but not returned to the
/// pool until it runs full), so their addresses stay meaningful.
pub const PAGE_REPORT: &str = "TINCT_PAGE_REPORT";

/// Default pool size: 512 MiB.
pub const DEFAULT_POOL: u64 = 512 << 20;

/// The settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Requested colors, sorted and unique.
    pub colors: Vec<u32>,
    /// Explicit color bits, if given.
    pub color_bits: Option<Vec<u32>>,
    /// Pool size in bytes.
    pub pool_bytes: u64,
    /// Fail instead of falling back when the colored pool is full.
    pub strict: bool,
    /// Print a summary at exit.
    pub stats: bool,
    /// Run without placement control when frame numbers are unreadable.
    pub allow_uncolored: bool,
    /// Where to write the page report.
    pub page_report: Option<PathBuf>,
}

/// Reads the configuration through `lookup` (the environment in the shim,
/// a map in tests).
pub fn parse(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
    let colors_text = lookup(COLORS).ok_or_else(|| {
        format!(
            "{COLORS} is not set: expected the page colors to serve the heap from, e.g. \
             {COLORS}=0-15 (see `tinct doctor` for the number of colors; `tinct exec --colors` \
             sets it)"
        )
    })?;
    let colors = parse_colors(&colors_text)?;
    if let Some(banks) = lookup(BANKS).filter(|b| !b.trim().is_empty()) {
        return Err(format!(
            "{BANKS}={banks:?}: bank-restricted malloc is not supported by the shim yet; \
             expected {BANKS} unset (bank-aware pages are available through the tinct-mem \
             C ABI, tinct_pool_alloc_banks)"
        ));
    }
    let pool_bytes = match lookup(POOL) {
        None => DEFAULT_POOL,
        Some(text) => {
            let bytes = tinct_core::units::parse_size(&text)
                .map_err(|e| format!("{POOL}={text:?}: expected a size such as 512MiB ({e})"))?
                .0;
            if bytes < 1 << 20 {
                return Err(format!("{POOL}={text:?}: expected at least 1MiB"));
            }
            bytes
        }
    };
    let color_bits = match lookup(COLOR_BITS).filter(|b| !b.trim().is_empty()) {
        None => None,
        Some(text) => Some(tinct_sys::parse_cpu_list(&text).map_err(|e| {
            format!("{COLOR_BITS}={text:?}: expected address bits such as 12-20 ({e})")
        })?),
    };
    Ok(Config {
        colors,
        color_bits,
        pool_bytes,
        strict: flag(&lookup, STRICT)?,
        stats: flag(&lookup, STATS)?,
        allow_uncolored: flag(&lookup, ALLOW_UNCOLORED)?,
        page_report: lookup(PAGE_REPORT)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from),
    })
}

/// A color list in the kernel's CPU-list syntax: `0-15,32`.
pub fn parse_colors(text: &str) -> Result<Vec<u32>, String> {
    let colors = tinct_sys::parse_cpu_list(text)
        .map_err(|e| format!("{COLORS}={text:?}: expected a list such as 0-15,32 ({e})"))?;
    if colors.is_empty() {
        return Err(format!("{COLORS}={text:?}: expected at least one color"));
    }
    Ok(colors)
}

fn flag(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Result<bool, String> {
    match lookup(name).as_deref().map(str::trim) {
        None | Some("") | Some("0") | Some("false") | Some("no") => Ok(false),
        Some("1") | Some("true") | Some("yes") => Ok(true),
        Some(other) => Err(format!("{name}={other:?}: expected 1 or 0")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse_map(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(|k| map.get(k).cloned())
    }

    #[test]
    fn reads_every_setting() {
        let config = parse_map(&[
            (COLORS, "0-3,32"),
            (POOL, "64MiB"),
            (STRICT, "1"),
            (STATS, "1"),
            (PAGE_REPORT, "/tmp/r"),
            (COLOR_BITS, "12-14"),
        ])
        .unwrap();
        assert_eq!(config.colors, vec![0, 1, 2, 3, 32]);
        assert_eq!(config.pool_bytes, 64 << 20);
        assert_eq!(config.color_bits, Some(vec![12, 13, 14]));
        assert!(config.strict && config.stats && !config.allow_uncolored);
        assert_eq!(config.page_report, Some(PathBuf::from("/tmp/r")));
        let defaults = parse_map(&[(COLORS, "7")]).unwrap();
        assert_eq!(defaults.pool_bytes, DEFAULT_POOL);
        assert!(!defaults.strict && !defaults.stats && defaults.page_report.is_none());
    }

    #[test]
    fn errors_name_the_variable_and_what_was_found() {
        let missing = parse_map(&[]).unwrap_err();
        assert!(missing.contains("TINCT_COLORS is not set"), "{missing}");
        let bad = parse_map(&[(COLORS, "3-x")]).unwrap_err();
        assert!(bad.contains("TINCT_COLORS=\"3-x\""), "{bad}");
        let size = parse_map(&[(COLORS, "1"), (POOL, "lots")]).unwrap_err();
        assert!(
            size.contains("TINCT_POOL=\"lots\"") && size.contains("512MiB"),
            "{size}"
        );
        let tiny = parse_map(&[(COLORS, "1"), (POOL, "4KiB")]).unwrap_err();
        assert!(tiny.contains("at least 1MiB"), "{tiny}");
        let flag = parse_map(&[(COLORS, "1"), (STRICT, "maybe")]).unwrap_err();
        assert!(
            flag.contains("TINCT_STRICT=\"maybe\": expected 1 or 0"),
            "{flag}"
        );
        let banks = parse_map(&[(COLORS, "1"), (BANKS, "0-3")]).unwrap_err();
        assert!(banks.contains("not supported"), "{banks}");
        let empty = parse_colors(" ").unwrap_err();
        assert!(empty.contains("at least one color"), "{empty}");
    }
}
