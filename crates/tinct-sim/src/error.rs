//! The one error type of tinct-sim.

use thiserror::Error;
use tinct_base::InputError;

/// Everything that can go wrong when building or driving the cache model.
///
/// Each variant names the offending field or value, what was expected and
/// what was found.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SimError {
    /// A geometry, replacement or configuration field has an unusable
    /// value: bad input, its `field` e.g. `geometry.ways` (no file: a
    /// model is built from values, not read from one).
    #[error(transparent)]
    Input(#[from] InputError),
    /// A core index beyond the cache's configured core count.
    #[error("core {core} is out of range: the cache was built for {cores} cores")]
    CoreOutOfRange {
        /// The core that was named.
        core: usize,
        /// The number of cores the cache counts for.
        cores: usize,
    },
    /// A page color beyond the geometry's number of colors.
    #[error("color {color} is out of range: the geometry has {colors} colors (0..{colors})")]
    ColorOutOfRange {
        /// The color that was asked for.
        color: u64,
        /// The number of colors of the geometry.
        colors: u64,
    },
    /// The synthetic memory ran out of free frames of a color.
    #[error(
        "synthetic memory has no free frame left of color {color} ({frames_per_color} frames per color)"
    )]
    OutOfFrames {
        /// The exhausted color.
        color: u64,
        /// Frames each color has in total.
        frames_per_color: u64,
    },
    /// A physical address computed from a frame number does not fit in 64 bits.
    #[error(
        "frame {pfn} with page size {page_size} B lies beyond the 64-bit physical address space"
    )]
    AddressOverflow {
        /// The frame number.
        pfn: u64,
        /// The page size in bytes.
        page_size: u64,
    },
}

impl SimError {
    /// Shorthand for [`SimError::Input`] at `field`.
    pub(crate) fn invalid(field: &str, expected: impl Into<String>, found: impl ToString) -> Self {
        SimError::Input(InputError::new("", field, expected, found.to_string()))
    }
}
