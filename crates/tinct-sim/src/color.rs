//! Page colors of a cache geometry.
//!
//! A page's *color* is the part of the set index that lies above the page
//! offset: pages of different colors can never share a cache set (Kim et al.
//! 2013, Section III-C, cache reservation by page coloring). With one-slice
//! caches, `colors = size / (ways × page_size)`; in general it is
//! `way_span / page_size` (and at least 1), because the slice hash does not
//! change the set index inside a slice.

use std::ops::Range;

use crate::error::SimError;
use tinct_base::geometry::CacheGeometry;
use tinct_base::geometry::PageColors;

/// The page-color view of a geometry for one page size: tinct-base's
/// [`PageColors`] of one way of one slice (the colour of a frame or an
/// address is its calculation), with the sets each colour covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageColoring {
    page_size: u64,
    geometry: PageColors,
    colors: u64,
    line_size: u64,
    way_span: u64,
}

impl PageColoring {
    /// Colors of `geometry` for pages of `page_size` bytes.
    pub fn new(geometry: &CacheGeometry, page_size: u64) -> Result<Self, SimError> {
        if !page_size.is_power_of_two() || page_size < geometry.line_size() {
            return Err(SimError::invalid(
                "page_size",
                format!(
                    "a power of two of at least the line size ({} B)",
                    geometry.line_size()
                ),
                format!("{page_size} B"),
            ));
        }
        // The one page-color calculation of tinct (shared with tinct-sys and
        // tinct-mem), over the span of one way of one slice.
        let colors = geometry
            .page_colors(page_size)
            .map_err(|e| SimError::invalid("page_size", "a page-colored geometry", e))?;
        // A model's way span is a power of two (sets and lines are), so
        // the colour bits are known: every frame has a colour.
        colors
            .color_bits()
            .map_err(|e| SimError::invalid("way span", "a power of two", e))?;
        Ok(PageColoring {
            page_size,
            colors: colors.colors,
            geometry: colors,
            line_size: geometry.line_size(),
            way_span: geometry.way_span(),
        })
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// Number of page colors.
    pub fn colors(&self) -> u64 {
        self.colors
    }

    /// Color of the page with frame number `pfn`.
    #[inline]
    pub fn color_of_pfn(&self, pfn: u64) -> u64 {
        self.geometry
            .color_of_frame(pfn)
            .expect("colour bits checked in PageColoring::new")
    }

    /// Color of a physical address.
    #[inline]
    pub fn color_of_address(&self, address: u64) -> u64 {
        self.geometry
            .color_of(address)
            .expect("colour bits checked in PageColoring::new")
    }

    /// The physical address bits that carry the color (empty when there is one color).
    pub fn color_bits(&self) -> Range<u32> {
        self.geometry
            .address_bits
            .map_or(0..0, |(low, high)| low..high)
    }

    /// The set indices inside a slice that pages of `color` map to.
    pub fn sets_of_color(&self, color: u64) -> Result<Range<u64>, SimError> {
        self.check_color(color)?;
        let sets = self.sets_per_color();
        Ok(color * sets..(color + 1) * sets)
    }

    /// The color whose pages map to set `index_in_slice` (see [`CacheGeometry::index_in_slice`]).
    pub fn color_of_set_index(&self, index_in_slice: u64) -> u64 {
        (index_in_slice / self.sets_per_color()).min(self.colors - 1)
    }

    /// Sets inside one slice that one color covers.
    fn sets_per_color(&self) -> u64 {
        (self.page_size / self.line_size).min(self.way_span / self.line_size)
    }

    /// Fails unless `color` is one of the geometry's colors.
    pub fn check_color(&self, color: u64) -> Result<(), SimError> {
        if color < self.colors {
            Ok(())
        } else {
            Err(SimError::ColorOutOfRange {
                color,
                colors: self.colors,
            })
        }
    }

    /// The frame number of the `group`-th frame of `color`: `group × colors + color`.
    pub fn pfn_of(&self, color: u64, group: u64) -> Result<u64, SimError> {
        self.check_color(color)?;
        group
            .checked_mul(self.colors)
            .and_then(|base| base.checked_add(color))
            .ok_or_else(|| SimError::invalid("frame group", "a frame number below 2^64", group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;

    #[test]
    fn llc_of_this_machine_has_512_colors_on_bits_12_to_20() {
        let coloring =
            PageColoring::new(&CacheGeometry::new(32 * MIB, 16, 64).unwrap(), 4 * KIB).unwrap();
        assert_eq!(coloring.colors(), 512);
        assert_eq!(coloring.color_bits(), 12..21);
        assert_eq!(coloring.color_of_address(0x1234_5000), 0x345 & 511);
        assert_eq!(coloring.sets_of_color(3).unwrap(), 192..256);
    }

    #[test]
    fn l2_of_this_machine_has_32_colors() {
        let coloring =
            PageColoring::new(&CacheGeometry::new(MIB, 8, 64).unwrap(), 4 * KIB).unwrap();
        assert_eq!(coloring.colors(), 32);
    }

    #[test]
    fn huge_pages_leave_one_color() {
        let coloring =
            PageColoring::new(&CacheGeometry::new(32 * MIB, 16, 64).unwrap(), 2 * MIB).unwrap();
        assert_eq!(coloring.colors(), 1);
        assert_eq!(coloring.color_bits(), 21..21);
        assert_eq!(coloring.sets_of_color(0).unwrap(), 0..32768);
    }

    #[test]
    fn every_line_of_a_page_lands_in_the_sets_of_its_color() {
        let geometry = CacheGeometry::new(MIB, 8, 64).unwrap();
        let coloring = PageColoring::new(&geometry, 4 * KIB).unwrap();
        for pfn in [0u64, 1, 31, 32, 33, 1000, 123_457] {
            let sets = coloring.sets_of_color(coloring.color_of_pfn(pfn)).unwrap();
            for offset in (0..4 * KIB).step_by(64) {
                let set = geometry.index_in_slice(pfn * 4 * KIB + offset);
                assert!(
                    sets.contains(&set),
                    "pfn {pfn} offset {offset}: set {set} not in {sets:?}"
                );
                assert_eq!(coloring.color_of_set_index(set), coloring.color_of_pfn(pfn));
            }
        }
    }

    #[test]
    fn pfn_of_inverts_color_of_pfn() {
        let coloring =
            PageColoring::new(&CacheGeometry::new(MIB, 8, 64).unwrap(), 4 * KIB).unwrap();
        let pfn = coloring.pfn_of(5, 7).unwrap();
        assert_eq!(pfn, 7 * 32 + 5);
        assert_eq!(coloring.color_of_pfn(pfn), 5);
        assert_eq!(
            coloring.pfn_of(32, 0).unwrap_err(),
            SimError::ColorOutOfRange {
                color: 32,
                colors: 32
            }
        );
    }

    #[test]
    fn bad_page_size_is_an_error() {
        let geometry = CacheGeometry::new(MIB, 8, 64).unwrap();
        assert!(PageColoring::new(&geometry, 3000).is_err());
        assert!(PageColoring::new(&geometry, 32).is_err());
    }
}
