//! [`ShimConfig`]: the contract between whoever starts a program on
//! colored memory (`tinct exec`, the benches, a user by hand) and the
//! LD_PRELOAD shim (`libtinct_preload.so`) that serves its heap. The
//! settings travel in `TINCT_*` environment variables; [`ShimConfig::to_env`]
//! writes them, [`ShimConfig::from_env`] reads and checks them, and every
//! error names the variable, what was expected and what was found.
//!
//! The shim is injected into arbitrary programs, so this module (like all
//! of tinct-mem) pulls in no file-format or random-number crates; sizes are
//! read and written by tinct-base's units ([`parse_size`], [`Bytes`]), the
//! same reader task sets and the command line use. What the shim prints at
//! exit, and how to read it back: [`summary`].

pub mod report_request;
pub mod summary;

use std::ffi::CStr;
use std::path::{Path, PathBuf};

use crate::mapping::XorFunctions;
use tinct_base::InputError;
use tinct_base::units::{Bytes, parse_size};

/// The shim's file name.
pub const PRELOAD_LIB: &str = "libtinct_preload.so";
/// `TINCT_PRELOAD_LIB`: the path of the shim, when it is not beside the
/// program that starts it.
pub const PRELOAD_LIB_VAR: &str = "TINCT_PRELOAD_LIB";

/// Finds the shim a program in `program_dir` should preload: the file
/// `$TINCT_PRELOAD_LIB` names (an error if there is none), else
/// `libtinct_preload.so` beside the program or in `../lib`; `Ok(None)`
/// when neither exists (a caller with an embedded copy uses that). A
/// variable naming no file is bad input, the variable and its value the
/// field.
pub fn locate_shim(program_dir: &Path) -> Result<Option<PathBuf>, InputError> {
    if let Some(explicit) = std::env::var_os(PRELOAD_LIB_VAR) {
        let path = PathBuf::from(explicit);
        return if path.is_file() {
            Ok(Some(path))
        } else {
            Err(InputError::new(
                "",
                format!("{PRELOAD_LIB_VAR}={}", path.display()),
                format!("the path of {PRELOAD_LIB}"),
                "no such file",
            ))
        };
    }
    Ok(shim_candidates(program_dir)
        .into_iter()
        .find(|p| p.is_file())
        .map(|beside| beside.canonicalize().unwrap_or(beside)))
}

/// Where [`locate_shim`] looks beside a program: its directory and `../lib`.
pub fn shim_candidates(program_dir: &Path) -> [PathBuf; 2] {
    [
        program_dir.join(PRELOAD_LIB),
        program_dir.join("../lib").join(PRELOAD_LIB),
    ]
}

