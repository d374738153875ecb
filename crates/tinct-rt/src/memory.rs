//! Working-set memory of the tasks of a run.
//!
//! The plan gives each task its cache partitions S(i). With page coloring
//! (kim2013 Section III-C) a task's working set must come from the page
//! colors of those partitions, so that tasks with disjoint S(i) never
//! share a set of the last-level cache. This module is the one place that
//! decides where working sets live:
//!
//! - [`ColoredMemory::for_spec`] builds one tinct-mem [`SharedPool`] sized
//!   for the whole plan, whose pages are filed by the physical color read
//!   from `/proc/self/pagemap`;
//! - [`ColorLayout::of_spec`] decides the page colours through
//!   `tinct_sys::color_source` (`--color-bits`, `TINCT_COLOR_BITS`, the
//!   task set's `[platform] color_bits`, the machine file, else the
//!   machine's rule: way size, or the bits below the slice hash of a
//!   sliced LLC, as `tinct doctor` prints it), with the rule and its
//!   source in words for every output;
//! - [`Backing::allocate`] takes each task's working set from the colors of
//!   its partitions (partition `k` of `N_P` → colors by
//!   [`PartitionColors`], the even split of those colours),
//!   page after page round robin over those colors;
//! - after the run, [`Backing::verify`] translates every page again through
//!   pagemap and counts the pages that are not (or no longer) in the
//!   task's colors: the placement the run reports is checked, not assumed.
//!
//! Tasks without partitions (rt-app workloads) take ordinary heap memory.
//! A task with partitions but no working set (a compute-only job) has no
//! memory of its own but its stack: in a run that colours anything, that
//! stack comes from its partitions' colours too; a run where no task has a
//! working set in partitions colours nothing and claims no isolation. Without readable frame numbers (not root) a
//! colored run is refused with the fix, unless the caller accepts an
//! uncolored pool (`--uncolored`), which [`Placement::Uncolored`] then
//! states in every output.

use crate::kernels::LINE_BYTES;
use crate::spec::{RunSpec, TaskSpec};
use crate::working_set::WorkingSet;
use crate::{Result, RtError};
use serde::{Deserialize, Serialize};
use std::path::Path;
use tinct_base::InputError;
use tinct_core::PartitionSet;
use tinct_core::units::Bytes;
use tinct_mem::{
    AddressMapping, ColoredBuffer, FrameDrift, Locking, MemError, PartitionColors, PoolOptions,
    SharedPool, XorFunctions,
};
use tinct_sys::color_source::{self, ColorRequest, ColorSourceError};
use tinct_sys::topology::ColorRule;

/// Where a task's working set lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "placement", rename_all = "snake_case")]
pub enum Placement {
    /// No working set (compute-only body).
    None,
    /// The process heap: the task has no partitions to enforce.
    Heap {
        /// Bytes allocated.
        bytes: u64,
        /// The frame numbers of its pages, read through pagemap (empty when
        /// unreadable; kept for the isolation proof, left out of the run
        /// directory).
        #[serde(skip_serializing, default)]
        frames: Vec<u64>,
    },
    /// Pages of the colors of the task's partitions (kim2013 III-C).
    Colored {
        /// Bytes allocated.
        bytes: u64,
        /// S(i), the partitions (1-based).
        partitions: Vec<u32>,
        /// The page colors of S(i), as a list of ranges (`0-127`).
        colors: String,
        /// How many colors that is, of `machine_colors`.
        color_count: u32,
        /// Page colours of the run's colour rule ([`ColorLayout`]: the
        /// machine's last-level cache, or the task set's `color_bits`).
        machine_colors: u32,
        /// Pages of the working set.
        pages: u64,
        /// Bytes of the stack its job loop ran on, from the same colours
        /// ([`TASK_STACK_BYTES`], its first page a guard).
        stack_bytes: u64,
        /// Pages of the working set and of the stack found outside the
        /// task's colors when translated again after the run (0 when
        /// coloring held; `None` if not checked).
        pages_outside_colors: Option<u64>,
        /// Pages on another frame than when the working set was placed
        /// (tinct-mem's one check, [`FrameDrift`]; `None` if not checked).
        frame_drift: Option<FrameDrift>,
        /// The frame numbers of the working set found after the run, page
        /// by page (kept for checks in code, left out of the run directory).
        #[serde(skip_serializing, default)]
        frames: Vec<u64>,
        /// The same of its stack's pages.
        #[serde(skip_serializing, default)]
        stack_frames: Vec<u64>,
    },
    /// An uncolored pool (`--uncolored`): frame numbers were unreadable, so
    /// S(i) is NOT enforced.
    Uncolored {
        /// Bytes allocated.
        bytes: u64,
        /// The partitions the plan asked for, not enforced.
        partitions_requested: Vec<u32>,
        /// Why frames were unreadable.
        reason: String,
    },
}

