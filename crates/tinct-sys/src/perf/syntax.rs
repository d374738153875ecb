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
use tinct_base::InputError;

/// The event `text` names, encoded with the PMUs under `root`. The error
/// is bad input whose field is the text (quoted), with what was expected
/// and what was found.
pub fn parse_event(text: &str, root: &SysRoot) -> Result<CounterEvent, InputError> {
    let text = text.trim();
    let refused =
        |expected: &str, found: String| InputError::new("", format!("{text:?}"), expected, found);
    if let Some(event) = PerfEvent::from_name(text) {
        return Ok(event.into());
    }
    if let Some(hex) = text.strip_prefix('r')
        && !hex.is_empty()
        && hex.len() <= 16
        && hex.chars().all(|c| c.is_ascii_hexdigit())
    {
        let config = u64::from_str_radix(hex, 16)
            .map_err(|e| refused("rHEX, a raw encoding of 64 bits", e.to_string()))?;
        return Ok(CounterEvent::new(text, Encoding::new(TYPE_RAW, config)));
    }
    if let Some((pmu, rest)) = text.split_once('/') {
        let Some(terms) = rest.strip_suffix('/') else {
            return Err(refused(
                "PMU/terms/ ending in '/'",
                "no closing '/' (modifiers such as :u are not supported)".into(),
            ));
        };
        if pmu.is_empty() || terms.is_empty() {
            return Err(refused(
                "PMU/terms/ with both parts",
                if pmu.is_empty() { "no PMU" } else { "no terms" }.into(),
            ));
        }
        let pmu = Pmu::read(root, pmu)
            .map_err(|e| refused("a PMU of /sys/bus/event_source/devices", e.to_string()))?;
        let encoding = pmu
            .encode(terms)
            .map_err(|why| refused(&format!("terms of PMU {}", pmu.name), why))?;
        return Ok(CounterEvent::new(text, encoding));
    }
    let generic: Vec<&str> = PerfEvent::GENERIC.iter().map(|e| e.name()).collect();
    Err(refused(
        &format!(
            "a generic event ({}), PMU/event/ or PMU/field=value,.../ from \
             /sys/bus/event_source/devices, or rHEX",
            generic.join(", ")
        ),
        "none of them".into(),
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
            assert_eq!(err.field, format!("{bad:?}"), "{err}");
            assert!(!err.expected.is_empty() && !err.found.is_empty(), "{err}");
        }
        let err = parse_event("nopmu/event=1/", &nowhere).unwrap_err();
        assert_eq!(err.expected, "a PMU of /sys/bus/event_source/devices");
        assert!(err.found.contains("no PMU named \"nopmu\""), "{err}");
    }
}
