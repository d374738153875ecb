//! What the shim tells the user: the `TINCT_STATS=1` summary, the
//! `TINCT_FRAME_REPORT` frames and the `TINCT_PAGE_REPORT` page list.
//!
//! Pages are re-read through pagemap once at exit ([`Snapshot`]), so a
//! page the kernel copied on write after `fork` (or migrated) is reported
//! with the frame it has now, and the summary says which pages left the
//! requested colours. The summary and both reports are written from that
//! one reading, so they agree with each other exactly; the page report
//! lists each page's frame then next to its entry frame, so a checker that
//! reads pagemap later can tell the pages the kernel moved in between.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::Ordering;

use tinct_mem::shim_config::summary::{REQUESTS_BY_STEP, STEP_NAMES};

use crate::formatting::{list_or_any, mib};
use crate::heap::Heap;
use crate::page_kinds::{Kind, MAPPED};
use crate::stderr::write_stderr;
use tinct_base::units::ms_with_unit;

/// One filled area page at exit.
struct PageNow {
    index: usize,
    kind: Kind,
    /// The frame it entered the area with.
    then: u64,
    /// Its frame now (`None` if not present).
    now: Option<u64>,
}

/// The area at exit, read once for the summary and the reports.
pub struct Snapshot {
    /// Every filled area page with its frame then and now, except lost
    /// pages (given to the kernel by the program: no longer area pages).
    pages: Vec<PageNow>,
    /// Why the area runs uncoloured, if it does.
    uncolored: Option<String>,
    /// Pages the kernel had migrated since boot (`pgmigrate_success` of
    /// /proc/vmstat) right before the frames were read, if readable: a
    /// checker reading pagemap later counts the migrations in between.
    kernel_migrations: Option<u64>,
}

impl Snapshot {
    /// Reads every filled area page's frame now.
    pub fn take(heap: &Heap) -> Self {
        // Detached threads that ended give their stacks back first.
        if !crate::thread_stacks::held_by_caller() {
            crate::thread_stacks::reclaim_ended();
        }
        let kernel_migrations = std::fs::read_to_string("/proc/vmstat")
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("pgmigrate_success "))
                    .and_then(|value| value.trim().parse().ok())
            });
        heap.with_area(|area| {
            let filled = heap.filled_pages();
            let now = match area.current_frames(0..filled) {
                Ok(now) => now,
                Err(_) => vec![None; filled],
            };
            let pages = (0..filled)
                .map(|index| PageNow {
                    index,
                    kind: heap.kinds().get(index),
                    then: area.frame(index),
                    now: now[index],
                })
                .filter(|page| page.kind != Kind::Lost)
                .collect();
            Self {
                pages,
                uncolored: area.uncolored_reason().map(str::to_string),
                kernel_migrations,
            }
        })
    }
}

