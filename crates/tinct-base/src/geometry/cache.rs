//! [`CacheGeometry`], tinct's one description of a cache's shape: size,
//! associativity, line size and the optional slice hash, and the mapping
//! from a physical address to its cache set. tinct-sim's model replays
//! accesses into one, tinct-rt's isolation proof models this machine's
//! last-level cache as one, and its page colours are [`PageColors`] of one
//! way of one slice ([`CacheGeometry::page_colors`]).
//!
//! A real cache whose shape is not known this exactly (a way size that is
//! not a power of two: sliced or hashed, slices unknown) is no
//! `CacheGeometry`; its colours are still [`PageColors::of_cache`].

use super::{GeometryError, PageColors};
use crate::InputError;

/// Largest associativity tinct models (tinct-sim's tree-PLRU keeps one
/// `u64` per set; no documented cache has more ways).
pub const MAX_WAYS: u32 = 64;

/// Largest number of slice-selection masks (2^8 = 256 slices).
pub const MAX_SLICE_MASKS: usize = 8;

/// Selects the slice of a sliced last-level cache from the physical address.
///
/// As on Intel's sliced LLCs (Maurice et al., "Reverse engineering Intel
/// last-level cache complex addressing using performance counters", RAID 2015),
/// bit `i` of the slice number is the parity (XOR of all bits) of
/// `address & masks[i]`. With `n` masks the cache has `2^n` slices, each with
/// its own sets. No masks means one slice: an ordinary, unsliced cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct SliceHash {
    masks: Vec<u64>,
}

impl SliceHash {
    /// An unsliced cache: every address is in slice 0.
    pub fn none() -> Self {
        SliceHash { masks: Vec::new() }
    }

    /// A slice hash from XOR masks, one per slice-number bit (least significant first).
    pub fn new(masks: Vec<u64>) -> Result<Self, InputError> {
        if masks.len() > MAX_SLICE_MASKS {
            return Err(invalid(
                "geometry.slice_masks",
                format!("at most {MAX_SLICE_MASKS} masks (256 slices)"),
                format!("{} masks", masks.len()),
            ));
        }
        if let Some(position) = masks.iter().position(|&mask| mask == 0) {
            return Err(invalid(
                "geometry.slice_masks",
                "non-zero XOR masks (a zero mask selects no address bit)",
                format!("mask {position} is 0"),
            ));
        }
        Ok(SliceHash { masks })
    }

    /// The XOR masks, slice-number bit 0 first.
    pub fn masks(&self) -> &[u64] {
        &self.masks
    }

    /// Number of slices, `2^masks`.
    pub fn slices(&self) -> u64 {
        1 << self.masks.len()
    }

    /// The slice a physical address falls in.
    #[inline]
    pub fn slice_of(&self, address: u64) -> u64 {
        self.masks
            .iter()
            .enumerate()
            .fold(0, |slice, (bit, &mask)| {
                slice | (u64::from((address & mask).count_ones() & 1) << bit)
            })
    }
}

/// The plain description of a geometry, as written in files and reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct GeometrySpec {
    /// Total capacity in bytes, all slices together.
    pub size: u64,
    /// Associativity: lines per set.
    pub ways: u32,
    /// Line size in bytes.
    pub line_size: u64,
    /// Slice-selection XOR masks; empty for an unsliced cache.
    #[cfg_attr(feature = "serde", serde(default))]
    pub slice_masks: Vec<u64>,
}

/// A validated cache geometry.
///
/// Sets are per slice: `sets_per_slice = size / (slices * ways * line_size)`,
/// indexed by the address bits just above the line offset. A set is named
/// globally by `slice * sets_per_slice + index`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "GeometrySpec"))]
#[cfg_attr(feature = "serde", serde(into = "GeometrySpec"))]
pub struct CacheGeometry {
    size: u64,
    ways: u32,
    line_size: u64,
    slice_hash: SliceHash,
    line_shift: u32,
    sets_per_slice: u64,
}

impl CacheGeometry {
    /// An unsliced cache of `size` bytes, `ways`-way set associative, with `line_size`-byte lines.
    pub fn new(size: u64, ways: u32, line_size: u64) -> Result<Self, InputError> {
        Self::sliced(size, ways, line_size, SliceHash::none())
    }

