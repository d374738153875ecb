//! The library side of `tinct exec` (kim2013 Section III-A: cache
//! reservation without changing application software): the shim's
//! settings from the command line's text ([`ExecRequest::shim_config`]),
//! the environment the program is started with ([`program_env`]), and the
//! proof, from the frames its processes were given, that its heap is
//! isolated ([`isolation_report`]); starting the program with all of it
//! ([`launch()`]). The CLI parses arguments, calls these and prints.
//!
//! A program's heap settings ([`program_env`]) are tinct-rt's, which a
//! program body of `tinct run` uses too (as is the loader check,
//! `tinct_rt::loader`, which the CLI calls before [`launch()`]); the model of the last-level cache behind the proof is
//! tinct-verify's ([`tinct_verify::isolation::LlcModel`]).
#![forbid(unsafe_code)]

pub mod launch;
pub mod report_request;
pub use launch::{Ended, L3Request, Launch, LaunchError, PassedOnSignal, launch};
pub use tinct_rt::program_heap::{frame_report_path, program_env};

use std::fmt::Write;
use std::path::{Path, PathBuf};
use tinct_base::InputError;
use tinct_base::units::Bytes;
use tinct_core::dram_map::{AddressKind, DramMap};
use tinct_mem::{Modes, ShimConfig, XorFunctions};
use tinct_sim::isolation::{TaskFrames, check};
use tinct_sys::SysRoot;
use tinct_sys::color_source::{self, ColorRequest};
use tinct_verify::isolation::LlcModel;

/// The options of `tinct exec` but its command: the shim's settings, the
/// L3 reservation, pinning and priority, as given on the command line
/// (`None`: the option was not given). Errors name the flag. With the
/// feature `cli`, this struct is the command's options (`clap::Args`),
/// each field's doc comment its help text.
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct ExecRequest {
    /// Page colors of the last-level cache to serve the heap from, e.g. `0-15,32`
    /// (see `tinct doctor` for the number of colors).
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST", required_unless_present_any = ["l3_partitions", "banks", "controllers"]))]
    pub colors: Option<String>,
    /// Reserve these cache partitions (1-based, as S(i) in a plan) with
    /// hardware cache allocation (resctrl L3 capacity mask), e.g. `2-3`.
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST"))]
    pub l3_partitions: Option<String>,
    /// N_P, the number of partitions the L3 mask bits are split into
    /// (default: one per mask bit).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "N", requires = "l3_partitions")
    )]
    pub partitions: Option<u32>,
    /// resctrl mount point (default: from /proc/mounts); for tests.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "DIR", hide = true, requires = "l3_partitions")
    )]
    pub resctrl_root: Option<PathBuf>,
    /// Physical address bits of the page colour, e.g. `12-16`, instead of
    /// the last-level cache's rule (`tinct doctor` shows it and why).
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST"))]
    pub color_bits: Option<String>,
    /// DRAM banks to serve the heap from, e.g. `1,2` (in every controller;
    /// with `--colors`, pages must be in both). Needs `--bank-functions`
    /// or `--dram-map`.
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST"))]
    pub banks: Option<String>,
    /// The DRAM bank functions of this machine as XOR masks in DRAMA format,
    /// e.g. `0x2040,0x44000` (bank bit i = parity of address & mask i).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "MASKS", conflicts_with = "dram_map")
    )]
    pub bank_functions: Option<String>,
    /// The DRAM mapping file `tinct bench dram-map` wrote (its bank and
    /// controller functions; those that read bits inside a page cannot be
    /// controlled by a page allocator and are left out, as the shim says).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub dram_map: Option<PathBuf>,
    /// chandru-mueller Algorithm 1's fallbacks once the requested banks are
    /// spent, comma-separated: `exact` (none: the allocation falls back to
    /// uncoloured memory, or fails with --strict), `restricted` (the
    /// requested controllers' fullest other bank), `unrestricted` (the
    /// fullest controller and bank), `split` (any page of the colours).
    /// The summary (--stats) says how many requests and pages each step
    /// served.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "MODES", default_value = "exact")
    )]
    pub bank_mode: String,
    /// Serve the program's own anonymous mmap (private, read-write) from
    /// coloured pages too, not only its heap.
    #[cfg_attr(feature = "cli", arg(long))]
    pub mmap: bool,
    /// After fork, let the child take the copy-on-write copies of the heap,
    /// so the parent keeps its pages' colours when it writes them (the
    /// child's heap is then uncoloured, and it pays one page copy per
    /// heap page).
    #[cfg_attr(feature = "cli", arg(long))]
    pub fork_keep: bool,
    /// DRAM controllers to serve the heap from. Needs
    /// `--controller-functions` (or a `--dram-map` that has them).
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST"))]
    pub controllers: Option<String>,
    /// The DRAM controller functions as XOR masks, like `--bank-functions`.
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "MASKS", conflicts_with = "dram_map")
    )]
    pub controller_functions: Option<String>,
    /// The most memory the shim populates: it starts with one small
    /// segment (at most 2 MiB) and grows on demand, keeping pages of the requested colours (so the heap can
    /// grow to about SIZE × requested / all colors).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "SIZE", default_value = "512MiB")
    )]
    pub pool: String,
    /// When the colored pool is full, fail the allocation (ENOMEM) instead
    /// of falling back to uncolored memory; and refuse (exit 2) a program
    /// the shim cannot be loaded into (statically linked, set-ID, or a
    /// script of such an interpreter) instead of running it uncoloured.
    #[cfg_attr(feature = "cli", arg(long))]
    pub strict: bool,
    /// Print a summary on stderr when the program exits (pages per color,
    /// fallbacks, peak), and the cache sets the heap of each of its
    /// processes can occupy in tinct-sim's model of this machine's
    /// last-level cache, with any other process that can evict its lines
    /// (the program then runs as a child of tinct).
    #[cfg_attr(feature = "cli", arg(long))]
    pub stats: bool,
    /// Run even if physical frame numbers are unreadable (no placement
    /// control; the shim says so).
    #[cfg_attr(feature = "cli", arg(long))]
    pub allow_uncolored: bool,
    /// Pin the program to these CPUs, e.g. `0` or `0-1`.
    #[cfg_attr(feature = "cli", arg(long, value_name = "LIST"))]
    pub cpus: Option<String>,
    /// Run the program under SCHED_FIFO with this priority (1-99, higher wins).
    #[cfg_attr(feature = "cli", arg(long, value_name = "PRIO", value_parser = clap::value_parser!(u8).range(1..=99)))]
    pub fifo: Option<u8>,
}

