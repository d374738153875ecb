//! The geometry of a cache and its page colours: the one calculation that
//! tinct-sys (what doctor reports), tinct-mem (which pages the allocator
//! hands out), tinct-sim (the cache model that proves a coloring) and
//! tinct-rt (the isolation proof's model of this machine) share.
//!
//! [`CacheGeometry`] (module [`cache`]) is a cache as a model indexes it:
//! size, ways, line size and slice hash, the set of an address.
//! [`PageColors`] (this module) is what page colouring sees of a cache for
//! one page size: the colours, their address bits, the colour of a frame;
//! [`CacheGeometry::page_colors`] gives them for one way of one slice.
//!
//! Page colors (Kim et al. 2013, Section III-C, "cache reservation by page
//! coloring"): a cache of `size` bytes with `ways` ways has a way size of
//! `size / ways`. Physical pages whose addresses agree in the bits between
//! the page offset and the way size map to the same cache sets; those bits
//! select the page's *color*, and the cache has `way size / page size`
//! colors (at least 1).
//!
//! *Sliced caches.* A last-level cache split into slices by an address
//! hash (Intel since Sandy Bridge, AMD Zen core complexes) indexes its sets
//! *within a slice*: the set index of a slice covers `size / slices / ways`
//! bytes of address space, and the slice hash reads bits above it. Only the
//! bits below the slice hash are colour bits, so the cache has
//! `size / slices / ways / page size` colours. kim2013 (Section IV-A, Figure
//! 5): the i7-2600's 8 MiB, 16-way L3 has four 2 MiB slices of 2048 sets,
//! so `2^(11+6-12) = 32` colours where the way-size rule gives 128.
//! [`PageColors::of_sliced_cache`] computes that, and [`ColorRule`] records
//! which rule a geometry came from.
//!
//! ```
//! use tinct_base::geometry::PageColors;
//!
//! // This machine's L3: 32 MiB, 16 ways, 4 KiB pages.
//! let l3 = PageColors::of_cache(32 << 20, 16, 4096)?;
//! assert_eq!(l3.colors, 512);
//! assert_eq!(l3.color_bits()?, 12..21);
//! assert_eq!(l3.color_of_frame(0x12345), Some(0x145));
//! # Ok::<(), tinct_base::geometry::GeometryError>(())
//! ```

pub mod cache;

pub use cache::{CacheGeometry, GeometrySpec, MAX_SLICE_MASKS, MAX_WAYS, SliceHash};

use std::fmt;
use std::ops::Range;

/// Why page colors cannot be derived from a geometry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    /// The page size is zero or not a power of two.
    #[error("page size {0} bytes: expected a power of two")]
    PageSize(u64),
    /// The cache size or associativity is zero.
    #[error("cache of {size} bytes with {ways} ways: expected both non-zero")]
    EmptyCache {
        /// Size in bytes.
        size: u64,
        /// Associativity.
        ways: u64,
    },
    /// The way size is not a power of two: the color bits are unknown.
    #[error(
        "cache way size {way_description} is not a power of two: the cache is probably sliced or \
         hashed, so the color bits are not known; give them explicitly"
    )]
    UnknownColorBits {
        /// The way size in words, e.g. `1572864 bytes (31457280 bytes / 20 ways)`.
        way_description: String,
    },
    /// The slice count is zero or does not divide the cache.
    #[error(
        "{size} bytes in {slices} slices: expected a non-zero slice count that divides the size"
    )]
    Slices {
        /// Size in bytes.
        size: u64,
        /// Number of slices.
        slices: u64,
    },
    /// Explicit colour bits that are not a run of consecutive bits at or
    /// above the page offset.
    #[error(
        "colour bits {bits:?}: expected consecutive address bits starting at the page offset \
         bit {page_shift} (e.g. 12-16), each below 64"
    )]
    ExplicitBits {
        /// The bits given.
        bits: Vec<u32>,
        /// log2 of the page size.
        page_shift: u32,
    },
}

/// Which rule gave a cache's page colours (`tinct doctor` prints it with
/// the reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case", tag = "rule"))]
pub enum ColorRule {
    /// kim2013 Section II-B: colours = way size / page size, the set index
    /// of an unsliced cache (or of a cache whose slices are not known).
    WaySize,
    /// A sliced cache: the colour bits lie below the slice hash, colours =
    /// size / slices / ways / page size (kim2013 Section IV-A).
    Sliced {
        /// Number of slices.
        slices: u64,
    },
    /// Colour bits given explicitly (a task set's `[platform] color_bits`,
    /// `--color-bits`, `TINCT_COLOR_BITS`).
    Explicit,
}