    /// A sliced cache: `size` bytes in total, split evenly over the slices of `slice_hash`.
    pub fn sliced(
        size: u64,
        ways: u32,
        line_size: u64,
        slice_hash: SliceHash,
    ) -> Result<Self, InputError> {
        if !line_size.is_power_of_two() {
            return Err(invalid(
                "geometry.line_size",
                "a power of two in bytes",
                line_size,
            ));
        }
        if ways == 0 || ways > MAX_WAYS {
            return Err(invalid("geometry.ways", format!("1..={MAX_WAYS}"), ways));
        }
        let slices = slice_hash.slices();
        let bytes_per_set_row = slices * u64::from(ways) * line_size;
        if size == 0 || !size.is_multiple_of(bytes_per_set_row) {
            return Err(invalid(
                "geometry.size",
                format!("a non-zero multiple of slices × ways × line size = {bytes_per_set_row} B"),
                format!("{size} B"),
            ));
        }
        let sets_per_slice = size / bytes_per_set_row;
        if !sets_per_slice.is_power_of_two() {
            return Err(invalid(
                "geometry.size",
                "a size giving a power-of-two number of sets per slice",
                format!("{size} B, which gives {sets_per_slice} sets per slice"),
            ));
        }
        Ok(CacheGeometry {
            size,
            ways,
            line_size,
            slice_hash,
            line_shift: line_size.trailing_zeros(),
            sets_per_slice,
        })
    }

    /// Total capacity in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Associativity (lines per set).
    pub fn ways(&self) -> u32 {
        self.ways
    }

    /// Line size in bytes.
    pub fn line_size(&self) -> u64 {
        self.line_size
    }

    /// The slice hash (no masks for an unsliced cache).
    pub fn slice_hash(&self) -> &SliceHash {
        &self.slice_hash
    }

    /// Number of slices.
    pub fn slices(&self) -> u64 {
        self.slice_hash.slices()
    }

    /// Sets in each slice.
    pub fn sets_per_slice(&self) -> u64 {
        self.sets_per_slice
    }

    /// Sets in the whole cache (all slices).
    pub fn total_sets(&self) -> u64 {
        self.sets_per_slice * self.slices()
    }

    /// Lines in the whole cache.
    pub fn total_lines(&self) -> u64 {
        self.total_sets() * u64::from(self.ways)
    }

    /// Bytes one way of one slice spans in the address space: `sets_per_slice × line_size`.
    /// Addresses this far apart fall into the same set index.
    pub fn way_span(&self) -> u64 {
        self.sets_per_slice * self.line_size
    }

    /// The line-aligned address (address with the line offset cleared).
    #[inline]
    pub fn line_address(&self, address: u64) -> u64 {
        address & !(self.line_size - 1)
    }

    /// The set index inside the slice: the address bits just above the line offset.
    #[inline]
    pub fn index_in_slice(&self, address: u64) -> u64 {
        (address >> self.line_shift) & (self.sets_per_slice - 1)
    }

    /// The global set number of an address: `slice * sets_per_slice + index_in_slice`.
    #[inline]
    pub fn set_of(&self, address: u64) -> u64 {
        self.slice_hash.slice_of(address) * self.sets_per_slice + self.index_in_slice(address)
    }

    /// The page colours of this cache for pages of `page_bytes`: those of
    /// one way of one slice ([`CacheGeometry::way_span`], kim2013 Section
    /// IV-A), whose bits are always known (a way span is a power of two).
    pub fn page_colors(&self, page_bytes: u64) -> Result<PageColors, GeometryError> {
        PageColors::of_way(self.way_span(), page_bytes)
    }
}

/// A geometry field with an unusable value: bad input at `field`.
fn invalid(field: &str, expected: impl Into<String>, found: impl ToString) -> InputError {
    InputError::new("", field, expected, found.to_string())
}

impl TryFrom<GeometrySpec> for CacheGeometry {
    type Error = InputError;

    fn try_from(spec: GeometrySpec) -> Result<Self, InputError> {
        Self::sliced(
            spec.size,
            spec.ways,
            spec.line_size,
            SliceHash::new(spec.slice_masks)?,
        )
    }
}

