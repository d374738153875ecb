//! The color probe behind `tinct doctor --probe-colors`: does page coloring
//! actually partition the caches of *this* machine?
//!
//! Page coloring (kim2013 Section III-C) assumes that the physical address
//! bits above the page offset select the cache set. In a virtual machine
//! guest-physical frames need not be host-physical ones, and sliced or
//! hashed caches spread a color over many sets; then colors isolate
//! nothing. The probe measures it instead of assuming it:
//!
//! * **conflict** chase: a random pointer cycle through every line of
//!   (at least) `2 × ways` pages of *one* color of the cache under test. If
//!   colors are real, each of the color's sets must hold at least twice as
//!   many lines as it has ways: conflict misses, every load goes one level
//!   further out.
//! * **control** chase: the same number of pages and lines, spread over
//!   the other colors of the cache under test. It fits, so it hits.
//!
//! Both chases must miss the inner cache alike, or the inner cache would
//! hide the difference: if the inner level was found effective, the
//! control pages share the conflict pages' inner color (both conflict
//! there); otherwise both chases are made twice as large as the inner
//! cache (e.g. 512 pages of one L3 color behind a 1 MiB L2), which needs a
//! larger arena to find that many pages of one color.
//!
//! Both have the same footprint, page count (TLB reach) and access pattern;
//! only the colors differ. They are measured alternately for several
//! rounds (each chase timed three times per round, the fastest kept, since
//! interference only adds time), and the verdict needs the medians *and*
//! the rounds to agree:
//! effective (conflict clearly slower), not effective (no difference) or
//! inconclusive (noise or disagreement), always with the numbers.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::pagemap::Pagemap;
use crate::root::SysRoot;
use crate::topology::{Cache, PageColors, Topology};

/// Median conflict/control ratio from which coloring counts as effective.
pub const EFFECTIVE_RATIO: f64 = 1.5;
/// Median ratio below which coloring counts as not effective.
pub const NOT_EFFECTIVE_RATIO: f64 = 1.15;
/// Share of rounds that must agree with the median's verdict.
pub const AGREEMENT: f64 = 0.8;

/// The answer for one cache level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Verdict {
    /// Same-color lines conflict: coloring partitions this cache.
    Effective,
    /// Same-color lines do not conflict: coloring does not partition it.
    NotEffective,
    /// The measurements do not support either answer.
    Inconclusive,
}

impl Verdict {
    /// Lower-case label.
    pub fn label(self) -> &'static str {
        match self {
            Self::Effective => "effective",
            Self::NotEffective => "not effective",
            Self::Inconclusive => "inconclusive",
        }
    }
}

/// The probe of one cache level, with the numbers behind the verdict.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct LevelProbe {
    /// `L2`, `L3`, ...
    pub cache: String,
    /// Associativity.
    pub ways: u32,
    /// Page colors of this cache.
    pub colors: u64,
    /// Pages in each chase (`2 × ways`).
    pub pages: usize,
    /// Cache lines in each chase.
    pub lines: usize,
    /// Median nanoseconds per load, conflict chase.
    pub conflict_ns: f64,
    /// Median nanoseconds per load, control chase.
    pub control_ns: f64,
    /// Median of the per-round ratios conflict / control.
    pub ratio: f64,
    /// Rounds measured (each: conflict and control, alternating order).
    pub rounds: usize,
    /// Rounds whose ratio was at least [`EFFECTIVE_RATIO`].
    pub rounds_effective: usize,
    /// Rounds whose ratio was below [`NOT_EFFECTIVE_RATIO`].
    pub rounds_not_effective: usize,
    /// The answer.
    pub verdict: Verdict,
    /// The answer in words, with the numbers.
    pub explanation: String,
}

/// The whole probe.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ProbeReport {
    /// One entry per colorable cache level, inner first.
    pub levels: Vec<LevelProbe>,
    /// True if `/proc/cpuinfo` has the `hypervisor` flag.
    pub virtual_machine: bool,
}