/// `TINCT_COLORS`: the page colors to serve the heap from, e.g. `0-15,32`.
pub const COLORS: &str = "TINCT_COLORS";
/// `TINCT_BANKS`: DRAM bank indices to serve the heap from, e.g. `0-3`
/// (in every controller unless `TINCT_CONTROLLERS` narrows it); needs
/// `TINCT_BANK_FUNCTIONS`.
pub const BANKS: &str = "TINCT_BANKS";
/// `TINCT_BANK_FUNCTIONS`: the bank XOR functions in DRAMA format, a
/// comma-separated list of hexadecimal physical-address masks, bank index
/// bit `i` = parity of (address & mask `i`), e.g. `0x2000,0x4000`.
pub const BANK_FUNCTIONS: &str = "TINCT_BANK_FUNCTIONS";
/// `TINCT_CONTROLLERS`: DRAM controller (channel) indices, e.g. `0`;
/// needs `TINCT_CONTROLLER_FUNCTIONS`.
pub const CONTROLLERS: &str = "TINCT_CONTROLLERS";
/// `TINCT_CONTROLLER_FUNCTIONS`: the controller XOR functions (DRAMA
/// format, as `TINCT_BANK_FUNCTIONS`).
pub const CONTROLLER_FUNCTIONS: &str = "TINCT_CONTROLLER_FUNCTIONS";
/// `TINCT_COLOR_BITS`: physical address bits that select the color, e.g.
/// `12-20` (default: derived from the last-level cache geometry).
pub const COLOR_BITS: &str = "TINCT_COLOR_BITS";
/// `TINCT_POOL`: the most memory the shim populates, e.g. `512MiB` (it
/// starts small and grows on demand; pages of other colours are given back
/// at once, so about `pool × requested / all colours` can be heap).
pub const POOL: &str = "TINCT_POOL";
/// `TINCT_BANK_MODE`: chandru-mueller Algorithm 1's fallbacks once the
/// requested banks are spent: `exact` (none, the default), `restricted`,
/// `unrestricted`, `split`, comma-separated (`tinct_mem::Modes::parse`).
pub const BANK_MODE: &str = "TINCT_BANK_MODE";
/// `TINCT_MMAP=1`: the program's own anonymous `mmap` (private,
/// read-write, not fixed) is served from coloured pages too, with `munmap`,
/// `mremap`, `madvise` and `mprotect` of such memory.
pub const MMAP: &str = match MMAP_CSTR.to_str() {
    Ok(name) => name,
    Err(_) => panic!("TINCT_MMAP is ASCII"),
};
/// [`MMAP`] as a C string, for the shim's `getenv`: its `mmap` reads the
/// variable without allocating, possibly before its heap exists.
pub const MMAP_CSTR: &CStr = c"TINCT_MMAP";
/// `TINCT_STACK_COLORED`: how much of each thread's stack the shim's
/// `pthread_create` makes of coloured pages, a size such as `256KiB` (the
/// default, [`DEFAULT_STACK_COLORED`]; [`parse_size`]'s grammar): the top
/// of the stack, where the thread starts and glibc keeps its descriptor
/// and TLS. The rest, down to the full size the program asked for, is
/// ordinary memory faulted in as it is used. `0` leaves every thread on
/// glibc's stack. Read by the shim alone, not written by
/// [`ShimConfig::to_env`].
pub const STACK_COLORED: &str = match STACK_COLORED_CSTR.to_str() {
    Ok(name) => name,
    Err(_) => panic!("TINCT_STACK_COLORED is ASCII"),
};
/// [`STACK_COLORED`] as a C string, for the shim's `getenv`.
pub const STACK_COLORED_CSTR: &CStr = c"TINCT_STACK_COLORED";
/// The coloured top of a thread stack when [`STACK_COLORED`] is unset.
pub const DEFAULT_STACK_COLORED: u64 = 256 << 10;
/// `TINCT_FORK_KEEP=1`: after `fork`, the child copies every heap page it
/// inherited at once, so the parent keeps its pages' frames (and colours)
/// when it writes them later; the child's copies are uncoloured.
pub const FORK_KEEP: &str = "TINCT_FORK_KEEP";
/// `TINCT_STRICT=1`: a full pool fails the allocation (ENOMEM) instead of
/// falling back to uncolored memory.
pub const STRICT: &str = "TINCT_STRICT";
/// `TINCT_STATS=1`: print a summary on stderr at exit ([`summary`] reads
/// its lines).
pub const STATS: &str = "TINCT_STATS";
/// `TINCT_ALLOW_UNCOLORED=1`: run even when frame numbers are unreadable.
pub const ALLOW_UNCOLORED: &str = "TINCT_ALLOW_UNCOLORED";
/// `TINCT_PAGE_REPORT=PATH`: at exit, write every page of the coloured
/// area to `PATH.<pid>` (`page ADDRESS ENTRY NOW`: the frame the page had
/// when it entered the area, and the one the exit summary saw, `-` if not
/// present; `mapped_page ADDRESS` for the program's own mappings;
/// `kernel_migrations N`, /proc/vmstat's `pgmigrate_success` when the
/// frames were read) and stop (SIGSTOP) until continued, so that another
/// process can translate the pages through `/proc/<pid>/pagemap` while
/// they are still mapped, tell a page placed wrongly from one the kernel
/// moved later, and check the summary. For tests and audits.
pub const PAGE_REPORT: &str = "TINCT_PAGE_REPORT";

/// `TINCT_FRAME_REPORT=PATH`: at exit, write the physical frames the heap
/// could be served from (every page of the pool in the requested colors
/// and banks) to `PATH.<pid>` as a [`FrameReport`], and go on exiting.
/// `tinct exec --stats` reads it to prove the program's isolation.
pub const FRAME_REPORT: &str = "TINCT_FRAME_REPORT";

/// Every variable of the contract.
pub const VARIABLES: [&str; 15] = [
    COLORS,
    BANKS,
    BANK_FUNCTIONS,
    CONTROLLERS,
    CONTROLLER_FUNCTIONS,
    COLOR_BITS,
    POOL,
    BANK_MODE,
    MMAP,
    FORK_KEEP,
    STRICT,
    STATS,
    ALLOW_UNCOLORED,
    PAGE_REPORT,
    FRAME_REPORT,
];

/// Default pool size: 512 MiB.
pub const DEFAULT_POOL: u64 = 512 << 20;

/// Smallest pool the shim accepts: 1 MiB.
pub const MIN_POOL: u64 = 1 << 20;

/// The shim's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShimConfig {
    /// Requested colors, sorted and unique; empty means every color (only
    /// allowed when banks or controllers are requested).
    pub colors: Vec<u32>,
    /// Requested DRAM banks, sorted and unique (`None`: any bank).
    pub banks: Option<Vec<u32>>,
    /// Requested DRAM controllers, sorted and unique (`None`: any).
    pub controllers: Option<Vec<u32>>,
    /// Bank XOR masks (empty: one bank).
    pub bank_functions: Vec<u64>,
    /// Controller XOR masks (empty: one controller).
    pub controller_functions: Vec<u64>,
    /// Explicit color bits, if given.
    pub color_bits: Option<Vec<u32>>,
    /// The most memory to populate, in bytes.
    pub pool_bytes: u64,
    /// Algorithm 1's fallbacks once the requested banks are spent.
    pub bank_mode: crate::Modes,
    /// Serve the program's anonymous `mmap` from coloured pages too.
    pub mmap: bool,
    /// After `fork`, the child takes the copies so the parent keeps its colours.
    pub fork_keep: bool,
    /// Fail instead of falling back when the colored pool is full.
    pub strict: bool,
    /// Print a summary at exit.
    pub stats: bool,
    /// Run without placement control when frame numbers are unreadable.
    pub allow_uncolored: bool,
    /// Where to write the page report.
    pub page_report: Option<PathBuf>,
    /// Where to write the frame report.
    pub frame_report: Option<PathBuf>,
}