impl ExecRequest {
    /// The shim's settings (`None` without colours, banks or controllers:
    /// no shim), each list checked with the flag's name; `note` hears what
    /// the user should know but is no error (a DRAM map measured on a
    /// virtual machine, functions that cannot be chosen by page). Bad
    /// input names the flag (with its value) or the file it is in.
    pub fn shim_config(
        &self,
        note: &mut dyn FnMut(String),
    ) -> Result<Option<ShimConfig>, InputError> {
        if self.colors.is_none() && self.banks.is_none() && self.controllers.is_none() {
            return Ok(None);
        }
        let optional_list = |flag: &str, text: Option<&str>, what: &str| {
            text.map(|t| non_empty_list(flag, t, "0-15,32", what))
                .transpose()
        };
        let pool_field = format!("--pool {:?}", self.pool);
        let pool_bytes = tinct_core::units::parse_size(&self.pool)
            .map_err(|e| InputError::new("", &pool_field, "a size such as 512MiB", e.to_string()))?
            .0;
        if pool_bytes < tinct_mem::shim_config::MIN_POOL {
            return Err(InputError::new(
                "",
                pool_field,
                "at least 1MiB",
                Bytes(pool_bytes).to_string(),
            ));
        }
        let page = tinct_sys::system::PageSize::read(&SysRoot::live()).map_or(4096, |p| p.bytes);
        // Colours need the machine's colour bits, resolved once here (flag,
        // TINCT_COLOR_BITS, machine file, derived rule) and handed to the
        // shim, which reads the bits it is given: a machine whose bits are
        // unknown fails here, once, before the program starts.
        let colors =
            optional_list("--colors", self.colors.as_deref(), "color")?.unwrap_or_default();
        let resolved = if self.colors.is_some() || self.color_bits.is_some() {
            let request = ColorRequest::flag("--color-bits", self.color_bits.as_deref());
            let resolved =
                color_source::resolve(request, page).map_err(|e| e.into_input("--color-bits"))?;
            note(format!("colours: {}", resolved.describe()));
            Some(resolved)
        } else {
            None
        };
        let bank_mode = Modes::parse(&self.bank_mode).map_err(|_| {
            InputError::new(
                "",
                "--bank-mode",
                "exact, restricted, unrestricted, split or all (comma-separated, e.g. \
                 restricted,split)",
                format!("{:?}", self.bank_mode),
            )
        })?;
        if bank_mode != Modes::EXACT && self.banks.is_none() && self.controllers.is_none() {
            return Err(InputError::new(
                "",
                format!("--bank-mode {}", bank_mode.names()),
                "--banks or --controllers to fall back from",
                "neither",
            ));
        }
        let (mut bank_functions, mut controller_functions) = match self.dram_map.as_deref() {
            None => (
                functions("", "--bank-functions", self.bank_functions.as_deref())?,
                functions(
                    "",
                    "--controller-functions",
                    self.controller_functions.as_deref(),
                )?,
            ),
            Some(path) => dram_map_functions(path, page, note)?,
        };
        // Banks or controllers without their functions: the machine file's
        // (`[dram]`, saved by `tinct doctor --save --dram-map FILE`).
        let wants_dram = self.banks.is_some() || self.controllers.is_some();
        if wants_dram && bank_functions.is_empty() && controller_functions.is_empty() {
            let saved = tinct_sys::machine_file::MachineFile::load()?;
            if let Some((file, dram)) = saved.and_then(|(f, m)| m.dram.map(|d| (f, d))) {
                let file_name = file.display().to_string();
                let listed = |masks: &[String]| (!masks.is_empty()).then(|| masks.join(","));
                bank_functions = functions(
                    &file_name,
                    "dram.bank_functions",
                    listed(&dram.bank_functions).as_deref(),
                )?;
                controller_functions = functions(
                    &file_name,
                    "dram.controller_functions",
                    listed(&dram.controller_functions).as_deref(),
                )?;
                note(format!(
                    "DRAM functions from the machine file {}",
                    file.display()
                ));
            }
        }
        for (flag, given, masks, source) in [
            (
                "--banks",
                self.banks.is_some(),
                &bank_functions,
                "--bank-functions",
            ),
            (
                "--controllers",
                self.controllers.is_some(),
                &controller_functions,
                "--controller-functions",
            ),
        ] {
            if given && masks.is_empty() {
                return Err(InputError::new(
                    "",
                    flag,
                    format!(
                        "the DRAM functions too: {source} 0x...,0x... or --dram-map FILE (from \
                         `tinct bench dram-map`)"
                    ),
                    "none",
                ));
            }
        }
        let config = ShimConfig {
            colors,
            color_bits: resolved.as_ref().map(|r| r.bits.clone()),
            bank_mode,
            mmap: self.mmap,
            fork_keep: self.fork_keep,
            banks: optional_list("--banks", self.banks.as_deref(), "bank")?,
            controllers: optional_list("--controllers", self.controllers.as_deref(), "controller")?,
            bank_functions,
            controller_functions,
            strict: self.strict,
            stats: self.stats,
            allow_uncolored: self.allow_uncolored,
            pool_bytes,
            ..ShimConfig::colored(Vec::new())
        };
        config.validate()?;
        if !config.colors.is_empty()
            && let Some(resolved) = &resolved
        {
            config
                .check_colors_exist(resolved.colors())
                .map_err(|e| InputError {
                    field: "--colors".into(),
                    expected: format!("{}; {}", e.expected, resolved.describe()),
                    ..e
                })?;
        }
        Ok(Some(config))
    }
}

