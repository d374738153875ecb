//! `tinct bench isolation`: inter-core cache interference with and without
//! cache reservation, after kim2013 Section IV-C and Figure 7.
//!
//! A cache-sensitive victim runs jobs on one CPU while aggressors sweep large
//! working sets on the other CPUs. Four conditions, interleaved round by
//! round:
//! * **alone, reserved**: the victim alone, its pages from its own half of
//!   the page colors (its isolated WCET, as kim2013 profiles it);
//! * **contended, reserved**: the same, with aggressors whose pages come
//!   from the other, disjoint half of the colors (tinct-mem colored
//!   allocation, kim2013 Section III-C);
//! * **alone, unreserved** and **contended, unreserved**: everybody on the
//!   ordinary heap, competing for the whole cache.
//!
//! Each condition's per-job execution times give its distribution; the
//! inflation ratio is contended / alone (WCET, p99 and median) with and
//! without reservation. The first job of every block is a warm-up and is not
//! recorded (kim2013 Section III-B treats cache warm-up as extrinsic).
//!
//! Reservation is by page coloring, or by resctrl L3 cache allocation
//! (`--reservation resctrl`, or `auto` when resctrl offers it): then the
//! victim thread and the aggressor threads run in two control groups with
//! disjoint capacity masks, and their memory is ordinary heap (see
//! [`reservation`]).

pub mod kernels;
pub mod reservation;

use crate::scheduling_and_load::{RunConditions, thread_cpu_time_ns};
use crate::harness::schema::Kind;
use crate::harness::{
    BenchOptions, Durations, Interleaved, LineChart, Machine, OutputDir, Progress, RunHeader,
    Series, SeriesStyle, Summary, machine::human_bytes, pin::PinGuard,
};
use crate::page_placement::PagedMemory;
use crate::pinned_threads::nanos;
use crate::{Error, Result};
use kernels::Chase;
use reservation::{Mechanism, ResctrlRecord, ResctrlReservation, ReservationChoice};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// Options of `tinct bench isolation`.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Common bench options.
    #[command(flatten)]
    pub common: BenchOptions,
    /// Victim working set (default: a quarter of the LLC; `--quick`: 2MiB).
    #[arg(long, value_name = "SIZE")]
    pub victim_size: Option<String>,
    /// Working set of each aggressor (default: twice the LLC; `--quick`: 8MiB).
    #[arg(long, value_name = "SIZE")]
    pub aggressor_size: Option<String>,
    /// Recorded jobs per condition and round (default 50; `--quick`: 10).
    #[arg(long, value_name = "N")]
    pub jobs: Option<u32>,
    /// Percentage of the page colors reserved for the victim (the
    /// aggressors get the rest).
    #[arg(long, value_name = "PERCENT", default_value_t = 50)]
    pub victim_colors: u32,
    /// Run the victim and the aggressors under SCHED_FIFO with this
    /// priority (1-99; needs root or CAP_SYS_NICE), as kim2013 ran its tasks.
    #[arg(long, value_name = "PRIORITY")]
    pub fifo: Option<u8>,
    /// How the reserved conditions reserve the cache: page coloring,
    /// resctrl L3 cache allocation, or auto (resctrl when mounted and
    /// offering L3 allocation, else coloring).
    #[arg(long, value_enum, default_value_t = ReservationChoice::Auto)]
    pub reservation: ReservationChoice,
    /// Where resctrl is mounted (a fake tree in tests).
    #[arg(long, value_name = "DIR", default_value = tinct_sys::resctrl_backend::DEFAULT_MOUNT)]
    pub resctrl_root: PathBuf,
}

/// One of the four conditions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// Victim alone, reserved colors.
    AloneReserved,
    /// Victim and aggressors on disjoint colors.
    ContendedReserved,
    /// Victim alone on the heap.
    AloneUnreserved,
    /// Victim and aggressors on the heap.
    ContendedUnreserved,
}

impl Condition {
    /// Every condition, in output order.
    pub const ALL: [Condition; 4] = [
        Condition::AloneReserved,
        Condition::ContendedReserved,
        Condition::AloneUnreserved,
        Condition::ContendedUnreserved,
    ];

