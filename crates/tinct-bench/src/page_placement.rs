//! Memory whose pages are chosen by cache color or DRAM bank, page by page.
//!
//! The benches own their memory as an ordinary `Vec<u64>`, translate its
//! pages through `/proc/self/pagemap` (tinct-sys), and let tinct-mem's
//! [`PageBook`] — the same free lists, kim2013 Section III-C round-robin
//! colored allocation and chandru-mueller Algorithm 1 that the pool uses —
//! decide which pages each thread gets. Each thread then receives its pages
//! as `&mut [u64]` chunks.
//!
//! Why not tinct-mem's [`ColoredBuffer`](tinct_mem::ColoredBuffer) (a safe
//! contiguous slice from a `SharedPool`, which `tinct run` uses for working
//! sets)? The bank and isolation benches need what a buffer hides: which
//! exact pages a thread gets (one page per Algorithm 1 request, with
//! per-bank free counts to size the arena), the per-page frames to report
//! that the placement held ([`PagedMemory::moved_pages`]), and one owner
//! for every thread's pages (a `ColoredBuffer` borrows its pool, so the
//! arena would have to live outside the benches' setup functions). Their
//! kernels also walk page chunks already, so a contiguous buffer would not
//! make them simpler.
//!
//! Without readable frame numbers (not root) the pages are filed by virtual
//! address and [`PagedMemory::placement_unknown`] says why: nothing about
//! physical placement is controlled then, and every bench output says so.
//!
//! Transparent huge pages or compaction could move a page after it was
//! translated; [`PagedMemory::moved_pages`] re-translates so a bench can
//! report whether the placement still held at the end of the run.

use crate::{Error, Result};
use tinct_mem::{AddressMapping, BankRequest, ColorCursor, Modes, PageBook, PageId};
use tinct_sys::pagemap::Pagemap;

/// A page-aligned heap buffer whose pages are filed by color, bank and controller.
#[derive(Debug)]
pub struct PagedMemory {
    words: Vec<u64>,
    first_word: usize,
    page_words: usize,
    book: PageBook,
    unknown: Option<String>,
}

impl PagedMemory {
    /// At least `bytes` of memory (whole pages), touched, translated and
    /// filed under `mapping`. `mapping.page_size` must be the system page size.
    pub fn new(mapping: AddressMapping, bytes: u64) -> Result<Self> {
        let page_bytes = rustix::param::page_size();
        if mapping.page_size != page_bytes as u64 {
            return Err(Error::Measurement(format!(
                "address mapping page size {}: expected the system page size {page_bytes}",
                mapping.page_size
            )));
        }
        let page_words = page_bytes / 8;
        let pages = (bytes as usize).div_ceil(page_bytes).max(1);
        // One spare page so that an aligned run of `pages` pages fits.
        let mut words = vec![0u64; (pages + 1) * page_words];
        let misalignment = words.as_ptr() as usize % page_bytes;
        let first_word = ((page_bytes - misalignment) % page_bytes) / 8;
        // Write every page so it exists before it is translated (a zeroed
        // allocation may still be unpopulated copy-on-write zero pages).
        for page in words[first_word..].chunks_exact_mut(page_words).take(pages) {
            page[0] = 1;
            page[0] = 0;
        }
        let start = words[first_word..].as_ptr() as usize;
        let (frames, unknown) = match Pagemap::open_self().and_then(|p| p.frames(start, pages)) {
            Ok(frames) => (frames, None),
            Err(why) => {
                let first = start as u64 / page_bytes as u64;
                (
                    (first..first + pages as u64).collect(),
                    Some(why.to_string()),
                )
            }
        };
        let book = PageBook::new(mapping, frames).map_err(mem_error)?;
        Ok(Self {
            words,
            first_word,
            page_words,
            book,
            unknown,
        })
    }

    /// Like [`PagedMemory::new`], but doubles the size (up to three times)
    /// until `fits` accepts the memory: physical pages are not spread evenly
    /// over colors and banks, so a buffer of the average size may lack pages
    /// of some class. Unreadable frames end the search (placement is
    /// unknown anyway).
    pub fn new_fitting(
        mapping: &AddressMapping,
        bytes: u64,
        fits: impl Fn(&Self) -> bool,
    ) -> Result<Self> {
        let mut size = bytes;
        for _ in 0..4 {
            let memory = Self::new(mapping.clone(), size)?;
            if memory.placement_unknown().is_some() || fits(&memory) {
                return Ok(memory);
            }
            size *= 2;
        }
        Err(Error::Measurement(format!(
            "even {} MiB of memory lack enough pages of some color or bank for the requested \
             sizes: use smaller sizes",
            (size / 2) >> 20
        )))
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.book.pages()
    }

