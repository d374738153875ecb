//! The options of each `tinct bench` subcommand, turned into the bench
//! library's parameter structs.

use super::common::{CommonArgs, choice, duration, size};
use std::path::PathBuf;
use tinct_bench::banks::kernels::Kernel as BankKernel;
use tinct_bench::isolation::reservation::ReservationChoice;
use tinct_bench::wcet_profile::condition::Condition;
use tinct_bench::wcet_profile::statistic::Statistic;
use tinct_bench::{
    banks, calibrate, coherence, crpd, dram_map, isolation, overheads, pipeline, wcet_profile,
};
use tinct_core::units::{Bytes, Nanos};

/// Options of `tinct bench calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct Calibrate {
    #[command(flatten)]
    pub common: CommonArgs,
    /// N_P: the number of cache partitions; a partition is LLC size / N_P.
    #[arg(long, default_value_t = calibrate::DEFAULT_PARTITIONS)]
    pub partitions: u32,
    /// Largest pointer-chase working set, e.g. `256MiB` (default 4 × LLC,
    /// at least 64 MiB, at most 512 MiB; with `--quick` 2 × LLC).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub max_size: Option<Bytes>,
}

impl Calibrate {
    /// The library's parameters.
    pub fn params(&self) -> calibrate::Params {
        calibrate::Params {
            common: self.common.options(),
            partitions: self.partitions,
            max_size: self.max_size,
        }
    }
}

/// Options of `tinct bench overheads`.
#[derive(Debug, Clone, clap::Args)]
pub struct Overheads {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Seconds of release-latency measurement and of the busy loop each
    /// (default 10; `--quick`: 1).
    #[arg(long, value_name = "N")]
    pub seconds: Option<u64>,
    /// Store the overheads in this calibration file (default: this
    /// machine's saved calibration, when it exists and the run is not
    /// `--quick`).
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
}

impl Overheads {
    /// The library's parameters, storing into `--calibration` or this
    /// machine's `saved` calibration; with the note to show when nothing
    /// is stored.
    pub fn params(&self, saved: Option<PathBuf>) -> (overheads::Params, Option<&'static str>) {
        overheads::Params {
            common: self.common.options(),
            seconds: self.seconds,
            calibration: self.calibration.clone(),
        }
        .storing(saved)
    }
}

/// Options of `tinct bench crpd`.
#[derive(Debug, Clone, clap::Args)]
pub struct Crpd {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Cache level to sweep (1, 2, 3, ...); repeat for several. Default:
    /// every data cache level (with `--quick`: L2, or the LLC if there is no L2).
    #[arg(long = "level", value_name = "N")]
    pub levels: Vec<u8>,
    /// Run under SCHED_OTHER even when SCHED_FIFO is allowed.
    #[arg(long)]
    pub no_fifo: bool,
    /// The victim's cache: `data` (a pointer chase) or `instruction`
    /// (generated code with a jump per cache line, as Sebek measured;
    /// x86-64 only). Instruction mode sweeps the L1i unless `--level` says.
    #[arg(long, value_parser = choice::<crpd::CacheKind>(), default_value_t)]
    pub cache: crpd::CacheKind,
    /// With `--cache instruction`: instructions executed per cache line,
    /// cycling over the lines (1 = every instruction a new line: 100 %
    /// misses; 2 = 50 %; `1,2` = 2 misses in 3). Default 1.
    #[arg(long, value_delimiter = ',', value_name = "K,...")]
    pub words_per_line: Vec<u32>,
    /// With `--cache instruction`: visit the code's lines in a shuffled
    /// order (default; a current core fetches address-ordered code ahead)
    /// or in address order, as on Sebek's MPC750.
    #[arg(long, value_parser = choice::<crpd::CodeOrder>(), default_value_t)]
    pub code_order: crpd::CodeOrder,
}

impl Crpd {
    /// The library's parameters.
    pub fn params(&self) -> crpd::Params {
        crpd::Params {
            common: self.common.options(),
            levels: self.levels.clone(),
            no_fifo: self.no_fifo,
            cache: self.cache,
            words_per_line: self.words_per_line.clone(),
            code_order: self.code_order,
        }
    }
}