impl ProbeReport {
    /// The verdict for the last-level cache (what page coloring is used for).
    pub fn last_level(&self) -> Option<&LevelProbe> {
        self.levels.last()
    }
}

/// Judges per-round (conflict, control) nanoseconds per load.
pub fn judge(samples: &[(f64, f64)]) -> (Verdict, f64, f64, f64, usize, usize) {
    let conflict = median(&samples.iter().map(|s| s.0).collect::<Vec<_>>());
    let control = median(&samples.iter().map(|s| s.1).collect::<Vec<_>>());
    let ratios: Vec<f64> = samples
        .iter()
        .map(|(a, b)| a / b.max(f64::MIN_POSITIVE))
        .collect();
    let ratio = median(&ratios);
    let effective = ratios.iter().filter(|&&r| r >= EFFECTIVE_RATIO).count();
    let not_effective = ratios.iter().filter(|&&r| r < NOT_EFFECTIVE_RATIO).count();
    let needed = (samples.len() as f64 * AGREEMENT).ceil() as usize;
    let verdict = if samples.is_empty() {
        Verdict::Inconclusive
    } else if ratio >= EFFECTIVE_RATIO && effective >= needed {
        Verdict::Effective
    } else if ratio < NOT_EFFECTIVE_RATIO && not_effective >= needed {
        Verdict::NotEffective
    } else {
        Verdict::Inconclusive
    };
    (verdict, conflict, control, ratio, effective, not_effective)
}

/// What a verdict means, for the explanation.
fn meaning(verdict: Verdict, ratio: f64) -> &'static str {
    match verdict {
        Verdict::Effective => ": same-color lines conflict, page coloring partitions this cache",
        Verdict::NotEffective => {
            ": no conflicts, page colors do not partition this cache on this machine"
        }
        Verdict::Inconclusive if (NOT_EFFECTIVE_RATIO..EFFECTIVE_RATIO).contains(&ratio) => {
            ": a partial effect (only part of the memory keeps its colors, as when a \
             hypervisor backs part of the guest with huge pages) or noise"
        }
        Verdict::Inconclusive => ": the rounds disagree (noise)",
    }
}

/// The median of `values` (NaN for none: no verdict can come of it).
fn median(values: &[f64]) -> f64 {
    tinct_base::stats::median_f64(values).unwrap_or(f64::NAN)
}

/// Probe settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeOptions {
    /// Rounds per level.
    pub rounds: usize,
    /// Most bytes of memory to map while looking for same-color pages.
    pub max_arena_bytes: usize,
    /// Candidate colour bits `[low, high)` of the last-level cache to probe
    /// instead of the ones the way-size rule gives (`tinct doctor
    /// --probe-colors --color-bits 12-16`): how a user checks bits that
    /// cannot be derived.
    pub llc_bits: Option<(u32, u32)>,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        Self {
            rounds: 21,
            max_arena_bytes: 2 << 30,
            llc_bits: None,
        }
    }
}