/// A list such as `0-3,8` from `flag`, with at least one entry; `example`
/// and `what` word the error, whose field is the flag (with its value).
pub fn non_empty_list(
    flag: &str,
    text: &str,
    example: &str,
    what: &str,
) -> Result<Vec<u32>, InputError> {
    let list = tinct_base::list::parse_list(text).map_err(|e| {
        InputError::new(
            "",
            format!("{flag} {text:?}"),
            format!("a list such as {example}"),
            e.reason,
        )
    })?;
    if list.is_empty() {
        return Err(InputError::new(
            "",
            flag,
            format!("at least one {what}"),
            "none",
        ));
    }
    Ok(list)
}

/// XOR masks given as text (`None`: none) in `file` (empty: on the
/// command line) at `field` (a flag or a key).
fn functions(file: &str, field: &str, text: Option<&str>) -> Result<Vec<u64>, InputError> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    XorFunctions::parse(text)
        .map(|f| f.masks().to_vec())
        .map_err(|e| {
            InputError::new(
                file,
                format!("{field} {text:?}"),
                "hexadecimal address masks such as 0x2000,0x4000",
                e.to_string(),
            )
        })
}

/// Saves the bank and controller functions of the `tinct bench dram-map`
/// file `map` (the parts a page allocator controls:
/// [`dram_map_functions`]) in this machine's file
/// ([`tinct_sys::machine_file`]), where `tinct exec --banks` then finds
/// them (`tinct doctor --save --dram-map`); says what was saved. Errors
/// are bad input at the map's file (or the machine file's).
pub fn save_dram_map(map: &Path, note: &mut dyn FnMut(String)) -> Result<String, InputError> {
    let page = tinct_sys::system::PageSize::read(&SysRoot::live()).map_or(4096, |p| p.bytes);
    let (banks, controllers) = dram_map_functions(map, page, note)?;
    let path = tinct_sys::machine_file::path();
    tinct_sys::machine_file::save_dram(&path, &banks, &controllers)?;
    Ok(format!(
        "saved {} bank and {} controller function(s) of {} in {}",
        banks.len(),
        controllers.len(),
        map.display(),
        path.display()
    ))
}