/// Options of `tinct bench wcet-profile`.
#[derive(Debug, Clone, clap::Args)]
pub struct WcetProfile {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Take the body, period and memory of a task from this task-set file.
    #[arg(long, value_name = "FILE", requires = "task")]
    pub taskset: Option<PathBuf>,
    /// The task of `--taskset` to profile, and the task whose `wcet` table
    /// `--write-taskset` replaces.
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// Job kernel: chase, read, write, rmw, compute, mixed (without --taskset).
    #[arg(long, default_value_t = wcet_profile::Params::default().kernel)]
    pub kernel: String,
    /// Profile a program of yours instead of a kernel: the program and its
    /// arguments, last on the command line (`--command ./filter --rows 64`);
    /// it answers jobs over --protocol, as a task body does (docs/FORMAT.md).
    #[arg(
        long,
        num_args = 1..,
        allow_hyphen_values = true,
        value_name = "PROGRAM ARG",
        conflicts_with_all = ["taskset", "kernel", "iterations", "target", "memory_percent"],
        requires = "working_set"
    )]
    pub command: Vec<String>,
    /// How --command's jobs are asked for: lines (a line each way) or
    /// futex (tinct_job_wait / tinct_job_done).
    #[arg(long, default_value = "lines", value_parser = protocol, requires = "command")]
    pub protocol: tinct_core::model::JobProtocol,
    /// Working set (without --taskset; default 4MiB, with --quick 1MiB; with
    /// --command, required: the program's memory M_i, written into the task
    /// set and sizing the shim's pool).
    #[arg(long, value_parser = size)]
    pub working_set: Option<Bytes>,
    /// Iterations per job (default: one pass over the working set, or
    /// 10^6 for `compute`).
    #[arg(long, conflicts_with = "target")]
    pub iterations: Option<u64>,
    /// Job length calibrated once at full cache, e.g. `5ms` (then fixed for every p).
    #[arg(long, value_parser = duration)]
    pub target: Option<Nanos>,
    /// For `mixed`: percent of the job in the memory phase.
    #[arg(long)]
    pub memory_percent: Option<u8>,
    /// Task name in the written task set (default: the task's, or `profiled`).
    #[arg(long)]
    pub name: Option<String>,
    /// Period of the written task (default: the task's, or 10 × C^1 rounded up to 1 ms).
    #[arg(long, value_parser = duration)]
    pub period: Option<Nanos>,
    /// N_P (default: the task set's, or 32).
    #[arg(long)]
    pub partitions: Option<u32>,
    /// Partition counts to profile, a list like `1-8,16,32` (default 1..N_P;
    /// with --quick 1, N_P/4, N_P/2, N_P).
    #[arg(long = "p", value_name = "LIST")]
    pub p_list: Option<String>,
    /// Measured jobs per worker launch (default 100, quick 5).
    #[arg(long)]
    pub jobs: Option<u32>,
    /// Δ for the written task set, e.g. `45.3us` (default: the task set's,
    /// else measured here as `tinct bench calibrate` does).
    #[arg(long, value_parser = duration)]
    pub refill: Option<Nanos>,
    /// Path of libtinct_preload.so (default: $TINCT_PRELOAD_LIB, else next to
    /// tinct, else the copy embedded in tinct, as `tinct exec` finds it).
    #[arg(long, value_name = "PATH")]
    pub preload: Option<PathBuf>,
    /// Run without the shim: the working set comes from the ordinary heap and
    /// partitions are NOT enforced (every p sees the whole cache; the output says so).
    #[arg(long)]
    pub uncolored: bool,
    /// Run the workers under SCHED_OTHER even when SCHED_FIFO is allowed.
    #[arg(long)]
    pub no_fifo: bool,
    /// Conditions to profile under, a list of alone (kim2013's setting),
    /// cold (working set flushed from every cache before each job), co-run
    /// (aggressors on the other CPUs of --cpus), cold-co-run.
    #[arg(long, value_name = "LIST", default_value = "alone,cold,co-run", value_parser = conditions)]
    pub conditions: ConditionList,
    /// Memory of the co-runners: colored (the partitions the task does not
    /// use), uncolored, or auto (colored when the colour probe finds
    /// colouring effective here).
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub co_runners: wcet_profile::CoRunnerChoice,
    /// Jobs per block of the EVT fit (block maxima; default 10).
    #[arg(long, value_name = "N")]
    pub block_size: Option<u64>,
    /// Per-job exceedance probabilities to state the pWCET at, e.g.
    /// `1e-9,1e-12` (default 1e-9).
    #[arg(long, value_name = "P,...", value_delimiter = ',')]
    pub exceedance: Vec<f64>,
    /// The statistic written as C^p: max (kim2013), a percentile such as
    /// p99.9, or pwcet:PROBABILITY such as pwcet:1e-9 (refused where the
    /// data do not support an EVT fit).
    #[arg(long = "use", value_name = "STATISTIC", default_value = "max")]
    pub statistic: Statistic,
    /// Write the C^p table into this task-set file: the `wcet` of task
    /// `--task` is replaced (everything else kept), or the file is created.
    #[arg(long, value_name = "FILE", requires = "task")]
    pub write_taskset: Option<PathBuf>,
}