impl Placement {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Placement::None => "none".into(),
            Placement::Heap { bytes, .. } => format!("{} heap", Bytes(*bytes)),
            Placement::Colored {
                bytes,
                partitions,
                colors,
                color_count,
                machine_colors,
                pages_outside_colors,
                stack_bytes,
                ..
            } => {
                let check = match pages_outside_colors {
                    Some(0) => ", every page checked".to_string(),
                    Some(n) => format!(", {n} PAGE(S) OUTSIDE ITS COLORS"),
                    None => String::new(),
                };
                let stack = if *stack_bytes > 0 {
                    format!(" (+ a {} stack)", Bytes(*stack_bytes))
                } else {
                    String::new()
                };
                let memory = if *bytes == 0 {
                    format!("no working set, its {} stack colored", Bytes(*stack_bytes))
                } else {
                    format!("{} colored{stack}", Bytes(*bytes))
                };
                format!(
                    "{memory}, S(i) {} = colors {colors} ({color_count} of \
                     {machine_colors}){check}",
                    PartitionSet::from_iter(partitions.iter().copied())
                )
            }
            Placement::Uncolored {
                bytes,
                partitions_requested,
                ..
            } => format!(
                "{} UNCOLORED (--uncolored), S(i) {} NOT enforced",
                Bytes(*bytes),
                PartitionSet::from_iter(partitions_requested.iter().copied())
            ),
        }
    }

    /// The frame numbers of the working set's pages as last read through
    /// pagemap (empty when there is no working set or they were unreadable).
    pub fn frames(&self) -> &[u64] {
        match self {
            Placement::Heap { frames, .. } | Placement::Colored { frames, .. } => frames,
            Placement::None | Placement::Uncolored { .. } => &[],
        }
    }

    /// The frame numbers of the coloured stack's pages (empty without one).
    pub fn stack_frames(&self) -> &[u64] {
        match self {
            Placement::Colored { stack_frames, .. } => stack_frames,
            _ => &[],
        }
    }

    /// Every frame placed for the task: its working set's and its stack's.
    pub fn placed_frames(&self) -> impl Iterator<Item = u64> + '_ {
        self.frames().iter().chain(self.stack_frames()).copied()
    }

    /// Puts back `frames` and `stack` (the frames a serialized placement
    /// left out); placements without them ignore them.
    pub fn set_frames(&mut self, frames: Vec<u64>, stack: Vec<u64>) {
        match self {
            Placement::Heap { frames: mine, .. } => *mine = frames,
            Placement::Colored {
                frames: mine,
                stack_frames,
                ..
            } => {
                *mine = frames;
                *stack_frames = stack;
            }
            Placement::None | Placement::Uncolored { .. } => {}
        }
    }

    /// True when the working set's cache placement is not what the plan
    /// asked for (uncolored, or pages found outside the colors).
    pub fn is_unenforced(&self) -> bool {
        match self {
            Placement::Uncolored { .. } => true,
            Placement::Colored {
                pages_outside_colors,
                ..
            } => pages_outside_colors.is_some_and(|n| n > 0),
            Placement::None | Placement::Heap { .. } => false,
        }
    }
}

/// The frame numbers of the pages holding `len` bytes at `address`, read
/// through `/proc/self/pagemap` (`None` when unreadable: not root, or a
/// page not present).
fn frames_of(address: usize, len: usize, page: usize) -> Option<Vec<u64>> {
    if len == 0 {
        return Some(Vec::new());
    }
    let (first, pages) = page_span(address, len, page);
    tinct_sys::pagemap::Pagemap::open_self()
        .and_then(|map| map.frames(first, pages))
        .ok()
}

