//! [`JumpChain`]: generated x86-64 code with a fixed instruction-cache miss
//! ratio, as sebek2002 generates it (Section 3.3, Figure 5): every cache
//! line of the code executes `k` instructions — `k - 1` four-byte no-ops
//! and an unconditional jump to the start of the next line — so that,
//! once the code is larger than the cache, each line fetched serves `k`
//! instructions: a miss ratio of `1/k` (Sebek's "jump moved to the k-th
//! word"; alternating `k` per line gives the ratios in between, e.g. 1, 2
//! for 2 misses in 3 instructions).
//!
//! "The next line" is the next in a visiting order: in address order as on
//! Sebek's MPC750, or in a shuffled order. A current x86-64 core fetches
//! sequential code ahead of execution, which hides the misses of the
//! address-ordered chain; a shuffled order leaves only the branch target
//! buffer to predict the next line, and a preemption that evicts both
//! shows its full cost.
//!
//! The code is built here, byte by byte, and mapped read-and-execute in a
//! mapping of its own (never writable and executable at once), so running
//! it is safe: it only jumps within itself, touches no memory and returns.
//! Only x86-64 runs it; [`JumpChain::new`] refuses elsewhere.
//!
//! Layout of `lines` chain lines of `line_bytes` each, then one tail line:
//!
//! ```text
//! line i:   [nop4] x (k_i - 1) | jmp rel32 -> next line | int3 padding
//! tail:     dec rdi | jnz rel32 -> line 0 | ret | int3 padding
//! ```
//!
//! `run(passes)` executes the chain `passes` times (the count in `rdi`).

use crate::{Error, Result};
use std::ptr::NonNull;

/// `nop dword ptr [rax + 0]`: one four-byte instruction that does nothing
/// (Sebek's `r1 = r1 + 0`).
pub const NOP4: [u8; 4] = [0x0f, 0x1f, 0x40, 0x00];
/// `jmp rel32` (the opcode; four bytes of displacement follow).
pub const JMP_REL32: u8 = 0xe9;
/// `int3`: padding that traps if it were ever executed.
pub const INT3: u8 = 0xcc;
/// `dec rdi`.
const DEC_RDI: [u8; 3] = [0x48, 0xff, 0xcf];
/// `jnz rel32` (the opcode; four bytes of displacement follow).
const JNZ_REL32: [u8; 2] = [0x0f, 0x85];
/// `ret`.
const RET: u8 = 0xc3;

/// The shape of a jump chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Chain lines (the code is `lines + 1` lines long with the tail).
    pub lines: usize,
    /// Bytes per cache line (a power of two, 32 to 256).
    pub line_bytes: usize,
    /// Instructions executed per line, cycling over the lines in visiting
    /// order: `[1]` is Sebek's 100 % miss code, `[2]` 50 %, `[1, 2]` 2
    /// misses in 3.
    pub words_per_line: Vec<u32>,
    /// The order the lines are visited in: a permutation of `0..lines`
    /// starting at 0; empty for address order.
    pub order: Vec<u32>,
}

impl Layout {
    /// The most instructions a line can execute: its no-ops and the
    /// five-byte jump must fit the line.
    pub fn max_words(line_bytes: usize) -> u32 {
        ((line_bytes - 5) / 4 + 1) as u32
    }

    /// Instructions executed in the `j`-th line visited.
    pub fn words(&self, j: usize) -> u32 {
        self.words_per_line[j % self.words_per_line.len()]
    }

    /// The line visited `j`-th.
    pub fn visited(&self, j: usize) -> usize {
        if self.order.is_empty() {
            j
        } else {
            self.order[j] as usize
        }
    }

    /// Cache-line fetches per instruction once the chain does not fit the
    /// cache: lines / instructions over one cycle of the pattern.
    pub fn miss_ratio(&self) -> f64 {
        let words: u32 = self.words_per_line.iter().sum();
        self.words_per_line.len() as f64 / f64::from(words)
    }