    /// The name used in tables, JSON and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Condition::AloneReserved => "alone-reserved",
            Condition::ContendedReserved => "contended-reserved",
            Condition::AloneUnreserved => "alone-unreserved",
            Condition::ContendedUnreserved => "contended-unreserved",
        }
    }

    fn reserved(self) -> bool {
        matches!(
            self,
            Condition::AloneReserved | Condition::ContendedReserved
        )
    }

    fn contended(self) -> bool {
        matches!(
            self,
            Condition::ContendedReserved | Condition::ContendedUnreserved
        )
    }
}

/// The victim's per-job execution times under one condition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionResult {
    /// The condition.
    pub condition: Condition,
    /// The cache was reserved (colors or resctrl masks) for the victim.
    pub reserved: bool,
    /// Aggressors running.
    pub contended: bool,
    /// Distribution of the recorded jobs' execution times: CPU time the
    /// victim thread consumed per job (time preempted by other processes is
    /// not in it).
    pub jobs: Durations,
    /// Distribution of the recorded jobs' wall-clock times (includes any
    /// time the victim was preempted).
    pub jobs_wall: Durations,
}

/// Contended over alone, for one reservation setting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Inflation {
    /// WCET(contended) / WCET(alone).
    pub wcet: f64,
    /// p99(contended) / p99(alone).
    pub p99: f64,
    /// median(contended) / median(alone).
    pub median: f64,
}

/// Parameters of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parameters {
    /// CPU of the victim.
    pub victim_cpu: u32,
    /// CPUs of the aggressors (one aggressor each).
    pub aggressor_cpus: Vec<u32>,
    /// Victim working set in bytes.
    pub victim_bytes: u64,
    /// Each aggressor's working set in bytes.
    pub aggressor_bytes: u64,
    /// Recorded jobs per condition and round.
    pub jobs_per_round: u32,
    /// Page colors of the machine's LLC.
    pub colors: u32,
    /// Colors reserved for the victim (`0..victim_colors`); the aggressors
    /// have the rest (used when the reservation is by page coloring).
    pub victim_colors: u32,
    /// Unrecorded warm-up rounds.
    pub warmup_rounds: u32,
}

/// The result of `tinct bench isolation` (written as `isolation.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Bench, options, machine (the harness's common header).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Parameters.
    pub parameters: Parameters,
    /// Scheduling policy and machine load during the run.
    pub run_conditions: RunConditions,
    /// How the cache was reserved (`page-coloring` or `resctrl`).
    pub reservation: String,
    /// Why this mechanism was chosen.
    pub reservation_reason: String,
    /// What resctrl offers here.
    pub resctrl: String,
    /// The resctrl groups, masks and monitoring readings, if resctrl
    /// reserved the cache.
    pub resctrl_groups: Option<ResctrlRecord>,
    /// Why physical placement is unknown (frames unreadable), if so.
    pub frames_unreadable: Option<String>,
    /// Colored pages whose frame changed during the run (`null` if unknown).
    pub moved_pages: Option<usize>,
    /// One entry per condition.
    pub conditions: Vec<ConditionResult>,
    /// Inflation with cache reservation.
    pub inflation_reserved: Inflation,
    /// Inflation without cache reservation.
    pub inflation_unreserved: Inflation,
    /// Caveats.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

/// The JSON fields `isolation.json` must have beyond [`crate::harness::schema::COMMON`].
pub const SCHEMA: &[(&str, Kind)] = &[
    ("parameters.victim_cpu", Kind::Unsigned),
    ("parameters.aggressor_cpus", Kind::Array),
    ("parameters.victim_bytes", Kind::Unsigned),
    ("parameters.colors", Kind::Unsigned),
    ("parameters.victim_colors", Kind::Unsigned),
    ("reservation", Kind::String),
    ("reservation_reason", Kind::String),
    ("resctrl", Kind::String),
    ("conditions[].condition", Kind::String),
    ("conditions[].reserved", Kind::Bool),
    ("conditions[].contended", Kind::Bool),
    ("conditions[].jobs", Kind::Object),
    ("conditions[].jobs_wall", Kind::Object),
    ("inflation_reserved.wcet", Kind::Number),
    ("inflation_reserved.median", Kind::Number),
    ("inflation_unreserved.wcet", Kind::Number),
    ("inflation_unreserved.median", Kind::Number),
    ("run_conditions", Kind::Object),
    ("run_conditions.load_average_start", Kind::NumberOrNull),
    ("notes", Kind::Array),
    ("files", Kind::Array),
];