impl From<CacheGeometry> for GeometrySpec {
    fn from(geometry: CacheGeometry) -> Self {
        GeometrySpec {
            size: geometry.size,
            ways: geometry.ways,
            line_size: geometry.line_size,
            slice_masks: geometry.slice_hash.masks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn llc_of_this_machine_has_32768_sets() {
        let geometry = CacheGeometry::new(32 * MIB, 16, 64).unwrap();
        assert_eq!(geometry.total_sets(), 32768);
        assert_eq!(geometry.way_span(), 2 * MIB);
        assert_eq!(geometry.total_lines(), 32 * MIB / 64);
    }

    #[test]
    fn set_index_uses_bits_above_the_line_offset() {
        let geometry = CacheGeometry::new(32 * 1024, 8, 64).unwrap(); // 64 sets
        assert_eq!(geometry.set_of(0), 0);
        assert_eq!(geometry.set_of(63), 0);
        assert_eq!(geometry.set_of(64), 1);
        assert_eq!(geometry.set_of(64 * 63), 63);
        assert_eq!(geometry.set_of(64 * 64), 0, "wraps after one way span");
        assert_eq!(geometry.line_address(64 * 5 + 17), 64 * 5);
    }

    #[test]
    fn sliced_sets_are_per_slice() {
        let hash = SliceHash::new(vec![1 << 17, 1 << 18]).unwrap();
        let geometry = CacheGeometry::sliced(8 * MIB, 16, 64, hash).unwrap();
        assert_eq!(geometry.slices(), 4);
        assert_eq!(geometry.sets_per_slice(), 2048);
        assert_eq!(geometry.set_of(1 << 17), 2048);
        assert_eq!(geometry.set_of(1 << 18), 2 * 2048);
        assert_eq!(geometry.set_of((1 << 17) | (1 << 18) | 64), 3 * 2048 + 1);
    }

    #[test]
    fn slice_hash_is_parity_of_masked_bits() {
        let hash = SliceHash::new(vec![0b1011]).unwrap();
        assert_eq!(hash.slice_of(0b0000), 0);
        assert_eq!(hash.slice_of(0b0001), 1);
        assert_eq!(hash.slice_of(0b0011), 0);
        assert_eq!(hash.slice_of(0b1011), 1);
        assert_eq!(hash.slice_of(0b0100), 0, "bit 2 is not in the mask");
    }

    #[test]
    fn bad_geometries_name_the_field() {
        let err = CacheGeometry::new(32 * MIB, 16, 48).unwrap_err();
        assert!(err.field == "geometry.line_size", "{err}");
        let err = CacheGeometry::new(32 * MIB, 0, 64).unwrap_err();
        assert!(err.field == "geometry.ways", "{err}");
        let err = CacheGeometry::new(12 * MIB, 16, 64).unwrap_err();
        assert!(
            err.to_string().contains("power-of-two number of sets"),
            "{err}"
        );
        let err = CacheGeometry::new(1000, 16, 64).unwrap_err();
        assert!(err.field == "geometry.size", "{err}");
        assert!(SliceHash::new(vec![0]).is_err());
    }

    #[test]
    fn page_colours_are_those_of_one_way_of_one_slice() {
        let l3 = CacheGeometry::new(32 * MIB, 16, 64).unwrap();
        let colors = l3.page_colors(4096).unwrap();
        assert_eq!((colors.colors, colors.color_bits().unwrap()), (512, 12..21));
        // kim2013's i7-2600: four slices, 32 colours, as of_sliced_cache says.
        let hash = SliceHash::new(vec![1 << 17, 1 << 18]).unwrap();
        let sliced = CacheGeometry::sliced(8 * MIB, 16, 64, hash).unwrap();
        assert_eq!(
            sliced.page_colors(4096).unwrap(),
            PageColors::of_way(128 << 10, 4096).unwrap()
        );
        assert_eq!(
            sliced.page_colors(4096).unwrap().colors,
            PageColors::of_sliced_cache(8 * MIB, 16, 4, 4096)
                .unwrap()
                .colors
        );
        assert!(l3.page_colors(3000).is_err());
    }

    #[cfg(feature = "serde")]
    #[test]
    fn geometry_round_trips_through_json_and_validates() {
        let geometry =
            CacheGeometry::sliced(8 * MIB, 16, 64, SliceHash::new(vec![1 << 20]).unwrap()).unwrap();
        let text = serde_json::to_string(&geometry).unwrap();
        assert_eq!(
            text,
            r#"{"size":8388608,"ways":16,"line_size":64,"slice_masks":[1048576]}"#
        );
        let back: CacheGeometry = serde_json::from_str(&text).unwrap();
        assert_eq!(back, geometry);
        let bad =
            serde_json::from_str::<CacheGeometry>(r#"{"size":8388608,"ways":16,"line_size":60}"#);
        assert!(bad.unwrap_err().to_string().contains("geometry.line_size"));
    }
}
