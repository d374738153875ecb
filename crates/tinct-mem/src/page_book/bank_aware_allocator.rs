//! chandru-mueller Algorithm 1, "Bank aware algorithm allocator"
//! (/work/shared/papers/chandru-mueller-bank-aware-allocator.txt): a chunk
//! of a requested DRAM controller and bank, with the paper's fallback
//! modes CONTROLLER_RESTRICTED, CONTROLLER_UNRESTRICTED and SPLIT, over the
//! (controller, bank) chunk lists of a [`PageBook`] (each free chunk sits
//! in its bank list and its pages in their color lists at once, as in the
//! paper's Section 3).
//!
//! What each mode chooses when the requested bank has no free chunk:
//!
//! | mode | choice |
//! |---|---|
//! | EXACT (no bit) | nothing: the request fails |
//! | CONTROLLER_RESTRICTED | the requested controller's bank with the most free chunks |
//! | CONTROLLER_UNRESTRICTED | the controller with the most free chunks, then its fullest bank |
//! | SPLIT | the first run of free pages long enough, in address order: one in the requested controller (spanning its banks) if there is one, else any |
//!
//! Ties go to the lower index; modes combine as a bit mask and are tried in
//! the table's order.
//!
//! The paper's SPLIT is plain first-fit ("find the first fitting
//! contiguous chunk"; Algorithm 1: it "may span across banks and
//! controllers"), and its Section 3 says which blocks span what: "medium
//! allocations (8KB < size <= 64KB) span multiple banks while larger ones
//! (> 64KB) even span multiple controllers". There the 64 KB is a Tilera
//! fact (controller-interleaved 64 kB pages: no longer contiguous block
//! lies in one controller). tinct's SPLIT is a refinement of the
//! first-fit after that sentence: a run inside the requested controller
//! (spanning its banks) first, a run across controllers only when the
//! controller has none. A pool's run is pages in virtual order, each
//! filed by its own frame, so a run in one controller can be longer than
//! 64 KB, and the preference holds at every size. The paper's SPLIT
//! serves only requests above a chunk; tinct's also serves smaller ones
//! (the front ends ask page by page), so there it gives a page of the
//! requested controller while it has one, then any page.

use std::ops::BitOr;

use super::{PageBook, PageId};
use crate::error::MemError;

/// Fallback modes of chandru-mueller Algorithm 1, combined as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Modes(pub u32);

impl Modes {
    /// No fallback: only the requested controller and bank.
    pub const EXACT: Modes = Modes(0);
    /// Fall back to the requested controller's bank with the most free memory.
    pub const CONTROLLER_RESTRICTED: Modes = Modes(1);
    /// Fall back to the controller and bank with the most free memory.
    pub const CONTROLLER_UNRESTRICTED: Modes = Modes(2);
    /// Fall back to a contiguous block spanning banks and controllers.
    pub const SPLIT: Modes = Modes(4);
    /// Every mode.
    pub const ALL: Modes = Modes(7);

    /// True if every bit of `other` is set in `self`.
    pub fn contains(self, other: Modes) -> bool {
        self.0 & other.0 == other.0
    }

    /// Reads modes by name, comma-separated: `exact` (no fallback, the
    /// default), `restricted`, `unrestricted`, `split`, or `all`; e.g.
    /// `restricted,split`. The names of `--bank-mode` and `TINCT_BANK_MODE`.
    pub fn parse(text: &str) -> Result<Self, MemError> {
        let mut modes = Modes::EXACT;
        for name in text.split(',').map(str::trim) {
            modes = modes
                | match name {
                    "exact" => Modes::EXACT,
                    "restricted" | "controller-restricted" => Modes::CONTROLLER_RESTRICTED,
                    "unrestricted" | "controller-unrestricted" => Modes::CONTROLLER_UNRESTRICTED,
                    "split" => Modes::SPLIT,
                    "all" => Modes::ALL,
                    other => {
                        return Err(MemError::Request(format!(
                            "bank mode {other:?}: expected exact, restricted, unrestricted, split \
                             or all (comma-separated, e.g. restricted,split)"
                        )));
                    }
                };
        }
        Ok(modes)
    }