/// `--conditions`: one value holding the list (clap would read a `Vec` as
/// repeated options).
#[derive(Debug, Clone)]
pub struct ConditionList(pub Vec<Condition>);

fn protocol(text: &str) -> Result<tinct_core::model::JobProtocol, String> {
    tinct_core::model::JobProtocol::ALL
        .iter()
        .find(|(name, _)| *name == text)
        .map(|(_, protocol)| *protocol)
        .ok_or_else(|| {
            let names: Vec<&str> = tinct_core::model::JobProtocol::ALL
                .iter()
                .map(|(n, _)| *n)
                .collect();
            format!("expected one of {}, found `{text}`", names.join(", "))
        })
}

fn conditions(text: &str) -> Result<ConditionList, String> {
    Condition::parse_list(text)
        .map(ConditionList)
        .map_err(|e| e.to_string())
}

impl WcetProfile {
    /// The library's parameters.
    pub fn params(&self) -> wcet_profile::Params {
        wcet_profile::Params {
            common: self.common.options(),
            taskset: self.taskset.clone(),
            task: self.task.clone(),
            kernel: self.kernel.clone(),
            command: self.command.clone(),
            protocol: self.protocol,
            working_set: self.working_set,
            iterations: self.iterations,
            target: self.target,
            memory_percent: self.memory_percent,
            name: self.name.clone(),
            period: self.period,
            partitions: self.partitions,
            p_list: self.p_list.clone(),
            jobs: self.jobs,
            refill: self.refill,
            preload: self.preload.clone(),
            uncolored: self.uncolored,
            no_fifo: self.no_fifo,
            conditions: self.conditions.0.clone(),
            co_runners: self.co_runners,
            block_size: self.block_size,
            exceedances: self.exceedance.clone(),
            statistic: self.statistic,
            write_taskset: self.write_taskset.clone(),
        }
    }
}

/// The hidden `tinct bench wcet-corunner`: the co-runners of one launch.
#[derive(Debug, Clone, clap::Args)]
pub struct WcetCorunner {
    /// The job, as JSON (written by `tinct bench wcet-profile`).
    pub job: String,
}

/// The hidden `tinct bench wcet-worker`: one profiling launch.
#[derive(Debug, Clone, clap::Args)]
pub struct WcetWorker {
    /// The job, as JSON (written by `tinct bench wcet-profile`).
    pub job: String,
}

/// Options of `tinct bench coherence`.
#[derive(Debug, Clone, clap::Args)]
pub struct Coherence {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Array dimensions to sweep (ROWS = COLS), e.g. `64,256,1024`
    /// (default 64..2048 as in the paper; `--quick`: 64,512).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    pub sizes: Option<Vec<usize>>,
    /// Element updates per function per run; the repetition loop count of a
    /// size is this divided by ROWS x COLS (default 2^24; `--quick`: 2^21).
    #[arg(long, value_name = "N", conflicts_with = "repetitions")]
    pub work: Option<u64>,
    /// The paper's loop instead: this many repetitions at every size
    /// (Gracioli et al. ran 10000).
    #[arg(long, value_name = "N")]
    pub repetitions: Option<u64>,
    /// Run the measuring threads under SCHED_FIFO with this priority
    /// (1-99; needs root or CAP_SYS_NICE). Recommended on a busy machine.
    #[arg(long, value_name = "PRIORITY")]
    pub fifo: Option<u8>,
    /// Increments per thread in the false-sharing variant
    /// (default 2^25; `--quick`: 2^20).
    #[arg(long, value_name = "N")]
    pub increments: Option<u64>,
}

