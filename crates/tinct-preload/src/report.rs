//! What the shim tells the user: the `TINCT_STATS=1` summary and the
//! `TINCT_PAGE_REPORT` page list.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

use std::sync::atomic::Ordering;

use crate::heap::Heap;
use crate::stderr::write_stderr;

/// Writes the frames the heap could be served from (every pool page of
/// the heap's colors that was not retired, so in the requested banks) to `PATH.<pid>` for
/// `TINCT_FRAME_REPORT` (through a temporary file, so a reader never sees
/// half a report), and returns.
pub fn write_frame_report(heap: &Heap, path: &Path) {
    let pid = std::process::id();
    let frames = heap.locked(|| {
        heap.pool().with_pool(|pool| {
            (0..pool.pages() as u32)
                .map(tinct_mem::PageId)
                .filter(|&page| {
                    !pool.book().is_retired(page)
                        && heap.colors().binary_search(&pool.class(page).color).is_ok()
                })
                .map(|page| pool.frame(page))
                .collect()
        })
    });
    let report = tinct_mem::FrameReport {
        pid,
        command: std::fs::read_to_string("/proc/self/comm")
            .map(|c| c.trim().to_string())
            .unwrap_or_default(),
        page_size: heap.page_size() as u64,
        uncolored: heap.pool().is_uncolored(),
        frames,
    };
    write_report(path, "frame", &report.to_text());
}

/// Writes `text` to `<path>.<pid>` through a temporary file renamed into
/// place (a reader never sees half a report); true if it was written,
/// else the failure is said on stderr.
fn write_report(path: &Path, what: &str, text: &str) -> bool {
    let pid = std::process::id();
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let final_path = path.with_file_name(format!("{name}.{pid}"));
    let temporary = path.with_file_name(format!(".{name}.{pid}.partial"));
    let written = std::fs::File::create(&temporary)
        .and_then(|mut file| file.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&temporary, &final_path));
    if let Err(e) = &written {
        write_stderr(&format!(
            "tinct-preload: cannot write the {what} report {}: {e}\n",
            final_path.display()
        ));
    }
    written.is_ok()
}

/// The exit summary: colors, pages per color, fallbacks, peak.
pub fn summary(heap: &Heap) -> String {
    let config = heap.config();
    let c = &heap.counters;
    let (stats, uncolored) = heap.locked(|| {
        (
            heap.pool().stats(),
            heap.pool()
                .with_pool(|p| p.uncolored_reason().map(str::to_string)),
        )
    });
    let mut out = String::new();
    let pid = std::process::id();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: colors {} of {} ({}), pool {} MiB, {} pages in these colors",
        tinct_sys::format_cpu_list(heap.colors()),
        stats.colors.len(),
        match &uncolored {
            None => "placement by physical frame".to_string(),
            Some(reason) => format!("UNCOLORED: {reason}"),
        },
        config.pool_bytes >> 20,
        heap.colored_pages(),
    );
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: allocations {} colored, {} fallbacks ({} bytes uncolored), {} failed{}, \
         {} internal, {} frees, {} foreign frees, {} forks",
        c.colored.load(Ordering::Relaxed),
        c.fallbacks.load(Ordering::Relaxed),
        c.fallback_bytes.load(Ordering::Relaxed),
        c.failures.load(Ordering::Relaxed),
        if config.strict { " (strict)" } else { "" },
        c.internal.load(Ordering::Relaxed),
        c.frees.load(Ordering::Relaxed),
        c.foreign_frees.load(Ordering::Relaxed),
        c.forks.load(Ordering::Relaxed),
    );
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: peak {} KiB in use, {} KiB at exit; pool pages in use at exit: {} \
         ({} of them in freed multi-page blocks kept for reuse)",
        c.peak_bytes.load(Ordering::Relaxed) >> 10,
        c.live_bytes.load(Ordering::Relaxed) >> 10,
        stats.total.used,
        heap.cached_span_pages(),
    );
    let _ = write!(out, "{}", mapping_note(pid, heap));
    let used: Vec<(u32, u64)> = heap
        .colors()
        .iter()
        .filter_map(|&color| Some((color, stats.colors.get(color as usize)?.used)))
        .collect();
    let in_use: Vec<String> = used
        .iter()
        .filter(|(_, pages)| *pages > 0)
        .map(|(color, pages)| format!("{color}:{pages}"))
        .collect();
    let (least, most) = used
        .iter()
        .fold((u64::MAX, 0), |(lo, hi), &(_, p)| (lo.min(p), hi.max(p)));
    // kim2013 III-C round robin takes equal shares of every color, so the
    // color with the fewest pages bounds what the pool can hand out.
    let fewest = heap
        .colors()
        .iter()
        .filter_map(|&color| stats.colors.get(color as usize))
        .map(|counts| counts.free + counts.used)
        .min()
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: fewest pages in one requested color: {fewest} (round robin over {} \
         colors can hand out about {} pages; raise TINCT_POOL for more)",
        heap.colors().len(),
        fewest * heap.colors().len() as u64
    );
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: pages in use per color: min {} max {} over {} colors; color:pages {}",
        if used.is_empty() { 0 } else { least },
        most,
        used.len(),
        if in_use.is_empty() {
            "none".to_string()
        } else {
            in_use.join(" ")
        }
    );
    let outside: Vec<String> = stats
        .colors
        .iter()
        .enumerate()
        .filter(|(color, counts)| {
            counts.used > 0 && heap.colors().binary_search(&(*color as u32)).is_err()
        })
        .map(|(color, counts)| format!("{color}:{}", counts.used))
        .collect();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: pages in use outside the requested colors: {}",
        if outside.is_empty() {
            "none".to_string()
        } else {
            outside.join(" ")
        }
    );
    let _ = write!(out, "{}", bank_lines(pid, heap, &stats.banks));
    out
}