/// Writes the frames the heap can be served from (every filled area page,
/// as it is mapped now), and the frames of the process's other resident
/// pages (its uncoloured residue: code, libraries, stacks, the shim's own
/// memory), to `PATH.<pid>` for `TINCT_FRAME_REPORT`.
pub fn write_frame_report(heap: &Heap, snapshot: &Snapshot, path: &Path) {
    let (pages, uncolored) = (&snapshot.pages, &snapshot.uncolored);
    // The area, and the coloured tops of thread stacks (area pages lent
    // out, among `frames` already).
    let mut exclude = vec![heap.with_area(|area| area.reserved())];
    if !crate::thread_stacks::held_by_caller() {
        exclude.extend(
            crate::thread_stacks::lent()
                .into_iter()
                .map(|lent| lent.top..lent.top + lent.pages * heap.page_size()),
        );
    }
    let residue = tinct_sys::footprint::of_self(&exclude)
        .map(|footprint| tinct_mem::Residue {
            kinds: footprint
                .kinds
                .iter()
                .map(|(kind, pages)| {
                    (
                        kind.describe().to_string(),
                        pages.pages * footprint.page_size,
                    )
                })
                .collect(),
            frames: footprint.frames().collect(),
        })
        .map_err(|e| e.to_string());
    let report = tinct_mem::FrameReport {
        pid: std::process::id(),
        command: std::fs::read_to_string("/proc/self/comm")
            .map(|c| c.trim().to_string())
            .unwrap_or_default(),
        page_size: heap.page_size() as u64,
        uncolored: uncolored.is_some(),
        frames: pages.iter().map(|p| p.now.unwrap_or(p.then)).collect(),
        residue: Some(residue),
        stacks: Some(crate::thread_stacks::counts()),
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

/// The exit summary.
pub fn summary(heap: &Heap, snapshot: &Snapshot) -> String {
    let config = heap.config();
    let c = &heap.counters;
    let pid = std::process::id();
    let page = heap.page_size() as u64;
    let (pages, uncolored) = (&snapshot.pages, &snapshot.uncolored);
    let (growth, method, rotation, dropped, mapping, unlocked, unverified) =
        heap.with_area(|area| {
            (
                area.stats(),
                area.move_method(),
                area.rotation().to_vec(),
                area.dropped_colors().to_vec(),
                area.spec().mapping.clone(),
                area.unlocked_reason().map(str::to_string),
                area.unverified_reason().map(str::to_string),
            )
        });
    let mut out = String::new();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: colors {} of {} ({}); area {} pages in these colors ({}) from {} \
         populated in {} segments of a {} pool (TINCT_POOL); start-up {}, growth {} in all \
         ({}{}), pages moved by {} in {} calls",
        tinct_sys::format_cpu_list(heap.colors()),
        mapping.colors(),
        match &uncolored {
            None => "placement by physical frame".to_string(),
            Some(reason) => format!("UNCOLORED: {reason}"),
        },
        heap.filled_pages(),
        mib(heap.filled_pages() as u64 * page),
        mib(growth.populated_bytes),
        growth.segments,
        mib(config.pool_bytes),
        ms_with_unit(growth.first_grow_ns),
        ms_with_unit(growth.grow_ns),
        growth.populate_ns,
        tinct_mem::shim_config::POPULATING_MARK,
        method,
        growth.moves,
    );
    let small = heap.small_counts();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: allocations {} small, {} blocks of pages, {} mapped (TINCT_MMAP), \
         {} fallbacks ({} bytes uncolored), {} failed{}, {} internal; {} small and {} block \
         frees, {} mappings left uncolored, {} forks",
        small.small,
        c.runs.load(Ordering::Relaxed),
        c.mapped.load(Ordering::Relaxed),
        c.fallbacks.load(Ordering::Relaxed),
        c.fallback_bytes.load(Ordering::Relaxed),
        c.failures.load(Ordering::Relaxed),
        if config.strict { " (strict)" } else { "" },
        c.internal.load(Ordering::Relaxed),
        small.small_frees,
        c.run_frees.load(Ordering::Relaxed),
        c.mapped_uncolored.load(Ordering::Relaxed),
        c.forks.load(Ordering::Relaxed),
    );
    let stacks = crate::thread_stacks::counts();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: thread stacks: {} with a coloured top ({} of coloured pages lent \
         over the run; {} given back, {} in use now: {}), {} on glibc's stack ({} their own stack, {} \
         budget spent, {} refused by the kernel, {} executable (PT_GNU_STACK)){}",
        stacks.colored,
        mib(stacks.colored_bytes),
        stacks.freed,
        crate::thread_stacks::live(),
        mib(stacks.lent_bytes),
        stacks.own_stack + stacks.budget + stacks.refused + stacks.executable,
        stacks.own_stack,
        stacks.budget,
        stacks.refused,
        stacks.executable,
        match crate::thread_stacks::colored_top() {
            0 => "; TINCT_STACK_COLORED=0: none coloured".to_string(),
            top => format!("; top {} KiB (TINCT_STACK_COLORED)", top >> 10),
        },
    );
    let in_use: Vec<&PageNow> = pages.iter().filter(|p| p.kind != Kind::Free).collect();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: peak {} KiB in use, {} KiB at exit; area pages in use at exit: {} \
         of {} ({} free for reuse)",
        c.peak_bytes.load(Ordering::Relaxed) >> 10,
        c.live_bytes.load(Ordering::Relaxed) >> 10,
        in_use.len(),
        heap.filled_pages(),
        heap.free_pages(),
    );
    if let Some(reason) = &unlocked {
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: WARNING: {reason}; unlocked pages can be swapped or migrated \
             out of their colours"
        );
    }
    if let Some(reason) = &unverified {
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: WARNING: {} area pages entered on the frame read when their \
             segment was populated, not read again right before they moved ({reason}): their \
             colour is only as sure as that reading",
            growth.unverified_pages,
        );
    }
    if let Some(error) = heap.grow_error() {
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: the area stopped growing: {error}"
        );
    }
    if !dropped.is_empty() {
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: colors without a page in the requested banks, left out of the \
             round robin: {} (served: {})",
            tinct_sys::format_cpu_list(&dropped),
            tinct_sys::format_cpu_list(&rotation),
        );
    }
    if config.banks.is_some() || config.controllers.is_some() {
        out.push_str(&bank_lines(pid, heap, pages));
    }
    // Colours: per colour pages in use, and pages no longer in the colours.
    let mut per_color: Vec<u64> = vec![0; mapping.colors() as usize];
    let mut outside: Vec<(usize, u64, u32)> = Vec::new();
    for p in &in_use {
        let frame = p.now.unwrap_or(p.then);
        let color = mapping.classify_frame(frame).color;
        per_color[color as usize] += 1;
        if heap.colors().binary_search(&color).is_err() && uncolored.is_none() {
            outside.push((heap.page_address(p.index), frame, color));
        }
    }
    let counts: Vec<u64> = rotation.iter().map(|&c| per_color[c as usize]).collect();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: pages in use per color: min {} max {} over {} colors",
        counts.iter().min().unwrap_or(&0),
        counts.iter().max().unwrap_or(&0),
        counts.len(),
    );
    // Every area page, free ones too: a free page on another frame is
    // handed out again on it.
    let then: Vec<u64> = pages.iter().map(|p| p.then).collect();
    let now: Vec<Option<u64>> = pages.iter().map(|p| p.now).collect();
    let drift = tinct_mem::FrameDrift::compare(&mapping, &then, &now).unwrap_or_default();
    let moved_in_use = in_use
        .iter()
        .filter(|p| p.now.is_some_and(|frame| frame != p.then))
        .count();
    if drift.moved > 0 && uncolored.is_none() {
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: {} area pages ({moved_in_use} of them in use) have another \
             frame than when they entered the area, {} of them in another colour (copied on \
             write after fork, or migrated by the kernel: `tinct doctor` says which setting \
             keeps colours){}",
            drift.moved,
            drift.recolored,
            if config.fork_keep {
                ""
            } else {
                "; TINCT_FORK_KEEP=1 makes a child take the copies"
            }
        );
    }
    if outside.is_empty() {
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: pages in use outside the requested colors: none"
        );
    } else {
        let first: Vec<String> = outside
            .iter()
            .take(8)
            .map(|(address, frame, color)| {
                format!("{address:#x} (frame {frame:#x}, color {color})")
            })
            .collect();
        let _ = writeln!(
            out,
            "tinct-preload[{pid}]: pages in use outside the requested colors: {} lost their \
             color: {}{}",
            outside.len(),
            first.join(", "),
            if outside.len() > first.len() {
                ", ..."
            } else {
                ""
            }
        );
    }
    out
}

