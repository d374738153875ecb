//! [`JumpChain`]: generated x86-64 code with a fixed instruction-cache miss
//! ratio, as sebek2002 generates it (Section 3.3, Figure 5): every cache
//! line of the code executes `k` instructions — `k - 1` four-byte no-ops
//! and an unconditional jump to the start of the next line — so that,
//! once the code is larger than the cache, each line fetched serves `k`
//! instructions: a miss ratio of `1/k` (Sebek's "jump moved to the k-th
//! word"; alternating `k` per line gives the ratios in between, e.g. 1, 2
//! for 2 misses in 3 instructions).
//!
//! The code is built here, byte by byte, and mapped read-and-execute in a
//! mapping of its own (never writable and executable at once), so running
//! it is safe: it only jumps within itself, touches no memory and returns.
//! Only x86-64 runs it; [`JumpChain::new`] refuses elsewhere.
//!
//! Layout of `lines` chain lines of `line_bytes` each, then one tail line:
//!
//! ```text
//! line i:   [nop4] x (k_i - 1) | jmp rel8 -> line i+1 | int3 padding
//! tail:     dec rdi | jnz rel32 -> line 0 | ret | int3 padding
//! ```
//!
//! `run(passes)` executes the chain `passes` times (the count in `rdi`).

use crate::{Error, Result};
use std::ptr::NonNull;

/// `nop dword ptr [rax + 0]`: one four-byte instruction that does nothing
/// (Sebek's `r1 = r1 + 0`).
pub const NOP4: [u8; 4] = [0x0f, 0x1f, 0x40, 0x00];
/// `jmp rel8`.
pub const JMP_REL8: u8 = 0xeb;
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
    /// Instructions executed per line, cycling over the lines: `[1]` is
    /// Sebek's 100 % miss code, `[2]` 50 %, `[1, 2]` 2 misses in 3.
    pub words_per_line: Vec<u32>,
}

impl Layout {
    /// The most instructions a line can execute: its no-ops and the
    /// two-byte jump must fit the line.
    pub fn max_words(line_bytes: usize) -> u32 {
        ((line_bytes - 2) / 4 + 1) as u32
    }

    /// Instructions executed in line `i`.
    pub fn words(&self, i: usize) -> u32 {
        self.words_per_line[i % self.words_per_line.len()]
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
        let total = self
            .lines
            .checked_add(1)
            .and_then(|l| l.checked_mul(self.line_bytes))
            .filter(|&t| t <= 1 << 30)
            .ok_or_else(|| {
                Error::InvalidArgument(format!("a chain of {} lines is over 1 GiB", self.lines))
            })?;
        let mut code = vec![INT3; total];
        for i in 0..self.lines {
            let line = &mut code[i * self.line_bytes..(i + 1) * self.line_bytes];
            let nops = (self.words(i) - 1) as usize;
            for n in 0..nops {
                line[4 * n..4 * n + 4].copy_from_slice(&NOP4);
            }
            let at = 4 * nops;
            line[at] = JMP_REL8;
            // From the end of the two-byte jump to the start of the next line.
            line[at + 1] = (self.line_bytes - (at + 2)) as u8;
        }
        let tail_start = self.lines * self.line_bytes;
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
        }
    }

    /// Where line `i`'s jump is and where it lands, read from the bytes.
    fn jump_of(code: &[u8], i: usize) -> (usize, usize) {
        let line = &code[i * 64..(i + 1) * 64];
        let at = line.iter().position(|&b| b == JMP_REL8).expect("a jump");
        (at, i * 64 + at + 2 + line[at + 1] as usize)
    }

    #[test]
    fn every_line_has_one_jump_at_the_requested_word_to_the_next_line() {
        for words in [vec![1], vec![2], vec![16], vec![1, 2], vec![3, 1, 4]] {
            let l = layout(40, words.clone());
            let code = l.generate().unwrap();
            assert_eq!(code.len(), 41 * 64, "40 lines and the tail");
            for i in 0..40 {
                let k = words[i % words.len()] as usize;
                let (at, target) = jump_of(&code, i);
                assert_eq!(at, 4 * (k - 1), "line {i} of {words:?}");
                assert_eq!(target, (i + 1) * 64, "line {i} jumps to the next line");
                for n in 0..k - 1 {
                    assert_eq!(code[i * 64 + 4 * n..i * 64 + 4 * n + 4], NOP4);
                }
                let after = &code[i * 64 + at + 2..(i + 1) * 64];
                assert!(
                    after.iter().all(|&b| b == INT3),
                    "line {i}: only padding after the jump"
                );
                // Exactly one jump opcode at an instruction boundary per line.
                let jumps = (0..k - 1)
                    .filter(|n| code[i * 64 + 4 * n] == JMP_REL8)
                    .count();
                assert_eq!(jumps, 0);
            }
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
        assert_eq!(Layout::max_words(64), 16);
        for bad in [
            layout(0, vec![1]),
            layout(4, vec![]),
            layout(4, vec![0]),
            layout(4, vec![17]),
            Layout {
                lines: 4,
                line_bytes: 48,
                words_per_line: vec![1],
            },
        ] {
            assert!(bad.generate().is_err(), "{bad:?}");
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn a_mapped_chain_runs_and_is_what_was_generated() {
        let l = layout(512, vec![1, 2]);
        let chain = JumpChain::new(l.clone()).unwrap();
        assert_eq!(chain.bytes(), l.generate().unwrap());
        assert_eq!(chain.bytes().as_ptr() as usize % 4096, 0, "page-aligned");
        chain.run(0);
        chain.run(1);
        chain.run(100);
    }
}