impl fmt::Display for ColorRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WaySize => f.write_str("way-size rule"),
            Self::Sliced { slices } => write!(f, "sliced-cache rule, {slices} slices"),
            Self::Explicit => f.write_str("explicit colour bits"),
        }
    }
}

/// The page colours of a last-level cache, the rule that gave them and why
/// that rule applies (evidence in words, for `tinct doctor`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ColorGeometry {
    /// The colours.
    pub colors: PageColors,
    /// The rule.
    pub rule: ColorRule,
    /// Why this rule, e.g. `4 slices counted from the uncore PMUs uncore_cbox_0-3`.
    pub reason: String,
}

/// The page colors of one cache for one page size.
///
/// The fields are public for reports (`tinct doctor --json` prints them);
/// build one with [`PageColors::of_cache`] or [`PageColors::of_way`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PageColors {
    /// Page size the colors are computed for, in bytes.
    pub page_bytes: u64,
    /// Way size (`size / ways`, rounded down) in bytes.
    pub way_bytes: u64,
    /// Number of colors, `way_bytes / page_bytes` (1 if a way is not larger than a page).
    pub colors: u64,
    /// Physical address bits `[low, high)` that select the color, if the
    /// way size is a power of two; `None` for other way sizes (sliced or
    /// hashed caches), where the bits must be given explicitly.
    pub address_bits: Option<(u32, u32)>,
    /// The cache size and ways, for error messages (`None` from [`PageColors::of_way`]).
    #[cfg_attr(feature = "serde", serde(skip))]
    cache: Option<(u64, u64)>,
}

impl PageColors {
    /// Colors of a cache of `size_bytes` with `ways` ways, for pages of
    /// `page_bytes`. A size that `ways` does not divide has a fractional way
    /// size: its colors are counted from the whole bytes, its bits unknown.
    pub fn of_cache(size_bytes: u64, ways: u64, page_bytes: u64) -> Result<Self, GeometryError> {
        if size_bytes == 0 || ways == 0 {
            return Err(GeometryError::EmptyCache {
                size: size_bytes,
                ways,
            });
        }
        let mut colors = Self::of_way(size_bytes / ways, page_bytes)?;
        if !size_bytes.is_multiple_of(ways) {
            colors.address_bits = None;
        }
        colors.cache = Some((size_bytes, ways));
        Ok(colors)
    }

    /// Colors of a cache of `size_bytes` split into `slices` slices by an
    /// address hash, each slice with `ways` ways: the colour bits lie below
    /// the slice hash, so one way of one slice (`size / slices / ways`)
    /// decides (kim2013 Section IV-A: 8 MiB, 16 ways, 4 slices, 4 KiB
    /// pages: 32 colours). One slice is [`PageColors::of_cache`].
    pub fn of_sliced_cache(
        size_bytes: u64,
        ways: u64,
        slices: u64,
        page_bytes: u64,
    ) -> Result<Self, GeometryError> {
        if slices == 0 || !size_bytes.is_multiple_of(slices) {
            return Err(GeometryError::Slices {
                size: size_bytes,
                slices,
            });
        }
        Self::of_cache(size_bytes / slices, ways, page_bytes)
    }

    /// Colours selected by explicit physical address `bits` (consecutive,
    /// starting at the page offset bit, e.g. `[12, 13, 14, 15, 16]` for 32
    /// colours of 4 KiB pages); an empty list is one colour.
    pub fn of_bits(bits: &[u32], page_bytes: u64) -> Result<Self, GeometryError> {
        if !page_bytes.is_power_of_two() {
            return Err(GeometryError::PageSize(page_bytes));
        }
        let page_shift = page_bytes.trailing_zeros();
        let consecutive = bits
            .iter()
            .enumerate()
            .all(|(i, &bit)| u32::try_from(i).is_ok_and(|i| bit == page_shift + i) && bit < 64);
        if !consecutive {
            return Err(GeometryError::ExplicitBits {
                bits: bits.to_vec(),
                page_shift,
            });
        }
        let high = page_shift + bits.len() as u32;
        Ok(Self {
            page_bytes,
            way_bytes: 1u64.checked_shl(high).unwrap_or(u64::MAX),
            colors: 1u64.checked_shl(bits.len() as u32).unwrap_or(u64::MAX),
            address_bits: Some((page_shift, high)),
            cache: None,
        })
    }

    /// Colors of a cache (or of one slice of a sliced cache) whose way
    /// spans `way_bytes` of the address space, for pages of `page_bytes`.
    pub fn of_way(way_bytes: u64, page_bytes: u64) -> Result<Self, GeometryError> {
        if !page_bytes.is_power_of_two() {
            return Err(GeometryError::PageSize(page_bytes));
        }
        if way_bytes == 0 {
            return Err(GeometryError::EmptyCache { size: 0, ways: 1 });
        }
        let colors = (way_bytes / page_bytes).max(1);
        let page_shift = page_bytes.trailing_zeros();
        let address_bits = if colors == 1 {
            Some((page_shift, page_shift))
        } else if way_bytes.is_power_of_two() {
            Some((page_shift, way_bytes.trailing_zeros()))
        } else {
            None
        };
        Ok(Self {
            page_bytes,
            way_bytes,
            colors,
            address_bits,
            cache: None,
        })
    }