impl ShimConfig {
    /// The heap in `colors`, everything else at its default.
    pub fn colored(colors: Vec<u32>) -> Self {
        Self {
            colors,
            banks: None,
            controllers: None,
            bank_functions: Vec::new(),
            controller_functions: Vec::new(),
            color_bits: None,
            pool_bytes: DEFAULT_POOL,
            bank_mode: crate::Modes::EXACT,
            mmap: false,
            fork_keep: false,
            strict: false,
            stats: false,
            allow_uncolored: false,
            page_report: None,
            frame_report: None,
        }
    }

    /// Reads the settings from this process's environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the settings through `lookup` (the environment in the shim, a
    /// map in tests), then [`ShimConfig::validate`]s them.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let list = |name: &str, example: &str| -> Result<Option<Vec<u32>>, String> {
            match lookup(name).filter(|t| !t.trim().is_empty()) {
                None => Ok(None),
                Some(text) => tinct_base::list::parse_list(&text).map(Some).map_err(|e| {
                    format!("{name}={text:?}: expected a list such as {example} ({e})")
                }),
            }
        };
        let colors = match list(COLORS, "0-15,32")? {
            Some(colors) => colors,
            None if lookup(BANKS).is_some_and(|b| !b.trim().is_empty())
                || lookup(CONTROLLERS).is_some_and(|c| !c.trim().is_empty()) =>
            {
                Vec::new()
            }
            None => {
                return Err(format!(
                    "{COLORS} is not set: expected the page colors to serve the heap from, e.g. \
                     {COLORS}=0-15 (see `tinct doctor` for the number of colors; `tinct exec \
                     --colors` sets it), or DRAM banks in {BANKS}"
                ));
            }
        };
        let pool_bytes = match lookup(POOL) {
            None => DEFAULT_POOL,
            Some(text) => parse_size(&text)
                .map(|bytes| bytes.0)
                .map_err(|e| format!("{POOL}={text:?}: expected a size such as 512MiB ({e})"))?,
        };
        let config = Self {
            colors,
            banks: list(BANKS, "0-3,6")?,
            controllers: list(CONTROLLERS, "0-3,6")?,
            bank_functions: functions(&lookup, BANK_FUNCTIONS)?,
            controller_functions: functions(&lookup, CONTROLLER_FUNCTIONS)?,
            color_bits: list(COLOR_BITS, "12-20")?,
            pool_bytes,
            bank_mode: match lookup(BANK_MODE).filter(|m| !m.trim().is_empty()) {
                None => crate::Modes::EXACT,
                Some(text) => {
                    crate::Modes::parse(&text).map_err(|e| format!("{BANK_MODE}={text:?}: {e}"))?
                }
            },
            mmap: flag(&lookup, MMAP)?,
            fork_keep: flag(&lookup, FORK_KEEP)?,
            strict: flag(&lookup, STRICT)?,
            stats: flag(&lookup, STATS)?,
            allow_uncolored: flag(&lookup, ALLOW_UNCOLORED)?,
            page_report: lookup(PAGE_REPORT)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
            frame_report: lookup(FRAME_REPORT)
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
        };
        config.validate().map_err(|e| e.to_string())?;
        Ok(config)
    }

    /// Checks what the variables cannot say alone: a pool of at least
    /// [`MIN_POOL`], banks and controllers only with their functions and
    /// within them, and some placement requested at all. The error names
    /// the variable that carries the setting as its field.
    pub fn validate(&self) -> Result<(), InputError> {
        if self.colors.is_empty() && self.banks.is_none() && self.controllers.is_none() {
            return Err(InputError::new(
                "",
                COLORS,
                format!("at least one color (or DRAM banks in {BANKS})"),
                "none",
            ));
        }
        if self.pool_bytes < MIN_POOL {
            return Err(InputError::new(
                "",
                POOL,
                "at least 1MiB",
                Bytes(self.pool_bytes).to_string(),
            ));
        }
        if self.bank_mode != crate::Modes::EXACT
            && self.banks.is_none()
            && self.controllers.is_none()
        {
            return Err(InputError::new(
                "",
                format!("{BANK_MODE}={}", self.bank_mode.names()),
                format!(
                    "requested DRAM banks ({BANKS}) or controllers ({CONTROLLERS}) for a \
                     fallback to fall back from"
                ),
                "neither",
            ));
        }
        check_indices(BANKS, &self.banks, BANK_FUNCTIONS, &self.bank_functions)?;
        check_indices(
            CONTROLLERS,
            &self.controllers,
            CONTROLLER_FUNCTIONS,
            &self.controller_functions,
        )
    }

    /// Fails if a requested color is not below `available` (the number of
    /// colors of this machine's last-level cache); the error's field is
    /// [`COLORS`], which a front end renames to its option.
    pub fn check_colors_exist(&self, available: u64) -> Result<(), InputError> {
        match self.colors.last() {
            Some(&highest) if u64::from(highest) >= available => Err(InputError::new(
                "",
                COLORS,
                format!(
                    "colors 0-{} (the last-level cache has {available} page colors)",
                    available.saturating_sub(1)
                ),
                format!("color {highest}, which does not exist"),
            )),
            _ => Ok(()),
        }
    }

    /// The variables that carry these settings, to set in the program's
    /// environment. Flags that are off and settings at their default are
    /// left out, so a variable the user set by hand is not overridden.
    pub fn to_env(&self) -> Vec<(&'static str, String)> {
        let mut env = Vec::new();
        let list = tinct_base::list::format_list;
        let masks = |masks: &[u64]| {
            masks
                .iter()
                .map(|m| format!("{m:#x}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        if !self.colors.is_empty() {
            env.push((COLORS, list(&self.colors)));
        }
        if let Some(banks) = &self.banks {
            env.push((BANKS, list(banks)));
        }
        if !self.bank_functions.is_empty() {
            env.push((BANK_FUNCTIONS, masks(&self.bank_functions)));
        }
        if let Some(controllers) = &self.controllers {
            env.push((CONTROLLERS, list(controllers)));
        }
        if !self.controller_functions.is_empty() {
            env.push((CONTROLLER_FUNCTIONS, masks(&self.controller_functions)));
        }
        if let Some(bits) = &self.color_bits {
            env.push((COLOR_BITS, list(bits)));
        }
        env.push((POOL, Bytes(self.pool_bytes).to_string()));
        if self.bank_mode != crate::Modes::EXACT {
            env.push((BANK_MODE, self.bank_mode.names()));
        }
        for (on, name) in [
            (self.mmap, MMAP),
            (self.fork_keep, FORK_KEEP),
            (self.strict, STRICT),
            (self.stats, STATS),
            (self.allow_uncolored, ALLOW_UNCOLORED),
        ] {
            if on {
                env.push((name, "1".to_string()));
            }
        }
        if let Some(path) = &self.page_report {
            env.push((PAGE_REPORT, path.display().to_string()));
        }
        if let Some(path) = &self.frame_report {
            env.push((FRAME_REPORT, path.display().to_string()));
        }
        env
    }
}

/// What the shim writes for [`FRAME_REPORT`]: one process's frames.
///
/// ```text
/// pid 4242
/// command sort
/// page_size 4096
/// uncolored 0
/// frame 0x1a2b3
/// ...
/// residue_kind 1433600 code
/// residue 0x4d5e6
/// ...
/// thread_stacks 3 786432 2 1 0 0 0 1 262144
/// ```
///
/// (`residue_unread REASON` instead of the residue's lines when the
/// process could not read its own pages; `thread_stacks` as
/// [`ThreadStacks`], absent from a shim that does not say.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameReport {
    /// The process that wrote it.
    pub pid: u32,
    /// Its command name (`/proc/self/comm`).
    pub command: String,
    /// Page size in bytes.
    pub page_size: u64,
    /// True if frame numbers were unreadable (the frames are then virtual
    /// page numbers and prove nothing).
    pub uncolored: bool,
    /// The physical frames the heap could be served from.
    pub frames: Vec<u64>,
    /// The rest of the process's resident pages (code, libraries, stacks,
    /// other memory: uncoloured), or why they were not read; `None` in a
    /// report that does not say.
    pub residue: Option<Result<Residue, String>>,
    /// The stacks of the program's threads, if the shim says.
    pub stacks: Option<ThreadStacks>,
}

