//! The benches' parameters on a command line (feature `cli`): the value
//! parsers their `clap::Args` derives name, so each option is declared
//! once, on its parameter's field, and the library's types parse
//! themselves. tinct-cli turns the feature on; without it the library
//! links no clap.

use crate::choice::Choice;
use crate::wcet_profile::condition::Condition;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use tinct_core::model::JobProtocol;
use tinct_core::units::{Bytes, Nanos};

/// A size such as `4MiB` (clap value parser).
pub fn size(text: &str) -> Result<Bytes, String> {
    tinct_core::units::parse_size(text).map_err(|e| e.to_string())
}

/// A duration such as `45.3us` (clap value parser).
pub fn duration(text: &str) -> Result<Nanos, String> {
    tinct_core::units::parse_duration(text).map_err(|e| e.to_string())
}

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

/// A list of wcet-profile conditions, `alone,cold` (clap value parser:
/// the field is declared `std::vec::Vec` so that clap takes the list as
/// one value, not as a repeated option).
pub fn conditions(text: &str) -> Result<Vec<Condition>, String> {
    Condition::parse_list(text).map_err(|e| e.to_string())
}

/// chandru-mueller Algorithm 1's fallback modes, `exact` or a list such
/// as `restricted,split` (clap value parser).
pub fn bank_modes(text: &str) -> Result<tinct_mem::Modes, String> {
    tinct_mem::Modes::parse(text).map_err(|e| e.to_string())
}

/// Composite bubblesort configurations `THREADS/PAGES,...` or `none`
/// (clap value parser; one value holding the list, as for
/// [`conditions`]).
pub fn composite(text: &str) -> Result<Vec<(usize, usize)>, String> {
    crate::banks::composite::parse_configurations(text).map_err(|e| e.to_string())
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
