//! A PMU as the kernel describes it in sysfs
//! (`/sys/bus/event_source/devices/<pmu>/`): its `type` number, its
//! `format/` files (which bits of which config word each field occupies)
//! and its `events/` files (named events as `field=value` terms), so that
//! an event can be named the way the kernel names it and encoded exactly
//! (Documentation/ABI/testing/sysfs-bus-event_source-devices-{format,events}).
//!
//! A format file reads `config:0-7`, `config1:0-63` or, for a field split
//! over several ranges, `config:0-7,32-35` (AMD's 12-bit event select): the
//! value's bits fill the ranges from their lowest bit up, in the order
//! written, as the kernel's `perf_pmu__format_pack` does.

use super::events::Encoding;
use crate::error::{Error, Result};
use crate::root::SysRoot;

/// Where the PMUs live.
pub const DEVICES: &str = "/sys/bus/event_source/devices";

/// Which config word of `perf_event_attr` a format field is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word {
    Config,
    Config1,
    Config2,
}

/// One field of a PMU's `format/` directory.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FormatField {
    name: String,
    word: Word,
    /// Inclusive bit ranges, in the order the file lists them.
    ranges: Vec<(u32, u32)>,
}

impl FormatField {
    /// Width of the field in bits.
    fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// `value` spread over the field's ranges, or why it does not fit.
    fn place(&self, value: u64) -> std::result::Result<u64, String> {
        let width = self.width();
        if width < 64 && value >> width != 0 {
            return Err(format!(
                "field {} is {width} bits wide, {value:#x} does not fit",
                self.name
            ));
        }
        let mut placed = 0u64;
        let mut next_bit = 0u32;
        for &(lo, hi) in &self.ranges {
            for bit in lo..=hi {
                if value >> next_bit & 1 == 1 {
                    placed |= 1 << bit;
                }
                next_bit += 1;
            }
        }
        Ok(placed)
    }
}

/// A PMU read from sysfs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pmu {
    /// Its directory name (`cpu`, `msr`, `ibs_op`, ...).
    pub name: String,
    /// `perf_event_attr.type` for its events.
    pub pmu_type: u32,
    formats: Vec<FormatField>,
    /// Named events and their terms text, sorted by name.
    events: Vec<(String, String)>,
}

impl Pmu {
    /// Reads PMU `name` under `root`.
    pub fn read(root: &SysRoot, name: &str) -> Result<Pmu> {
        let dir = format!("{DEVICES}/{name}");
        if !root.exists(&dir) {
            return Err(Error::InvalidArgument(format!(
                "no PMU named {name:?} in {}",
                root.path(DEVICES).display()
            )));
        }
        let pmu_type = root.parse(&format!("{dir}/type"), "a PMU type number")?;
        let mut formats = Vec::new();
        for field in root.list_dir(&format!("{dir}/format"))? {
            let rel = format!("{dir}/format/{field}");
            let text = root.read_line(&rel)?;
            let parsed = parse_format(&field, &text)
                .map_err(|expected| root.parse_error(&rel, 1, &expected, text.trim()))?;
            formats.push(parsed);
        }
        let mut events = Vec::new();
        for event in root.list_dir(&format!("{dir}/events"))? {
            // `.scale`, `.unit`, `.per-pkg`, `.snapshot` describe an event;
            // they are not events.
            if event.contains('.') {
                continue;
            }
            let terms = root.read_line(&format!("{dir}/events/{event}"))?;
            events.push((event, terms.trim().to_string()));
        }
        Ok(Pmu {
            name: name.to_string(),
            pmu_type,
            formats,
            events,
        })
    }