/// The threads' stacks of one process (the `thread_stacks COLORED BYTES
/// FREED OWN BUDGET REFUSED EXECUTABLE LENT LENT_BYTES` line; a shim
/// before the last three wrote six numbers, read with those three 0): those whose top is made of coloured
/// pages (area pages: among the report's frames while the stack lives),
/// and those left to glibc.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadStacks {
    /// Threads given a stack with a coloured top.
    pub colored: u64,
    /// The coloured bytes of those stacks (their tops).
    pub colored_bytes: u64,
    /// Coloured stacks given back (threads joined, or detached and ended).
    pub freed: u64,
    /// Threads that brought a stack of their own (passed through).
    pub own_stack: u64,
    /// Threads left on glibc's stack because the budget could not serve one.
    pub budget: u64,
    /// Threads left on glibc's stack because the kernel refused to move
    /// the coloured pages into it (`mremap`).
    pub refused: u64,
    /// Threads left on glibc's stack because a loaded object asks for
    /// executable stacks (`PT_GNU_STACK` with `PF_X`, or none on x86-64).
    pub executable: u64,
    /// Coloured tops still lent when the report was written (threads
    /// running, or not yet joined or found ended).
    pub lent: u64,
    /// Their bytes (`colored_bytes` counts every top lent over the run).
    pub lent_bytes: u64,
}

/// A process's resident pages outside its coloured heap.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Residue {
    /// Bytes per kind of memory (`code`, `file data`, ...).
    pub kinds: Vec<(String, u64)>,
    /// Their frames.
    pub frames: Vec<u64>,
}