impl Coherence {
    /// The library's parameters.
    pub fn params(&self) -> coherence::Params {
        coherence::Params {
            common: self.common.options(),
            sizes: self.sizes.clone(),
            work: self.work,
            repetitions: self.repetitions,
            fifo: self.fifo,
            increments: self.increments,
        }
    }
}

/// Options of `tinct bench banks`.
#[derive(Debug, Clone, clap::Args)]
pub struct Banks {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Threads, one per CPU of `--cpus` (default: every allowed CPU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Memory per thread, split into the three STREAM arrays
    /// (default 48MiB; `--quick`: 3MiB).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub size: Option<Bytes>,
    /// DRAM bank functions as XOR masks, DRAMA style (`0x2000,0x44000`);
    /// every mask must read only bits at or above the page size.
    #[arg(long, value_name = "MASKS")]
    pub bank_functions: Option<String>,
    /// DRAM controller (channel) functions as XOR masks.
    #[arg(long, value_name = "MASKS")]
    pub controller_functions: Option<String>,
    /// The DRAM mapping file `tinct bench dram-map` wrote, instead of
    /// --bank-functions / --controller-functions (its functions that read
    /// bits inside a page are left out: no page allocation can choose them).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["bank_functions", "controller_functions"])]
    pub dram_map: Option<std::path::PathBuf>,
    /// chandru-mueller Algorithm 1's fallbacks when a thread's bank runs
    /// out, comma-separated: exact (none), restricted, unrestricted, split.
    #[arg(long, value_name = "MODES", default_value = "exact", value_parser = bank_modes)]
    pub bank_mode: tinct_mem::Modes,
    /// Kernels to run: copy, scale, add, triad, random, integer-sort
    /// (default: all).
    #[arg(long, value_delimiter = ',')]
    pub kernels: Option<Vec<BankKernel>>,
    /// Composite bubblesort configurations THREADS/PAGES, comma-separated
    /// (default the paper's 32/2,8/10,32/10,48/10; `--quick`: N/2,N/10 with N = min(4, CPUs);
    /// `none` for none).
    #[arg(long, value_name = "T/P,...", value_parser = composite_list)]
    pub composite: Option<CompositeList>,
    /// Run the measuring threads under SCHED_FIFO with this priority
    /// (1-99; needs root or CAP_SYS_NICE). Recommended on a busy machine.
    #[arg(long, value_name = "PRIORITY")]
    pub fifo: Option<u8>,
}

/// Composite configurations as (threads, pages per thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompositeList(pub Vec<(usize, usize)>);

fn bank_modes(text: &str) -> Result<tinct_mem::Modes, String> {
    tinct_mem::Modes::parse(text).map_err(|e| e.to_string())
}

fn composite_list(text: &str) -> Result<CompositeList, String> {
    banks::composite::parse_configurations(text)
        .map(CompositeList)
        .map_err(|e| e.to_string())
}

impl Banks {
    /// The library's parameters.
    pub fn params(&self) -> banks::Params {
        banks::Params {
            common: self.common.options(),
            threads: self.threads,
            size: self.size,
            bank_functions: self.bank_functions.clone(),
            controller_functions: self.controller_functions.clone(),
            dram_map: self.dram_map.clone(),
            bank_mode: self.bank_mode,
            kernels: self.kernels.clone(),
            composite: self.composite.clone().map(|c| c.0),
            fifo: self.fifo,
        }
    }
}

/// Options of `tinct bench dram-map`.
#[derive(Debug, Clone, clap::Args)]
pub struct DramMap {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Memory to sample addresses from; it must span the address bits the
    /// functions read (default 1GiB; `--quick`: 64MiB).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub buffer: Option<Bytes>,
    /// Addresses sampled (default 2048; `--quick`: 512).
    #[arg(long, value_name = "N")]
    pub samples: Option<usize>,
    /// Timed repetitions per measurement, of which the median counts
    /// (default 32; `--quick`: 8).
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
}

impl DramMap {
    /// The library's parameters.
    pub fn params(&self) -> dram_map::Params {
        dram_map::Params {
            common: self.common.options(),
            buffer: self.buffer,
            samples: self.samples,
            rounds: self.rounds,
        }
    }
}

/// Options of `tinct bench isolation`.
#[derive(Debug, Clone, clap::Args)]
pub struct Isolation {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Victim working set (default: a quarter of the LLC; `--quick`: 2MiB).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub victim_size: Option<Bytes>,
    /// Working set of each aggressor (default: twice the LLC; `--quick`: 8MiB).
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub aggressor_size: Option<Bytes>,
    /// Recorded jobs per condition and round (default 50; `--quick`: 10).
    #[arg(long, value_name = "N")]
    pub jobs: Option<u32>,
    /// Percentage of the page colors reserved for the victim (the
    /// aggressors get the rest).
    #[arg(long, value_name = "PERCENT", default_value_t = isolation::Params::default().victim_colors)]
    pub victim_colors: u32,
    /// Run the victim and the aggressors under SCHED_FIFO with this
    /// priority (1-99; needs root or CAP_SYS_NICE), as kim2013 ran its tasks.
    #[arg(long, value_name = "PRIORITY")]
    pub fifo: Option<u8>,
    /// How the reserved conditions reserve the cache: coloring (page
    /// coloring), resctrl (L3 cache allocation), or auto (resctrl when
    /// mounted and offering L3 allocation, else coloring).
    #[arg(long, default_value = "auto")]
    pub reservation: ReservationChoice,
    /// Where resctrl is mounted (a fake tree in tests).
    #[arg(long, value_name = "DIR", default_value = tinct_sys::resctrl::DEFAULT_MOUNT)]
    pub resctrl_root: PathBuf,
}

impl Isolation {
    /// The library's parameters.
    pub fn params(&self) -> isolation::Params {
        isolation::Params {
            common: self.common.options(),
            victim_size: self.victim_size,
            aggressor_size: self.aggressor_size,
            jobs: self.jobs,
            victim_colors: self.victim_colors,
            fifo: self.fifo,
            reservation: self.reservation,
            resctrl_root: self.resctrl_root.clone(),
        }
    }
}

/// Options of `tinct bench pipeline`.
#[derive(Debug, Clone, clap::Args)]
pub struct Pipeline {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Waves (leaves of the tree; demarchi Figure 2 has 4).
    #[arg(long, default_value_t = pipeline::Params::default().waves)]
    pub waves: u32,
    /// Mixer levels: each mixes pairs of the level below, the last one
    /// must be a single mixer (Figure 2 has 2).
    #[arg(long, default_value_t = pipeline::Params::default().levels)]
    pub levels: u32,
    /// Bytes of one packet, e.g. `16KiB`.
    #[arg(long, value_name = "SIZE", value_parser = size, default_value_t = pipeline::Params::default().packet)]
    pub packet: Bytes,
    /// Computation per packet of each wave and mixer, e.g. `20us`.
    #[arg(long, value_name = "TIME", value_parser = duration, default_value_t = pipeline::Params::default().work)]
    pub work: Nanos,
    /// Samples per policy (default 150000 as in the paper; `--quick`: 600).
    #[arg(long, value_name = "N")]
    pub samples: Option<u64>,
    /// Policies to compare, comma-separated (`os` is the reference of
    /// Table I's improvements).
    #[arg(long, value_delimiter = ',', default_value = "os,affinity,static")]
    pub policies: Vec<tinct_rt::pipeline::PlacementPolicy>,
    /// Busy SCHED_OTHER threads running beside the tree (background load).
    #[arg(long, value_name = "N", default_value_t = pipeline::Params::default().background)]
    pub background: u32,
}

impl Pipeline {
    /// The library's parameters.
    pub fn params(&self) -> pipeline::Params {
        pipeline::Params {
            common: self.common.options(),
            waves: self.waves,
            levels: self.levels,
            packet: self.packet,
            work: self.work,
            samples: self.samples,
            policies: self.policies.clone(),
            background: self.background,
        }
    }
}