const WARMUP_ROUNDS: u32 = 1;
const ARENA_SLACK: f64 = 1.5;

fn size_option(option: &str, text: Option<&str>, default: u64) -> Result<u64> {
    let bytes = match text {
        Some(text) => {
            tinct_core::units::parse_size(text)
                .map_err(|e| Error::InvalidInput(format!("{option}: {e}")))?
                .0
        }
        None => default,
    };
    if bytes < 4096 {
        return Err(Error::InvalidInput(format!(
            "{option}: expected at least one page (4KiB), found {bytes} bytes"
        )));
    }
    Ok(bytes)
}

/// One thread's memory in each reservation setting.
struct Memories<'a> {
    victim_reserved: Chase<'a>,
    victim_heap: Chase<'a>,
    aggressors_reserved: Vec<Vec<&'a mut [u64]>>,
    aggressors_heap: Vec<Vec<&'a mut [u64]>>,
}

/// Runs the bench, writes `isolation.json`, `isolation.csv` (every job)
/// and `isolation.svg` (per-job times, as kim2013 Figure 7), and returns the report.
pub fn run(args: &Args) -> Result<Report> {
    let common = &args.common;
    let quick = common.quick;
    let reps = common.reps_or(3, 10)?;
    let cpus = common.cpus(2)?;
    let machine = Machine::describe();
    let llc = machine.llc().map_or(32 << 20, |c| c.size_bytes);
    let victim_bytes = size_option(
        "--victim-size",
        args.victim_size.as_deref(),
        if quick { 2 << 20 } else { llc / 4 },
    )?;
    let aggressor_bytes = size_option(
        "--aggressor-size",
        args.aggressor_size.as_deref(),
        if quick { 8 << 20 } else { 2 * llc },
    )?;
    let jobs_per_round = args.jobs.unwrap_or(if quick { 10 } else { 50 });
    if jobs_per_round == 0 {
        return Err(Error::InvalidInput(
            "--jobs: expected at least 1, found 0".into(),
        ));
    }
    if args.victim_colors == 0 || args.victim_colors >= 100 {
        return Err(Error::InvalidInput(format!(
            "--victim-colors: expected a percentage in 1..=99, found {}",
            args.victim_colors
        )));
    }
    let mechanism = reservation::choose(args.reservation, &args.resctrl_root)?;
    let by_resctrl = matches!(mechanism, Mechanism::Resctrl(..));
    let mapping = tinct_mem::machine_mapping(&tinct_mem::mapping::LayoutSpec::default())
        .map_err(|e| Error::Measurement(format!("page colors of this machine: {e}")))?;
    let colors = mapping.colors();
    if colors < 2 && !by_resctrl {
        return Err(Error::Measurement(format!(
            "the last-level cache has {colors} page color: reservation by coloring needs at least 2"
        )));
    }
    let victim_colors = (colors * args.victim_colors / 100).clamp(1, colors.max(2) - 1);
    let victim_set: Vec<u32> = (0..victim_colors).collect();
    let aggressor_set: Vec<u32> = (victim_colors..colors).collect();
    let page_bytes = mapping.page_size;
    let victim_pages = victim_bytes.div_ceil(page_bytes) as usize;
    let aggressor_pages = aggressor_bytes.div_ceil(page_bytes) as usize;
    let aggressor_cpus: Vec<u32> = cpus[1..].to_vec();
    let aggressors = aggressor_cpus.len();

    // Colored arena: each color set must hold its pages, with slack.
    let victim_need = victim_bytes as f64 * f64::from(colors) / f64::from(victim_colors);
    let aggressor_need = (aggressor_bytes * aggressors as u64) as f64 * f64::from(colors)
        / f64::from(colors - victim_colors);
    let arena_bytes = (victim_need.max(aggressor_need) * ARENA_SLACK) as u64;
    let victim_share = victim_pages.div_ceil(victim_set.len());
    let aggressor_share = aggressors * aggressor_pages.div_ceil(aggressor_set.len());
    // With resctrl, the reserved conditions use heap memory of their own
    // (the groups' masks reserve the cache); with coloring, a colored arena.
    let mut colored = if by_resctrl {
        None
    } else {
        let mut arena = PagedMemory::new_fitting(&mapping, arena_bytes, |memory| {
            victim_set
                .iter()
                .all(|&c| memory.free_in_color(c) >= victim_share)
                && aggressor_set
                    .iter()
                    .all(|&c| memory.free_in_color(c) >= aggressor_share)
        })?;
        let mut groups = vec![arena.take_colored(&victim_set, victim_pages)?];
        for _ in 0..aggressors {
            groups.push(arena.take_colored(&aggressor_set, aggressor_pages)?);
        }
        Some((arena, groups))
    };
    let frames_unreadable = colored
        .as_ref()
        .and_then(|(arena, _)| arena.placement_unknown().map(str::to_string));
    let page_words = page_bytes as usize / 8;
    let heap = |pages: usize, fill: u64| vec![fill; pages * page_words];
    let mut victim_heap = heap(victim_pages, 0);
    let mut aggressor_heaps: Vec<Vec<u64>> =
        (0..aggressors).map(|_| heap(aggressor_pages, 1)).collect();
    let (reserved_victim_pages, reserved_aggressor_pages) = if by_resctrl {
        (victim_pages, aggressor_pages)
    } else {
        (0, 0)
    };
    let mut victim_heap_reserved = heap(reserved_victim_pages, 0);
    let mut aggressor_heaps_reserved: Vec<Vec<u64>> = (0..aggressors)
        .map(|_| heap(reserved_aggressor_pages, 1))
        .collect();
    let (reservation_reason, resctrl_reservation) = match mechanism {
        Mechanism::Coloring(why) => (why, None),
        Mechanism::Resctrl(resctrl, l3) => {
            let why = format!(
                "L3 cache allocation offered by resctrl at {} ({} mask bits, min {}, domains {:?})",
                resctrl.mount().display(),
                l3.cbm_bits,
                l3.min_cbm_bits,
                l3.domains
            );
            let groups = ResctrlReservation::create(resctrl, l3, args.victim_colors)?;
            (why, Some(groups))
        }
    };

    let mut job_times: Vec<Vec<JobTime>> = vec![Vec::new(); Condition::ALL.len()];
    let total = u64::from(reps + WARMUP_ROUNDS) * Condition::ALL.len() as u64;
    let progress = Progress::new(total, "isolation", !common.no_progress);
    let mut run_conditions = RunConditions::start(args.fifo)?;
    let measured = (|| -> Result<()> {
        let (victim_reserved, aggressors_reserved) = match &mut colored {
            Some((arena, groups)) => {
                let mut split = arena.split(groups)?.into_iter();
                let victim = Chase::new(split.next().unwrap_or_default(), common.seed);
                (victim, split.collect())
            }
            None => (
                Chase::new(
                    victim_heap_reserved.chunks_exact_mut(page_words).collect(),
                    common.seed,
                ),
                aggressor_heaps_reserved
                    .iter_mut()
                    .map(|h| h.chunks_exact_mut(page_words).collect())
                    .collect(),
            ),
        };
        let mut memories = Memories {
            victim_reserved,
            victim_heap: Chase::new(
                victim_heap.chunks_exact_mut(page_words).collect(),
                common.seed,
            ),
            aggressors_reserved,
            aggressors_heap: aggressor_heaps
                .iter_mut()
                .map(|h| h.chunks_exact_mut(page_words).collect())
                .collect(),
        };
        let names = Condition::ALL.map(Condition::name);
        let _pin = PinGuard::pin(cpus[0])?;
        run_conditions.apply_to_current_thread()?;
        let mut round = 0u32;
        Interleaved::new(names, reps)
            .warmup(WARMUP_ROUNDS)
            .seed(common.seed)
            .run(&progress, |c| {
                let condition = Condition::ALL[c];
                progress.set_message(condition.name());
                let times = run_block(
                    &mut memories,
                    condition,
                    jobs_per_round,
                    &aggressor_cpus,
                    args.fifo,
                    resctrl_reservation.as_ref(),
                )?;
                // The first `WARMUP_ROUNDS` calls per condition are warm-up.
                round += 1;
                if round > WARMUP_ROUNDS * Condition::ALL.len() as u32 {
                    job_times[c].extend_from_slice(&times);
                }
                Ok::<u64, Error>(times.iter().map(|t| t.cpu_ns).max().unwrap_or(0))
            })?;
        Ok(())
    })();
    if args.fifo.is_some() {
        // Back to SCHED_OTHER before anything else runs on this thread.
        tinct_sys::sched::set_other()?;
    }
    measured?;
    // Reads the groups' counters and removes them (dropping removes them
    // on every earlier error return).
    let resctrl_groups = resctrl_reservation
        .map(ResctrlReservation::finish)
        .transpose()?;
    progress.finish();
    run_conditions.finish();
    let moved_pages = colored.as_ref().and_then(|(arena, _)| arena.moved_pages());

    let mut conditions = Vec::with_capacity(Condition::ALL.len());
    for (c, &condition) in Condition::ALL.iter().enumerate() {
        let cpu: Vec<u64> = job_times[c].iter().map(|t| t.cpu_ns).collect();
        let wall: Vec<u64> = job_times[c].iter().map(|t| t.wall_ns).collect();
        let (Some(jobs), Some(jobs_wall)) = (Durations::of(&cpu), Durations::of(&wall)) else {
            return Err(Error::Measurement(format!(
                "no jobs for {}",
                condition.name()
            )));
        };
        conditions.push(ConditionResult {
            condition,
            reserved: condition.reserved(),
            contended: condition.contended(),
            jobs,
            jobs_wall,
        });
    }
    let inflation = |contended: usize, alone: usize| {
        let (c, a) = (&conditions[contended].jobs, &conditions[alone].jobs);
        Inflation {
            wcet: ratio(c.max, a.max),
            p99: ratio(c.p99, a.p99),
            median: ratio(c.median, a.median),
        }
    };
    let inflation_reserved = inflation(1, 0);
    let inflation_unreserved = inflation(3, 2);
    let resctrl = match tinct_sys::resctrl::ResctrlStatus::read(&tinct_sys::SysRoot::live()) {
        _ if resctrl_groups.is_some() => reservation_reason.clone(),
        Ok(status) if status.offers_cache_allocation() => format!(
            "resctrl offers cache allocation here; this run reserved by {reservation_reason}"
        ),
        Ok(status) if status.cpu_has_cache_allocation() => {
            "the CPU has cache allocation but resctrl is not mounted; reservation by page coloring"
                .to_string()
        }
        Ok(_) => "no resctrl cache allocation here; reservation by page coloring".to_string(),
        Err(e) => format!("resctrl status unreadable ({e}); reservation by page coloring"),
    };
    let mut notes = run_conditions.notes(machine.online_cpus.len());
    if machine.virtualized == Some(true) && !by_resctrl {
        notes.push(
            "virtual machine: guest-physical page colors are probably not host cache colors, so \
             reservation by coloring cannot be shown to isolate here; run on bare metal to see \
             the effect of kim2013 Figure 7"
                .to_string(),
        );
    }
    if let Some(why) = &frames_unreadable {
        notes.push(format!(
            "frame numbers unreadable ({why}): pages were filed by virtual address, the \
             'reserved' conditions are NOT reserved"
        ));
    }
    if let Some(moved) = moved_pages.filter(|&m| m > 0) {
        notes.push(format!(
            "{moved} colored pages changed frames during the run (compaction or THP): their \
             colors may no longer be the reserved ones"
        ));
    }
    let mut report = Report {
        header: RunHeader {
            bench: "isolation".into(),
            quick,
            reps,
            seed: common.seed,
            cpus: cpus.clone(),
            machine,
        },
        run_conditions,
        parameters: Parameters {
            victim_cpu: cpus[0],
            aggressor_cpus,
            victim_bytes: victim_pages as u64 * page_bytes,
            aggressor_bytes: aggressor_pages as u64 * page_bytes,
            jobs_per_round,
            colors,
            victim_colors,
            warmup_rounds: WARMUP_ROUNDS,
        },
        reservation: if by_resctrl {
            "resctrl"
        } else {
            "page-coloring"
        }
        .into(),
        reservation_reason,
        resctrl,
        resctrl_groups,
        frames_unreadable,
        moved_pages,
        conditions,
        inflation_reserved,
        inflation_unreserved,
        notes,
        files: Vec::new(),
    };
    write_outputs(&mut report, &job_times, common)?;
    Ok(report)
}