impl FrameReport {
    /// The report as text (see the type's documentation).
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "pid {}\ncommand {}\npage_size {}\nuncolored {}\n",
            self.pid,
            self.command.replace('\n', " "),
            self.page_size,
            u8::from(self.uncolored)
        );
        for frame in &self.frames {
            text.push_str(&format!("frame {frame:#x}\n"));
        }
        match &self.residue {
            Some(Ok(residue)) => {
                for (kind, bytes) in &residue.kinds {
                    text.push_str(&format!(
                        "residue_kind {bytes} {}\n",
                        kind.replace('\n', " ")
                    ));
                }
                for frame in &residue.frames {
                    text.push_str(&format!("residue {frame:#x}\n"));
                }
            }
            Some(Err(why)) => {
                text.push_str(&format!("residue_unread {}\n", why.replace('\n', " ")))
            }
            None => {}
        }
        if let Some(stacks) = &self.stacks {
            text.push_str(&format!(
                "thread_stacks {} {} {} {} {} {} {} {} {}\n",
                stacks.colored,
                stacks.colored_bytes,
                stacks.freed,
                stacks.own_stack,
                stacks.budget,
                stacks.refused,
                stacks.executable,
                stacks.lent,
                stacks.lent_bytes
            ));
        }
        text
    }

    /// Reads a report; errors name the line and what was expected (no
    /// file: [`read_frame_reports`] names it).
    pub fn parse(text: &str) -> Result<Self, InputError> {
        let mut report = FrameReport {
            pid: 0,
            command: String::new(),
            page_size: 0,
            uncolored: false,
            frames: Vec::new(),
            residue: None,
            stacks: None,
        };
        for (index, line) in text.lines().enumerate() {
            let bad = |expected: &str| {
                InputError::new("", "", expected, format!("{line:?}")).at_line(Some(index + 1))
            };
            let (key, value) = line.split_once(' ').ok_or_else(|| bad("`key value`"))?;
            match key {
                "pid" => report.pid = value.parse().map_err(|_| bad("a process id"))?,
                "command" => report.command = value.to_string(),
                "page_size" => {
                    report.page_size = value
                        .parse()
                        .ok()
                        .filter(|p: &u64| p.is_power_of_two())
                        .ok_or_else(|| bad("a page size in bytes"))?
                }
                "uncolored" => report.uncolored = value == "1",
                "frame" | "residue" => {
                    let frame = value
                        .strip_prefix("0x")
                        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                        .ok_or_else(|| bad("a frame number such as 0x1a2b3"))?;
                    match key {
                        "frame" => report.frames.push(frame),
                        _ => residue_of(&mut report)
                            .ok_or_else(|| bad("no residue line after residue_unread"))?
                            .frames
                            .push(frame),
                    }
                }
                "residue_kind" => {
                    let (bytes, kind) = value
                        .split_once(' ')
                        .and_then(|(b, k)| Some((b.parse::<u64>().ok()?, k)))
                        .ok_or_else(|| bad("`residue_kind BYTES KIND`"))?;
                    residue_of(&mut report)
                        .ok_or_else(|| bad("no residue line after residue_unread"))?
                        .kinds
                        .push((kind.to_string(), bytes));
                }
                "thread_stacks" => {
                    let numbers: Vec<u64> = value
                        .split(' ')
                        .map(str::parse)
                        .collect::<Result<_, _>>()
                        .map_err(|_| bad(THREAD_STACKS_LINE))?;
                    // Six numbers from a shim before the last three (then 0).
                    if numbers.len() != 6 && numbers.len() != 9 {
                        return Err(bad(THREAD_STACKS_LINE));
                    }
                    let number = |at: usize| numbers.get(at).copied().unwrap_or(0);
                    report.stacks = Some(ThreadStacks {
                        colored: number(0),
                        colored_bytes: number(1),
                        freed: number(2),
                        own_stack: number(3),
                        budget: number(4),
                        refused: number(5),
                        executable: number(6),
                        lent: number(7),
                        lent_bytes: number(8),
                    });
                }
                "residue_unread" => {
                    if matches!(report.residue, Some(Ok(_))) {
                        return Err(bad("residue_unread before any residue line"));
                    }
                    report.residue = Some(Err(value.to_string()));
                }
                _ => {
                    return Err(bad(
                        "pid, command, page_size, uncolored, frame, residue_kind, residue, \
                         residue_unread or thread_stacks",
                    ));
                }
            }
        }
        if report.page_size == 0 {
            return Err(InputError::new(
                "",
                "page_size",
                "a line such as `page_size 4096`",
                "none",
            ));
        }
        Ok(report)
    }
}

/// What a `thread_stacks` line holds.
const THREAD_STACKS_LINE: &str =
    "`thread_stacks COLORED BYTES FREED OWN BUDGET REFUSED [EXECUTABLE LENT LENT_BYTES]`";

/// The report's residue, started if none yet; `None` if it says the
/// residue was not read.
fn residue_of(report: &mut FrameReport) -> Option<&mut Residue> {
    report
        .residue
        .get_or_insert_with(|| Ok(Residue::default()))
        .as_mut()
        .ok()
}