/// The page colours of a run: the address functions its pool files pages
/// by, and the rule that gave them.
#[derive(Clone, Debug)]
pub struct ColorLayout {
    /// The colour functions (no bank or controller functions: a run places
    /// working sets by colour only).
    pub mapping: AddressMapping,
    /// The rule in words, as `tinct doctor` words it, e.g. `explicit colour
    /// bits: 32 colours on physical address bits 12-16 (given by the task
    /// set's [platform] color_bits)`.
    pub rule: String,
    /// The bytes of address space the colour bits index (`2^high bit`):
    /// the cache model of the isolation proof indexes its sets by them.
    pub index_span_bytes: u64,
    /// The physical address bits of the colour (what the shim is handed
    /// as `TINCT_COLOR_BITS` for a program body's heap).
    pub bits: Vec<u32>,
}

impl ColorLayout {
    /// The colours of `spec`, from the first source that gives them
    /// (`tinct_sys::color_source`): `tinct run --color-bits`,
    /// `TINCT_COLOR_BITS`, the task set's `[platform] color_bits`, the
    /// machine file, this machine's last-level cache under the rule its
    /// evidence supports. Unusable bits are bad input naming their source;
    /// unknown bits are [`RtError::Colors`], naming the ways to give them.
    pub fn of_spec(spec: &RunSpec) -> Result<ColorLayout> {
        let page = rustix::param::page_size() as u64;
        let source = Path::new(&spec.source);
        let request = ColorRequest {
            flag: spec.color_bits_flag.as_deref().map(|t| ("--color-bits", t)),
            task_set: spec.color_bits.as_deref().map(|bits| (source, bits)),
        };
        let resolved = color_source::resolve(request, page).map_err(|e| match e {
            // The task set's own field: bad input at its file and field
            // (`platform.color_bits`, as the resolver names it).
            ColorSourceError::Invalid {
                from: color_source::ColorSource::TaskSet { .. },
                error,
            } => RtError::Input(*error),
            other => RtError::Colors(other),
        })?;
        let mapping = AddressMapping::new(
            page,
            XorFunctions::from_bits(&resolved.bits).map_err(|e| RtError::Task {
                task: "colored memory".into(),
                message: e.to_string(),
            })?,
            XorFunctions::none(),
            XorFunctions::none(),
        )
        .map_err(|e| RtError::Task {
            task: "colored memory".into(),
            message: e.to_string(),
        })?;
        Ok(ColorLayout {
            mapping,
            index_span_bytes: resolved.geometry.colors.way_bytes,
            bits: resolved.bits.clone(),
            rule: describe_rule(
                resolved.geometry.rule,
                &match &resolved.evidence {
                    Some(evidence) => format!("{}; {evidence}", resolved.geometry.reason),
                    None => resolved.geometry.reason.clone(),
                },
                &resolved.bits,
            ),
        })
    }
}

/// `way-size rule: 512 colours on physical address bits 12-20 (why)`.
fn describe_rule(rule: ColorRule, reason: &str, bits: &[u32]) -> String {
    if bits.is_empty() {
        return format!("{rule}: one colour, no colour bits ({reason})");
    }
    format!(
        "{rule}: {} colours on physical address bits {} ({reason})",
        1u64 << bits.len(),
        tinct_sys::format_cpu_list(bits)
    )
}

/// Bytes of a working set of at least `bytes`, in whole cache lines.
fn rounded_to_lines(bytes: u64) -> u64 {
    let line = LINE_BYTES as u64;
    bytes.div_ceil(line).saturating_mul(line)
}

/// The first page of `len` bytes at `address`, and how many pages they span.
fn page_span(address: usize, len: usize, page: usize) -> (usize, usize) {
    let first = address / page * page;
    (first, (address + len - first).div_ceil(page))
}

/// The size of a page of this process.
fn page_size() -> usize {
    rustix::param::page_size()
}

/// Pool sizes tried (each twice the previous) before giving up.
const POOL_ATTEMPTS: usize = 6;

/// A task's colored memory request.
struct ColoredRequest {
    bytes: u64,
    colors: Vec<u32>,
}