    /// The names [`Modes::parse`] reads back, e.g. `restricted,split`
    /// (`exact` for no fallback).
    pub fn names(self) -> String {
        let names: Vec<&str> = [
            (Modes::CONTROLLER_RESTRICTED, "restricted"),
            (Modes::CONTROLLER_UNRESTRICTED, "unrestricted"),
            (Modes::SPLIT, "split"),
        ]
        .into_iter()
        .filter(|&(mode, _)| self.contains(mode))
        .map(|(_, name)| name)
        .collect();
        if names.is_empty() {
            "exact".into()
        } else {
            names.join(",")
        }
    }

    /// Rejects unknown bits.
    pub fn validate(self) -> Result<Self, MemError> {
        if self.0 & !Self::ALL.0 != 0 {
            return Err(MemError::Request(format!(
                "modes mask {:#x}: expected a combination of CONTROLLER_RESTRICTED (1), \
                 CONTROLLER_UNRESTRICTED (2) and SPLIT (4)",
                self.0
            )));
        }
        Ok(self)
    }
}

impl BitOr for Modes {
    type Output = Modes;
    fn bitor(self, rhs: Modes) -> Modes {
        Modes(self.0 | rhs.0)
    }
}

/// The step of Algorithm 1 that served a bank-aware request (ordered: a
/// later step is a further fallback).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Step {
    /// The requested controller and bank.
    Exact,
    /// Another bank of the requested controller (most free memory first).
    ControllerRestricted,
    /// Any controller and bank (most free memory first).
    ControllerUnrestricted,
    /// A contiguous block that may span banks and controllers.
    Split,
}

/// A bank-aware request (input of Algorithm 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BankRequest {
    /// Requested memory controller.
    pub controller: u32,
    /// Requested bank within that controller.
    pub bank: u32,
    /// Size in bytes (at most one chunk for steps 1-3; larger requests
    /// need SPLIT).
    pub size: u64,
    /// Fallback modes.
    pub modes: Modes,
}

/// The answer to a [`BankRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct BankGrant {
    /// First page of the block.
    pub first: PageId,
    /// Number of contiguous pages (a whole chunk from steps 1-3, the
    /// request rounded up to pages from SPLIT).
    pub pages: u32,
    /// The step that served the request.
    pub step: Step,
}
impl PageBook {
    /// chandru-mueller Algorithm 1 ("Bank aware algorithm allocator").
    ///
    /// A request of at most one chunk is tried, in order: (1) a whole free
    /// chunk of the requested controller and bank; (2) with
    /// CONTROLLER_RESTRICTED, the requested controller's banks in
    /// descending order of free chunks; (3) with CONTROLLER_UNRESTRICTED,
    /// the controllers in descending order of free chunks and, within
    /// each, its banks likewise; (4) with SPLIT, the first contiguous run
    /// of free pages in address order, which may span banks and
    /// controllers: a run inside the requested controller first (the
    /// paper's medium allocation, spanning banks), any run only when the
    /// controller has none (its large allocation, spanning controllers).
    /// Steps 1-3 hand out a whole chunk (the paper's unit);
    /// a request larger than a chunk fits no chunk, so only SPLIT can serve
    /// it. Ties go to the lower index, so results are deterministic.
    pub fn alloc_bank_aware(&mut self, request: BankRequest) -> Result<BankGrant, MemError> {
        let modes = request.modes.validate()?;
        let (banks, controllers) = (self.mapping.banks(), self.mapping.controllers());
        if request.controller >= controllers || request.bank >= banks {
            return Err(MemError::Request(format!(
                "controller {} bank {}: expected controller 0..{controllers} and bank 0..{banks}",
                request.controller, request.bank
            )));
        }
        if request.size == 0 {
            return Err(MemError::Request(
                "size 0: expected at least one byte".into(),
            ));
        }
        let page_size = self.mapping.page_size;
        let pages = request.size.div_ceil(page_size);
        if pages <= u64::from(self.chunk_pages()) {
            let chunk = |book: &mut Self, controller: u32, bank: u32, step: Step| {
                let slot = book.slot(controller, bank);
                book.by_bank.first(slot).map(|chunk| {
                    let first = chunk << book.chunk_shift;
                    for page in first..first + book.chunk_pages() {
                        book.take(page);
                    }
                    BankGrant {
                        first: PageId(first),
                        pages: book.chunk_pages(),
                        step,
                    }
                })
            };
            // Step 1: the requested controller and bank.
            if let Some(grant) = chunk(self, request.controller, request.bank, Step::Exact) {
                return Ok(grant);
            }
            // Step 2: banks of the requested controller, most free first.
            if modes.contains(Modes::CONTROLLER_RESTRICTED) {
                for bank in self.banks_by_free_memory(request.controller) {
                    if let Some(grant) =
                        chunk(self, request.controller, bank, Step::ControllerRestricted)
                    {
                        return Ok(grant);
                    }
                }
            }
            // Step 3: controllers, most free first; their banks, most free first.
            if modes.contains(Modes::CONTROLLER_UNRESTRICTED) {
                for controller in self.controllers_by_free_memory() {
                    for bank in self.banks_by_free_memory(controller) {
                        if let Some(grant) =
                            chunk(self, controller, bank, Step::ControllerUnrestricted)
                        {
                            return Ok(grant);
                        }
                    }
                }
            }
        }
        // Step 4: a contiguous block, spanning the banks of the requested
        // controller (medium) before it spans controllers (large).
        if let Some(first) = modes
            .contains(Modes::SPLIT)
            .then(|| {
                (self.free_in_controller(request.controller) as u64 >= pages)
                    .then(|| self.first_free_run(pages, Some(request.controller)))
                    .flatten()
                    .or_else(|| self.first_free_run(pages, None))
            })
            .flatten()
        {
            for page in first..first + pages as u32 {
                self.take(page);
            }
            return Ok(BankGrant {
                first: PageId(first),
                pages: pages as u32,
                step: Step::Split,
            });
        }
        Err(MemError::Exhausted(format!(
            "no free {} in controller {} bank {} with bank mode {} (mask {:#x}): {} whole chunks \
             ({} pages) free in that bank, {} chunks in that controller, {} pages in the pool",
            if pages <= u64::from(self.chunk_pages()) {
                format!("{}-byte chunk", u64::from(self.chunk_pages()) * page_size)
            } else {
                format!("run of {pages} contiguous pages (larger than a chunk: only SPLIT)")
            },
            request.controller,
            request.bank,
            modes.names(),
            modes.0,
            self.free_chunks_in_bank(request.controller, request.bank),
            self.free_in_bank(request.controller, request.bank),
            self.free_chunks_in_controller(request.controller),
            self.free_pages,
        )))
    }

