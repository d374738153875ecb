//! The shim's settings, read from the environment once, when the pool is
//! built. Every error names the variable, what was expected and what was
//! found.

use std::path::PathBuf;

/// `TINCT_COLORS`: the page colors to serve the heap from, e.g. `0-15,32`.
pub const COLORS: &str = "TINCT_COLORS";
/// `TINCT_BANKS`: DRAM bank indices to serve the heap from, e.g. `0-3`
/// (in every controller unless `TINCT_CONTROLLERS` narrows it); needs
/// `TINCT_BANK_FUNCTIONS`.
pub const BANKS: &str = "TINCT_BANKS";
/// `TINCT_BANK_FUNCTIONS`: the bank XOR functions in DRAMA format, a
/// comma-separated list of hexadecimal physical-address masks, bank index
/// bit `i` = parity of (address & mask `i`), e.g. `0x2000,0x4000`.
pub const BANK_FUNCTIONS: &str = "TINCT_BANK_FUNCTIONS";
/// `TINCT_CONTROLLERS`: DRAM controller (channel) indices, e.g. `0`;
/// needs `TINCT_CONTROLLER_FUNCTIONS`.
pub const CONTROLLERS: &str = "TINCT_CONTROLLERS";
/// `TINCT_CONTROLLER_FUNCTIONS`: the controller XOR functions (DRAMA
/// format, as `TINCT_BANK_FUNCTIONS`).
pub const CONTROLLER_FUNCTIONS: &str = "TINCT_CONTROLLER_FUNCTIONS";
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
    /// Requested colors, sorted and unique; empty means every color (only
    /// allowed when banks or controllers are requested).
    pub colors: Vec<u32>,
    /// Requested DRAM banks, sorted and unique (`None`: any bank).
    pub banks: Option<Vec<u32>>,
    /// Requested DRAM controllers, sorted and unique (`None`: any).
    pub controllers: Option<Vec<u32>>,
    /// Bank XOR masks (empty: one bank).
    pub bank_functions: Vec<u64>,
    /// Controller XOR masks (empty: one controller).
    pub controller_functions: Vec<u64>,
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
    let bank_functions = functions(&lookup, BANK_FUNCTIONS)?;
    let controller_functions = functions(&lookup, CONTROLLER_FUNCTIONS)?;
    let banks = index_list(&lookup, BANKS, BANK_FUNCTIONS, &bank_functions)?;
    let controllers = index_list(
        &lookup,
        CONTROLLERS,
        CONTROLLER_FUNCTIONS,
        &controller_functions,
    )?;
    let colors = match lookup(COLORS).filter(|c| !c.trim().is_empty()) {
        Some(text) => parse_colors(&text)?,
        None if banks.is_some() || controllers.is_some() => Vec::new(),
        None => {
            return Err(format!(
                "{COLORS} is not set: expected the page colors to serve the heap from, e.g. \
                 {COLORS}=0-15 (see `tinct doctor` for the number of colors; `tinct exec \
                 --colors` sets it), or DRAM banks in {BANKS}"
            ));
        }
    };
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
        banks,
        controllers,
        bank_functions,
        controller_functions,
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

/// XOR masks in DRAMA format from `name` (unset or empty: none).
fn functions(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Vec<u64>, String> {
    let Some(text) = lookup(name) else {
        return Ok(Vec::new());
    };
    tinct_mem::XorFunctions::parse(&text)
        .map(|f| f.masks().to_vec())
        .map_err(|e| {
            format!(
                "{name}={text:?}: expected hexadecimal address masks such as 0x2000,0x4000 ({e})"
            )
        })
}

/// A bank or controller list from `name`, which needs the functions of
/// `functions_name` (non-empty `masks`) to mean anything.
fn index_list(
    lookup: &impl Fn(&str) -> Option<String>,
    name: &str,
    functions_name: &str,
    masks: &[u64],
) -> Result<Option<Vec<u32>>, String> {
    let Some(text) = lookup(name).filter(|t| !t.trim().is_empty()) else {
        return Ok(None);
    };
    let list = tinct_sys::parse_cpu_list(&text)
        .map_err(|e| format!("{name}={text:?}: expected a list such as 0-3,6 ({e})"))?;
    if list.is_empty() {
        return Err(format!("{name}={text:?}: expected at least one index"));
    }
    if masks.is_empty() {
        return Err(format!(
            "{name}={text:?} needs {functions_name}: this machine's DRAM address mapping is \
             unknown; expected the XOR functions as hexadecimal masks, e.g. \
             {functions_name}=0x2000,0x4000 (DRAMA format)"
        ));
    }
    let count = 1u64 << masks.len();
    if let Some(bad) = list.iter().find(|&&i| u64::from(i) >= count) {
        return Err(format!(
            "{name}={text:?}: index {bad} does not exist: expected 0-{} ({} functions in \
             {functions_name})",
            count - 1,
            masks.len()
        ));
    }
    Ok(Some(list))
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
        assert_eq!(defaults.banks, None);
    }

    #[test]
    fn banks_need_functions_and_make_colors_optional() {
        let config = parse_map(&[
            (BANKS, "1,3"),
            (BANK_FUNCTIONS, "0x2000, 0x4000"),
            (CONTROLLERS, "0"),
            (CONTROLLER_FUNCTIONS, "0x8000"),
        ])
        .unwrap();
        assert!(config.colors.is_empty(), "every color");
        assert_eq!(config.banks, Some(vec![1, 3]));
        assert_eq!(config.controllers, Some(vec![0]));
        assert_eq!(config.bank_functions, vec![0x2000, 0x4000]);
        assert_eq!(config.controller_functions, vec![0x8000]);
        let both = parse_map(&[
            (COLORS, "0-7"),
            (BANKS, "2"),
            (BANK_FUNCTIONS, "0x2000,0x4000"),
        ])
        .unwrap();
        assert_eq!(both.colors, (0..8).collect::<Vec<_>>());
        assert_eq!(both.banks, Some(vec![2]));
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
        assert!(
            banks.contains("TINCT_BANKS=\"0-3\" needs TINCT_BANK_FUNCTIONS"),
            "{banks}"
        );
        let range = parse_map(&[(BANKS, "0-4"), (BANK_FUNCTIONS, "0x2000,0x4000")]).unwrap_err();
        assert!(
            range.contains("index 4 does not exist: expected 0-3"),
            "{range}"
        );
        let mask = parse_map(&[(BANKS, "0"), (BANK_FUNCTIONS, "0x2000,zz")]).unwrap_err();
        assert!(
            mask.contains("TINCT_BANK_FUNCTIONS=\"0x2000,zz\""),
            "{mask}"
        );
        let controllers = parse_map(&[(COLORS, "1"), (CONTROLLERS, "1")]).unwrap_err();
        assert!(
            controllers.contains("needs TINCT_CONTROLLER_FUNCTIONS"),
            "{controllers}"
        );
        let empty = parse_colors(" ").unwrap_err();
        assert!(
            missing.contains("or DRAM banks in TINCT_BANKS"),
            "{missing}"
        );
        assert!(empty.contains("at least one color"), "{empty}");
    }
}