/// The colored page pool of a run, and how partitions map to colors.
#[derive(Debug)]
pub struct ColoredMemory {
    pool: SharedPool,
    partition_colors: PartitionColors,
    uncolored_reason: Option<String>,
}

impl ColoredMemory {
    /// The pool for `spec`, or `None` when no task has both a working set
    /// and partitions. `allow_uncolored` accepts a pool without frame
    /// numbers (`--uncolored`), and `uncolored_if_unknown` one on a
    /// machine whose colour bits are unknown (`--uncolored`, `--no-rt`):
    /// placement then not controlled, and every output says why.
    /// Otherwise unreadable frames are a privilege error naming the fix,
    /// and unknown colour bits [`RtError::Colors`] naming the ways to give
    /// them.
    pub fn for_spec(
        spec: &RunSpec,
        allow_uncolored: bool,
        uncolored_if_unknown: bool,
    ) -> Result<Option<ColoredMemory>> {
        if !spec.tasks.iter().any(needs_colors) {
            return Ok(None);
        }
        let failed = |what: String| RtError::Task {
            task: "colored memory".into(),
            message: what,
        };
        let partitions = platform_partitions(spec)?;
        let (mapping, colors_unknown) = match ColorLayout::of_spec(spec) {
            Ok(layout) => (layout.mapping, None),
            Err(RtError::Colors(ColorSourceError::Unknown { why })) if uncolored_if_unknown => {
                // Any colours do: the placement is reported uncoloured. As
                // many as the partitions need, so each still gets its own.
                let page = rustix::param::page_size() as u64;
                let bits: Vec<u32> = (0..partitions.next_power_of_two().trailing_zeros())
                    .map(|i| page.trailing_zeros() + i)
                    .collect();
                let mapping = XorFunctions::from_bits(&bits)
                    .and_then(|colors| {
                        AddressMapping::new(
                            page,
                            colors,
                            XorFunctions::none(),
                            XorFunctions::none(),
                        )
                    })
                    .map_err(|e| failed(e.to_string()))?;
                (
                    mapping,
                    Some(format!("the page-colour bits are unknown ({why})")),
                )
            }
            Err(e) => return Err(e),
        };
        let partition_colors = PartitionColors::even(mapping.colors(), partitions)
            .map_err(|e| failed(e.to_string()))?;
        let requests = spec
            .tasks
            .iter()
            .map(|task| request_of(task, &partition_colors, &spec.source))
            .collect::<Result<Vec<_>>>()?;
        let demand = per_color_demand(&requests, &mapping);
        let most = demand.iter().copied().max().unwrap_or(0);
        // Frames are far from evenly spread over the colors (in a VM, a
        // 16 MiB pool can lack half of the 512 colors entirely): start with
        // twice the demand plus four pages of every color, then double.
        let mut pages_per_color = most.saturating_mul(2).saturating_add(4);
        let page = mapping.page_size;
        let mut last_size = 0;
        for _ in 0..POOL_ATTEMPTS {
            let size = pages_per_color
                .checked_mul(u64::from(mapping.colors()))
                .and_then(|pages| pages.checked_mul(page))
                .ok_or_else(|| {
                    failed(format!(
                        "the working sets need {most} pages of their busiest color: a pool of \
                         {pages_per_color} pages of each of {} colors does not fit in 2^64 \
                         bytes; make the working sets smaller or give them more partitions",
                        mapping.colors()
                    ))
                })?;
            last_size = size;
            let options = PoolOptions {
                size: usize::try_from(size).map_err(|e| failed(e.to_string()))?,
                // Locked when allowed (a run that mlockall'ed is locked
                // anyway); `unlocked_reason` says when it is not.
                lock: Locking::IfAllowed,
                // Colour bits unknown: no colour is claimed, so frames
                // need not be readable either.
                uncolored: allow_uncolored || colors_unknown.is_some(),
            };
            let pool = match SharedPool::new(mapping.clone(), options) {
                Ok(pool) => pool,
                Err(MemError::FramesUnreadable { reason }) => {
                    return Err(RtError::Privilege {
                        what: format!(
                            "the working sets must come from their partitions' page colors, but \
                             physical frame numbers are unreadable ({reason})"
                        ),
                        fix: "run as root (reading frames in /proc/self/pagemap needs \
                              CAP_SYS_ADMIN), or pass --uncolored to run with working sets whose \
                              cache placement is not controlled (every output says so)"
                            .into(),
                    });
                }
                Err(e) => {
                    return Err(failed(format!(
                        "the working sets need {most} pages of their busiest color, so a pool \
                         of {} (all {} colors, with slack for uneven frames): {e}; make the \
                         working sets smaller or give them more partitions",
                        Bytes(size),
                        mapping.colors()
                    )));
                }
            };
            let uncolored_reason = colors_unknown.clone().or_else(|| {
                pool.with_pool(|p| {
                    p.uncolored_reason().map(|r| {
                        format!("--uncolored: physical frame numbers are unreadable ({r})")
                    })
                })
            });
            let stats = pool.stats();
            let fits = demand
                .iter()
                .zip(&stats.colors)
                .all(|(&need, counts)| counts.free >= need);
            if fits || uncolored_reason.is_some() {
                return Ok(Some(ColoredMemory {
                    pool,
                    partition_colors,
                    uncolored_reason,
                }));
            }
            pages_per_color = pages_per_color.saturating_mul(2);
        }
        Err(failed(format!(
            "even a pool of {} lacks enough pages of some color for the working sets: make \
             the working sets smaller or give them more partitions",
            Bytes(last_size)
        )))
    }