    /// Keeps as many whole free chunks in every controller as the poorest
    /// controller has, retiring the others (the highest-addressed first):
    /// chandru-mueller's controller-interleaved pool, which "ensures that
    /// an equal amount of memory per controller is available" (Section 2).
    /// Returns the number of pages retired.
    pub fn balance_controllers(&mut self) -> Result<usize, MemError> {
        let Some(&target) = self.controller_free_chunks.iter().min() else {
            return Ok(0);
        };
        let mut retired = 0;
        for controller in 0..self.mapping.controllers() {
            while self.controller_free_chunks[controller as usize] > target {
                // The fullest bank of the controller gives its last chunk.
                let bank = self.banks_by_free_memory(controller)[0];
                let slot = self.slot(controller, bank);
                let chunk = self
                    .by_bank
                    .iter(slot)
                    .last()
                    .expect("a controller above the minimum has a whole chunk");
                let first = chunk << self.chunk_shift;
                for page in first..first + self.chunk_pages() {
                    self.retire(PageId(page))?;
                    retired += 1;
                }
            }
        }
        Ok(retired)
    }

    /// Banks of `controller` in descending order of free chunks (ties:
    /// lower bank first) — the per-controller queue of chandru-mueller
    /// Section 3.
    pub fn banks_by_free_memory(&self, controller: u32) -> Vec<u32> {
        let mut banks: Vec<u32> = (0..self.mapping.banks()).collect();
        banks.sort_by_key(|&bank| std::cmp::Reverse(self.free_chunks_in_bank(controller, bank)));
        banks
    }

    /// Controllers in descending order of free chunks (ties: lower first)
    /// — the shared controller queue of chandru-mueller Section 3.
    pub fn controllers_by_free_memory(&self) -> Vec<u32> {
        let mut controllers: Vec<u32> = (0..self.mapping.controllers()).collect();
        controllers.sort_by_key(|&c| std::cmp::Reverse(self.controller_free_chunks[c as usize]));
        controllers
    }