    /// The physical address bits that select the color (empty with one
    /// color), or an error saying why they are unknown.
    pub fn color_bits(&self) -> Result<Range<u32>, GeometryError> {
        match self.address_bits {
            Some((low, high)) => Ok(low..high),
            None => Err(GeometryError::UnknownColorBits {
                way_description: match self.cache {
                    Some((size, ways)) => format!(
                        "{} bytes ({size} bytes / {ways} ways)",
                        size as f64 / ways as f64
                    ),
                    None => format!("{} bytes", self.way_bytes),
                },
            }),
        }
    }

    /// The color of a physical address (`None` if the bits are unknown).
    pub fn color_of(&self, physical_address: u64) -> Option<u64> {
        let (low, high) = self.address_bits?;
        Some((physical_address >> low) & low_mask(high - low))
    }

    /// The color of the page with frame number `frame` (`None` if the bits
    /// are unknown).
    pub fn color_of_frame(&self, frame: u64) -> Option<u64> {
        let (low, high) = self.address_bits?;
        let page_shift = self.page_bytes.trailing_zeros();
        Some((frame >> (low - page_shift)) & low_mask(high - low))
    }
}

/// The fewest sets any documented last-level cache slice indexes: 1024.
/// Intel Skylake to Ice Lake clients have 1024 sets per slice (two
/// slices behind each CBo: the RELOAD+REFRESH artifact, uops.info's
/// i5-1035G1), as do AMD Zen APUs with 1 MiB 16-way slices; Sandy Bridge
/// to Broadwell clients (kim2013 Section IV-A) and the Skylake-SP to
/// Sapphire Rapids servers have 2048, other Zen parts 2048 or more (see
/// tinct-sys's `cache_slices` for each source).
pub const MIN_SETS_PER_SLICE: u64 = 1024;

/// Colour bits that are safe to assume for a cache whose bits cannot be
/// derived (a way size that is not a power of two: sliced or hashed):
/// those below both the set index of the smallest documented slice
/// ([`MIN_SETS_PER_SLICE`] sets of `line_bytes` lines) and the largest
/// power of two that divides the way. Fewer colours than the truth never
/// puts two colours in one set; a user verifies them with `tinct doctor
/// --probe-colors --color-bits ...` on bare metal. Empty when a page is
/// already larger than that.
pub fn assumed_safe_bits(way_bytes: u64, line_bytes: u64, page_bytes: u64) -> Vec<u32> {
    if way_bytes == 0 || !page_bytes.is_power_of_two() || !line_bytes.is_power_of_two() {
        return Vec::new();
    }
    let slice_span = MIN_SETS_PER_SLICE.saturating_mul(line_bytes);
    let way_power = 1u64 << way_bytes.trailing_zeros();
    let high = slice_span.min(way_power).trailing_zeros();
    (page_bytes.trailing_zeros()..high).collect()
}