/// One block: aggressors (if contended) start on their CPUs, the victim (on
/// the calling, pinned thread) runs one warm-up job and `jobs` recorded
/// jobs, then the aggressors stop.
fn run_block(
    memories: &mut Memories<'_>,
    condition: Condition,
    jobs: u32,
    aggressor_cpus: &[u32],
    fifo: Option<u8>,
    resctrl: Option<&ResctrlReservation>,
) -> Result<Vec<JobTime>> {
    // The victim's group before the aggressors are spawned (threads start
    // in their creator's group); each aggressor then moves itself.
    if let Some(groups) = resctrl {
        if condition.reserved() {
            groups.enter_victim()?;
        } else {
            groups.enter_default()?;
        }
    }
    let aggressors_reserved = resctrl.filter(|_| condition.reserved());
    let victim = if condition.reserved() {
        &memories.victim_reserved
    } else {
        &memories.victim_heap
    };
    let victim_jobs = |victim: &Chase<'_>| {
        victim.job();
        (0..jobs)
            .map(|_| {
                let (start, cpu_start) = (Instant::now(), thread_cpu_time_ns());
                victim.job();
                JobTime {
                    cpu_ns: thread_cpu_time_ns().saturating_sub(cpu_start),
                    wall_ns: nanos(start.elapsed()),
                }
            })
            .collect::<Vec<JobTime>>()
    };
    if !condition.contended() {
        return Ok(victim_jobs(victim));
    }
    let aggressors = if condition.reserved() {
        &mut memories.aggressors_reserved
    } else {
        &mut memories.aggressors_heap
    };
    let stop = AtomicBool::new(false);
    let ready = Barrier::new(aggressors.len() + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = aggressors
            .iter_mut()
            .zip(aggressor_cpus)
            .map(|(pages, &cpu)| {
                let (stop, ready) = (&stop, &ready);
                scope.spawn(move || {
                    let pinned = tinct_sys::sched::set_affinity(&[cpu])
                        .and_then(|()| fifo.map_or(Ok(()), tinct_sys::sched::set_fifo))
                        .map_err(Error::from)
                        .and_then(|()| {
                            aggressors_reserved.map_or(Ok(()), ResctrlReservation::enter_aggressors)
                        });
                    ready.wait();
                    pinned?;
                    Ok::<u64, Error>(kernels::aggress(pages, stop))
                })
            })
            .collect();
        ready.wait();
        let times = victim_jobs(victim);
        stop.store(true, Ordering::Relaxed);
        for handle in handles {
            handle
                .join()
                .map_err(|_| Error::Measurement("an aggressor thread panicked".into()))??;
        }
        Ok(times)
    })
}

