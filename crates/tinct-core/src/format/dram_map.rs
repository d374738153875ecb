//! The DRAM address mapping file ([`crate::dram_map`]) read and written:
//! [`DramMap::load`] and [`DramMap::parse`] check it with errors that name
//! the file, line and field (as task-set files' do), [`DramMap::to_toml`]
//! writes it back.

use serde::{Deserialize, Serialize};
use std::path::Path;

use super::write::comment_lines;
use super::{InputError, Seg, SourceIndex};
use crate::dram_map::{AddressKind, DramMap};

#[derive(Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
struct RawDramMap {
    bank_functions: Vec<String>,
    #[serde(default)]
    controller_functions: Vec<String>,
    #[serde(default)]
    confidence: Vec<f64>,
    physical: String,
    #[serde(default)]
    machine: String,
}

/// Most functions per list (2^16 classes).
const MAX_FUNCTIONS: usize = 16;

impl DramMap {
    /// Reads and checks a mapping file; errors name the file, line and field.
    pub fn load(path: &Path) -> Result<Self, InputError> {
        let file = path.display().to_string();
        let text = crate::format::read_text(
            path,
            crate::format::MAX_FILE_BYTES,
            "DRAM mapping file (written by `tinct bench dram-map`)",
        )?;
        Self::parse(&text, &file)
    }

    /// Parses and checks mapping text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Self, InputError> {
        let raw: RawDramMap = toml::from_str(text).map_err(|e| InputError {
            file: file.into(),
            line: e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1),
            field: "DRAM mapping".into(),
            expected: "bank_functions = [\"0x...\", ...], physical = \"host\" or \"guest\"".into(),
            found: e.message().trim().to_string(),
        })?;
        let index = SourceIndex::toml(text);
        let fail = |at: &[Seg], field: &str, expected: String, found: String| InputError {
            file: file.into(),
            line: Some(index.line_of(at)),
            field: field.into(),
            expected,
            found,
        };
        let masks = |name: &str, list: &[String]| -> Result<Vec<u64>, InputError> {
            if list.len() > MAX_FUNCTIONS {
                return Err(fail(
                    &[Seg::Key(name.into())],
                    name,
                    format!("at most {MAX_FUNCTIONS} functions"),
                    format!("{} functions", list.len()),
                ));
            }
            let mut masks: Vec<u64> = Vec::with_capacity(list.len());
            for (i, text) in list.iter().enumerate() {
                let at = [Seg::Key(name.into()), Seg::Index(i)];
                let mask = text
                    .strip_prefix("0x")
                    .and_then(|hex| u64::from_str_radix(&hex.replace('_', ""), 16).ok())
                    .filter(|&m| m != 0)
                    .ok_or_else(|| {
                        fail(
                            &at,
                            name,
                            "a non-zero hexadecimal mask such as \"0x44000\"".into(),
                            format!("{text:?}"),
                        )
                    })?;
                if masks.contains(&mask) {
                    return Err(fail(
                        &at,
                        name,
                        "distinct functions".into(),
                        format!("{text:?} a second time"),
                    ));
                }
                masks.push(mask);
            }
            Ok(masks)
        };
        let bank_functions = masks("bank_functions", &raw.bank_functions)?;
        let controller_functions = masks("controller_functions", &raw.controller_functions)?;
        if !raw.confidence.is_empty() && raw.confidence.len() != bank_functions.len() {
            return Err(fail(
                &[Seg::Key("confidence".into())],
                "confidence",
                format!("one value per bank function ({})", bank_functions.len()),
                format!("{} values", raw.confidence.len()),
            ));
        }
        if let Some((i, bad)) = raw
            .confidence
            .iter()
            .enumerate()
            .find(|(_, c)| !(0.0..=1.0).contains(*c))
        {
            return Err(fail(
                &[Seg::Key("confidence".into()), Seg::Index(i)],
                "confidence",
                "a value from 0 to 1".into(),
                bad.to_string(),
            ));
        }
        let physical = match raw.physical.as_str() {
            "host" => AddressKind::Host,
            "guest" => AddressKind::Guest,
            other => {
                return Err(fail(
                    &[Seg::Key("physical".into())],
                    "physical",
                    "\"host\" or \"guest\"".into(),
                    format!("{other:?}"),
                ));
            }
        };
        Ok(Self {
            bank_functions,
            controller_functions,
            confidence: raw.confidence,
            physical,
            machine: raw.machine,
        })
    }

    /// The file's text (`header` lines first, as comments); [`DramMap::parse`]
    /// reads it back equal.
    pub fn to_toml(&self, header: &[String]) -> String {
        let raw = RawDramMap {
            bank_functions: hex(&self.bank_functions),
            controller_functions: hex(&self.controller_functions),
            confidence: self.confidence.clone(),
            physical: match self.physical {
                AddressKind::Host => "host",
                AddressKind::Guest => "guest",
            }
            .into(),
            machine: self.machine.clone(),
        };
        let text = toml::to_string(&raw).expect("strings, floats and lists of them are TOML");
        comment_lines(header) + &text
    }
}

/// Masks as the file writes them (`"0x44000"`, DRAMA's format).
fn hex(masks: &[u64]) -> Vec<String> {
    masks.iter().map(|m| format!("{m:#x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_reads_back_equal() {
        let map = DramMap {
            bank_functions: vec![0x44000, 0x88000],
            controller_functions: vec![0x100],
            confidence: vec![0.99, 1.0],
            physical: AddressKind::Guest,
            machine: "KVM \"guest\"".into(),
        };
        let text = map.to_toml(&["measured here".into()]);
        assert_eq!(
            text,
            "# measured here\n\
             bank_functions = [\"0x44000\", \"0x88000\"]\n\
             controller_functions = [\"0x100\"]\n\
             confidence = [0.99, 1.0]\n\
             physical = \"guest\"\n\
             machine = 'KVM \"guest\"'\n"
        );
        assert_eq!(DramMap::parse(&text, "m.toml").unwrap(), map);
    }

    #[test]
    fn errors_name_the_line_and_the_field() {
        let cases = [
            (
                "bank_functions = [\"0x44000\", \"44\"]\nphysical = \"host\"\n",
                1,
                "bank_functions",
                "\"44\"",
            ),
            (
                "bank_functions = [\"0x4\", \"0x4\"]\nphysical = \"host\"\n",
                1,
                "bank_functions",
                "a second time",
            ),
            (
                "bank_functions = [\"0x4\"]\nconfidence = [0.5, 0.5]\nphysical = \"host\"\n",
                2,
                "confidence",
                "2 values",
            ),
            (
                "bank_functions = [\"0x4\"]\nconfidence = [1.5]\nphysical = \"host\"\n",
                2,
                "confidence",
                "1.5",
            ),
            (
                "bank_functions = []\nphysical = \"metal\"\n",
                2,
                "physical",
                "\"metal\"",
            ),
            (
                "bank_functions = []\nphysical = \"host\"\ncolour = 1\n",
                3,
                "DRAM mapping",
                "colour",
            ),
        ];
        for (text, line, field, found) in cases {
            let err = DramMap::parse(text, "m.toml").unwrap_err();
            assert_eq!(err.line, Some(line), "{err}");
            assert_eq!(err.field, field, "{err}");
            assert!(err.found.contains(found), "{err}");
            assert!(
                err.to_string().starts_with(&format!("m.toml:{line}: ")),
                "{err}"
            );
        }
    }
}