/// Every report the processes of one program wrote for
/// `TINCT_FRAME_REPORT=path` (the files `path.<pid>`), sorted by pid.
pub fn read_frame_reports(path: &Path) -> Result<Vec<FrameReport>, String> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let prefix = format!(
        "{}.",
        path.file_name().unwrap_or_default().to_string_lossy()
    );
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut reports = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name
            .strip_prefix(&prefix)
            .is_some_and(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        {
            let text = std::fs::read_to_string(entry.path())
                .map_err(|e| format!("{}: {e}", entry.path().display()))?;
            reports.push(FrameReport::parse(&text).map_err(|e| {
                InputError {
                    file: entry.path().display().to_string(),
                    ..e
                }
                .to_string()
            })?);
        }
    }
    reports.sort_by_key(|r| r.pid);
    Ok(reports)
}

/// XOR masks in DRAMA format from `name` (unset or empty: none).
fn functions(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Result<Vec<u64>, String> {
    let Some(text) = lookup(name) else {
        return Ok(Vec::new());
    };
    XorFunctions::parse(&text)
        .map(|f| f.masks().to_vec())
        .map_err(|e| {
            format!(
                "{name}={text:?}: expected hexadecimal address masks such as 0x2000,0x4000 ({e})"
            )
        })
}

/// A bank or controller list (`name`) needs the functions of
/// `functions_name` to mean anything, and its indices must exist.
fn check_indices(
    name: &str,
    list: &Option<Vec<u32>>,
    functions_name: &str,
    masks: &[u64],
) -> Result<(), InputError> {
    let Some(list) = list else {
        return Ok(());
    };
    let field = format!("{name}={:?}", tinct_base::list::format_list(list));
    if list.is_empty() {
        return Err(InputError::new("", field, "at least one index", "none"));
    }
    if masks.is_empty() {
        return Err(InputError::new(
            "",
            field,
            format!(
                "{functions_name} beside it, the XOR functions of this machine's DRAM address \
                 mapping as hexadecimal masks, e.g. {functions_name}=0x2000,0x4000 (DRAMA format)"
            ),
            format!("no {functions_name}: the mapping is unknown"),
        ));
    }
    let count = 1u64 << masks.len();
    if let Some(bad) = list.iter().find(|&&i| u64::from(i) >= count) {
        return Err(InputError::new(
            "",
            field,
            format!(
                "indices 0-{} ({} functions in {functions_name})",
                count - 1,
                masks.len()
            ),
            format!("index {bad}, which does not exist"),
        ));
    }
    Ok(())
}

fn flag(lookup: &impl Fn(&str) -> Option<String>, name: &str) -> Result<bool, String> {
    match lookup(name).as_deref().map(str::trim) {
        None | Some("") | Some("0") | Some("false") | Some("no") => Ok(false),
        Some("1") | Some("true") | Some("yes") => Ok(true),
        Some(other) => Err(format!("{name}={other:?}: expected 1 or 0")),
    }
}

/// What follows the kernel's populating time (integer nanoseconds,
/// [`crate::GrowthStats::populate_ns`]) in the shim's `TINCT_STATS`
/// summary: `growth G ms in all (N ns of it the kernel populating
/// segments)`. The shim writes it, [`populating_ns_in`] reads it back.
pub const POPULATING_MARK: &str = " ns of it the kernel populating segments";

/// The kernel's populating time summed over every shim summary in
/// `summaries` (the standard error of processes run with `TINCT_STATS=1`),
/// in ns: `Ok(None)` when no line says it, an error naming the line that
/// has [`POPULATING_MARK`] without a whole number of ns before it.
pub fn populating_ns_in(summaries: &str) -> Result<Option<u64>, String> {
    let mut total: Option<u64> = None;
    for line in summaries.lines() {
        let Some(end) = line.find(POPULATING_MARK) else {
            continue;
        };
        let number = line[..end]
            .rsplit('(')
            .next()
            .map(str::trim)
            .and_then(|n| n.parse::<u64>().ok())
            .ok_or_else(|| {
                format!("shim summary line {line:?}: expected `(N{POPULATING_MARK})`, N in ns")
            })?;
        total = Some(total.unwrap_or(0).saturating_add(number));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    #[test]
    fn populating_times_are_summed_over_every_summary_and_a_bad_one_is_named() {
        let line = |ns: &str| {
            format!(
                "tinct-preload[7]: ... growth 0.20 ms in all ({ns}{POPULATING_MARK}), pages moved"
            )
        };
        let two = format!("{}\nother text\n{}\n", line("90123"), line("7"));
        assert_eq!(populating_ns_in(&two), Ok(Some(90130)));
        assert_eq!(populating_ns_in("no summary here\n"), Ok(None));
        let bad = populating_ns_in(&line("0.09 ms"));
        assert!(
            bad.as_ref().is_err_and(|e| e.contains("0.09 ms")),
            "{bad:?}"
        );
    }

    use super::*;
    use std::collections::HashMap;

    fn parse_map(pairs: &[(&str, &str)]) -> Result<ShimConfig, String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ShimConfig::from_lookup(|k| map.get(k).cloned())
    }

    fn parse_env(env: &[(&'static str, String)]) -> Result<ShimConfig, String> {
        let map: HashMap<&str, String> = env.iter().cloned().collect();
        ShimConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn reads_every_setting() {
        let config = parse_map(&[
            (COLORS, "0-3,32"),
            (POOL, "64MiB"),
            (STRICT, "1"),
            (STATS, "1"),
            (PAGE_REPORT, "/tmp/r"),
            (COLOR_BITS, "12-14"),
        ])
        .unwrap();
        assert_eq!(config.colors, vec![0, 1, 2, 3, 32]);
        assert_eq!(config.pool_bytes, 64 << 20);
        assert_eq!(config.color_bits, Some(vec![12, 13, 14]));
        assert!(config.strict && config.stats && !config.allow_uncolored);
        assert_eq!(config.page_report, Some(PathBuf::from("/tmp/r")));
        let defaults = parse_map(&[(COLORS, "7")]).unwrap();
        assert_eq!(defaults, ShimConfig::colored(vec![7]));
    }

    #[test]
    fn banks_need_functions_and_make_colors_optional() {
        let config = parse_map(&[
            (BANKS, "1,3"),
            (BANK_FUNCTIONS, "0x2000, 0x4000"),
            (CONTROLLERS, "0"),
            (CONTROLLER_FUNCTIONS, "0x8000"),
        ])
        .unwrap();
        assert!(config.colors.is_empty(), "every color");
        assert_eq!(config.banks, Some(vec![1, 3]));
        assert_eq!(config.controllers, Some(vec![0]));
        assert_eq!(config.bank_functions, vec![0x2000, 0x4000]);
        assert_eq!(config.controller_functions, vec![0x8000]);
        let both = parse_map(&[
            (COLORS, "0-7"),
            (BANKS, "2"),
            (BANK_FUNCTIONS, "0x2000,0x4000"),
        ])
        .unwrap();
        assert_eq!(both.colors, (0..8).collect::<Vec<_>>());
        assert_eq!(both.banks, Some(vec![2]));
    }

    #[test]
    fn errors_name_the_variable_and_what_was_found() {
        let missing = parse_map(&[]).unwrap_err();
        assert!(missing.contains("TINCT_COLORS is not set"), "{missing}");
        assert!(
            missing.contains("or DRAM banks in TINCT_BANKS"),
            "{missing}"
        );
        let bad = parse_map(&[(COLORS, "3-x")]).unwrap_err();
        assert!(bad.contains("TINCT_COLORS=\"3-x\""), "{bad}");
        let size = parse_map(&[(COLORS, "1"), (POOL, "lots")]).unwrap_err();
        assert!(
            size.contains("TINCT_POOL=\"lots\"") && size.contains("512MiB"),
            "{size}"
        );
        let tiny = parse_map(&[(COLORS, "1"), (POOL, "4KiB")]).unwrap_err();
        assert!(tiny.contains("at least 1MiB"), "{tiny}");
        let flag = parse_map(&[(COLORS, "1"), (STRICT, "maybe")]).unwrap_err();
        assert!(
            flag.contains("TINCT_STRICT=\"maybe\": expected 1 or 0"),
            "{flag}"
        );
        let banks = parse_map(&[(COLORS, "1"), (BANKS, "0-3")]).unwrap_err();
        assert!(
            banks.contains("TINCT_BANKS=\"0-3\": expected TINCT_BANK_FUNCTIONS beside it"),
            "{banks}"
        );
        let range = parse_map(&[(BANKS, "0-4"), (BANK_FUNCTIONS, "0x2000,0x4000")]).unwrap_err();
        assert!(
            range.contains(
                "TINCT_BANKS=\"0-4\": expected indices 0-3 (2 functions in TINCT_BANK_FUNCTIONS), \
                 found index 4, which does not exist"
            ),
            "{range}"
        );
        let mask = parse_map(&[(BANKS, "0"), (BANK_FUNCTIONS, "0x2000,zz")]).unwrap_err();
        assert!(
            mask.contains("TINCT_BANK_FUNCTIONS=\"0x2000,zz\""),
            "{mask}"
        );
        let mode = parse_map(&[(COLORS, "1"), (BANK_MODE, "restricted")]).unwrap_err();
        assert!(
            mode.contains("TINCT_BANK_MODE=restricted") && mode.contains("TINCT_BANKS"),
            "{mode}"
        );
        let name =
            parse_map(&[(BANKS, "0"), (BANK_FUNCTIONS, "0x2000"), (BANK_MODE, "up")]).unwrap_err();
        assert!(name.contains("TINCT_BANK_MODE=\"up\""), "{name}");
        let controllers = parse_map(&[(COLORS, "1"), (CONTROLLERS, "1")]).unwrap_err();
        assert!(
            controllers.contains("found no TINCT_CONTROLLER_FUNCTIONS"),
            "{controllers}"
        );
        let none = ShimConfig::colored(Vec::new()).validate().unwrap_err();
        assert_eq!(
            (none.field.as_str(), none.found.as_str()),
            (COLORS, "none"),
            "{none}"
        );
        assert!(none.expected.starts_with("at least one color"), "{none}");
    }

    #[test]
    fn colors_beyond_the_machine_are_refused() {
        let config = ShimConfig::colored(vec![0, 511]);
        assert!(config.check_colors_exist(512).is_ok());
        let err = config.check_colors_exist(256).unwrap_err();
        assert_eq!(err.field, COLORS);
        assert_eq!(
            err.expected,
            "colors 0-255 (the last-level cache has 256 page colors)"
        );
        assert_eq!(err.found, "color 511, which does not exist");
    }

    #[test]
    fn to_env_leaves_out_what_is_off_and_reads_back_equal() {
        let simple = ShimConfig::colored(vec![0, 1, 2, 3, 9]);
        assert_eq!(
            simple.to_env(),
            vec![(COLORS, "0-3,9".to_string()), (POOL, "512MiB".to_string())]
        );
        let full = ShimConfig {
            colors: vec![4, 5],
            banks: Some(vec![1, 2]),
            controllers: Some(vec![0]),
            bank_functions: vec![0x2000, 0x4000],
            controller_functions: vec![0x8000],
            color_bits: Some(vec![12, 13, 14]),
            pool_bytes: 3 << 19,
            bank_mode: crate::Modes::parse("restricted,split").unwrap(),
            mmap: true,
            fork_keep: true,
            strict: true,
            stats: true,
            allow_uncolored: true,
            page_report: Some(PathBuf::from("/tmp/pages")),
            frame_report: Some(PathBuf::from("/tmp/frames")),
        };
        let env = full.to_env();
        assert_eq!(env.len(), VARIABLES.len());
        assert!(env.contains(&(POOL, "1536KiB".to_string())), "{env:?}");
        assert_eq!(parse_env(&env).unwrap(), full);
    }

    #[test]
    fn frame_reports_read_back_equal_and_bad_lines_are_named() {
        let report = FrameReport {
            pid: 42,
            command: "sort".into(),
            page_size: 4096,
            uncolored: false,
            frames: vec![0x1a2b3, 7],
            residue: None,
            stacks: None,
        };
        assert_eq!(FrameReport::parse(&report.to_text()), Ok(report.clone()));
        let with_residue = FrameReport {
            residue: Some(Ok(Residue {
                kinds: vec![("code".into(), 8192), ("file data".into(), 4096)],
                frames: vec![0x4d5e6, 0x4d5e7, 9],
            })),
            ..report.clone()
        };
        assert_eq!(
            FrameReport::parse(&with_residue.to_text()),
            Ok(with_residue)
        );
        let unread = FrameReport {
            residue: Some(Err("pagemap: permission denied".into())),
            ..report
        };
        assert_eq!(FrameReport::parse(&unread.to_text()), Ok(unread.clone()));
        let stacks = FrameReport {
            stacks: Some(ThreadStacks {
                colored: 3,
                colored_bytes: 3 * (256 << 10),
                freed: 2,
                own_stack: 1,
                budget: 4,
                refused: 5,
                executable: 6,
                lent: 1,
                lent_bytes: 256 << 10,
            }),
            ..unread
        };
        assert_eq!(FrameReport::parse(&stacks.to_text()), Ok(stacks));
        // A shim before the last three numbers.
        let older = FrameReport::parse("page_size 4096\nthread_stacks 1 2 3 4 5 6\n").unwrap();
        assert_eq!(
            older.stacks,
            Some(ThreadStacks {
                colored: 1,
                colored_bytes: 2,
                freed: 3,
                own_stack: 4,
                budget: 5,
                refused: 6,
                ..ThreadStacks::default()
            })
        );
        let short = "page_size 4096\nthread_stacks 1 2 3\n";
        assert!(
            FrameReport::parse(short)
                .unwrap_err()
                .to_string()
                .contains("line 2")
        );
        assert_eq!(FrameReport::parse(short).unwrap_err().line, Some(2));
        let mixed = "page_size 4096\nresidue_unread no\nresidue 0x1\n";
        assert!(
            FrameReport::parse(mixed)
                .unwrap_err()
                .to_string()
                .contains("line 3")
        );
        let kind = "page_size 4096\nresidue_kind code 12\n";
        assert!(
            FrameReport::parse(kind)
                .unwrap_err()
                .to_string()
                .contains("BYTES KIND")
        );
        let err = FrameReport::parse("page_size 4096\nframe 12\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2") && err.contains("0x1a2b3"), "{err}");
        assert!(
            FrameReport::parse("pid 1\n")
                .unwrap_err()
                .to_string()
                .contains("page_size")
        );
    }

    /// The reports of a program's processes are read from `PATH.<pid>`,
    /// sorted by pid; a bad one is named by its file and line.
    #[test]
    fn frame_reports_are_read_by_pid_and_a_bad_file_is_named() {
        let dir = std::env::temp_dir().join(format!("tinct-frames-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("frames");
        std::fs::write(dir.join("frames.20"), "pid 20\npage_size 4096\n").unwrap();
        std::fs::write(dir.join("frames.3"), "pid 3\npage_size 4096\n").unwrap();
        std::fs::write(dir.join("frames.x"), "not a report").unwrap();
        let pids: Vec<u32> = read_frame_reports(&path)
            .unwrap()
            .iter()
            .map(|r| r.pid)
            .collect();
        assert_eq!(pids, vec![3, 20]);
        std::fs::write(dir.join("frames.7"), "page_size 4096\nframe 12\n").unwrap();
        let err = read_frame_reports(&path).unwrap_err();
        let named = format!(
            "{}:2: expected a frame number",
            dir.join("frames.7").display()
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.starts_with(&named), "{err}");
    }
}
