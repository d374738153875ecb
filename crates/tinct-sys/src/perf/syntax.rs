//! Events named the way `perf stat -e` names them:
//!
//! - a generic event: `cycles`, `LLC-load-misses`, `context-switches`, ...
//!   ([`PerfEvent`]);
//! - a named event of a PMU in sysfs: `cpu/cache-misses/`, `msr/tsc/`;
//! - terms of a PMU's format: `cpu/event=0xd2,umask=0x4/`,
//!   `cpu/event=0xb7,umask=0x1,offcore_rsp=0x10003c0002/`;
//! - a raw encoding for the CPU's PMU: `r412e` (`config = 0x412e`).

use super::events::{CounterEvent, Encoding, PerfEvent, TYPE_RAW};
use super::pmu::Pmu;
use crate::root::SysRoot;

/// The event `text` names, encoded with the PMUs under `root`. The error
/// says what was expected and what was found.
pub fn parse_event(text: &str, root: &SysRoot) -> Result<CounterEvent, String> {
    let text = text.trim();
    if let Some(event) = PerfEvent::from_name(text) {
        return Ok(event.into());
    }
    if let Some(hex) = text.strip_prefix('r')
        && !hex.is_empty()
        && hex.len() <= 16
        && hex.chars().all(|c| c.is_ascii_hexdigit())
    {
        let config = u64::from_str_radix(hex, 16).map_err(|e| format!("{text}: {e}"))?;
        return Ok(CounterEvent::new(text, Encoding::new(TYPE_RAW, config)));
    }
    if let Some((pmu, rest)) = text.split_once('/') {
        let Some(terms) = rest.strip_suffix('/') else {
            return Err(format!(
                "{text:?}: expected PMU/terms/ ending in '/', found no closing '/' \
                 (modifiers such as :u are not supported)"
            ));
        };
        if pmu.is_empty() || terms.is_empty() {
            return Err(format!("{text:?}: expected PMU/terms/ with both parts"));
        }
        let pmu = Pmu::read(root, pmu).map_err(|e| format!("{text:?}: {e}"))?;
        let encoding = pmu.encode(terms)?;
        return Ok(CounterEvent::new(text, encoding));
    }
    let generic: Vec<&str> = PerfEvent::GENERIC.iter().map(|e| e.name()).collect();
    Err(format!(
        "{text:?}: expected a generic event ({}), PMU/event/ or PMU/field=value,.../ from \
         /sys/bus/event_source/devices, or rHEX",
        generic.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_and_raw_names_need_no_sysfs() {
        let nowhere = SysRoot::at("/nonexistent");
        assert_eq!(
            parse_event("cs", &nowhere).unwrap().encoding,
            PerfEvent::ContextSwitches.encoding()
        );
        let raw = parse_event("r412e", &nowhere).unwrap();
        assert_eq!(raw.encoding, Encoding::new(TYPE_RAW, 0x412e));
        assert_eq!(raw.name, "r412e");
    }

    #[test]
    fn bad_names_say_what_was_expected() {
        let nowhere = SysRoot::at("/nonexistent");
        for bad in ["cycle", "rxyz", "cpu/event=1", "//", "cpu//"] {
            let err = parse_event(bad, &nowhere).unwrap_err();
            assert!(err.contains("expected"), "{bad}: {err}");
        }
        let err = parse_event("nopmu/event=1/", &nowhere).unwrap_err();
        assert!(err.contains("no PMU named \"nopmu\""), "{err}");
    }
}