/// Bank lines: what Algorithm 1 served, per request and per page, and
/// the pages in use per controller:bank.
fn bank_lines(pid: u32, heap: &Heap, pages: &[PageNow]) -> String {
    let config = heap.config();
    let c = &heap.counters;
    let mut out = String::new();
    let names = STEP_NAMES;
    let requests: Vec<String> = names
        .iter()
        .zip(&c.requests_by_step)
        .map(|(name, count)| format!("{name} {}", count.load(Ordering::Relaxed)))
        .collect();
    let wanted = |class: tinct_mem::PageClass| {
        config
            .banks
            .as_ref()
            .is_none_or(|b| b.contains(&class.bank))
            && config
                .controllers
                .as_ref()
                .is_none_or(|c| c.contains(&class.controller))
    };
    let (classes, steps, outside) = heap.with_area(|area| {
        let mut classes: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
        let mut steps = [0u64; 4];
        let mut outside = 0u64;
        for p in pages.iter().filter(|p| p.kind != Kind::Free) {
            let class = area.spec().mapping.classify_frame(p.now.unwrap_or(p.then));
            *classes.entry((class.controller, class.bank)).or_default() += 1;
            outside += u64::from(!wanted(class));
            steps[match area.step(p.index) {
                tinct_mem::Step::Exact => 0,
                tinct_mem::Step::ControllerRestricted => 1,
                tinct_mem::Step::ControllerUnrestricted => 2,
                tinct_mem::Step::Split => 3,
            }] += 1;
        }
        (classes, steps, outside)
    });
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: banks {} controllers {} (bank mode {}): {REQUESTS_BY_STEP}: {}; \
         pages in use by step: {}",
        list_or_any(config.banks.as_deref()),
        list_or_any(config.controllers.as_deref()),
        config.bank_mode.names(),
        requests.join(", "),
        names
            .iter()
            .zip(steps)
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", "),
    );
    let in_banks: Vec<String> = classes
        .iter()
        .map(|((controller, bank), n)| format!("c{controller}:b{bank}:{n}"))
        .collect();
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: pages in use per controller:bank: {}",
        in_banks.join(" ")
    );
    let _ = writeln!(
        out,
        "tinct-preload[{pid}]: pages in use outside the requested banks: {}",
        if outside == 0 {
            "none".to_string()
        } else {
            format!(
                "{outside} (served by the fallbacks of bank mode {})",
                config.bank_mode.names()
            )
        }
    );
    out
}

