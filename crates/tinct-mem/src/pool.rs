//! [`Pool`]: one populated anonymous mapping whose pages are filed by
//! physical color, bank and controller.

use tinct_sys::pagemap::Pagemap;

use crate::error::MemError;
use crate::locking::Locking;
use crate::mapping::{AddressMapping, PageClass};
use crate::page_book::{
    BankGrant, BankRequest, ColorCursor, DEFAULT_CHUNK_BYTES, PageBook, PageId, PoolStats,
};
use crate::region::{Region, RegionOptions};

/// How to build a [`Pool`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Size in bytes (rounded up to whole pages).
    pub size: usize,
    /// Whether to `mlock` the pool so its pages stay on their frames (see
    /// [`crate::locking`]; default [`Locking::IfAllowed`], and
    /// [`Pool::unlocked_reason`] says when they are not locked).
    pub lock: Locking,
    /// Run even when frame numbers are unreadable: pages are then filed by
    /// *virtual* address, placement in the cache and DRAM is not
    /// controlled, and [`PoolStats::uncolored`] says so.
    pub uncolored: bool,
}

impl PoolOptions {
    /// A colored pool of `size` bytes, locked when the kernel allows.
    pub fn new(size: usize) -> Self {
        Self {
            size,
            lock: Locking::IfAllowed,
            uncolored: false,
        }
    }
}

/// How a pool serves chandru-mueller's bank-aware allocator (Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BankOptions {
    /// Bytes of a chunk, the unit Algorithm 1 hands out from a bank (a
    /// power of two, at least a page; default 8 KiB, the paper's). Bank
    /// and controller functions must not read bits inside a chunk.
    pub chunk_bytes: u64,
    /// chandru-mueller's controller-interleaved pool (Section 2: "it
    /// ensures that an equal amount of memory per controller is available
    /// for allocation"): populate the pool interleaved over the NUMA nodes
    /// with memory (each node is a memory controller), and keep the same
    /// number of whole free chunks in every controller of the mapping,
    /// retiring the surplus.
    pub interleave_controllers: bool,
}

impl Default for BankOptions {
    fn default() -> Self {
        Self {
            chunk_bytes: DEFAULT_CHUNK_BYTES,
            interleave_controllers: false,
        }
    }
}

/// A page pool backed by real memory.
///
/// Pages keep their virtual address for the pool's lifetime; a
/// [`PageId`] is its index. The pool is `Send` but not `Sync`: share it
/// through [`crate::SharedPool`].
#[derive(Debug)]
pub struct Pool {
    region: Region,
    book: PageBook,
    /// Why frame numbers were unreadable, in uncolored mode.
    uncolored: Option<String>,
}

impl Pool {
    /// Maps, populates (THP refused first), locks (as `options.lock` says) and translates
    /// the pool, then files every page by its class under `mapping`.
    ///
    /// Errors with [`MemError::FramesUnreadable`] when frame numbers cannot
    /// be read and `options.uncolored` is false.
    pub fn new(mapping: AddressMapping, options: PoolOptions) -> Result<Self, MemError> {
        Self::build(mapping, options, BankOptions::default(), true)
    }

    /// [`Pool::new`] with the bank-aware allocator's chunk size and the
    /// controller-interleaved layout chosen.
    pub fn with_bank_options(
        mapping: AddressMapping,
        options: PoolOptions,
        banks: BankOptions,
    ) -> Result<Self, MemError> {
        Self::build(mapping, options, banks, true)
    }

    /// A pool whose pages are filed by *virtual* page number, as in
    /// uncolored mode, even when frame numbers are readable: page `i + 1`
    /// then always has the class after page `i`'s. For tests and
    /// measurements that need a known layout; it controls no placement
    /// and says so ([`Pool::is_uncolored`]).
    pub fn with_virtual_frames(
        mapping: AddressMapping,
        options: PoolOptions,
    ) -> Result<Self, MemError> {
        Self::build(mapping, options, BankOptions::default(), false)
    }