/// Pages in use per DRAM (controller, bank) and outside the requested
/// banks; nothing without bank or controller functions.
fn bank_lines(pid: u32, heap: &Heap, banks: &[tinct_mem::BankCounts]) -> String {
    let config = heap.config();
    if config.bank_functions.is_empty() && config.controller_functions.is_empty() {
        return String::new();
    }
    let wanted = |b: &tinct_mem::BankCounts| {
        config.banks.as_ref().is_none_or(|l| l.contains(&b.bank))
            && config
                .controllers
                .as_ref()
                .is_none_or(|l| l.contains(&b.controller))
    };
    let list = |keep: &dyn Fn(&tinct_mem::BankCounts) -> bool| {
        let entries: Vec<String> = banks
            .iter()
            .filter(|b| b.used > 0 && keep(b))
            .map(|b| format!("c{}:b{}:{}", b.controller, b.bank, b.used))
            .collect();
        if entries.is_empty() {
            "none".to_string()
        } else {
            entries.join(" ")
        }
    };
    let format = |l: &Option<Vec<u32>>| {
        l.as_ref()
            .map_or("any".into(), |l| tinct_sys::format_cpu_list(l))
    };
    format!(
        "tinct-preload[{pid}]: banks {} controllers {}; pages in use per bank \
         (controller:bank:pages): {}\n\
         tinct-preload[{pid}]: pages in use outside the requested banks: {}\n",
        format(&config.banks),
        format(&config.controllers),
        list(&|_| true),
        list(&|b| !wanted(b)),
    )
}

/// Kernel mappings: multi-page blocks cost about three per run of
/// virtually contiguous pool pages (tinct-mem's span window), and
/// `vm.max_map_count` caps them. One line always (runs now and at peak),
/// and a warning when the process is at more than half the limit or the
/// peak runs alone could have used that much.
fn mapping_note(pid: u32, heap: &Heap) -> String {
    let (runs, peak) = (heap.pool().span_runs(), heap.pool().span_runs_peak());
    let mappings = std::fs::read_to_string("/proc/self/maps").map_or(0, |m| m.lines().count());
    let limit: usize = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(65_530);
    let mut note = format!(
        "tinct-preload[{pid}]: multi-page blocks: {runs} runs of contiguous pages now, {peak} at \
         peak (about 3 kernel mappings each); process mappings at exit: {mappings} of \
         vm.max_map_count {limit}\n"
    );
    if mapping_count_is_high(mappings, peak, limit) {
        let _ = writeln!(
            note,
            "tinct-preload[{pid}]: WARNING: kernel mappings are high ({mappings} at exit, up to \
             ~{} for multi-page blocks at peak, limit {limit}): a multi-page malloc fails (or \
             falls back) at the limit; raise it (sysctl -w vm.max_map_count={}) or ask for \
             consecutive colors (e.g. 0-63), whose pages form long runs",
            3 * peak,
            (4 * limit).max(262_144)
        );
    }
    note
}

/// True when mappings are past half of `vm.max_map_count`, now or (by
/// the three-per-run estimate) at the peak of multi-page blocks.
fn mapping_count_is_high(mappings: usize, peak_runs: usize, limit: usize) -> bool {
    2 * mappings > limit || 2 * 3 * peak_runs > limit
}

/// Writes every page handed out to `PATH.<pid>` (atomically, by rename),
/// then stops the process with SIGSTOP so a checker can read
/// `/proc/<pid>/pagemap` while the pages are still mapped; the checker
/// sends SIGCONT when done.
pub fn write_page_report(heap: &Heap, path: &Path) {
    let pid = std::process::id();
    let c = &heap.counters;
    let mut text = String::new();
    let _ = writeln!(text, "pid {pid}");
    let _ = writeln!(text, "page_size {}", heap.page_size());
    let _ = writeln!(text, "colors {}", tinct_sys::format_cpu_list(heap.colors()));
    if let Some(banks) = &heap.config().banks {
        let _ = writeln!(text, "banks {}", tinct_sys::format_cpu_list(banks));
    }
    let _ = writeln!(text, "uncolored {}", u8::from(heap.pool().is_uncolored()));
    for (name, value) in [
        ("colored", &c.colored),
        ("fallbacks", &c.fallbacks),
        ("failures", &c.failures),
        ("internal", &c.internal),
        ("foreign_frees", &c.foreign_frees),
    ] {
        let _ = writeln!(text, "{name} {}", value.load(Ordering::Relaxed));
    }
    for page in heap.handed_pages() {
        let _ = writeln!(text, "page {page:#x}");
    }
    if write_report(path, "page", &text) {
        // SAFETY: raise has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mapping_warning_starts_past_half_of_the_limit() {
        assert!(!mapping_count_is_high(100, 0, 65_530));
        assert!(!mapping_count_is_high(32_765, 10_000, 65_530));
        assert!(mapping_count_is_high(32_766, 0, 65_530));
        // 11 000 runs at peak: about 33 000 mappings.
        assert!(mapping_count_is_high(100, 11_000, 65_530));
    }
}
