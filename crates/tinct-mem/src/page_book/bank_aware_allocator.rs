//! chandru-mueller Algorithm 1, "Bank aware algorithm allocator"
//! (/work/shared/papers/chandru-mueller-bank-aware-allocator.txt): a page
//! of a requested DRAM controller and bank, with the paper's fallback
//! modes CONTROLLER_RESTRICTED, CONTROLLER_UNRESTRICTED and SPLIT, over the
//! (controller, bank) lists of a [`PageBook`] (each page sits in its color
//! list and in its bank list at once, as in the paper's Section 3).

use serde::Serialize;
use std::ops::BitOr;

use super::{PageBook, PageId};
use crate::error::MemError;

/// Fallback modes of chandru-mueller Algorithm 1, combined as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
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

/// The step of Algorithm 1 that served a bank-aware request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
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
    /// Size in bytes (a chunk is one page; larger requests need SPLIT).
    pub size: u64,
    /// Fallback modes.
    pub modes: Modes,
}

/// The answer to a [`BankRequest`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BankGrant {
    /// First page of the block.
    pub first: PageId,
    /// Number of contiguous pages.
    pub pages: u32,
    /// The step that served the request.
    pub step: Step,
}
impl PageBook {
    /// chandru-mueller Algorithm 1 ("Bank aware algorithm allocator").
    ///
    /// A chunk is one page. A request of at most one page is tried, in
    /// order: (1) the requested controller and bank; (2) with
    /// CONTROLLER_RESTRICTED, the requested controller's banks in
    /// descending order of free memory; (3) with CONTROLLER_UNRESTRICTED,
    /// the controllers in descending order of free memory and, within
    /// each, its banks in descending order of free memory; (4) with SPLIT,
    /// the first contiguous run of free pages in address order, which may
    /// span banks and controllers. A request larger than a page cannot fit
    /// one chunk, so steps 1–3 find nothing and only SPLIT can serve it.
    /// Ties in free memory go to the lower index, so results are
    /// deterministic.
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
        if pages == 1 {
            let single = |book: &mut Self, controller: u32, bank: u32, step: Step| {
                let slot = book.slot(controller, bank);
                book.by_bank.first(slot).map(|page| {
                    book.take(page);
                    BankGrant {
                        first: PageId(page),
                        pages: 1,
                        step,
                    }
                })
            };
            // Step 1: the requested controller and bank.
            if let Some(grant) = single(self, request.controller, request.bank, Step::Exact) {
                return Ok(grant);
            }
            // Step 2: banks of the requested controller, most free first.
            if modes.contains(Modes::CONTROLLER_RESTRICTED) {
                for bank in self.banks_by_free_memory(request.controller) {
                    if let Some(grant) =
                        single(self, request.controller, bank, Step::ControllerRestricted)
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
                            single(self, controller, bank, Step::ControllerUnrestricted)
                        {
                            return Ok(grant);
                        }
                    }
                }
            }
        }
        // Step 4: a contiguous block that may span banks and controllers.
        if let Some(first) = modes
            .contains(Modes::SPLIT)
            .then(|| self.first_free_run(pages))
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
            "no free {} in controller {} bank {} with modes {:#x} ({}{}{}): {} pages free in \
             that bank, {} in that controller, {} in the pool",
            if pages == 1 {
                "page".to_string()
            } else {
                format!("run of {pages} contiguous pages")
            },
            request.controller,
            request.bank,
            modes.0,
            if modes.contains(Modes::CONTROLLER_RESTRICTED) {
                "CONTROLLER_RESTRICTED "
            } else {
                ""
            },
            if modes.contains(Modes::CONTROLLER_UNRESTRICTED) {
                "CONTROLLER_UNRESTRICTED "
            } else {
                ""
            },
            if modes.contains(Modes::SPLIT) {
                "SPLIT"
            } else {
                "no SPLIT"
            },
            self.free_in_bank(request.controller, request.bank),
            self.free_in_controller(request.controller),
            self.free_pages,
        )))
    }

    /// Banks of `controller` in descending order of free pages (ties: lower
    /// bank first) — the per-controller queue of chandru-mueller Section 3.
    pub fn banks_by_free_memory(&self, controller: u32) -> Vec<u32> {
        let mut banks: Vec<u32> = (0..self.mapping.banks()).collect();
        banks.sort_by_key(|&bank| std::cmp::Reverse(self.free_in_bank(controller, bank)));
        banks
    }

    /// Controllers in descending order of free pages (ties: lower first) —
    /// the shared controller queue of chandru-mueller Section 3.
    pub fn controllers_by_free_memory(&self) -> Vec<u32> {
        let mut controllers: Vec<u32> = (0..self.mapping.controllers()).collect();
        controllers.sort_by_key(|&c| std::cmp::Reverse(self.controller_free[c as usize]));
        controllers
    }

    /// First run of `pages` free pages in address order.
    fn first_free_run(&self, pages: u64) -> Option<u32> {
        let mut run_start = 0usize;
        let mut run_len = 0u64;
        for (index, &used) in self.used.iter().enumerate() {
            if used {
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
            err.contains("controller 1 bank 2") && err.contains("0 pages free in that bank"),
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
}