    fn build(
        mapping: AddressMapping,
        options: PoolOptions,
        banks: BankOptions,
        read_frames_now: bool,
    ) -> Result<Self, MemError> {
        let page_size = rustix::param::page_size();
        if mapping.page_size != page_size as u64 {
            return Err(MemError::Mapping(format!(
                "mapping page size {}: expected the system page size {page_size}",
                mapping.page_size
            )));
        }
        let chunk_pages = banks.chunk_bytes / page_size as u64;
        if !banks.chunk_bytes.is_power_of_two() || chunk_pages == 0 {
            return Err(MemError::Request(format!(
                "chunk of {} bytes: expected a power of two of at least one page ({page_size} \
                 bytes)",
                banks.chunk_bytes
            )));
        }
        let chunk_pages = u32::try_from(chunk_pages).map_err(|_| {
            MemError::Request(format!("chunk of {} bytes: too large", banks.chunk_bytes))
        })?;
        let len = options.size.div_ceil(page_size) * page_size;
        let nodes = if banks.interleave_controllers {
            crate::region::memory_nodes()
        } else {
            Vec::new()
        };
        let region = Region::new(
            len,
            RegionOptions {
                lock: options.lock,
                interleave_nodes: nodes,
            },
        )?;
        let pages = len / page_size;
        let start = region.start() as usize;
        let translated = if read_frames_now {
            read_frames(start, pages)
        } else {
            Err("pages filed by virtual address on request (Pool::with_virtual_frames)".into())
        };
        let (frames, uncolored) = match translated {
            Ok(frames) => (frames, None),
            Err(reason) if options.uncolored || !read_frames_now => {
                let first = start as u64 / page_size as u64;
                ((first..first + pages as u64).collect(), Some(reason))
            }
            Err(reason) => return Err(MemError::FramesUnreadable { reason }),
        };
        let mut book = PageBook::with_chunk(mapping, frames, chunk_pages)?;
        if banks.interleave_controllers {
            book.balance_controllers()?;
        }
        let mut pool = Self {
            book,
            region,
            uncolored,
        };
        if banks.interleave_controllers {
            pool.discard_retired()?;
        }
        Ok(pool)
    }

    /// The bookkeeping (free lists, classes, frames).
    pub fn book(&self) -> &PageBook {
        &self.book
    }

    /// The address mapping.
    pub fn mapping(&self) -> &AddressMapping {
        self.book.mapping()
    }

    /// True if the pool runs without frame numbers (no placement control).
    pub fn is_uncolored(&self) -> bool {
        self.uncolored.is_some()
    }

    /// Why the pool's pages are not mlocked (`None`: they are, except the
    /// retired ones [`PoolStats::unlocked_by_discard`] counts), see
    /// [`PoolOptions::lock`].
    pub fn unlocked_reason(&self) -> Option<&str> {
        self.region.unlocked_reason()
    }

    /// In uncolored mode, why frame numbers could not be read.
    pub fn uncolored_reason(&self) -> Option<&str> {
        self.uncolored.as_deref()
    }

    /// Page size in bytes.
    pub fn page_size(&self) -> usize {
        self.book.mapping().page_size as usize
    }

    /// Number of pages.
    pub fn pages(&self) -> usize {
        self.book.pages()
    }

    /// First byte of the pool.
    pub fn start(&self) -> *mut u8 {
        self.region.start()
    }

    /// Address of a page.
    pub fn page_address(&self, page: PageId) -> *mut u8 {
        assert!(page.index() < self.pages(), "page {} out of range", page.0);
        self.region
            .start()
            .wrapping_add(page.index() * self.page_size())
    }

    /// The page holding `address`, if it lies in the pool.
    pub fn page_of_address(&self, address: usize) -> Option<PageId> {
        self.region
            .contains(address)
            .then(|| PageId(((address - self.region.start() as usize) / self.page_size()) as u32))
    }

    /// Frame number of a page as translated when the pool was built
    /// (a virtual page number in uncolored mode).
    pub fn frame(&self, page: PageId) -> u64 {
        self.book.frame(page)
    }

    /// Class of a page.
    pub fn class(&self, page: PageId) -> PageClass {
        self.book.class(page)
    }

    /// One page of `color` (freed pages first).
    pub fn alloc_page(&mut self, color: u32) -> Result<PageId, MemError> {
        self.book.alloc_in_color(color)
    }

    /// `count` pages round robin over the cursor's colors (kim2013 III-C).
    pub fn alloc_colored(
        &mut self,
        cursor: &mut ColorCursor,
        count: usize,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        self.book.alloc_colored(cursor, count, out)
    }

    /// `count` pages round robin, continuing a virtually contiguous run
    /// after `after` where possible (see [`PageBook::alloc_colored_after`]).
    pub fn alloc_colored_after(
        &mut self,
        cursor: &mut ColorCursor,
        count: usize,
        after: Option<PageId>,
        out: &mut Vec<PageId>,
    ) -> Result<(), MemError> {
        self.book.alloc_colored_after(cursor, count, after, out)
    }

    /// chandru-mueller Algorithm 1, see [`PageBook::alloc_bank_aware`].
    pub fn alloc_bank_aware(&mut self, request: BankRequest) -> Result<BankGrant, MemError> {
        self.book.alloc_bank_aware(request)
    }