/// The bank and controller functions of a `tinct bench dram-map` file,
/// each reduced to the part a page allocator controls (functions that read
/// bits inside a page vary within a page), with what was left out noted.
/// Bad input names the file and its key.
pub fn dram_map_functions(
    path: &Path,
    page: u64,
    note: &mut dyn FnMut(String),
) -> Result<(Vec<u64>, Vec<u64>), InputError> {
    let map = DramMap::load(path)?;
    if map.physical == AddressKind::Guest {
        note(format!(
            "{}: measured on a virtual machine (guest-physical addresses): its banks are not \
             the host's",
            path.display()
        ));
    }
    let mut reduce = |what: &str, masks: &[u64]| -> Result<Vec<u64>, InputError> {
        let functions = XorFunctions::from_masks(masks.to_vec()).map_err(|e| {
            InputError::new(
                path.display().to_string(),
                format!("{what}_functions"),
                "independent address functions",
                e.to_string(),
            )
        })?;
        let (kept, lost) = functions.page_granular(page);
        if lost > 0 {
            note(format!(
                "{}: {lost} of the {what} bits read address bits inside a page and cannot be \
                 chosen by page; using the {} page-granular functions",
                path.display(),
                kept.masks().len()
            ));
        }
        Ok(kept.masks().to_vec())
    };
    let banks = reduce("bank", &map.bank_functions)?;
    let controllers = reduce("controller", &map.controller_functions)?;
    Ok((banks, controllers))
}