    /// Why the pool's pages are not mlocked (`None`: they are; a run that
    /// `mlockall`ed has them locked either way).
    pub fn unlocked_reason(&self) -> Option<String> {
        self.pool
            .with_pool(|p| p.unlocked_reason().map(str::to_string))
    }

    /// The pool.
    pub fn pool(&self) -> &SharedPool {
        &self.pool
    }

    /// The machine's address mapping (colors of frames).
    pub fn mapping(&self) -> &AddressMapping {
        self.pool.mapping()
    }

    /// Colors of partitions `partitions` (1-based).
    pub fn colors_of(&self, partitions: &[u32]) -> Result<Vec<u32>> {
        self.partition_colors
            .colors_of_all(partitions)
            .map_err(|e| RtError::Task {
                task: "colored memory".into(),
                message: e.to_string(),
            })
    }
}

/// Checks, before anything of a run exists, that its colours can be had:
/// bad bits from any source are bad input, too few colours for N_P too,
/// and unknown bits refuse the run ([`RtError::Colors`]) unless it may go
/// uncoloured (`uncolored_if_unknown`: `--uncolored`, `--no-rt`). Nothing
/// to check when no task's working set has partitions.
pub fn check_colors(spec: &RunSpec, uncolored_if_unknown: bool) -> Result<()> {
    if !spec.tasks.iter().any(needs_colors) {
        return Ok(());
    }
    let layout = match ColorLayout::of_spec(spec) {
        Ok(layout) => layout,
        Err(RtError::Colors(ColorSourceError::Unknown { .. })) if uncolored_if_unknown => {
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if let Some(partitions) = spec.platform_partitions {
        PartitionColors::even(layout.mapping.colors(), partitions).map_err(|_| {
            RtError::Input(InputError {
                file: spec.source.clone(),
                line: None,
                field: "platform.partitions".into(),
                expected: format!(
                    "at most as many partitions as colours ({}: {})",
                    layout.mapping.colors(),
                    layout.rule
                ),
                found: format!("{partitions} partitions"),
            })
        })?;
    }
    Ok(())
}

/// N_P of `spec`, which maps partitions to page colours: bad input naming
/// `platform.partitions` when the run has none.
pub(crate) fn platform_partitions(spec: &RunSpec) -> Result<u32> {
    spec.platform_partitions.ok_or_else(|| {
        RtError::Input(InputError {
            file: spec.source.clone(),
            line: None,
            field: "platform.partitions".into(),
            expected: "N_P, the number of cache partitions, to map partitions to page colors"
                .into(),
            found: "none".into(),
        })
    })
}

/// True if `task`'s working set is to come from its partitions' colours.
pub(crate) fn needs_colors(task: &TaskSpec) -> bool {
    task.working_set > 0 && !task.partitions.is_empty()
}

/// True if `task` takes memory from the run's pool when there is one: a
/// working set in partitions, or, with partitions and no working set, the
/// stack of its job loop. Not a program body without a working set: its
/// jobs run in the program, whose heap the program's own colours place.
fn takes_colors(task: &TaskSpec) -> bool {
    !task.partitions.is_empty() && (task.working_set > 0 || task.program.is_none())
}

/// What `task` takes from the run's pool, which exists (some task needs
/// colours): its working set and its stack, or its stack alone when it
/// has partitions and no working set. `None` without partitions.
fn request_of(
    task: &TaskSpec,
    partition_colors: &PartitionColors,
    source: &str,
) -> Result<Option<ColoredRequest>> {
    if !takes_colors(task) {
        return Ok(None);
    }
    let colors = partition_colors
        .colors_of_all(&task.partitions)
        .map_err(|e| {
            RtError::Input(InputError {
                file: source.to_string(),
                line: None,
                field: format!("task '{}' field `partitions`", task.name),
                expected: format!("partitions 1..={}", partition_colors.partitions()),
                found: e.to_string(),
            })
        })?;
    Ok(Some(ColoredRequest {
        bytes: rounded_to_lines(task.working_set),
        colors,
    }))
}

/// The bytes of a task's stack in pages of `page` bytes: at least
/// [`TASK_STACK_BYTES`].
fn stack_len(page: usize) -> usize {
    (TASK_STACK_BYTES as usize).next_multiple_of(page)
}

/// Pages each color must give: a task of `p` pages over `k` colors takes
/// `ceil(p / k)` pages of each (round robin, kim2013 III-C), and as many
/// again for its stack's pages.
fn per_color_demand(requests: &[Option<ColoredRequest>], mapping: &AddressMapping) -> Vec<u64> {
    let mut demand = vec![0u64; mapping.colors() as usize];
    for request in requests.iter().flatten() {
        // The working set and the stack: two buffers, each of the same
        // number of pages of every colour.
        let colors = request.colors.len() as u64;
        let share_of = |bytes: u64| bytes.div_ceil(mapping.page_size).div_ceil(colors);
        let share = share_of(request.bytes).saturating_add(share_of(TASK_STACK_BYTES));
        for &color in &request.colors {
            // Saturating: a demand of 2^64 pages can never be met, and is
            // refused as such when the pool is sized.
            demand[color as usize] = demand[color as usize].saturating_add(share);
        }
    }
    demand
}

/// The storage of one task's working set.
#[derive(Debug)]
pub enum Backing<'pool> {
    /// No working set.
    None,
    /// Heap memory (no partitions to enforce).
    Heap(Vec<u64>),
    /// A colored buffer and the colors it was taken from.
    Colored {
        /// The buffer.
        buffer: ColoredBuffer<'pool>,
        /// Its colors.
        colors: Vec<u32>,
        /// S(i).
        partitions: Vec<u32>,
        /// Set when the pool could not read frames (`--uncolored`).
        uncolored: Option<String>,
        /// Pool geometry: colors of the machine.
        machine_colors: u32,
        /// The frames of its pages when it was placed (`None`: unreadable).
        placed_frames: Option<Vec<u64>>,
        /// The stack its job loop runs on, from the same colours
        /// ([`TASK_STACK_BYTES`]).
        stack: ColoredBuffer<'pool>,
    },
}

/// The stack a task with coloured memory runs its jobs on, bytes: a guard
/// page and 512 KiB (a job loop's deepest path, a panic's backtrace
/// included, uses well under it; an overflow faults on the guard).
pub const TASK_STACK_BYTES: u64 = 512 * 1024 + 4096;

impl<'pool> Backing<'pool> {
    /// Allocates the working set of `task` (whole cache lines, zeroed)
    /// and its stack: from `memory`'s colors of its partitions when the
    /// run has a pool and the task partitions (a task without a working
    /// set then gets its stack alone), from the heap otherwise.
    pub fn allocate(task: &TaskSpec, memory: Option<&'pool ColoredMemory>) -> Result<Self> {
        let bytes = rounded_to_lines(task.working_set);
        let failed = |why: String| RtError::Task {
            task: task.name.clone(),
            message: format!("cannot allocate a working set of {}: {why}", Bytes(bytes)),
        };
        let len = usize::try_from(bytes).map_err(|e| failed(e.to_string()))?;
        match memory {
            // A pool exists for the run's coloured working sets: every task
            // with partitions takes its memory, and its stack, from them.
            // (A stack alone only where colours are placed: an uncoloured
            // pool would give it nothing a heap stack does not.)
            Some(memory)
                if takes_colors(task) && (bytes > 0 || memory.uncolored_reason.is_none()) =>
            {
                let colors = memory.colors_of(&task.partitions)?;
                let buffer = memory
                    .pool
                    .buffer(&colors, len)
                    .map_err(|e| failed(e.to_string()))?;
                let page = memory.mapping().page_size as usize;
                let placed_frames = frames_of(buffer.as_ptr() as usize, buffer.len(), page);
                let stack = memory
                    .pool
                    .page_aligned_buffer(&colors, stack_len(page))
                    .map_err(|e| failed(format!("its stack: {e}")))?;
                Ok(Backing::Colored {
                    stack,
                    placed_frames,
                    buffer,
                    colors,
                    partitions: task.partitions.clone(),
                    uncolored: memory.uncolored_reason.clone(),
                    machine_colors: memory.mapping().colors(),
                })
            }
            _ if bytes == 0 => Ok(Backing::None),
            _ => {
                let mut words = Vec::new();
                words
                    .try_reserve_exact(len / 8)
                    .map_err(|e| failed(e.to_string()))?;
                words.resize(len / 8, 0u64);
                Ok(Backing::Heap(words))
            }
        }
    }

    /// The memory as words, to lend to the task thread.
    pub fn working_set(&mut self) -> WorkingSet<'_> {
        self.lend().0
    }

    /// The memory as words and the coloured stack (`None`: the thread's
    /// own), to lend to the task thread.
    pub fn lend(&mut self) -> (WorkingSet<'_>, Option<&mut [u8]>) {
        match self {
            Backing::None => (WorkingSet::Borrowed(&mut []), None),
            Backing::Heap(words) => (WorkingSet::Borrowed(words), None),
            Backing::Colored { buffer, stack, .. } => {
                (WorkingSet::Borrowed(buffer.words()), Some(&mut **stack))
            }
        }
    }

    /// The virtual addresses of the memory it placed (working set and
    /// stack): the task's own, apart from what every thread of the
    /// process can touch ([`tinct_sys::footprint`]).
    pub fn address_ranges(&self) -> Vec<std::ops::Range<usize>> {
        let of = |p: *const u8, len: usize| p as usize..p as usize + len;
        match self {
            Backing::None => Vec::new(),
            Backing::Heap(words) => vec![of(words.as_ptr().cast(), words.len() * 8)],
            Backing::Colored { buffer, stack, .. } => vec![
                of(buffer.as_ptr(), buffer.len()),
                of(stack.as_ptr(), stack.len()),
            ],
        }
    }

    /// Where the memory is, checking colored pages again through pagemap
    /// (call after the run: pages could have moved).
    pub fn verify(&self, memory: Option<&ColoredMemory>) -> Placement {
        match self {
            Backing::None => Placement::None,
            Backing::Heap(words) => Placement::Heap {
                bytes: words.len() as u64 * 8,
                frames: frames_of(words.as_ptr() as usize, words.len() * 8, page_size())
                    .unwrap_or_default(),
            },
            Backing::Colored {
                buffer,
                partitions,
                uncolored: Some(reason),
                ..
            } => Placement::Uncolored {
                bytes: buffer.len() as u64,
                partitions_requested: partitions.clone(),
                reason: reason.clone(),
            },
            Backing::Colored {
                buffer,
                colors,
                partitions,
                uncolored: None,
                machine_colors,
                placed_frames,
                stack,
            } => {
                let page = memory.map_or(page_size(), |m| m.mapping().page_size as usize);
                let frames = frames_of(buffer.as_ptr() as usize, buffer.len(), page);
                let stack_frames = frames_of(stack.as_ptr() as usize, stack.len(), page);
                let outside = match (&frames, &stack_frames, memory) {
                    (Some(frames), Some(stack_frames), Some(memory)) => Some(
                        frames
                            .iter()
                            .chain(stack_frames)
                            .filter(|&&f| {
                                !colors.contains(&memory.mapping().classify_frame(f).color)
                            })
                            .count() as u64,
                    ),
                    _ => None,
                };
                let frame_drift = match (placed_frames, memory) {
                    (Some(placed), Some(memory)) => {
                        let (first, _) = page_span(buffer.as_ptr() as usize, buffer.len(), page);
                        FrameDrift::read(memory.mapping(), first, placed).ok()
                    }
                    _ => None,
                };
                Placement::Colored {
                    frame_drift,
                    stack_bytes: stack.len() as u64,
                    bytes: buffer.len() as u64,
                    partitions: partitions.clone(),
                    colors: tinct_sys::format_cpu_list(colors),
                    color_count: colors.len() as u32,
                    machine_colors: *machine_colors,
                    pages: if buffer.is_empty() {
                        0
                    } else {
                        page_span(buffer.as_ptr() as usize, buffer.len(), page).1 as u64
                    },
                    pages_outside_colors: outside,
                    frames: frames.unwrap_or_default(),
                    stack_frames: stack_frames.unwrap_or_default(),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::TaskBuilder;

    fn task(working_set: u64, partitions: Vec<u32>) -> TaskSpec {
        TaskBuilder::periodic("t", 1_000_000)
            .working_set(working_set)
            .partitions(partitions)
            .build()
    }

    #[test]
    fn heap_working_sets_are_whole_lines_and_say_where_they_are() {
        let mut backing = Backing::allocate(&task(100, vec![]), None).unwrap();
        assert_eq!(backing.working_set().len() * 8, 128);
        match backing.verify(None) {
            Placement::Heap { bytes, frames } => {
                assert_eq!(bytes, 128);
                // Frames are read as root and unreadable otherwise.
                assert!(frames.len() <= 2, "128 bytes span at most two pages");
            }
            other => panic!("expected a heap placement, got {other:?}"),
        }
        let none = Backing::allocate(&task(0, vec![1]), None).unwrap();
        assert_eq!(none.verify(None), Placement::None);
        let too_big = Backing::allocate(&task(1 << 62, vec![]), None).unwrap_err();
        assert!(too_big.to_string().contains("cannot allocate"), "{too_big}");
    }

    #[test]
    fn a_pool_too_large_for_64_bits_is_refused_not_wrapped() {
        let mut spec = crate::testing::run_spec(vec![task(1 << 62, vec![1])], 1_000_000);
        spec.platform_partitions = Some(4);
        match ColoredMemory::for_spec(&spec, true, true) {
            Err(e) => assert!(e.to_string().contains("does not fit in 2^64"), "{e}"),
            Ok(_) => panic!("a pool of more than 2^64 bytes was accepted"),
        }
    }

    #[test]
    fn demand_is_the_round_robin_share_of_each_color() {
        let mapping = AddressMapping::new(
            4096,
            tinct_mem::XorFunctions::from_bits(&[12, 13]).unwrap(),
            tinct_mem::XorFunctions::none(),
            tinct_mem::XorFunctions::none(),
        )
        .unwrap();
        let requests = vec![
            Some(ColoredRequest {
                bytes: 5 * 4096,
                colors: vec![0, 1],
            }),
            None,
            Some(ColoredRequest {
                bytes: 4096,
                colors: vec![1, 2],
            }),
        ];
        // Each task's stack: 129 pages, 65 of each of its two colours.
        let stack = 65;
        assert_eq!(
            per_color_demand(&requests, &mapping),
            vec![3 + stack, 3 + stack + 1 + stack, 1 + stack, 0]
        );
    }

    #[test]
    fn unenforced_placements_are_flagged() {
        let uncolored = Placement::Uncolored {
            bytes: 64,
            partitions_requested: vec![1],
            reason: "not root".into(),
        };
        assert!(uncolored.is_unenforced());
        assert!(uncolored.describe().contains("NOT enforced"));
        assert!(
            !Placement::Heap {
                bytes: 64,
                frames: vec![]
            }
            .is_unenforced()
        );
    }
}
