//! Synthetic physical memory that hands out frame numbers by color.
//!
//! Stands in for tinct-mem's page pool when a test needs working sets with a
//! known coloring: frames are drawn at random (seeded) from a memory of a
//! given size, never twice. Colored requests follow Kim et al. 2013,
//! Section III-C: page `i` of a request for colors `c_0..c_{k-1}` has color
//! `c_{i mod k}`, so every color gets the same number of pages (round robin).

use std::collections::HashSet;

use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::color::PageColoring;
use crate::error::SimError;

/// A seeded pool of synthetic physical frames.
#[derive(Debug, Clone)]
pub struct SyntheticMemory {
    coloring: PageColoring,
    frames_per_color: u64,
    free_per_color: Vec<u64>,
    taken: HashSet<u64>,
    rng: Xoshiro256PlusPlus,
}

impl SyntheticMemory {
    /// A memory of `memory_bytes` (rounded down to whole pages of every color).
    pub fn new(coloring: PageColoring, memory_bytes: u64, seed: u64) -> Result<Self, SimError> {
        let frames_per_color = memory_bytes / coloring.page_size() / coloring.colors();
        if frames_per_color == 0 {
            return Err(SimError::invalid(
                "memory_bytes",
                format!(
                    "at least one page per color ({} B)",
                    coloring.page_size() * coloring.colors()
                ),
                format!("{memory_bytes} B"),
            ));
        }
        let colors = usize::try_from(coloring.colors()).expect("colors fit the address space");
        Ok(SyntheticMemory {
            coloring,
            frames_per_color,
            free_per_color: vec![frames_per_color; colors],
            taken: HashSet::new(),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        })
    }

    /// The coloring frames are classified by.
    pub fn coloring(&self) -> &PageColoring {
        &self.coloring
    }

    /// Frames not handed out yet, all colors together.
    pub fn free_frames(&self) -> u64 {
        self.free_per_color.iter().sum()
    }

    /// `pages` frames from `colors`, round robin over the colors in the given order.
    pub fn take_colored(&mut self, colors: &[u64], pages: usize) -> Result<Vec<u64>, SimError> {
        if colors.is_empty() {
            return Err(SimError::invalid(
                "colors",
                "at least one color",
                "an empty color list",
            ));
        }
        for &color in colors {
            self.coloring.check_color(color)?;
        }
        (0..pages)
            .map(|page| self.take_of_color(colors[page % colors.len()]))
            .collect()
    }

    /// `pages` frames drawn uniformly from all of memory, whatever their color.
    pub fn take_uncolored(&mut self, pages: usize) -> Result<Vec<u64>, SimError> {
        (0..pages)
            .map(|_| {
                let free = self.free_frames();
                if free == 0 {
                    return Err(SimError::OutOfFrames {
                        color: 0,
                        frames_per_color: self.frames_per_color,
                    });
                }
                // Pick a color weighted by its free frames, so the draw is uniform over free frames.
                let mut pick = self.rng.random_range(0..free);
                let color = self
                    .free_per_color
                    .iter()
                    .position(|&count| {
                        if pick < count {
                            true
                        } else {
                            pick -= count;
                            false
                        }
                    })
                    .expect("pick is below the free total") as u64;
                self.take_of_color(color)
            })
            .collect()
    }

    /// One random free frame of `color`.
    fn take_of_color(&mut self, color: u64) -> Result<u64, SimError> {
        let free = &mut self.free_per_color[color as usize];
        if *free == 0 {
            return Err(SimError::OutOfFrames {
                color,
                frames_per_color: self.frames_per_color,
            });
        }
        *free -= 1;
        loop {
            let group = self.rng.random_range(0..self.frames_per_color);
            let pfn = self.coloring.pfn_of(color, group)?;
            if self.taken.insert(pfn) {
                return Ok(pfn);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_base::geometry::CacheGeometry;

    fn l2_memory(memory_bytes: u64, seed: u64) -> SyntheticMemory {
        let coloring =
            PageColoring::new(&CacheGeometry::new(1 << 20, 8, 64).unwrap(), 4096).unwrap();
        SyntheticMemory::new(coloring, memory_bytes, seed).unwrap()
    }

    #[test]
    fn colored_requests_are_round_robin_and_unique() {
        let mut memory = l2_memory(64 << 20, 1);
        let pfns = memory.take_colored(&[3, 9, 17], 300).unwrap();
        let colors: Vec<u64> = pfns
            .iter()
            .map(|&pfn| memory.coloring().color_of_pfn(pfn))
            .collect();
        for (page, color) in colors.iter().enumerate() {
            assert_eq!(*color, [3, 9, 17][page % 3]);
        }
        let more = memory.take_colored(&[3], 100).unwrap();
        let unique: HashSet<u64> = pfns.iter().chain(&more).copied().collect();
        assert_eq!(unique.len(), 400, "no frame handed out twice");
        assert!(unique.iter().all(|&pfn| pfn < (64 << 20) / 4096));
    }

    #[test]
    fn uncolored_requests_cover_many_colors() {
        let mut memory = l2_memory(64 << 20, 2);
        let pfns = memory.take_uncolored(1000).unwrap();
        let colors: HashSet<u64> = pfns
            .iter()
            .map(|&pfn| memory.coloring().color_of_pfn(pfn))
            .collect();
        assert_eq!(colors.len(), 32, "1000 random pages hit all 32 colors");
        assert_eq!(memory.free_frames(), (64 << 20) / 4096 - 1000);
    }

    #[test]
    fn same_seed_same_frames() {
        let a = l2_memory(64 << 20, 7).take_colored(&[0, 1], 50).unwrap();
        let b = l2_memory(64 << 20, 7).take_colored(&[0, 1], 50).unwrap();
        let c = l2_memory(64 << 20, 8).take_colored(&[0, 1], 50).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn exhausting_a_color_is_an_error() {
        let mut memory = l2_memory(32 * 4096 * 4, 3); // 4 frames per color
        assert_eq!(memory.take_colored(&[5], 4).unwrap().len(), 4);
        assert_eq!(
            memory.take_colored(&[5], 1).unwrap_err(),
            SimError::OutOfFrames {
                color: 5,
                frames_per_color: 4
            }
        );
        assert_eq!(
            memory.take_uncolored(31 * 4).unwrap().len(),
            124,
            "the other colors still have frames"
        );
        assert!(memory.take_uncolored(1).is_err());
        assert!(memory.take_colored(&[32], 1).is_err());
        assert!(memory.take_colored(&[], 1).is_err());
    }
}
