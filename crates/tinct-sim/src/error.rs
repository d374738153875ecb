//! The one error type of tinct-sim.

use thiserror::Error;

/// Everything that can go wrong when building or driving the cache model.
///
/// Each variant names the offending field, what was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SimError {
    /// A geometry, replacement or configuration field has an unusable value.
    #[error("invalid {field}: expected {expected}, found {found}")]
    InvalidField {
        /// The field, e.g. `geometry.ways`.
        field: &'static str,
        /// What the field must be.
        expected: String,
        /// The value that was given.
        found: String,
    },
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
    /// Shorthand for [`SimError::InvalidField`].
    pub(crate) fn invalid(
        field: &'static str,
        expected: impl Into<String>,
        found: impl ToString,
    ) -> Self {
        SimError::InvalidField {
            field,
            expected: expected.into(),
            found: found.to_string(),
        }
    }
}
