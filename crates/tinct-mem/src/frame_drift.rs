//! [`FrameDrift`]: did coloured pages stay on their frames? The one check
//! every user of coloured memory runs after the fact (`tinct run`'s working
//! sets, the benches' arenas, the shim's heap report): the frames recorded
//! when the pages were placed against the frames they have now.
//!
//! A page on another frame lost its placement even when the new frame
//! happens to have the same colour (its bank may differ, and the kernel may
//! move it again), so [`FrameDrift::moved`] counts every changed frame and
//! [`FrameDrift::recolored`] the subset whose colour changed too. See
//! [`crate::locking`] for what moves pages and how to stop it.

use tinct_sys::pagemap::Pagemap;

use crate::error::MemError;
use crate::mapping::AddressMapping;

/// How a set of pages' frames compare with the frames recorded when they
/// were placed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FrameDrift {
    /// Pages compared.
    pub pages: u64,
    /// Pages now on another frame than recorded (migrated by compaction
    /// or NUMA balancing, collapsed into a huge page, copied on write).
    pub moved: u64,
    /// Of [`FrameDrift::moved`], pages whose new frame has another colour:
    /// the cache partition no longer holds them.
    pub recolored: u64,
    /// Pages not present now (swapped out or unmapped): their frame is
    /// unknown, so they are not counted as held either.
    pub absent: u64,
}

impl FrameDrift {
    /// Compares `recorded` frames with the frames `now` of the same pages,
    /// in the same order (`None`: not present). Errors when the lists
    /// differ in length (a caller comparing different page sets).
    pub fn compare(
        mapping: &AddressMapping,
        recorded: &[u64],
        now: &[Option<u64>],
    ) -> Result<Self, MemError> {
        if recorded.len() != now.len() {
            return Err(MemError::Request(format!(
                "frame check of {} recorded pages against {} pages read now: expected the same \
                 pages",
                recorded.len(),
                now.len()
            )));
        }
        let mut drift = FrameDrift {
            pages: recorded.len() as u64,
            ..FrameDrift::default()
        };
        for (&then, &now) in recorded.iter().zip(now) {
            match now {
                None => drift.absent += 1,
                Some(frame) if frame != then => {
                    drift.moved += 1;
                    if mapping.classify_frame(frame).color != mapping.classify_frame(then).color {
                        drift.recolored += 1;
                    }
                }
                Some(_) => {}
            }
        }
        Ok(drift)
    }

    /// Reads the frames of `recorded.len()` pages starting at the
    /// page-aligned virtual address `start` through `/proc/self/pagemap`
    /// and compares them with `recorded`.
    pub fn read(
        mapping: &AddressMapping,
        start: usize,
        recorded: &[u64],
    ) -> Result<Self, MemError> {
        let now = current_frames(start, recorded.len())?;
        Self::compare(mapping, recorded, &now)
    }

    /// True when every page is present on its recorded frame.
    pub fn held(&self) -> bool {
        self.moved == 0 && self.absent == 0
    }

    /// Adds another set of pages' drift (saturating: counts of pages in
    /// memory cannot reach 2^64).
    pub fn add(&mut self, other: FrameDrift) {
        self.pages = self.pages.saturating_add(other.pages);
        self.moved = self.moved.saturating_add(other.moved);
        self.recolored = self.recolored.saturating_add(other.recolored);
        self.absent = self.absent.saturating_add(other.absent);
    }

    /// One line for people when pages did not hold (`None` when they did),
    /// with the settings to check.
    pub fn warning(&self) -> Option<String> {
        if self.held() {
            return None;
        }
        let mut what = Vec::new();
        if self.moved > 0 {
            what.push(format!(
                "{} of {} coloured pages changed frame during the run ({} of them to another \
                 colour)",
                self.moved, self.pages, self.recolored
            ));
        }
        if self.absent > 0 {
            what.push(format!(
                "{} of {} coloured pages were no longer present at the end (their frame, so their \
                 colour, is unknown)",
                self.absent, self.pages
            ));
        }
        Some(format!(
            "{}: a page the kernel moves (compaction, NUMA balancing, THP) leaves its cache \
             partition; `tinct doctor` says which setting to change (e.g. `sysctl \
             vm.compact_unevictable_allowed=0`)",
            what.join("; ")
        ))
    }
}

/// The frames of `pages` pages at the page-aligned address `start` now
/// (`None`: not present).
pub fn current_frames(start: usize, pages: usize) -> Result<Vec<Option<u64>>, MemError> {
    let entries = Pagemap::open_self()?.entries(start, pages)?;
    Ok(entries.iter().map(|entry| entry.frame()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapping::XorFunctions;

    /// Colours on frame bits 0-2 (address bits 12-14): colour = frame % 8.
    fn mapping() -> AddressMapping {
        AddressMapping::new(
            4096,
            XorFunctions::from_bits(&[12, 13, 14]).unwrap(),
            XorFunctions::none(),
            XorFunctions::none(),
        )
        .unwrap()
    }

    #[test]
    fn moved_recolored_and_absent_pages_are_counted_apart() {
        let recorded = [8, 9, 10, 11, 12];
        let now = [
            Some(8),  // held
            Some(17), // moved, same colour (17 % 8 = 1)
            Some(21), // moved, colour 2 -> 5
            None,     // absent
            Some(12), // held
        ];
        let drift = FrameDrift::compare(&mapping(), &recorded, &now).unwrap();
        assert_eq!(
            drift,
            FrameDrift {
                pages: 5,
                moved: 2,
                recolored: 1,
                absent: 1
            }
        );
        assert!(!drift.held());
        let warning = drift.warning().unwrap();
        assert!(
            warning.contains("2 of 5") && warning.contains("tinct doctor"),
            "{warning}"
        );
        // Only absent pages: said as such, never "0 pages changed frame".
        let absent = FrameDrift::compare(&mapping(), &[8, 9], &[Some(8), None]).unwrap();
        let warning = absent.warning().unwrap();
        assert!(
            warning.starts_with("1 of 2 coloured pages were no longer present")
                && !warning.contains("changed"),
            "{warning}"
        );
    }

    #[test]
    fn unchanged_frames_hold_and_mismatched_lists_are_refused() {
        let drift = FrameDrift::compare(&mapping(), &[3, 4], &[Some(3), Some(4)]).unwrap();
        assert!(drift.held());
        assert_eq!(drift.warning(), None);
        assert!(FrameDrift::compare(&mapping(), &[3, 4], &[Some(3)]).is_err());
        let mut total = drift;
        total.add(FrameDrift {
            pages: 1,
            moved: 1,
            recolored: 0,
            absent: 0,
        });
        assert_eq!((total.pages, total.moved), (3, 1));
        assert!(!total.held());
    }
}
