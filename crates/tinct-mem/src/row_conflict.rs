//! [`RowConflictProbe`]: times pairs of physical addresses for DRAM row-buffer
//! conflicts (DRAMA's timing channel, Pessl et al., USENIX Security 2016,
//! Section 3): two lines in the same bank but different rows evict each
//! other's open row, so reading them alternately with the caches flushed
//! is slower than for two lines in different banks.
//!
//! A buffer is populated and translated through pagemap; `samples` random
//! cache lines of it (random pages, random line offsets, so the bits below
//! the page vary too) are the addresses the solver of `tinct bench
//! dram-map` works on. A measurement is the median over `rounds` of one
//! flushed read of each line, timed with `rdtscp`. x86-64 only (`clflush`,
//! `rdtscp`); elsewhere [`RowConflictProbe::new`] says so.

use rustix::mm::{self, Advice};
use tinct_sys::pagemap::Pagemap;

use crate::error::MemError;

/// Sampled lines of a populated buffer, with their physical addresses.
#[derive(Debug)]
pub struct RowConflictProbe {
    base: usize,
    len: usize,
    lines: Vec<usize>,
    physical: Vec<u64>,
    rounds: usize,
}

// SAFETY: the buffer is owned by the probe and only read through raw
// addresses by `latency`.
unsafe impl Send for RowConflictProbe {}

/// A small deterministic generator for the sample choice (tinct-mem links
/// no random-number crate: the shim must not).
fn next(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

impl RowConflictProbe {
    /// Populates `bytes` of memory, reads its frames, and picks `samples`
    /// distinct random cache lines (seeded by `seed`); each measurement
    /// takes the median of `rounds` timings.
    pub fn new(bytes: usize, samples: usize, rounds: usize, seed: u64) -> Result<Self, MemError> {
        if !cfg!(target_arch = "x86_64") {
            return Err(MemError::Request(
                "row-conflict timing needs x86-64 (clflush, rdtscp)".into(),
            ));
        }
        let page = rustix::param::page_size();
        let len = bytes.next_multiple_of(page);
        let pages = len / page;
        if pages < 2 || samples < 2 || rounds == 0 {
            return Err(MemError::Request(format!(
                "{bytes} bytes, {samples} samples, {rounds} rounds: expected at least two pages \
                 and samples and one round"
            )));
        }
        let raw = crate::region::map_private(len, false, "probe buffer")?;
        let probe = Self {
            base: raw as usize,
            len,
            lines: Vec::new(),
            physical: Vec::new(),
            rounds,
        };
        // SAFETY: our own range; populating writes zeros only.
        unsafe { mm::madvise(raw, len, Advice::LinuxPopulateWrite) }.map_err(|errno| {
            MemError::Os {
                call: format!("madvise(MADV_POPULATE_WRITE, {len} bytes)"),
                source: errno.into(),
            }
        })?;
        // Non-zero pages: a zero page may become the shared zero page.
        for offset in (0..len).step_by(page) {
            // SAFETY: inside our writable range.
            unsafe { ((probe.base + offset) as *mut u8).write_volatile(1) };
        }
        let frames = Pagemap::open_self()?.frames(probe.base, pages)?;
        if frames.contains(&0) {
            return Err(MemError::FramesUnreadable {
                reason: "/proc/self/pagemap reports frame number 0".into(),
            });
        }
        let samples = samples.min(pages * (page / 64));
        let mut state = seed | 1;
        let mut chosen = std::collections::BTreeSet::new();
        let mut probe = probe;
        while probe.lines.len() < samples {
            let page_index = (next(&mut state) % pages as u64) as usize;
            let line = (next(&mut state) % (page as u64 / 64)) as usize * 64;
            let offset = page_index * page + line;
            if chosen.insert(offset) {
                probe.lines.push(probe.base + offset);
                probe
                    .physical
                    .push(frames[page_index] * page as u64 + line as u64);
            }
        }
        Ok(probe)
    }

    /// Physical address of each sampled line.
    pub fn physical(&self) -> &[u64] {
        &self.physical
    }

    /// The median, over the rounds, of the cycles one flushed read of line
    /// `a` and one of line `b` take.
    pub fn latency(&self, a: usize, b: usize) -> u32 {
        let (a, b) = (self.lines[a] as *const u8, self.lines[b] as *const u8);
        let mut samples: Vec<u64> = (0..self.rounds).map(|_| time_pair(a, b)).collect();
        samples.sort_unstable();
        // The nearest-rank median, as every distribution tinct reports.
        let median = tinct_base::stats::nearest_rank(&samples, 50).unwrap_or(u64::MAX);
        u32::try_from(median).unwrap_or(u32::MAX)
    }
}

#[cfg(target_arch = "x86_64")]
fn time_pair(a: *const u8, b: *const u8) -> u64 {
    use std::arch::x86_64::{__rdtscp, _mm_clflush, _mm_mfence};
    let mut aux = 0u32;
    // SAFETY: `a` and `b` are lines of the probe's own mapped buffer;
    // clflush, mfence and rdtscp are x86-64 instructions with no memory
    // effect beyond the flush.
    unsafe {
        _mm_clflush(a);
        _mm_clflush(b);
        _mm_mfence();
        let start = __rdtscp(&mut aux);
        std::ptr::read_volatile(a);
        std::ptr::read_volatile(b);
        let end = __rdtscp(&mut aux);
        end.wrapping_sub(start)
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn time_pair(_a: *const u8, _b: *const u8) -> u64 {
    unreachable!("RowConflictProbe::new refuses other architectures")
}

impl Drop for RowConflictProbe {
    fn drop(&mut self) {
        // SAFETY: our own mapping, unmapped once.
        let _ = unsafe { mm::munmap(self.base as *mut std::ffi::c_void, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_distinct_lines_with_their_frames() {
        if !tinct_sys::testing::privileged_or_skip("reading frame numbers for DRAM timing") {
            return;
        }
        let probe = RowConflictProbe::new(8 << 20, 500, 5, 7).unwrap();
        let mut physical = probe.physical().to_vec();
        assert_eq!(physical.len(), 500);
        assert!(physical.iter().all(|p| p % 64 == 0));
        physical.sort_unstable();
        physical.dedup();
        assert_eq!(physical.len(), 500, "distinct lines");
        let map = Pagemap::open_self().unwrap();
        for (index, &line) in probe.lines.iter().enumerate().take(50) {
            assert_eq!(
                map.physical_address(line).unwrap(),
                Some(probe.physical()[index])
            );
        }
        assert!(probe.latency(0, 1) > 0);
        assert!(RowConflictProbe::new(4096, 10, 1, 1).is_err(), "one page");
    }
}