/// Runs the probe on the live machine (needs readable frame numbers: root
/// or CAP_SYS_ADMIN).
pub fn probe_colors(options: ProbeOptions) -> Result<ProbeReport> {
    let root = SysRoot::live();
    let topology = Topology::read(&root)?;
    let page = rustix::param::page_size();
    let mut caches: Vec<&Cache> = topology
        .caches
        .iter()
        .filter(|c| c.kind != crate::topology::CacheType::Instruction && c.level >= 2)
        .collect();
    caches.sort_by_key(|c| c.level);
    caches.dedup_by_key(|c| c.level);
    let last_level = caches.last().map(|c| c.level);
    let mut levels: Vec<LevelProbe> = Vec::new();
    let mut inner: Option<(PageColors, u64)> = None;
    let mut inner_effective = false;
    for cache in caches {
        let colors = match options.llc_bits {
            Some((low, high)) if Some(cache.level) == last_level => {
                PageColors::of_bits(&(low..high).collect::<Vec<u32>>(), page as u64).ok()
            }
            _ => cache.page_colors(page as u64),
        };
        let (Some(colors), Some(ways)) = (colors, cache.ways) else {
            continue;
        };
        if colors.colors < 2 || colors.address_bits.is_none() || ways == 0 {
            continue;
        }
        // Both chases must miss the inner cache alike. If the inner cache
        // is colored for real, sharing its color does that; if not, the
        // chases must be larger than it (twice its size).
        let mut pages = 2 * ways as usize;
        let mut inner_colors = None;
        if let Some((colors, size)) = &inner {
            if inner_effective {
                inner_colors = Some(colors.clone());
            } else {
                pages = pages.max((2 * *size as usize).div_ceil(page));
            }
        }
        let wanted = pages * colors.colors as usize * page * 3 / 2;
        let available = available_memory(&root).map_or(usize::MAX, |a| a / 4);
        let arena_bytes = wanted.min(options.max_arena_bytes).min(available);
        let arena = Arena::new(arena_bytes.max(64 << 20).next_multiple_of(page), page)?;
        let level = probe_level(
            &arena,
            cache,
            &colors,
            ways,
            pages,
            inner_colors.as_ref(),
            options,
        )?;
        inner_effective = level.verdict == Verdict::Effective;
        levels.push(level);
        inner = Some((colors, cache.size_bytes));
    }
    let virtual_machine = root.read_optional("/proc/cpuinfo")?.is_some_and(|t| {
        t.lines()
            .any(|l| l.starts_with("flags") && l.contains(" hypervisor"))
    });
    Ok(ProbeReport {
        levels,
        virtual_machine,
    })
}