/// Writes every filled area page (`page 0x... ENTRY NOW`, and
/// `mapped_page 0x...` for pages the shim's `mmap` handed out) to
/// `PATH.<pid>` (atomically, by rename), then stops the process with
/// SIGSTOP so a checker can read `/proc/<pid>/pagemap` while the pages are
/// still mapped; the checker sends SIGCONT when done.
pub fn write_page_report(heap: &Heap, snapshot: &Snapshot, path: &Path) {
    let pid = std::process::id();
    let c = &heap.counters;
    let uncolored = heap.with_area(|a| a.uncolored_reason().is_some());
    let mut text = String::new();
    let _ = writeln!(text, "pid {pid}");
    let _ = writeln!(text, "page_size {}", heap.page_size());
    let _ = writeln!(text, "colors {}", tinct_sys::format_cpu_list(heap.colors()));
    if let Some(banks) = &heap.config().banks {
        let _ = writeln!(text, "banks {}", tinct_sys::format_cpu_list(banks));
    }
    let _ = writeln!(text, "uncolored {}", u8::from(uncolored));
    for (name, value) in [
        ("runs", &c.runs),
        ("fallbacks", &c.fallbacks),
        ("failures", &c.failures),
        ("internal", &c.internal),
        ("mapped", &c.mapped),
        ("lost_pages", &c.lost_pages),
    ] {
        let _ = writeln!(text, "{name} {}", value.load(Ordering::Relaxed));
    }
    let small = heap.small_counts().small;
    let _ = writeln!(text, "small {small}");
    let _ = writeln!(text, "colored {}", small + c.runs.load(Ordering::Relaxed));
    if let Some(migrations) = snapshot.kernel_migrations {
        let _ = writeln!(text, "kernel_migrations {migrations}");
    }
    // Each page with the frame it had when it entered the area, so a
    // checker can tell a page the shim placed wrongly from one the kernel
    // moved later (compaction, copy on write), and the frame the summary
    // saw (`-`: not present), so it can tell the pages moved since.
    for p in &snapshot.pages {
        let address = heap.page_address(p.index);
        let _ = match p.now {
            Some(now) => writeln!(text, "page {address:#x} {:#x} {now:#x}", p.then),
            None => writeln!(text, "page {address:#x} {:#x} -", p.then),
        };
        if let Some((_, _, flags)) = heap.kinds().run_of(p.index)
            && flags & MAPPED != 0
        {
            let _ = writeln!(text, "mapped_page {address:#x}");
        }
    }
    if write_report(path, "page", &text) {
        // SAFETY: raise has no memory-safety preconditions.
        unsafe {
            libc::raise(libc::SIGSTOP);
        }
    }
}
