//! The benches' parameters on a command line (feature `cli`): the value
//! parsers their `clap::Args` derives name where a library type has no
//! parser of the shape clap takes (`fn(&str) -> Result<T, impl Error>`),
//! so each option is declared once, on its parameter's field. The others
//! name the library's own: `tinct_core::units::parse_size` and
//! `parse_duration`, `Condition::parse_list`, `tinct_mem::Modes::parse`,
//! `banks::composite::parse_configurations`, or `FromStr`. tinct-cli turns
//! the feature on; without it the library links no clap.

use crate::choice::Choice;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use tinct_core::model::JobProtocol;

/// A library [`Choice`] (clap value parser): its names are the possible
/// values, each listed in `--help` with its one-line description.
pub fn choice<T: Choice + Send + Sync>() -> impl TypedValueParser<Value = T> {
    let names = T::ALL
        .iter()
        .map(|&c| PossibleValue::new(c.name()).help(c.doc()));
    PossibleValuesParser::new(names).try_map(|name| T::parse_name(&name))
}

/// Colour bits such as `12-15` (clap value parser): a list of at most 16
/// consecutive bits from the page offset, checked for every bench (those
/// that colour resolve them with the other sources:
/// [`BenchOptions::colors`](crate::harness::BenchOptions::colors)).
pub fn color_bits(text: &str) -> Result<String, String> {
    let root = tinct_sys::SysRoot::live();
    let page = tinct_sys::system::PageSize::read(&root).map_or(4096, |p| p.bytes);
    tinct_sys::color_source::resolve_from(
        tinct_sys::color_source::ColorRequest::flag("--color-bits", Some(text)),
        None,
        || Ok(None),
        &root,
        page,
    )
    .map(|_| text.to_string())
    .map_err(|e| e.to_string())
}

/// A job protocol by its name in files, `lines` or `futex` (clap value
/// parser).
pub fn protocol(text: &str) -> Result<JobProtocol, String> {
    JobProtocol::ALL
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, protocol)| *protocol)
        .ok_or_else(|| {
            let names: Vec<&str> = JobProtocol::ALL.iter().map(|(n, _)| *n).collect();
            format!("expected one of {}, found `{text}`", names.join(", "))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crpd::CacheKind;

    #[test]
    fn a_choice_parses_its_names_lists_them_and_refuses_others() {
        let command = clap::Command::new("t").arg(
            clap::Arg::new("cache")
                .long("cache")
                .value_parser(choice::<CacheKind>()),
        );
        let matches = command
            .clone()
            .try_get_matches_from(["t", "--cache", "instruction"])
            .unwrap();
        assert_eq!(
            matches.get_one::<CacheKind>("cache"),
            Some(&CacheKind::Instruction)
        );
        let error = command
            .clone()
            .try_get_matches_from(["t", "--cache", "Instruction"])
            .unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
        let listed: Vec<String> = choice::<CacheKind>()
            .possible_values()
            .unwrap()
            .map(|v| v.get_name().to_string())
            .collect();
        assert_eq!(listed, ["data", "instruction"]);
    }

    #[test]
    fn protocols_parse_by_their_file_names() {
        assert_eq!(protocol("futex"), Ok(JobProtocol::Futex));
        assert_eq!(
            protocol("pipe"),
            Err("expected one of lines, futex, found `pipe`".to_string())
        );
    }
}