    /// Checks the layout and generates its bytes.
    pub fn generate(&self) -> Result<Vec<u8>> {
        let bad = |what: String| Err(Error::InvalidArgument(what));
        if !self.line_bytes.is_power_of_two() || !(32..=256).contains(&self.line_bytes) {
            return bad(format!(
                "line size: expected a power of two from 32 to 256 bytes, found {}",
                self.line_bytes
            ));
        }
        if self.lines == 0 {
            return bad("a jump chain needs at least one line".into());
        }
        let max = Self::max_words(self.line_bytes);
        if self.words_per_line.is_empty() || self.words_per_line.iter().any(|&k| k == 0 || k > max)
        {
            return bad(format!(
                "instructions per line: expected 1 to {max} for {}-byte lines, found {:?}",
                self.line_bytes, self.words_per_line
            ));
        }
        if !self.order.is_empty() {
            let mut seen = vec![false; self.lines];
            let permutation = self.order.len() == self.lines
                && self.order[0] == 0
                && self.order.iter().all(|&l| {
                    let fresh = (l as usize) < self.lines && !seen[l as usize];
                    if fresh {
                        seen[l as usize] = true;
                    }
                    fresh
                });
            if !permutation {
                return bad(format!(
                    "visiting order: expected a permutation of 0..{} starting at 0",
                    self.lines
                ));
            }
        }
        let total = self
            .lines
            .checked_add(1)
            .and_then(|l| l.checked_mul(self.line_bytes))
            .filter(|&t| t <= 1 << 30)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("a chain of {} lines is over 1 GiB", self.lines))
            })?;
        let mut code = vec![INT3; total];
        let tail_start = self.lines * self.line_bytes;
        for j in 0..self.lines {
            let start = self.visited(j) * self.line_bytes;
            let next = if j + 1 < self.lines {
                self.visited(j + 1) * self.line_bytes
            } else {
                tail_start
            };
            let line = &mut code[start..start + self.line_bytes];
            let nops = (self.words(j) - 1) as usize;
            for n in 0..nops {
                line[4 * n..4 * n + 4].copy_from_slice(&NOP4);
            }
            let at = 4 * nops;
            line[at] = JMP_REL32;
            // From the end of the five-byte jump to the start of the next line.
            let displacement = next as i64 - (start + at + 5) as i64;
            let displacement = i32::try_from(displacement).expect("chains are at most 1 GiB");
            line[at + 1..at + 5].copy_from_slice(&displacement.to_le_bytes());
        }
        let tail = &mut code[tail_start..];
        tail[..3].copy_from_slice(&DEC_RDI);
        tail[3..5].copy_from_slice(&JNZ_REL32);
        // Back to byte 0 from the end of the six-byte jnz.
        let back = -((tail_start + 9) as i64);
        let back = i32::try_from(back).expect("chains are at most 1 GiB");
        tail[5..9].copy_from_slice(&back.to_le_bytes());
        tail[9] = RET;
        Ok(code)
    }
}

/// A generated jump chain in its own read-and-execute mapping.
#[derive(Debug)]
pub struct JumpChain {
    start: NonNull<u8>,
    mapped: usize,
    len: usize,
    layout: Layout,
}

// SAFETY: the mapping is owned exclusively and never written after
// construction; running it from another thread is as safe as from this one.
unsafe impl Send for JumpChain {}
// SAFETY: see `Send`: shared use only reads and executes the mapping.
unsafe impl Sync for JumpChain {}

impl JumpChain {
    /// Generates the chain of `layout` and maps it page-aligned (so line
    /// `i` starts at a cache-line boundary), read-and-execute. Refused on
    /// any architecture but x86-64.
    pub fn new(layout: Layout) -> Result<Self> {
        if !cfg!(target_arch = "x86_64") {
            return Err(Error::InvalidArgument(format!(
                "the instruction-cache chain is x86-64 machine code; this machine is {}",
                std::env::consts::ARCH
            )));
        }
        let code = layout.generate()?;
        let page = rustix::param::page_size();
        let mapped = code.len().div_ceil(page) * page;
        let os =
            |call: &'static str| move |errno: rustix::io::Errno| Error::syscall(call, errno.into());
        // SAFETY: a fresh anonymous private mapping at an address the
        // kernel chooses cannot alias any existing Rust object.
        let raw = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                mapped,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .map_err(os("mmap(anonymous, jump chain)"))?;
        // SAFETY: `raw` is a writable mapping of `mapped >= code.len()`
        // bytes that nothing else references; the source is a valid slice.
        unsafe { std::ptr::copy_nonoverlapping(code.as_ptr(), raw.cast::<u8>(), code.len()) };
        // SAFETY: the range is exactly the mapping made above.
        let protected = unsafe {
            rustix::mm::mprotect(
                raw,
                mapped,
                rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::EXEC,
            )
        };
        if let Err(errno) = protected {
            // SAFETY: the mapping made above, referenced by nothing else.
            let _ = unsafe { rustix::mm::munmap(raw, mapped) };
            return Err(os("mprotect(jump chain, READ | EXEC)")(errno));
        }
        let start = NonNull::new(raw.cast::<u8>())
            .ok_or_else(|| Error::InvalidArgument("mmap returned a null mapping".into()))?;
        Ok(Self {
            start,
            mapped,
            len: code.len(),
            layout,
        })
    }

    /// The layout it was built from.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The bytes as mapped.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `len` bytes from `start` are mapped readable for the
        // lifetime of `self` and never written after `new`.
        unsafe { std::slice::from_raw_parts(self.start.as_ptr(), self.len) }
    }

    /// Bytes of code, tail included.
    pub fn code_bytes(&self) -> usize {
        self.len
    }

    /// Executes the chain `passes` times (nothing for 0).
    pub fn run(&self, passes: u64) {
        if passes == 0 {
            return;
        }
        // SAFETY: the mapping is read-and-execute and holds code generated
        // by `Layout::generate`: no-ops and jumps within the chain, then
        // `dec rdi; jnz line 0; ret` — an `extern "C" fn(u64)` that touches
        // no memory and no callee-saved register, keeps the stack balanced,
        // and returns after `passes` (≥ 1, in rdi) passes.
        let chain: extern "C" fn(u64) = unsafe { std::mem::transmute(self.start.as_ptr()) };
        chain(passes);
    }
}