/// One victim job's CPU time and wall-clock time.
#[derive(Debug, Clone, Copy)]
struct JobTime {
    cpu_ns: u64,
    wall_ns: u64,
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// One CSV row: one recorded job.
#[derive(Debug, Serialize)]
struct CsvRow {
    condition: &'static str,
    job: usize,
    cpu_ns: u64,
    wall_ns: u64,
}

fn write_outputs(
    report: &mut Report,
    job_times: &[Vec<JobTime>],
    common: &BenchOptions,
) -> Result<()> {
    let mut out = OutputDir::create(common.out_dir("isolation"))?;
    let rows: Vec<CsvRow> = Condition::ALL
        .iter()
        .zip(job_times)
        .flat_map(|(condition, times)| {
            times.iter().enumerate().map(|(job, t)| CsvRow {
                condition: condition.name(),
                job,
                cpu_ns: t.cpu_ns,
                wall_ns: t.wall_ns,
            })
        })
        .collect();
    out.write_csv("isolation.csv", &rows)?;
    let mut chart = LineChart::new(
        "Victim execution time (CPU) per job (kim2013 Figure 7)",
        "job",
        "execution time (ms)",
    );
    chart.y_from_zero = false;
    for (condition, times) in Condition::ALL.iter().zip(job_times) {
        chart.series.push(Series::new(
            condition.name(),
            if condition.contended() {
                SeriesStyle::Line
            } else {
                SeriesStyle::Dashed
            },
            times
                .iter()
                .enumerate()
                .map(|(i, t)| (i as f64, t.cpu_ns as f64 / 1e6))
                .collect(),
        ));
    }
    out.write_svg("isolation.svg", &chart)?;
    report.files = out.files_with("isolation.json");
    out.write_json("isolation.json", report)?;
    Ok(())
}

impl Report {
    /// The one-screen summary.
    pub fn summary(&self) -> Summary {
        let p = &self.parameters;
        let mut s = Summary::new("tinct bench isolation (kim2013 Figure 7)");
        s.fact("machine", self.header.machine.one_line());
        let (victim_share, aggressor_share) = match &self.resctrl_groups {
            Some(groups) => (
                format!(
                    "resctrl group {}, L3 mask {}",
                    groups.victim.name, groups.victim.mask
                ),
                format!(
                    "resctrl group {}, L3 mask {}",
                    groups.aggressors.name, groups.aggressors.mask
                ),
            ),
            None => (
                format!("colors 0..{} of {}", p.victim_colors, p.colors),
                format!("colors {}..{}", p.victim_colors, p.colors),
            ),
        };
        s.fact(
            "victim",
            format!(
                "CPU {}, {} pointer chase, {victim_share}",
                p.victim_cpu,
                human_bytes(p.victim_bytes),
            ),
        );
        s.fact(
            "aggressors",
            format!(
                "CPUs {}, {} each, {aggressor_share}",
                tinct_sys::format_cpu_list(&p.aggressor_cpus),
                human_bytes(p.aggressor_bytes),
            ),
        );
        s.fact(
            "reservation",
            format!("{}: {}", self.reservation, self.reservation_reason),
        );
        s.fact(
            "jobs",
            format!(
                "{} rounds x {} jobs per condition (+{} warm-up round), interleaved",
                self.header.reps, p.jobs_per_round, p.warmup_rounds
            ),
        );
        s.fact(
            "execution time",
            "CPU time of the victim thread per job (wall-clock times in the last columns)",
        );
        s.fact("resctrl", self.resctrl.clone());
        s.fact(
            "inflation, reserved",
            format!(
                "WCET {:.2}x, p99 {:.2}x, median {:.2}x",
                self.inflation_reserved.wcet,
                self.inflation_reserved.p99,
                self.inflation_reserved.median
            ),
        );
        s.fact(
            "inflation, unreserved",
            format!(
                "WCET {:.2}x, p99 {:.2}x, median {:.2}x",
                self.inflation_unreserved.wcet,
                self.inflation_unreserved.p99,
                self.inflation_unreserved.median
            ),
        );
        s.table(&[
            "condition",
            "jobs",
            "min ms",
            "median ms",
            "p99 ms",
            "max ms",
            "stddev ms",
            "wall median ms",
            "wall max ms",
        ]);
        for c in &self.conditions {
            s.row(vec![
                c.condition.name().into(),
                c.jobs.count.to_string(),
                ms(c.jobs.min),
                ms(c.jobs.median),
                ms(c.jobs.p99),
                ms(c.jobs.max),
                ms(c.jobs.stddev.round() as u64),
                ms(c.jobs_wall.median),
                ms(c.jobs_wall.max),
            ]);
        }
        for note in &self.notes {
            s.note(note.clone());
        }
        if !self.files.is_empty() {
            s.note(format!("files: {}", self.files.join(", ")));
        }
        s
    }
}

fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}