    /// Page size in bytes.
    pub fn page_bytes(&self) -> usize {
        self.page_words * 8
    }

    /// The address mapping pages are filed under.
    pub fn mapping(&self) -> &AddressMapping {
        self.book.mapping()
    }

    /// Why physical placement is unknown (`None` when frames were read).
    pub fn placement_unknown(&self) -> Option<&str> {
        self.unknown.as_deref()
    }

    /// Free pages of `color`.
    pub fn free_in_color(&self, color: u32) -> usize {
        self.book.free_in_color(color)
    }

    /// Free pages of (`controller`, `bank`).
    pub fn free_in_bank(&self, controller: u32, bank: u32) -> usize {
        self.book.free_in_bank(controller, bank)
    }

    /// `count` pages round robin over `colors` (kim2013 Section III-C).
    pub fn take_colored(&mut self, colors: &[u32], count: usize) -> Result<Vec<PageId>> {
        let mut cursor = ColorCursor::new(colors).map_err(mem_error)?;
        let mut pages = Vec::with_capacity(count);
        self.book
            .alloc_colored(&mut cursor, count, &mut pages)
            .map_err(mem_error)?;
        Ok(pages)
    }

    /// `count` pages of exactly (`controller`, `bank`) (chandru-mueller
    /// Algorithm 1 without fallback, one page per request).
    pub fn take_bank(&mut self, controller: u32, bank: u32, count: usize) -> Result<Vec<PageId>> {
        let available = self.book.free_in_bank(controller, bank);
        if available < count {
            return Err(Error::Measurement(format!(
                "controller {controller} bank {bank} has {available} free pages: {count} needed \
                 (use a smaller size per thread)"
            )));
        }
        let request = BankRequest {
            controller,
            bank,
            size: self.book.mapping().page_size,
            modes: Modes::EXACT,
        };
        (0..count)
            .map(|_| {
                self.book
                    .alloc_bank_aware(request)
                    .map(|grant| grant.first)
                    .map_err(mem_error)
            })
            .collect()
    }

    /// `count` pages for (`controller`, `bank`) by chandru-mueller Algorithm
    /// 1 under `modes`, one request per page (the bench's chunk is one
    /// page: its buffer is ordinary heap memory, whose frames are not
    /// contiguous), and how many pages each step served.
    pub fn take_bank_aware(
        &mut self,
        controller: u32,
        bank: u32,
        count: usize,
        modes: Modes,
    ) -> Result<(Vec<PageId>, tinct_mem::StepCounts)> {
        let request = BankRequest {
            controller,
            bank,
            size: self.book.mapping().page_size,
            modes,
        };
        let mut pages = Vec::with_capacity(count);
        let mut steps = tinct_mem::StepCounts::default();
        for _ in 0..count {
            let grant = self.book.alloc_bank_aware(request).map_err(|e| {
                Error::Measurement(format!(
                    "controller {controller} bank {bank}: {e} (use a smaller --size, or \
                     --bank-mode restricted,unrestricted,split to fall back)"
                ))
            })?;
            steps.count(grant.step, grant.pages as usize);
            pages.extend((grant.first.0..grant.first.0 + grant.pages).map(PageId));
        }
        Ok((pages, steps))
    }

    /// Hands out the pages of each group as mutable page-sized slices, in
    /// the order the group lists them. A page may appear in one group only.
    pub fn split(&mut self, groups: &[Vec<PageId>]) -> Result<Vec<Vec<&mut [u64]>>> {
        let mut owner = vec![usize::MAX; self.pages()];
        let mut position = vec![0usize; self.pages()];
        for (group, pages) in groups.iter().enumerate() {
            for (at, page) in pages.iter().enumerate() {
                let slot = owner.get_mut(page.index()).ok_or_else(|| {
                    Error::Measurement(format!("page {} is outside the buffer", page.0))
                })?;
                if *slot != usize::MAX {
                    return Err(Error::Measurement(format!(
                        "page {} is in groups {} and {group}",
                        page.0, *slot
                    )));
                }
                *slot = group;
                position[page.index()] = at;
            }
        }
        let mut slots: Vec<Vec<Option<&mut [u64]>>> = groups
            .iter()
            .map(|g| (0..g.len()).map(|_| None).collect())
            .collect();
        let pages = self.pages();
        for (index, chunk) in self.words[self.first_word..]
            .chunks_exact_mut(self.page_words)
            .take(pages)
            .enumerate()
        {
            if owner[index] != usize::MAX {
                slots[owner[index]][position[index]] = Some(chunk);
            }
        }
        Ok(slots
            .into_iter()
            .map(|group| group.into_iter().flatten().collect())
            .collect())
    }