    /// A PMU described in code: `formats` as (field, `config:0-7`) pairs,
    /// no named events (a layout the kernel does not publish).
    pub fn from_formats(
        name: &str,
        pmu_type: u32,
        formats: &[(&str, &str)],
    ) -> std::result::Result<Pmu, String> {
        let formats = formats
            .iter()
            .map(|(field, text)| {
                parse_format(field, text).map_err(|expected| {
                    format!("{name}/format/{field}: expected {expected}, found {text:?}")
                })
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(Pmu {
            name: name.to_string(),
            pmu_type,
            formats,
            events: Vec::new(),
        })
    }

    /// The names of its `events/` files.
    pub fn event_names(&self) -> impl Iterator<Item = &str> {
        self.events.iter().map(|(name, _)| name.as_str())
    }

    /// The terms of named event `event` (`event=0x2e,umask=0x41`), if it has one.
    pub fn event_terms(&self, event: &str) -> Option<&str> {
        self.events
            .iter()
            .find(|(name, _)| name == event)
            .map(|(_, terms)| terms.as_str())
    }

    /// True if the PMU has a format field `field`.
    pub fn has_field(&self, field: &str) -> bool {
        self.formats.iter().any(|f| f.name == field)
    }

    /// Encodes `terms` (`event=0xd2,umask=0x4`, `edge`, a named event, or
    /// `config=`/`config1=`/`config2=` directly), each term naming a format
    /// field of this PMU or one of its named events. Errors say which term
    /// and why.
    pub fn encode(&self, terms: &str) -> std::result::Result<Encoding, String> {
        let mut encoding = Encoding::new(self.pmu_type, 0);
        self.encode_into(terms, &mut encoding, 0)?;
        Ok(encoding)
    }

    fn encode_into(
        &self,
        terms: &str,
        encoding: &mut Encoding,
        depth: u32,
    ) -> std::result::Result<(), String> {
        for term in terms.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (name, value) = match term.split_once('=') {
                Some((name, value)) => (name.trim(), Some(value.trim())),
                None => (term, None),
            };
            if value.is_none()
                && depth == 0
                && let Some(alias) = self.event_terms(name)
            {
                self.encode_into(alias, encoding, depth + 1)?;
                continue;
            }
            let value = match value {
                None => 1,
                Some("?") => {
                    return Err(format!(
                        "{}/{term}: the event needs a value for {name} (it reads `{name}=?`)",
                        self.name
                    ));
                }
                Some(text) => parse_number(text).ok_or_else(|| {
                    format!(
                        "{}/{term}: expected a decimal or 0x-hexadecimal value, found {text:?}",
                        self.name
                    )
                })?,
            };
            match name {
                "config" => encoding.config = value,
                "config1" => encoding.config1 = value,
                "config2" => encoding.config2 = value,
                _ => {
                    let field = self
                        .formats
                        .iter()
                        .find(|f| f.name == name)
                        .ok_or_else(|| self.unknown_term(name))?;
                    let bits = field
                        .place(value)
                        .map_err(|why| format!("{}/{term}: {why}", self.name))?;
                    let word = match field.word {
                        Word::Config => &mut encoding.config,
                        Word::Config1 => &mut encoding.config1,
                        Word::Config2 => &mut encoding.config2,
                    };
                    let mask = field.place(u64::MAX >> (64 - field.width()))?;
                    *word = (*word & !mask) | bits;
                }
            }
        }
        Ok(())
    }

    fn unknown_term(&self, name: &str) -> String {
        let fields: Vec<&str> = self.formats.iter().map(|f| f.name.as_str()).collect();
        format!(
            "{}: expected a format field ({}) or a named event of the PMU, found {name:?}",
            self.name,
            if fields.is_empty() {
                "none".to_string()
            } else {
                fields.join(", ")
            }
        )
    }
}

/// The names of the PMUs under `root`, sorted.
pub fn list_pmus(root: &SysRoot) -> Result<Vec<String>> {
    root.list_dir(DEVICES)
}

/// `config:0-7,32-35` → the field; `Err(expected)` if malformed.
fn parse_format(name: &str, text: &str) -> std::result::Result<FormatField, String> {
    let expected = || "`config[12]:LO[-HI][,LO[-HI]...]` with bits in 0..=63".to_string();
    let (word, ranges) = text.trim().split_once(':').ok_or_else(expected)?;
    let word = match word {
        "config" => Word::Config,
        "config1" => Word::Config1,
        "config2" => Word::Config2,
        _ => return Err(expected()),
    };
    // The bit ranges are tinct-base's list grammar, without strides.
    let spans = tinct_base::list::parse_spans(ranges).map_err(|_| expected())?;
    if spans.is_empty() || spans.iter().any(|s| s.stride != 1 || s.last > 63) {
        return Err(expected());
    }
    // Below 64, checked above.
    let parsed = spans
        .iter()
        .map(|s| (s.first as u32, s.last as u32))
        .collect();
    Ok(FormatField {
        name: name.to_string(),
        word,
        ranges: parsed,
    })
}

/// `0x2e`, `46`.
pub(super) fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(text: &str) -> FormatField {
        parse_format("f", text).unwrap()
    }

    #[test]
    fn a_split_field_fills_its_ranges_from_the_low_bits() {
        // AMD's event select: bits 0-7 and 32-35 (PMCx1D4 → 0xd4 | 0x1 << 32).
        let amd_event = field("config:0-7,32-35");
        assert_eq!(amd_event.width(), 12);
        assert_eq!(amd_event.place(0x1d4).unwrap(), 0xd4 | 1 << 32);
        assert!(amd_event.place(0x1000).is_err(), "13 bits do not fit 12");
        assert_eq!(field("config:18").place(1).unwrap(), 1 << 18);
        assert_eq!(field("config1:0-63").place(u64::MAX).unwrap(), u64::MAX);
    }

    #[test]
    fn malformed_formats_are_refused() {
        for bad in [
            "config:8-7",
            "config3:0-7",
            "config:0-64",
            "config",
            "config:a-b",
            "config:",
            "config:0-7:2",
            "config:0,,1",
        ] {
            assert!(parse_format("f", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn numbers_are_hex_or_decimal() {
        assert_eq!(parse_number("0x2e"), Some(0x2e));
        assert_eq!(parse_number("46"), Some(46));
        assert_eq!(parse_number("0xzz"), None);
    }
}