    /// Returns a page.
    pub fn free(&mut self, page: PageId) -> Result<(), MemError> {
        self.book.free(page)
    }

    /// Returns every page of a bank-aware grant.
    pub fn free_grant(&mut self, grant: BankGrant) -> Result<(), MemError> {
        for page in grant.first.0..grant.first.0 + grant.pages {
            self.book.free(PageId(page))?;
        }
        Ok(())
    }

    /// Retires every free page whose color is not in `keep` and gives its
    /// memory back to the kernel, so a pool built for a few colors costs
    /// only their memory. Returns the number of pages retired. Pages in use
    /// stay; retired pages never come back.
    pub fn retain_colors(&mut self, keep: &[u32]) -> Result<usize, MemError> {
        let colors = self.mapping().colors();
        if let Some(bad) = keep.iter().find(|&&c| c >= colors) {
            return Err(MemError::Request(format!(
                "color {bad}: expected 0..{colors}"
            )));
        }
        let mut retired = 0;
        for color in (0..colors).filter(|c| !keep.contains(c)) {
            for page in self.book.free_list_of_color(color) {
                self.book.retire(page)?;
                retired += 1;
            }
        }
        self.discard_retired()?;
        Ok(retired)
    }

    /// Gives the memory of every retired page back to the kernel.
    fn discard_retired(&mut self) -> Result<(), MemError> {
        let page_size = self.page_size();
        let mut index = 0;
        while index < self.pages() {
            let run = (index..self.pages())
                .take_while(|&i| self.book.is_retired(PageId(i as u32)))
                .count();
            if run > 0 {
                self.region.discard(index * page_size, run * page_size)?;
            }
            index += run.max(1);
        }
        Ok(())
    }

    /// Re-translates the pool now and returns the pages whose frame
    /// changed since setup (the kernel may migrate pages: compaction, also
    /// of mlocked pages unless `vm.compact_unevictable_allowed = 0`, and
    /// NUMA balancing). Pages not present at their pool address (moved
    /// into a span by [`crate::SharedPool`]) are skipped. Always empty in
    /// uncolored mode.
    pub fn changed_frames(&self) -> Result<Vec<PageId>, MemError> {
        if self.is_uncolored() {
            return Ok(Vec::new());
        }
        let now = crate::frame_drift::current_frames(self.start() as usize, self.pages())?;
        Ok(now
            .iter()
            .enumerate()
            .filter_map(|(index, frame)| {
                let page = PageId(index as u32);
                frame
                    .is_some_and(|frame| frame != self.book.frame(page))
                    .then_some(page)
            })
            .collect())
    }

    /// Free and used pages per color, bank and controller.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            unlocked_by_discard: self.region.unlocked_by_discard() as u64,
            ..self.book.stats(self.is_uncolored())
        }
    }
}

/// Frame numbers of the pool's pages, or why they cannot be known.
fn read_frames(start: usize, pages: usize) -> Result<Vec<u64>, String> {
    let pagemap = Pagemap::open_self().map_err(|e| e.to_string())?;
    let entries = pagemap.entries(start, pages).map_err(|e| e.to_string())?;
    let mut frames = Vec::with_capacity(pages);
    for (index, entry) in entries.into_iter().enumerate() {
        match entry.frame() {
            Some(0) => {
                return Err(
                    "/proc/self/pagemap reports frame number 0 for present pages: this \
                            process lacks CAP_SYS_ADMIN"
                        .into(),
                );
            }
            Some(frame) => frames.push(frame),
            None => {
                return Err(format!(
                    "page {index} of the pool is not present after populating it (entry {:#x})",
                    entry.0
                ));
            }
        }
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_stats_count_the_bytes_a_discard_unlocked() {
        let mapping = crate::mapping::AddressMapping::new(
            rustix::param::page_size() as u64,
            crate::mapping::XorFunctions::from_bits(&[12, 13]).unwrap(),
            crate::mapping::XorFunctions::none(),
            crate::mapping::XorFunctions::none(),
        )
        .unwrap();
        let options = PoolOptions {
            uncolored: true,
            ..PoolOptions::new(64 * rustix::param::page_size())
        };
        let mut pool = Pool::new(mapping, options).unwrap();
        assert_eq!(pool.stats().unlocked_by_discard, 0);
        let locked = pool.unlocked_reason().is_none();
        if !locked {
            assert!(
                !tinct_sys::testing::privileges_required(),
                "the pool could not be locked"
            );
        }
        let page = rustix::param::page_size();
        pool.region.discard_unlocking(0, page).unwrap();
        let expected = if locked { page as u64 } else { 0 };
        assert_eq!(pool.stats().unlocked_by_discard, expected);
    }
}