    /// First run of `pages` free pages in address order, all of
    /// `controller` if one is given.
    fn first_free_run(&self, pages: u64, controller: Option<u32>) -> Option<u32> {
        let mut run_start = 0usize;
        let mut run_len = 0u64;
        for (index, &used) in self.used.iter().enumerate() {
            let elsewhere =
                controller.is_some_and(|c| self.bank_slot[index] >> self.bank_shift != c);
            if used || elsewhere {
                run_len = 0;
                run_start = index + 1;
            } else {
                run_len += 1;
                if run_len == pages {
                    return Some(run_start as u32);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_books::*;
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn algorithm1_step1_serves_the_exact_bank() {
        let mut book = bank_book([[1, 1, 1, 1], [1, 1, 1, 1]]);
        let grant = book.alloc_bank_aware(request(1, 2, Modes::EXACT)).unwrap();
        assert_eq!(grant.step, Step::Exact);
        let class = book.class(grant.first);
        assert_eq!((class.controller, class.bank), (1, 2));
        let err = book
            .alloc_bank_aware(request(1, 2, Modes::EXACT))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("controller 1 bank 2") && err.contains("(0 pages) free in that bank"),
            "{err}"
        );
    }

    #[test]
    fn algorithm1_step2_takes_the_fullest_bank_of_the_controller() {
        // Controller 0: banks hold 1, 0, 3, 2 pages; controller 1 holds 9.
        let mut book = bank_book([[1, 0, 3, 2], [9, 0, 0, 0]]);
        assert_eq!(book.banks_by_free_memory(0), vec![2, 3, 0, 1]);
        let modes = Modes::CONTROLLER_RESTRICTED | Modes::CONTROLLER_UNRESTRICTED;
        let order: Vec<(u32, u32, Step)> = (0..6)
            .map(|_| {
                let grant = book.alloc_bank_aware(request(0, 1, modes)).unwrap();
                let class = book.class(grant.first);
                (class.controller, class.bank, grant.step)
            })
            .collect();
        use Step::*;
        assert_eq!(
            order,
            vec![
                (0, 2, ControllerRestricted), // 3 free
                (0, 2, ControllerRestricted), // 2,2 tie: lower bank
                (0, 3, ControllerRestricted), // 1 vs 2
                (0, 0, ControllerRestricted), // 1,1,1 tie: bank 0
                (0, 2, ControllerRestricted),
                (0, 3, ControllerRestricted),
            ]
        );
        // Controller 0 is now empty: step 3 moves to controller 1.
        let grant = book.alloc_bank_aware(request(0, 1, modes)).unwrap();
        assert_eq!(grant.step, ControllerUnrestricted);
        assert_eq!(book.class(grant.first).controller, 1);
        // Without CONTROLLER_UNRESTRICTED, an empty controller is an error.
        assert!(
            book.alloc_bank_aware(request(0, 1, Modes::CONTROLLER_RESTRICTED))
                .is_err()
        );
    }

    #[test]
    fn algorithm1_step3_orders_controllers_then_banks_by_free_memory() {
        // Controller 0 has 3 pages, controller 1 has 4 (bank 3 fullest).
        let mut book = bank_book([[0, 3, 0, 0], [1, 0, 0, 3]]);
        assert_eq!(book.controllers_by_free_memory(), vec![1, 0]);
        // Requested bank empty; no CONTROLLER_RESTRICTED: step 2 is
        // skipped, step 3 chooses controller 1 (4 free), bank 3.
        let grant = book
            .alloc_bank_aware(request(0, 0, Modes::CONTROLLER_UNRESTRICTED))
            .unwrap();
        let class = book.class(grant.first);
        assert_eq!(
            (class.controller, class.bank, grant.step),
            (1, 3, Step::ControllerUnrestricted)
        );
        // Now 3 vs 3: tie goes to controller 0, whose fullest bank is 1.
        let grant = book
            .alloc_bank_aware(request(0, 0, Modes::CONTROLLER_UNRESTRICTED))
            .unwrap();
        let class = book.class(grant.first);
        assert_eq!((class.controller, class.bank), (0, 1));
        // With CONTROLLER_RESTRICTED as well, step 2 wins inside controller 0.
        let grant = book.alloc_bank_aware(request(0, 0, Modes::ALL)).unwrap();
        assert_eq!(grant.step, Step::ControllerRestricted);
        assert_eq!(book.class(grant.first).controller, 0);
    }

    #[test]
    fn algorithm1_step4_split_takes_the_first_contiguous_run() {
        let mut book = bank_book([[2, 2, 2, 2], [2, 2, 2, 2]]);
        // A 3-page request cannot fit one chunk: only SPLIT serves it.
        let big = BankRequest {
            controller: 0,
            bank: 0,
            size: 3 * 4096,
            modes: Modes::CONTROLLER_RESTRICTED | Modes::CONTROLLER_UNRESTRICTED,
        };
        assert!(book.alloc_bank_aware(big).is_err());
        // Take pages 0 and 2, free 0 again: runs [0, 1], [3..].
        let taken: Vec<BankGrant> = [0u32, 1]
            .iter()
            .map(|&bank| {
                book.alloc_bank_aware(request(0, bank, Modes::EXACT))
                    .unwrap()
            })
            .collect();
        assert_eq!(
            taken.iter().map(|g| g.first.0).collect::<Vec<_>>(),
            vec![0, 2]
        );
        book.free(PageId(0)).unwrap();
        let split = BankRequest {
            modes: Modes::SPLIT,
            ..big
        };
        let grant = book.alloc_bank_aware(split).unwrap();
        assert_eq!(
            (grant.first, grant.pages, grant.step),
            (PageId(3), 3, Step::Split)
        );
        let classes: HashSet<u32> = (3..6).map(|p| book.class(PageId(p)).bank).collect();
        assert!(classes.len() > 1, "a split block may span banks");
        // A single page with only SPLIT and an empty requested bank: first free page.
        let mut empty_bank = bank_book([[0, 1, 0, 0], [0, 0, 0, 0]]);
        let grant = empty_bank
            .alloc_bank_aware(request(0, 0, Modes::SPLIT))
            .unwrap();
        assert_eq!((grant.first, grant.step), (PageId(0), Step::Split));
        assert!(book.alloc_bank_aware(request(0, 0, Modes(8))).is_err());
        assert!(book.alloc_bank_aware(request(2, 0, Modes::ALL)).is_err());
    }

    /// chandru-mueller Section 3: a medium request spans the banks of one
    /// controller, only a large one spans controllers. SPLIT therefore
    /// takes a run inside the requested controller before an earlier run
    /// across controllers, and crosses controllers only when its own has
    /// no run long enough.
    #[test]
    fn split_spans_the_banks_of_the_requested_controller_before_controllers() {
        // Pages 0-3 are controller 0 (banks 0-3), pages 4-7 controller 1.
        let book_with_free_run_from_2 = || {
            let mut book = bank_book([[1, 1, 1, 1], [1, 1, 1, 1]]);
            for bank in [0, 1] {
                book.alloc_bank_aware(request(0, bank, Modes::EXACT))
                    .unwrap();
            }
            book // free: 2, 3 (controller 0), 4-7 (controller 1)
        };
        let three_pages = |controller| BankRequest {
            controller,
            bank: 0,
            size: 3 * 4096,
            modes: Modes::SPLIT,
        };
        let placed = |book: &PageBook, grant: BankGrant| -> Vec<(u32, u32)> {
            (grant.first.0..grant.first.0 + grant.pages)
                .map(|page| book.class(PageId(page)))
                .map(|class| (class.controller, class.bank))
                .collect()
        };
        // Controller 1 has a run of three: it is taken, though 2-4 comes first.
        let mut book = book_with_free_run_from_2();
        let grant = book.alloc_bank_aware(three_pages(1)).unwrap();
        assert_eq!((grant.first, grant.step), (PageId(4), Step::Split));
        assert_eq!(placed(&book, grant), vec![(1, 0), (1, 1), (1, 2)]);
        // Controller 0 has only two free pages: the block crosses controllers.
        let mut book = book_with_free_run_from_2();
        let grant = book.alloc_bank_aware(three_pages(0)).unwrap();
        assert_eq!(grant.first, PageId(2));
        assert_eq!(placed(&book, grant), vec![(0, 2), (0, 3), (1, 0)]);
        // One page with only SPLIT (its bank, 3, spent first: step 1 does
        // not serve it) stays in its controller too, though page 2 comes first.
        let mut book = book_with_free_run_from_2();
        let exact = book.alloc_bank_aware(request(1, 3, Modes::EXACT)).unwrap();
        assert_eq!(exact.first, PageId(7));
        let grant = book.alloc_bank_aware(request(1, 3, Modes::SPLIT)).unwrap();
        assert_eq!((grant.first, grant.step), (PageId(4), Step::Split));
    }

    /// A book of 8 KiB chunks (two pages) over the test mapping: chunk `k`
    /// of (controller, bank) has frames `2k'` and `2k' + 1`, physically
    /// contiguous and aligned; `counts[c][b]` whole chunks per bank.
    fn chunk_book(counts: [[u64; 4]; 2]) -> PageBook {
        let mut frames = Vec::new();
        let mut n = 0;
        for (controller, banks) in counts.iter().enumerate() {
            for (bank, &count) in banks.iter().enumerate() {
                for _ in 0..count {
                    // Bank bits 14-15, controller bit 16: frame bits 2-3, 4.
                    let base = (bank as u64) << 2 | (controller as u64) << 4 | n << 5;
                    frames.extend([base, base + 1]);
                    n += 1;
                }
            }
        }
        PageBook::with_chunk(mapping(), frames, 2).unwrap()
    }

    fn chunk_request(controller: u32, bank: u32, modes: Modes) -> BankRequest {
        BankRequest {
            controller,
            bank,
            size: 4096,
            modes,
        }
    }

    #[test]
    fn chunks_are_the_unit_of_steps_1_to_3() {
        let mut book = chunk_book([[2, 1, 0, 0], [0, 0, 0, 0]]);
        assert_eq!(book.chunk_pages(), 2);
        assert_eq!(book.free_chunks_in_bank(0, 0), 2);
        assert_eq!(book.free_in_bank(0, 0), 4);
        // A one-page request takes a whole 8 KiB chunk of the bank.
        let grant = book
            .alloc_bank_aware(chunk_request(0, 0, Modes::EXACT))
            .unwrap();
        assert_eq!(
            (grant.first, grant.pages, grant.step),
            (PageId(0), 2, Step::Exact)
        );
        // Taking one page of the other chunk by colour breaks that chunk:
        // the bank has free pages but no whole chunk.
        let page = book.alloc_in_color(book.class(PageId(2)).color).unwrap();
        assert_eq!(page, PageId(2));
        assert_eq!(book.free_in_bank(0, 0), 1);
        assert_eq!(book.free_chunks_in_bank(0, 0), 0);
        assert!(
            book.alloc_bank_aware(chunk_request(0, 0, Modes::EXACT))
                .is_err()
        );
        // Freed, the chunk is whole again and reused first.
        book.free(page).unwrap();
        let again = book
            .alloc_bank_aware(chunk_request(0, 0, Modes::EXACT))
            .unwrap();
        assert_eq!(again.first, PageId(2));
        // More than a chunk fits no chunk: only SPLIT.
        let big = BankRequest {
            size: 3 * 4096,
            ..chunk_request(0, 1, Modes::CONTROLLER_RESTRICTED)
        };
        assert!(book.alloc_bank_aware(big).is_err());
    }

    #[test]
    fn a_chunk_is_whole_only_if_its_frames_are_contiguous_aligned_and_of_one_bank() {
        // Pages 0-1: frames 0, 1 (whole). Pages 2-3: frames 3, 4 (not
        // aligned). Pages 4-5: frames 6, 8 (not contiguous). Pages 6-7:
        // frames 16, 17 (whole: controller 1, bank 0).
        let book = PageBook::with_chunk(mapping(), vec![0, 1, 3, 4, 6, 8, 16, 17], 2).unwrap();
        assert_eq!(book.free_chunks_in_bank(0, 0), 1);
        assert_eq!(book.free_chunks_in_bank(1, 0), 1);
        let total: usize = (0..2)
            .flat_map(|c| (0..4).map(move |b| (c, b)))
            .map(|(c, b)| book.free_chunks_in_bank(c, b))
            .sum();
        assert_eq!(total, 2);
        // Bank functions reading bit 12 split 8 KiB chunks: refused.
        let bit12 = crate::mapping::AddressMapping::new(
            4096,
            crate::mapping::XorFunctions::none(),
            crate::mapping::XorFunctions::from_bits(&[12]).unwrap(),
            crate::mapping::XorFunctions::none(),
        )
        .unwrap();
        let err = PageBook::with_chunk(bit12.clone(), vec![0, 1], 2)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bit 12") && err.contains("4096 bytes"),
            "{err}"
        );
        assert!(PageBook::with_chunk(bit12, vec![0, 1], 1).is_ok());
        assert!(PageBook::with_chunk(mapping(), vec![0, 1], 3).is_err());
    }

    /// For each fallback mode, a book where EXACT fails and the mode's
    /// documented choice (module table) is taken.
    #[test]
    fn each_fallback_mode_takes_its_documented_choice_where_exact_fails() {
        // Controller 0: banks 0-3 hold 0, 1, 3, 2 chunks (6 in all);
        // controller 1 holds 4 in bank 2 and 1 in bank 3 (5 in all).
        let book = || chunk_book([[0, 1, 3, 2], [0, 0, 4, 1]]);
        let exact = book().alloc_bank_aware(chunk_request(0, 0, Modes::EXACT));
        assert!(exact.is_err(), "bank (0, 0) is empty: exact fails");
        let choice = |modes: Modes| {
            let mut book = book();
            let grant = book.alloc_bank_aware(chunk_request(0, 0, modes)).unwrap();
            let class = book.class(grant.first);
            (class.controller, class.bank, grant.step, grant.pages)
        };
        // restricted: the requested controller's fullest bank (bank 2, 3 chunks).
        assert_eq!(
            choice(Modes::parse("restricted").unwrap()),
            (0, 2, Step::ControllerRestricted, 2)
        );
        // unrestricted: the controller with the most free chunks (0: 6
        // against 5), then its fullest bank.
        assert_eq!(
            choice(Modes::parse("unrestricted").unwrap()),
            (0, 2, Step::ControllerUnrestricted, 2)
        );
        // split: the first run of free pages in address order: page 0,
        // which is controller 0 bank 1.
        assert_eq!(
            choice(Modes::parse("split").unwrap()),
            (0, 1, Step::Split, 1)
        );
        // Controller 0 emptied of its big bank: unrestricted moves on to
        // the fullest controller, 1, and its fullest bank, 2.
        let mut drained = chunk_book([[0, 1, 0, 0], [0, 0, 4, 1]]);
        let grant = drained
            .alloc_bank_aware(chunk_request(0, 0, Modes::CONTROLLER_UNRESTRICTED))
            .unwrap();
        let class = drained.class(grant.first);
        assert_eq!(
            (class.controller, class.bank, grant.step),
            (1, 2, Step::ControllerUnrestricted)
        );
        // Names read back; unknown names are refused by name.
        assert_eq!(Modes::parse("restricted,split").unwrap(), Modes(5));
        assert_eq!(Modes::parse("exact").unwrap(), Modes::EXACT);
        assert_eq!(Modes(7).names(), "restricted,unrestricted,split");
        assert_eq!(Modes::parse(&Modes(6).names()).unwrap(), Modes(6));
        let err = Modes::parse("sideways").unwrap_err().to_string();
        assert!(
            err.contains("\"sideways\"") && err.contains("restricted"),
            "{err}"
        );
    }

    #[test]
    fn an_interleaved_book_keeps_as_many_chunks_in_every_controller() {
        let mut book = chunk_book([[3, 2, 1, 0], [1, 0, 0, 1]]);
        assert_eq!(book.free_chunks_in_controller(0), 6);
        assert_eq!(book.free_chunks_in_controller(1), 2);
        let retired = book.balance_controllers().unwrap();
        assert_eq!(retired, 8, "four chunks of two pages");
        assert_eq!(book.free_chunks_in_controller(0), 2);
        assert_eq!(book.free_chunks_in_controller(1), 2);
        // The fullest banks gave first: 3,2,1 -> 2,2,1 -> 1,2,1 -> 1,1,1 -> 0,1,1.
        assert_eq!(
            (0..4)
                .map(|b| book.free_chunks_in_bank(0, b))
                .collect::<Vec<_>>(),
            vec![0, 1, 1, 0]
        );
        assert_eq!(book.stats(false).total.free, 8);
    }
}
