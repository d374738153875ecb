//! tinct-core's parameters on a command line (feature `cli`): the value
//! parsers their `clap::Args` derives name where a field holds plain
//! nanoseconds or bytes (clap takes `fn(&str) -> Result<T, impl Error>`).
//! tinct-cli turns the feature on; without it the crate links no clap.

use crate::units::{UnitError, parse_duration, parse_size};

/// A size such as `1GiB`, in bytes (clap value parser).
pub fn bytes(text: &str) -> Result<u64, UnitError> {
    parse_size(text).map(|size| size.0)
}

/// A duration such as `45.3us`, in nanoseconds (clap value parser).
pub fn nanos(text: &str) -> Result<u64, UnitError> {
    parse_duration(text).map(|duration| duration.0)
}