    /// Number of pages no longer on the frame they were translated to
    /// (moved, or no longer present), by tinct-mem's one check
    /// ([`tinct_mem::FrameDrift`]); `None` when frames are unreadable.
    pub fn moved_pages(&self) -> Option<usize> {
        if self.unknown.is_some() {
            return None;
        }
        let start = self.words[self.first_word..].as_ptr() as usize;
        let recorded: Vec<u64> = (0..self.pages())
            .map(|i| self.book.frame(PageId(i as u32)))
            .collect();
        let drift = tinct_mem::FrameDrift::read(self.book.mapping(), start, &recorded).ok()?;
        usize::try_from(drift.moved.saturating_add(drift.absent)).ok()
    }
}

fn mem_error(error: tinct_mem::MemError) -> Error {
    Error::Measurement(format!("tinct-mem: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_mem::XorFunctions;

    fn mapping(colors: &[u32], banks: &[u32]) -> AddressMapping {
        AddressMapping::new(
            rustix::param::page_size() as u64,
            XorFunctions::from_bits(colors).unwrap(),
            XorFunctions::from_bits(banks).unwrap(),
            XorFunctions::none(),
        )
        .unwrap()
    }

    #[test]
    fn colored_pages_have_their_colors_and_are_disjoint() {
        if !tinct_sys::testing::privileged_or_skip("reading frame numbers of a bench buffer") {
            return;
        }
        let mut memory = PagedMemory::new(mapping(&[12, 13], &[]), 4 << 20).unwrap();
        assert!(memory.placement_unknown().is_none());
        let low = memory.take_colored(&[0, 1], 64).unwrap();
        let high = memory.take_colored(&[2, 3], 64).unwrap();
        let pagemap = Pagemap::open_self().unwrap();
        let page_bytes = memory.page_bytes() as u64;
        let groups = memory.split(&[low, high]).unwrap();
        for (group, wanted) in groups.iter().zip([[0u64, 1], [2, 3]]) {
            assert_eq!(group.len(), 64);
            for page in group {
                let frame = pagemap.frame_of(page.as_ptr() as usize).unwrap().unwrap();
                let color = ((frame * page_bytes) >> 12) & 3;
                assert!(wanted.contains(&color), "color {color}, wanted {wanted:?}");
            }
        }
    }

    #[test]
    fn bank_pages_come_from_the_bank_and_exhaustion_is_an_error() {
        let mut memory = PagedMemory::new(mapping(&[12], &[13, 14]), 1 << 20).unwrap();
        let free = memory.free_in_bank(0, 2);
        let pages = memory.take_bank(0, 2, free).unwrap();
        assert_eq!(pages.len(), free);
        assert!(memory.take_bank(0, 2, 1).is_err());
        // Bank 2 = address bits 14..13 equal to 0b10: physical bits when
        // frames are readable, virtual ones otherwise.
        let physical = memory.placement_unknown().is_none();
        let pagemap = Pagemap::open_self().ok();
        let groups = memory.split(&[pages]).unwrap();
        for page in &groups[0] {
            let virtual_address = page.as_ptr() as u64;
            let address = match (&pagemap, physical) {
                (Some(map), true) => map
                    .physical_address(virtual_address as usize)
                    .unwrap()
                    .unwrap(),
                _ => virtual_address,
            };
            assert_eq!(
                (address >> 13) & 3,
                2,
                "page at {virtual_address:#x} ({address:#x})"
            );
        }
    }

    #[test]
    fn a_page_in_two_groups_is_refused() {
        let mut memory = PagedMemory::new(mapping(&[12], &[]), 64 << 10).unwrap();
        let pages = memory.take_colored(&[0], 2).unwrap();
        assert!(memory.split(&[pages.clone(), pages]).is_err());
    }
}
