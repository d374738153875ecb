//! What every `tinct bench` subcommand takes, and the parsers of typed values.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use std::path::PathBuf;
use tinct_bench::choice::Choice;
use tinct_bench::harness::BenchOptions;
use tinct_core::units::{Bytes, Nanos};

/// `--quick`, `--out`, `--reps`, `--seed`, `--cpus` and `--no-progress`.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Smoke run: few sizes and repetitions, a few seconds (for CI).
    #[arg(long)]
    pub quick: bool,
    /// Output directory for JSON, CSV and SVG (default `tinct-bench/<bench>`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Repetitions per condition (default depends on the bench and `--quick`).
    #[arg(long, value_name = "N")]
    pub reps: Option<u32>,
    /// Seed of every random choice (permutations, condition order).
    #[arg(long, default_value_t = BenchOptions::default().seed)]
    pub seed: u64,
    /// CPUs the bench may use, as a list like `0-1,3` (default: the first
    /// CPUs of the current affinity).
    #[arg(long, value_name = "LIST")]
    pub cpus: Option<String>,
    /// The page colour's physical address bits, e.g. `12-16` (benches that
    /// colour): before TINCT_COLOR_BITS, the machine file (`tinct doctor
    /// --save`) and the bits derived from the cache topology.
    #[arg(long, value_name = "BITS", value_parser = color_bits)]
    pub color_bits: Option<String>,
    /// No progress bar (it is hidden anyway when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

impl CommonArgs {
    /// The library's parameters.
    pub fn options(&self) -> BenchOptions {
        BenchOptions {
            quick: self.quick,
            out: self.out.clone(),
            reps: self.reps,
            seed: self.seed,
            cpus: self.cpus.clone(),
            color_bits: self.color_bits.clone(),
        }
    }
}

/// Colour bits such as `12-15` (clap value parser): a list of at most 16
/// consecutive bits from the page offset, checked for every bench (those
/// that colour resolve them with the other sources: `BenchOptions::colors`).
pub fn color_bits(text: &str) -> Result<String, String> {
    let page =
        tinct_sys::system::PageSize::read(&tinct_sys::SysRoot::live()).map_or(4096, |p| p.bytes);
    tinct_sys::color_source::resolve_from(
        tinct_sys::color_source::ColorRequest::flag("--color-bits", Some(text)),
        None,
        || Ok(None),
        &tinct_sys::SysRoot::live(),
        page,
    )
    .map(|_| text.to_string())
    .map_err(|e| e.to_string())
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_bench::crpd::CacheKind;

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
}