/// A mask of the `bits` lowest bits (all ones for 64).
fn low_mask(bits: u32) -> u64 {
    1u64.checked_shl(bits).map_or(u64::MAX, |bit| bit - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_32mib_16_way_llc_has_512_colors_on_bits_12_to_20() {
        let colors = PageColors::of_cache(32 << 20, 16, 4096).unwrap();
        assert_eq!(colors.way_bytes, 2 << 20);
        assert_eq!(colors.colors, 512);
        assert_eq!(colors.address_bits, Some((12, 21)));
        assert_eq!(colors.color_bits().unwrap(), 12..21);
        assert_eq!(colors.color_of(0x1234_5000), Some(0x145));
        assert_eq!(colors.color_of_frame(0x12345), Some(0x145));
    }

    #[test]
    fn a_way_not_larger_than_a_page_has_one_color_and_no_bits() {
        let l1 = PageColors::of_cache(32 << 10, 8, 4096).unwrap();
        assert_eq!((l1.colors, l1.address_bits), (1, Some((12, 12))));
        assert_eq!(l1.color_bits().unwrap(), 12..12);
        assert_eq!(l1.color_of_frame(12345), Some(0));
        let huge = PageColors::of_cache(32 << 20, 16, 2 << 20).unwrap();
        assert_eq!((huge.colors, huge.color_bits().unwrap()), (1, 21..21));
    }

    #[test]
    fn sliced_geometries_count_colors_but_know_no_bits() {
        let sliced = PageColors::of_cache(30 << 20, 20, 4096).unwrap();
        assert_eq!(sliced.colors, 384);
        assert_eq!(sliced.address_bits, None);
        assert_eq!(sliced.color_of(0x1000), None);
        let err = sliced.color_bits().unwrap_err().to_string();
        assert!(
            err.contains("1572864 bytes (31457280 bytes / 20 ways)") && err.contains("explicitly"),
            "{err}"
        );
        // 3 MiB over 7 ways is not a whole number of bytes per way.
        let odd = PageColors::of_cache(3 << 20, 7, 4096).unwrap();
        assert_eq!(odd.address_bits, None);
    }

    #[test]
    fn bad_geometries_are_errors() {
        assert_eq!(
            PageColors::of_cache(1 << 20, 0, 4096).unwrap_err(),
            GeometryError::EmptyCache {
                size: 1 << 20,
                ways: 0
            }
        );
        assert_eq!(
            PageColors::of_cache(1 << 20, 8, 3000).unwrap_err(),
            GeometryError::PageSize(3000)
        );
        assert!(PageColors::of_way(0, 4096).is_err());
    }

    #[test]
    fn kim2013s_i7_2600_has_32_colours_below_its_slice_hash() {
        // Section IV-A: 8 MiB, 16 ways, four 2 MiB slices of 2048 sets.
        let way_rule = PageColors::of_cache(8 << 20, 16, 4096).unwrap();
        assert_eq!(way_rule.colors, 128, "the way-size rule overcounts");
        let sliced = PageColors::of_sliced_cache(8 << 20, 16, 4, 4096).unwrap();
        assert_eq!(sliced.colors, 32);
        assert_eq!(sliced.color_bits().unwrap(), 12..17);
        assert_eq!(sliced.way_bytes, 128 << 10);
        assert_eq!(
            PageColors::of_sliced_cache(8 << 20, 16, 1, 4096)
                .unwrap()
                .colors,
            128,
            "one slice is the way-size rule"
        );
        assert!(PageColors::of_sliced_cache(8 << 20, 16, 0, 4096).is_err());
        assert!(PageColors::of_sliced_cache(8 << 20, 16, 3, 4096).is_err());
        // 6 slices of a 12 MiB 16-way cache: 2 MiB each, 128 KiB ways.
        let six = PageColors::of_sliced_cache(12 << 20, 16, 6, 4096).unwrap();
        assert_eq!((six.colors, six.color_bits().unwrap()), (32, 12..17));
    }

    #[test]
    fn explicit_bits_must_start_at_the_page_offset_and_be_consecutive() {
        let five = PageColors::of_bits(&[12, 13, 14, 15, 16], 4096).unwrap();
        assert_eq!((five.colors, five.color_bits().unwrap()), (32, 12..17));
        assert_eq!(five.color_of_frame(0x25), Some(5));
        let none = PageColors::of_bits(&[], 4096).unwrap();
        assert_eq!(none.colors, 1);
        for bad in [&[13, 14][..], &[12, 14], &[12, 12]] {
            let err = PageColors::of_bits(bad, 4096).unwrap_err().to_string();
            assert!(err.contains("consecutive") && err.contains("12"), "{err}");
        }
        assert_eq!(
            ColorRule::Sliced { slices: 4 }.to_string(),
            "sliced-cache rule, 4 slices"
        );
    }

    #[test]
    fn bits_safe_to_assume_stay_below_the_smallest_slice_and_the_way() {
        // The 300 MiB 20-way L3 of a Xeon: a 15 MiB way, slices of at
        // least 1024 sets: bits 12-15, 16 colours.
        assert_eq!(assumed_safe_bits(15 << 20, 64, 4096), vec![12, 13, 14, 15]);
        // A 1.5 MiB way (30 MiB, 20 ways): 2^19 divides it, the slice decides.
        assert_eq!(assumed_safe_bits(3 << 19, 64, 4096).len(), 4);
        // A way of 3 × 16 KiB: only 2^14 divides it, so bits 12-13.
        assert_eq!(assumed_safe_bits(3 << 14, 64, 4096), vec![12, 13]);
        assert!(assumed_safe_bits(3 << 12, 64, 4096).is_empty());
        assert!(assumed_safe_bits(0, 64, 4096).is_empty());
        assert!(assumed_safe_bits(15 << 20, 64, 3000).is_empty());
    }

    #[test]
    fn frame_and_address_colors_agree() {
        let colors = PageColors::of_cache(1 << 20, 8, 4096).unwrap();
        for frame in [0u64, 1, 31, 32, 33, 123_457, u64::MAX >> 12] {
            assert_eq!(colors.color_of_frame(frame), colors.color_of(frame << 12));
        }
    }
}