impl Drop for JumpChain {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping this value owns; no reference
        // to it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.start.as_ptr().cast(), self.mapped) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(lines: usize, words: Vec<u32>) -> Layout {
        Layout {
            lines,
            line_bytes: 64,
            words_per_line: words,
            order: Vec::new(),
        }
    }

    /// Where line `i`'s jump is and where it lands, read from the bytes.
    fn jump_of(code: &[u8], i: usize) -> (usize, usize) {
        let line = &code[i * 64..(i + 1) * 64];
        let at = (0..60)
            .step_by(4)
            .find(|&at| line[at] == JMP_REL32)
            .expect("a jump at an instruction boundary");
        let displacement = i32::from_le_bytes(line[at + 1..at + 5].try_into().unwrap());
        (
            at,
            ((i * 64 + at + 5) as i64 + i64::from(displacement)) as usize,
        )
    }

    /// Checks every line of `l`'s code: `k - 1` no-ops, one jump to the
    /// next line visited, padding after it.
    fn check(l: &Layout) {
        let code = l.generate().unwrap();
        assert_eq!(code.len(), (l.lines + 1) * 64, "lines and the tail");
        for j in 0..l.lines {
            let i = l.visited(j);
            let k = l.words(j) as usize;
            let (at, target) = jump_of(&code, i);
            assert_eq!(at, 4 * (k - 1), "line {i}: {k} instructions");
            let next = if j + 1 < l.lines {
                l.visited(j + 1) * 64
            } else {
                l.lines * 64
            };
            assert_eq!(target, next, "line {i} jumps to the next line visited");
            for n in 0..k - 1 {
                assert_eq!(code[i * 64 + 4 * n..i * 64 + 4 * n + 4], NOP4);
            }
            let after = &code[i * 64 + at + 5..(i + 1) * 64];
            assert!(
                after.iter().all(|&b| b == INT3),
                "line {i}: padding after the jump"
            );
        }
    }

    #[test]
    fn every_line_has_one_jump_at_the_requested_word_to_the_next_line() {
        for words in [vec![1], vec![2], vec![15], vec![1, 2], vec![3, 1, 4]] {
            check(&layout(40, words));
        }
    }

    #[test]
    fn a_shuffled_chain_visits_every_line_once_in_its_order() {
        let mut l = layout(8, vec![1, 2]);
        l.order = vec![0, 5, 2, 7, 1, 3, 6, 4];
        check(&l);
        for bad in [
            vec![1, 0, 2, 3, 4, 5, 6, 7],
            vec![0, 1, 1, 3, 4, 5, 6, 7],
            vec![0, 1],
        ] {
            l.order = bad;
            assert!(l.generate().is_err(), "{:?}", l.order);
        }
    }

    #[test]
    fn the_tail_loops_back_to_line_zero_and_returns() {
        let code = layout(3, vec![1]).generate().unwrap();
        let tail = &code[3 * 64..];
        assert_eq!(tail[..5], [0x48, 0xff, 0xcf, 0x0f, 0x85]);
        let displacement = i32::from_le_bytes(tail[5..9].try_into().unwrap());
        assert_eq!(3 * 64 + 9 + displacement as i64, 0);
        assert_eq!(tail[9], 0xc3);
    }

    #[test]
    fn miss_ratios_follow_the_pattern() {
        assert_eq!(layout(1, vec![1]).miss_ratio(), 1.0);
        assert_eq!(layout(1, vec![2]).miss_ratio(), 0.5);
        assert!((layout(1, vec![1, 2]).miss_ratio() - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn impossible_layouts_are_refused() {
        assert_eq!(Layout::max_words(64), 15);
        let mut odd = layout(4, vec![1]);
        odd.line_bytes = 48;
        for bad in [
            layout(0, vec![1]),
            layout(4, vec![]),
            layout(4, vec![0]),
            layout(4, vec![16]),
            odd,
        ] {
            assert!(bad.generate().is_err(), "{bad:?}");
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn a_mapped_chain_runs_and_is_what_was_generated() {
        let mut l = layout(512, vec![1, 2]);
        l.order = (0..512u32).map(|i| (i * 301) % 512).collect();
        let chain = JumpChain::new(l.clone()).unwrap();
        assert_eq!(chain.bytes(), l.generate().unwrap());
        assert_eq!(chain.bytes().as_ptr() as usize % 4096, 0, "page-aligned");
        chain.run(0);
        chain.run(1);
        chain.run(100);
    }
}