/// The proof (or not) that the program's heap is isolated, from the frames
/// its processes were given (the reports under `path`), through tinct-sim's
/// model of this machine's last-level cache: per process the sets it can
/// occupy and every other process that can evict its lines. The text
/// `tinct exec --stats` prints after the program's own summary.
/// `index_span_bytes` is the address space the colour bits index
/// ([`LlcModel::of_machine`]); `ended_by` is the signal that ended the
/// program, if one did (the shim writes its reports at exit, which a
/// signal skips, or when `tinct exec` asks before passing the signal on:
/// [`report_request`]).
pub fn isolation_report(path: &Path, index_span_bytes: u64, ended_by: Option<i32>) -> String {
    let reports = match tinct_mem::read_frame_reports(path) {
        Ok(reports) if !reports.is_empty() => reports,
        Ok(_) => {
            return match ended_by {
                Some(signal) => format!(
                    "tinct exec: isolation not checked: the program ended by {} before it \
                     wrote a frame report (the shim writes its summary and frame report at \
                     exit, which a signal skips, or when asked before the signal, which it \
                     was not listening for)\n",
                    tinct_sys::supervise::signal_name(signal)
                ),
                None => "tinct exec: isolation not checked: no process of the program built a \
                         colored heap (it never called malloc)\n"
                    .into(),
            };
        }
        Err(e) => return format!("tinct exec: isolation not checked: {e}\n"),
    };
    if reports.iter().any(|r| r.uncolored) {
        return "tinct exec: isolation not checked: the heap ran uncolored (frame numbers \
                unreadable)\n"
            .into();
    }
    let model = match LlcModel::of_machine(index_span_bytes) {
        Ok(model) => model,
        Err(e) => return format!("tinct exec: isolation not checked: {e}\n"),
    };
    let tasks: Vec<TaskFrames> = reports
        .iter()
        .map(|r| TaskFrames::new(format!("{}[{}]", r.command, r.pid), r.frames.clone()))
        .collect();
    let result = match check(&model.geometry, reports[0].page_size, &tasks) {
        Ok(result) => result,
        Err(e) => return format!("tinct exec: isolation not checked: {e}\n"),
    };
    let mut out = format!(
        "tinct exec: the heap in the {} model ({} sets, {} colors of {} B pages):\n",
        model.name, result.total_sets, result.colors, result.page_size
    );
    for task in &result.tasks {
        let colors: Vec<u32> = task.colors.iter().map(|&c| c as u32).collect();
        let others: Vec<String> = task
            .evicted_by
            .iter()
            .map(|s| format!("{} ({} sets)", s.task, s.sets))
            .collect();
        let _ = writeln!(
            out,
            "  {}: {} pages in colors {}, can occupy {} of {} sets ({:.1} %); {}",
            task.name,
            task.pages,
            tinct_sys::format_cpu_list(&colors),
            task.sets,
            result.total_sets,
            100.0 * task.sets as f64 / result.total_sets as f64,
            if others.is_empty() {
                "no other process of the program can evict its lines".to_string()
            } else {
                format!("shares sets with {}", others.join(", "))
            }
        );
    }
    for (report, task) in reports.iter().zip(&result.tasks) {
        let _ = writeln!(
            out,
            "  {}",
            residue_line(report, &task.name, &model, result.total_sets)
        );
        if let Some(line) = stacks_line(report, &task.name) {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// One line on a process's thread stacks, if it created threads: how
/// many had their top (where a thread starts, its descriptor and TLS) on
/// coloured pages (area pages lent to the stack, among its heap's frames
/// above while lent): the bytes lent over the whole run (a top given back
/// is lent again to a later thread, so this adds up), and those still
/// lent when the process wrote its report; how many ran on glibc's
/// uncoloured stacks, and why.
fn stacks_line(report: &tinct_mem::FrameReport, name: &str) -> Option<String> {
    let stacks = report.stacks?;
    let uncoloured = stacks.own_stack + stacks.budget + stacks.refused + stacks.executable;
    if stacks.colored + uncoloured == 0 {
        return None;
    }
    let bytes = tinct_base::units::human_bytes;
    let mut why = format!(
        "{} brought their own stack, {} found the budget spent",
        stacks.own_stack, stacks.budget
    );
    if stacks.refused > 0 {
        why.push_str(&format!(", {} refused by the kernel", stacks.refused));
    }
    if stacks.executable > 0 {
        why.push_str(&format!(
            ", {} asked for executable stacks (PT_GNU_STACK)",
            stacks.executable
        ));
    }
    Some(format!(
        "the thread stacks of {name}: {} with a coloured top ({} lent over the run; {} tops still \
         lent at exit, {}, counted in its heap; the rest of each stack is in its rest), \
         {uncoloured} on glibc's uncoloured stacks ({why})",
        stacks.colored,
        bytes(stacks.colored_bytes),
        stacks.lent,
        bytes(stacks.lent_bytes),
    ))
}

/// One line on the rest of a process's memory (its uncoloured residue:
/// code, libraries, stacks, the shim's own): its size by kind, the sets it
/// can occupy and how many of them lie outside its heap's, where its lines
/// can evict another program's partitions (kim2013 Eq. 2 assumes nothing
/// of another core does).
fn residue_line(
    report: &tinct_mem::FrameReport,
    name: &str,
    model: &LlcModel,
    total_sets: u64,
) -> String {
    let residue = match &report.residue {
        None => return format!("the rest of {name}: not reported by its shim"),
        Some(Err(why)) => return format!("the rest of {name}: not read ({why})"),
        Some(Ok(residue)) => residue,
    };
    let both = [
        TaskFrames::new("heap", report.frames.clone()),
        TaskFrames::new("rest", residue.frames.clone()),
    ];
    let Ok(sets) = check(&model.geometry, report.page_size, &both) else {
        return format!("the rest of {name}: the cache model refused its frames");
    };
    let rest = &sets.tasks[1];
    let shared = rest.evicted_by.first().map_or(0, |s| s.sets);
    let kinds: Vec<String> = residue
        .kinds
        .iter()
        .map(|(kind, bytes)| format!("{kind} {}", tinct_base::units::human_bytes(*bytes)))
        .collect();
    format!(
        "the rest of {name}, uncoloured ({}): {} pages, can occupy {} of {total_sets} sets, {} \
         of them outside its heap's, where it can evict another program's partitions",
        kinds.join(", "),
        rest.pages,
        rest.sets,
        // Sets both occupy are among the rest's own.
        rest.sets.saturating_sub(shared)
    )
}

/// The program's exit status as `tinct exec`'s: its own code, 128 + the
/// signal that killed it (as a shell reports it; signals are below 128,
/// and the sum saturates rather than wrap should one not be), else 1.
pub fn exit_status_of(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        // An exit code is the low 8 bits of what the program passed to exit.
        (Some(code), _) => code as u8,
        (None, Some(signal)) => 128u8.saturating_add(u8::try_from(signal).unwrap_or(u8::MAX)),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_program_s_status_is_passed_on_as_a_shell_reports_it() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            exit_status_of(std::process::ExitStatus::from_raw(3 << 8)),
            3
        );
        assert_eq!(exit_status_of(std::process::ExitStatus::from_raw(9)), 137);
    }

    use super::*;

    #[test]
    fn a_process_s_thread_stacks_are_named_only_when_it_made_threads() {
        let mut report = tinct_mem::FrameReport {
            pid: 7,
            command: "task".into(),
            page_size: 4096,
            uncolored: false,
            frames: Vec::new(),
            residue: None,
            stacks: None,
        };
        assert_eq!(stacks_line(&report, "task[7]"), None, "an older shim");
        report.stacks = Some(tinct_mem::ThreadStacks::default());
        assert_eq!(stacks_line(&report, "task[7]"), None, "no threads");
        report.stacks = Some(tinct_mem::ThreadStacks {
            colored: 2,
            colored_bytes: 512 << 10,
            freed: 2,
            own_stack: 1,
            budget: 3,
            refused: 0,
            executable: 0,
            lent: 1,
            lent_bytes: 256 << 10,
        });
        let line = stacks_line(&report, "task[7]").unwrap();
        assert!(
            line.starts_with(
                "the thread stacks of task[7]: 2 with a coloured top (512 KiB lent over the run; \
                 1 tops still lent at exit, 256 KiB, counted in its heap"
            ) && line.ends_with(
                "4 on glibc's uncoloured stacks (1 brought their own stack, 3 found the \
                     budget spent)"
            ),
            "{line}"
        );
        report.stacks = Some(tinct_mem::ThreadStacks {
            refused: 1,
            ..tinct_mem::ThreadStacks::default()
        });
        let line = stacks_line(&report, "task[7]").unwrap();
        assert!(line.ends_with(", 1 refused by the kernel)"), "{line}");
        report.stacks = Some(tinct_mem::ThreadStacks {
            executable: 2,
            ..tinct_mem::ThreadStacks::default()
        });
        let line = stacks_line(&report, "task[7]").unwrap();
        assert!(
            line.ends_with(", 2 asked for executable stacks (PT_GNU_STACK))"),
            "{line}"
        );
    }

    #[test]
    fn no_colours_banks_or_controllers_means_no_shim_and_bad_lists_name_their_flag() {
        let request = ExecRequest {
            bank_mode: "exact".into(),
            pool: "512MiB".into(),
            ..ExecRequest::default()
        };
        assert_eq!(request.shim_config(&mut |_| {}), Ok(None));
        let bad = ExecRequest {
            colors: Some("x".into()),
            ..request.clone()
        };
        let error = bad.shim_config(&mut |_| {}).unwrap_err();
        assert_eq!(
            (error.file.as_str(), error.field.as_str()),
            ("", "--colors \"x\"")
        );
        assert_eq!(error.expected, "a list such as 0-15,32");
        let small = ExecRequest {
            colors: Some("0".into()),
            pool: "4KiB".into(),
            ..request.clone()
        };
        assert_eq!(
            small.shim_config(&mut |_| {}),
            Err(InputError::new(
                "",
                "--pool \"4KiB\"",
                "at least 1MiB",
                "4KiB"
            ))
        );
        let no_functions = ExecRequest {
            banks: Some("1".into()),
            ..request
        };
        let error = no_functions.shim_config(&mut |_| {}).unwrap_err();
        assert_eq!(
            (error.field.as_str(), error.found.as_str()),
            ("--banks", "none")
        );
        assert!(error.expected.contains("--dram-map FILE"), "{error}");
    }
}