/// `MemAvailable` in bytes.
fn available_memory(root: &SysRoot) -> Option<usize> {
    let meminfo = root.read_optional("/proc/meminfo").ok()??;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A populated mapping with the frame number of each page.
struct Arena {
    start: *mut u8,
    len: usize,
    page: usize,
    frames: Vec<u64>,
}

impl Arena {
    fn new(len: usize, page: usize) -> Result<Self> {
        // SAFETY: a fresh private anonymous mapping aliases nothing.
        let start = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                len,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .map_err(|e| Error::syscall(format!("mmap({len} bytes)"), e.into()))?
        .cast::<u8>();
        // Owned from here on, so an early return unmaps it.
        let mut arena = Self {
            start,
            len,
            page,
            frames: Vec::new(),
        };
        // SAFETY: advising our own mapping before touching it; a huge page
        // would hide the page colors behind one 2 MiB frame.
        unsafe { rustix::mm::madvise(start.cast(), len, rustix::mm::Advice::LinuxNoHugepage) }
            .map_err(|e| Error::syscall("madvise(MADV_NOHUGEPAGE)", e.into()))?;
        for offset in (0..len).step_by(page) {
            // SAFETY: inside our writable mapping.
            unsafe { start.add(offset).write_volatile(1) };
        }
        let pagemap = Pagemap::open_self()?;
        let frames = pagemap.frames(start as usize, len / page)?;
        if frames.contains(&0) {
            return Err(crate::pagemap::frames_hidden_error("/proc/self/pagemap"));
        }
        arena.frames = frames;
        Ok(arena)
    }

    fn page_address(&self, index: usize) -> *mut u8 {
        self.start.wrapping_add(index * self.page)
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; the chases that
        // pointed into it are finished.
        let _ = unsafe { rustix::mm::munmap(self.start.cast(), self.len) };
    }
}

/// Picks the pages of both chases for one level, or `None` if the arena
/// does not hold enough pages of one color.
fn pick_pages(
    arena: &Arena,
    colors: &PageColors,
    pages: usize,
    inner: Option<&PageColors>,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let color_of = |c: &PageColors, i: usize| c.color_of_frame(arena.frames[i]).unwrap_or(0);
    let mut by_color: Vec<Vec<usize>> = vec![Vec::new(); colors.colors as usize];
    for index in 0..arena.frames.len() {
        by_color[color_of(colors, index) as usize].push(index);
    }
    // Conflict: `pages` pages of the fullest color.
    let fullest = (0..by_color.len()).max_by_key(|&c| by_color[c].len())?;
    if by_color[fullest].len() < pages {
        return None;
    }
    let conflict: Vec<usize> = by_color[fullest][..pages].to_vec();
    // Control: same inner color as the conflict pages (so both miss the
    // inner cache alike), but spread over as many of this cache's colors
    // as possible, round robin.
    let inner_color = inner.map(|c| color_of(c, conflict[0]));
    let mut candidates: Vec<Vec<usize>> = by_color
        .iter()
        .enumerate()
        .filter(|(color, _)| *color != fullest)
        .map(|(_, list)| {
            list.iter()
                .copied()
                .filter(|&i| inner.is_none_or(|c| Some(color_of(c, i)) == inner_color))
                .collect::<Vec<usize>>()
        })
        .filter(|list| !list.is_empty())
        .collect();
    let mut control = Vec::with_capacity(pages);
    let mut depth = 0;
    while control.len() < pages {
        let before = control.len();
        for list in &mut candidates {
            if let Some(&page) = list.get(depth) {
                control.push(page);
                if control.len() == pages {
                    break;
                }
            }
        }
        if control.len() == before {
            return None;
        }
        depth += 1;
    }
    Some((conflict, control))
}

fn probe_level(
    arena: &Arena,
    cache: &Cache,
    colors: &PageColors,
    ways: u32,
    pages: usize,
    inner: Option<&PageColors>,
    options: ProbeOptions,
) -> Result<LevelProbe> {
    let Some((conflict_pages, control_pages)) = pick_pages(arena, colors, pages, inner) else {
        return Ok(LevelProbe {
            cache: cache.name(),
            ways,
            colors: colors.colors,
            pages,
            lines: 0,
            conflict_ns: f64::NAN,
            control_ns: f64::NAN,
            ratio: f64::NAN,
            rounds: 0,
            rounds_effective: 0,
            rounds_not_effective: 0,
            verdict: Verdict::Inconclusive,
            explanation: format!(
                "not measured: {} MiB of memory held fewer than {pages} pages of one color \
                 (raise the memory limit or free memory)",
                arena.len >> 20
            ),
        });
    };
    let line = cache.line_bytes.unwrap_or(64).max(8) as usize;
    let conflict = Chase::new(arena, &conflict_pages, line, 1);
    let control = Chase::new(arena, &control_pages, line, 2);
    let steps = (conflict.lines * 8).max(400_000);
    let mut samples = Vec::with_capacity(options.rounds);
    for round in 0..options.rounds {
        // Alternate which chase goes first, so drift cannot favour one.
        let (a, b) = if round % 2 == 0 {
            let a = conflict.fastest_of(REPEATS, steps);
            (a, control.fastest_of(REPEATS, steps))
        } else {
            let b = control.fastest_of(REPEATS, steps);
            (conflict.fastest_of(REPEATS, steps), b)
        };
        samples.push((a, b));
    }
    let (verdict, conflict_ns, control_ns, ratio, effective, not_effective) = judge(&samples);
    let explanation = format!(
        "{} lines of {pages} same-color pages ({ways}-way cache, {} colors): {conflict_ns:.1} \
         ns/load; spread over colors: {control_ns:.1} ns/load; median ratio {ratio:.2} \
         ({effective}/{} rounds >= {EFFECTIVE_RATIO}, {not_effective} < {NOT_EFFECTIVE_RATIO})",
        conflict.lines,
        colors.colors,
        samples.len()
    ) + meaning(verdict, ratio)
        + if cfg!(debug_assertions) {
            "; debug build: loop overhead is added to every load and compresses the ratio, \
         use a release build of tinct for a verdict"
        } else {
            ""
        };
    Ok(LevelProbe {
        cache: cache.name(),
        ways,
        colors: colors.colors,
        pages,
        lines: conflict.lines,
        conflict_ns,
        control_ns,
        ratio,
        rounds: samples.len(),
        rounds_effective: effective,
        rounds_not_effective: not_effective,
        verdict,
        explanation,
    })
}

/// Timings per chase and round; the fastest counts, because interference
/// (preemption, other tenants) only ever adds time.
const REPEATS: usize = 3;

/// A random cyclic pointer chain through every line of a set of pages.
struct Chase {
    first: *const usize,
    lines: usize,
}

impl Chase {
    fn new(arena: &Arena, pages: &[usize], line: usize, seed: u64) -> Self {
        let mut slots: Vec<*mut usize> = pages
            .iter()
            .flat_map(|&p| {
                let base = arena.page_address(p);
                (0..arena.page / line).map(move |l| base.wrapping_add(l * line).cast::<usize>())
            })
            .collect();
        // Fisher-Yates with xorshift: a random order defeats prefetchers.
        let mut state = 0x2545_f491_4f6c_dd1d_u64 ^ seed;
        for i in (1..slots.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            slots.swap(i, (state % (i as u64 + 1)) as usize);
        }
        for (i, &slot) in slots.iter().enumerate() {
            let next = slots[(i + 1) % slots.len()];
            // SAFETY: every slot is a line-aligned word inside the arena,
            // which lives as long as the chase; no references exist to it.
            unsafe { slot.write(next as usize) };
        }
        Self {
            first: slots[0],
            lines: slots.len(),
        }
    }

    /// The fastest of `repeats` timings of `steps` loads.
    fn fastest_of(&self, repeats: usize, steps: usize) -> f64 {
        (0..repeats)
            .map(|_| self.time(steps))
            .fold(f64::INFINITY, f64::min)
    }

    /// Nanoseconds per load over `steps` dependent loads (after one warm-up cycle).
    fn time(&self, steps: usize) -> f64 {
        let mut p = self.first;
        for _ in 0..self.lines {
            // SAFETY: the chain only holds addresses of its own slots.
            p = unsafe { p.read_volatile() } as *const usize;
        }
        let start = Instant::now();
        for _ in 0..steps {
            // SAFETY: as above.
            p = unsafe { p.read_volatile() } as *const usize;
        }
        let elapsed = start.elapsed();
        std::hint::black_box(p);
        elapsed.as_nanos() as f64 / steps as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clear_conflicts_are_effective() {
        let samples: Vec<(f64, f64)> = (0..15).map(|i| (80.0 + i as f64, 12.0)).collect();
        let (verdict, conflict, control, ratio, effective, _) = judge(&samples);
        assert_eq!(verdict, Verdict::Effective);
        assert_eq!((conflict, control), (87.0, 12.0));
        assert!((ratio - 87.0 / 12.0).abs() < 1e-9);
        assert_eq!(effective, 15);
    }

    #[test]
    fn equal_times_are_not_effective() {
        let samples: Vec<(f64, f64)> = (0..15)
            .map(|i| (10.0 + (i % 3) as f64 * 0.2, 10.1))
            .collect();
        assert_eq!(judge(&samples).0, Verdict::NotEffective);
    }

    #[test]
    fn a_median_carried_by_a_few_noisy_rounds_is_inconclusive() {
        // The median says "effective" but only 9 of 15 rounds agree.
        let mut samples: Vec<(f64, f64)> = (0..9).map(|_| (30.0, 10.0)).collect();
        samples.extend((0..6).map(|_| (10.0, 10.0)));
        assert_eq!(judge(&samples).0, Verdict::Inconclusive);
        // In between the thresholds: inconclusive too.
        let middle: Vec<(f64, f64)> = (0..15).map(|_| (13.0, 10.0)).collect();
        assert_eq!(judge(&middle).0, Verdict::Inconclusive);
        assert_eq!(judge(&[]).0, Verdict::Inconclusive);
    }
}
