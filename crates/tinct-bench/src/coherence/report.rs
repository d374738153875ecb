//! The result of `tinct bench coherence` (`coherence.json`): its types, the
//! report of a measured plan (the worst slowdown, the orderings, Fig. 9's
//! counters, the notes), the files and the summary.

use super::WARMUP_ROUNDS;
use super::measure::Measured;
use super::placement::{Placement, PlacementKind};
use super::plan::{Loops, Plan};
use crate::Result;
use crate::harness::summary::ms;
use crate::harness::{
    Columns, DISTRIBUTION_COLUMNS, Durations, LineChart, Machine, OutputDir, Ratio, RunHeader,
    Series, SeriesStyle, Summary, ratio_keys, report_fields,
};
use serde::{Deserialize, Serialize};

/// The parameters as run (written to `coherence.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameters {
    /// Array dimensions swept (ROWS = COLS).
    pub sizes: Vec<usize>,
    /// Element updates per function per run, in the equal-work mode
    /// (`null` in the fixed-repetitions mode).
    pub work_per_function: Option<u64>,
    /// Loop repetitions at every size, in the paper's fixed-repetitions
    /// mode (`null` in the equal-work mode).
    pub fixed_repetitions: Option<u64>,
    /// Bytes of one array element.
    pub element_bytes: u64,
    /// Increments per thread in the false-sharing variant.
    pub false_sharing_increments: u64,
    /// Unrecorded warm-up rounds before the measured ones.
    pub warmup_rounds: u32,
    /// CPU of the sequential version.
    pub sequential_cpu: u32,
}

/// Parallel versions under one placement, for one array size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParallelResult {
    /// Placement name.
    pub placement: PlacementKind,
    /// The two threads' CPUs (`null` when the OS chooses).
    pub cpus: Option<[u32; 2]>,
    /// Parallel version sharing both arrays.
    pub shared: Durations,
    /// Best case: each thread with its own arrays.
    pub private: Durations,
    /// Parallel-shared over sequential (its WCET ratio is the paper's slowdown).
    #[serde(flatten, with = "shared_over_sequential")]
    pub shared_over_sequential: Ratio,
    /// Parallel-private over sequential (a WCET ratio of about 0.5 expected).
    #[serde(flatten, with = "private_over_sequential")]
    pub private_over_sequential: Ratio,
}

ratio_keys!(
    /// `shared_over_sequential_wcet`, `…_p99`, `…_median`.
    shared_over_sequential = "shared_over_sequential_"
);
ratio_keys!(
    /// `private_over_sequential_wcet`, `…_p99`, `…_median`.
    private_over_sequential = "private_over_sequential_"
);
ratio_keys!(
    /// `slowdown_wcet`, `slowdown_p99`, `slowdown_median`.
    slowdown = "slowdown_"
);

/// Every version at one array size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeResult {
    /// Rows (= columns).
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Bytes of one array.
    pub bytes_per_array: u64,
    /// Repetitions of the loop over the arrays in each function.
    pub repetitions: u64,
    /// Sequential version (function 1 then function 2 on one CPU).
    pub sequential: Durations,
    /// Parallel versions, one entry per available placement.
    pub parallel: Vec<ParallelResult>,
    /// The three versions timed as whole applications (Fig. 4(a)).
    pub application: ApplicationResult,
}

/// The three versions timed as whole applications, as the paper timed
/// them with `time` (Fig. 4(a), the stock kernel), process start and exit
/// aside: the arrays' mapping and first touch (a page fault per page),
/// the threads' creation and join, and the unmapping are inside the timed
/// region, threads placed by the OS on the allowed CPUs. The other
/// results time the computation alone (arrays touched and threads started
/// beforehand), with the kernel's part taken out entirely, where the
/// paper's optimised kernel (Fig. 4(b): fewer locks, atomics and shared
/// kernel data) tends; a user-space tool cannot swap the kernel, so the
/// two timings are the two ends between which such a kernel lies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApplicationResult {
    /// Sequential version as a whole application.
    pub sequential: Durations,
    /// Parallel version sharing both arrays, as a whole application.
    pub shared: Durations,
    /// Best case, each thread with its own arrays, as a whole application.
    pub private: Durations,
    /// Shared over sequential, both whole applications.
    #[serde(flatten, with = "shared_over_sequential")]
    pub shared_over_sequential: Ratio,
    /// Private over sequential, both whole applications.
    #[serde(flatten, with = "private_over_sequential")]
    pub private_over_sequential: Ratio,
}

/// The false-sharing variant under one placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FalseSharingResult {
    /// Placement name.
    pub placement: PlacementKind,
    /// The two threads' CPUs (`null` when the OS chooses).
    pub cpus: Option<[u32; 2]>,
    /// Both counters on one cache line.
    pub same_line: Durations,
    /// Each counter on its own 128-byte block.
    pub separate_lines: Durations,
    /// Same line over separate lines.
    #[serde(flatten, with = "slowdown")]
    pub slowdown: Ratio,
}

/// The largest slowdown of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    /// Array dimension (ROWS = COLS).
    pub rows: usize,
    /// Placement.
    pub placement: PlacementKind,
    /// WCET(parallel-shared) / WCET(sequential).
    pub shared_over_sequential_wcet: f64,
}

/// One counter of gracioli Fig. 9 as this run counted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fig9Counter {
    /// `l2-request-i`, ...
    pub key: String,
    /// The figure's label.
    pub label: String,
    /// The vendor's event on this CPU (empty if the CPU is not in the table).
    pub vendor_name: String,
    /// The event's name in `counters` of the header, if it has an encoding.
    pub counter: Option<String>,
    /// Why it has no encoding here, if it has none.
    pub unresolved: Option<String>,
}

/// Every ordering the report states, measured on medians, and whether it held.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ordering {
    /// Array dimension.
    pub rows: usize,
    /// Placement.
    pub placement: PlacementKind,
    /// `parallel-shared > parallel-private` (the cost of coherence).
    pub shared_slower_than_private: bool,
    /// `parallel-private < sequential` (two CPUs beat one; not expected
    /// on one CPU).
    pub private_faster_than_sequential: bool,
}

/// The result of `tinct bench coherence` (written as `coherence.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bench, options, machine (the harness's common header).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Parameters.
    pub parameters: Parameters,
    /// Every placement of the paper, with its CPUs or why it was skipped.
    pub placements: Vec<Placement>,
    /// One entry per array size, ascending.
    pub sizes: Vec<SizeResult>,
    /// The false-sharing variant, one entry per available placement.
    pub false_sharing: Vec<FalseSharingResult>,
    /// The largest parallel-shared slowdown over all sizes and placements.
    pub worst: Option<Worst>,
    /// The orderings of the medians at each size and placement.
    pub orderings: Vec<Ordering>,
    /// The machine (from `/proc/cpuinfo`) and how the Fig. 9 events were encoded.
    pub fig9_machine: String,
    /// The counters of gracioli Fig. 9, counted per condition (their
    /// totals are in `counters`).
    pub fig9: Vec<Fig9Counter>,
    /// Caveats for the reader.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}
impl crate::harness::Bench for Report {
    const NAME: &'static str = "coherence";
    type Plan = Plan;

    /// The report of a measured plan: the worst slowdown and the notes.
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<Report> {
        let machine = Machine::describe();
        let worst = measured
            .sizes
            .iter()
            .flat_map(|s| s.parallel.iter().map(move |p| (s.rows, p)))
            .max_by(|a, b| {
                a.1.shared_over_sequential
                    .wcet
                    .total_cmp(&b.1.shared_over_sequential.wcet)
            })
            .map(|(rows, p)| Worst {
                rows,
                placement: p.placement,
                shared_over_sequential_wcet: p.shared_over_sequential.wcet,
            });
        let mut notes: Vec<String> = plan
            .placements
            .iter()
            .filter_map(|p| {
                p.skipped
                    .as_ref()
                    .map(|why| format!("placement {} skipped: {why}", p.kind.name()))
            })
            .collect();
        if machine.virtualized == Some(true) {
            notes.push(
                "virtual machine: vCPUs may share physical cores or be descheduled by the host, so \
                 placements are guest placements only"
                    .into(),
            );
        }
        if plan.run.cpus.len() < 2 {
            notes.push("one CPU: the parallel versions cannot run in parallel".into());
        }
        notes.extend(measured.run_conditions.notes(machine.online_cpus.len()));
        let orderings = measured
            .sizes
            .iter()
            .flat_map(|s| {
                s.parallel.iter().map(|p| Ordering {
                    rows: s.rows,
                    placement: p.placement,
                    shared_slower_than_private: p.shared.median > p.private.median,
                    private_faster_than_sequential: p.private.median < s.sequential.median,
                })
            })
            .collect();
        let fig9 = plan
            .fig9
            .events
            .iter()
            .map(|r| Fig9Counter {
                key: r.event.key().into(),
                label: r.event.label().into(),
                vendor_name: r.vendor_name.clone(),
                counter: r.counter.as_ref().ok().map(|c| c.name.clone()),
                unresolved: r.counter.as_ref().err().cloned(),
            })
            .collect();
        let fig9_machine = format!(
            "{}; encoded with {}",
            plan.fig9
                .microarchitecture
                .clone()
                .unwrap_or_else(|| "a CPU outside the Fig. 9 table".into()),
            plan.fig9.encoded_with
        );
        let (work_per_function, fixed_repetitions) = match plan.loops {
            Loops::EqualWork(work) => (Some(work), None),
            Loops::Fixed(repetitions) => (None, Some(repetitions)),
        };
        Ok(Report {
            parameters: Parameters {
                sizes: plan.sizes,
                work_per_function,
                fixed_repetitions,
                element_bytes: 8,
                false_sharing_increments: plan.increments,
                warmup_rounds: WARMUP_ROUNDS,
                sequential_cpu: plan.run.cpus[0],
            },
            header: RunHeader::of_run("coherence", plan.run, machine, measured.counters)
                .with_conditions(measured.run_conditions),
            placements: plan.placements,
            sizes: measured.sizes,
            false_sharing: measured.false_sharing,
            worst,
            orderings,
            fig9_machine,
            fig9,
            notes,
            files: Vec::new(),
        })
    }

    report_fields!(header, files);

    /// Writes `coherence.csv` and the two SVG charts.
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        out.write_columns("coherence.csv", &CSV_COLUMNS, csv_rows(self))?;
        out.write_counters_csv("coherence-counters.csv", &self.header.counters)?;
        let (wcet, slowdown) = charts(self);
        out.write_svg("coherence-wcet.svg", &wcet)?;
        out.write_svg("coherence-slowdown.svg", &slowdown)?;
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let mut s = Summary::titled("tinct bench coherence (Gracioli et al. 2011)", &self.header);
        s.fact(
            "runs",
            format!(
                "{} per condition (+{} warm-up), interleaved; WCET = largest run",
                self.header.reps, self.parameters.warmup_rounds
            ),
        );
        s.fact(
            "loop",
            match (
                self.parameters.fixed_repetitions,
                self.parameters.work_per_function,
            ) {
                (Some(r), _) => format!("{r} repetitions at every size (the paper's fixed loop)"),
                (None, Some(w)) => format!("{w} element updates per function at every size"),
                (None, None) => "unknown".into(),
            },
        );
        let held = |f: fn(&super::Ordering) -> bool| {
            let pairs: Vec<_> = self
                .orderings
                .iter()
                .filter(|o| o.placement != PlacementKind::SameCpu)
                .collect();
            format!(
                "{} of {}",
                pairs.iter().filter(|o| f(o)).count(),
                pairs.len()
            )
        };
        s.fact(
            "orderings (medians, two-CPU placements)",
            format!(
                "shared > private at {}; private < sequential at {}",
                held(|o| o.shared_slower_than_private),
                held(|o| o.private_faster_than_sequential)
            ),
        );
        s.fact("Fig. 9 counters", fig9_line(self));
        if let Some(w) = &self.worst {
            s.fact(
                "worst slowdown",
                format!(
                    "{:.2}x parallel-shared vs sequential WCET at {}x{}, {}",
                    w.shared_over_sequential_wcet,
                    w.rows,
                    w.rows,
                    w.placement.name()
                ),
            );
        }
        if let Some(fig4) = fig4_line(self) {
            s.fact("Fig. 4(a) vs 4(b), shared / sequential WCET", fig4);
        }
        for f in &self.false_sharing {
            s.fact(
                format!("false sharing, {}", f.placement.name()),
                format!(
                    "{:.2}x (median {} vs {} ms)",
                    f.slowdown.median,
                    ms(f.same_line.median),
                    ms(f.separate_lines.median)
                ),
            );
        }
        s.table(&[
            "size",
            "placement",
            "seq WCET ms",
            "shared WCET ms",
            "private WCET ms",
            "shared/seq WCET",
            "private/seq WCET",
            "shared/seq median",
        ]);
        for size in &self.sizes {
            for p in &size.parallel {
                s.row(vec![
                    format!("{}x{}", size.rows, size.cols),
                    p.placement.name().into(),
                    ms(size.sequential.max),
                    ms(p.shared.max),
                    ms(p.private.max),
                    format!("{:.2}", p.shared_over_sequential.wcet),
                    format!("{:.2}", p.private_over_sequential.wcet),
                    format!("{:.2}", p.shared_over_sequential.median),
                ]);
            }
        }
        s.notes.extend(self.notes.iter().cloned());
        s
    }
}

/// The columns of `coherence.csv`: one version at one size and placement,
/// its time's distribution, its WCET (the largest time, ns) and that WCET
/// over the sequential version's.
const CSV_COLUMNS: [&str; 3] = [
    "rows,variant,placement",
    DISTRIBUTION_COLUMNS,
    "wcet_ns,wcet_over_sequential",
];

fn csv_rows(report: &Report) -> Vec<Columns> {
    let mut rows = Vec::new();
    for size in &report.sizes {
        let app = &size.application;
        let (shared, private) = (&app.shared_over_sequential, &app.private_over_sequential);
        let mut versions = vec![
            ("sequential", "", &size.sequential, 1.0),
            ("application-sequential", "os-chosen", &app.sequential, 1.0),
            (
                "application-parallel-shared",
                "os-chosen",
                &app.shared,
                shared.wcet,
            ),
            (
                "application-parallel-private",
                "os-chosen",
                &app.private,
                private.wcet,
            ),
        ];
        for p in &size.parallel {
            let (shared, private) = (&p.shared_over_sequential, &p.private_over_sequential);
            versions.push((
                "parallel-shared",
                p.placement.name(),
                &p.shared,
                shared.wcet,
            ));
            versions.push((
                "parallel-private",
                p.placement.name(),
                &p.private,
                private.wcet,
            ));
        }
        rows.extend(versions.into_iter().map(|(variant, placement, s, over)| {
            Columns::distribution(s)
                .with("rows", size.rows)
                .with("variant", variant)
                .with("placement", placement)
                .with("wcet_ns", s.max)
                .with("wcet_over_sequential", over)
        }));
    }
    rows
}

fn charts(report: &Report) -> (LineChart, LineChart) {
    let mut wcet = LineChart::new(
        "Gracioli benchmark: WCET per version (ms)",
        "array dimension (ROWS = COLS)",
        "WCET (ms)",
    );
    wcet.log2_x = true;
    let ms = |ns: u64| ns as f64 / 1e6;
    wcet.series.push(Series::new(
        "sequential",
        SeriesStyle::LineWithMarkers,
        report
            .sizes
            .iter()
            .map(|s| (s.rows as f64, ms(s.sequential.max)))
            .collect(),
    ));
    let mut slowdown = LineChart::new(
        "Parallel-shared WCET / sequential WCET",
        "array dimension (ROWS = COLS)",
        "slowdown (x)",
    );
    slowdown.log2_x = true;
    let placements: Vec<PlacementKind> = report
        .sizes
        .first()
        .map(|s| s.parallel.iter().map(|p| p.placement).collect())
        .unwrap_or_default();
    for kind in placements {
        let points = |pick: &dyn Fn(&ParallelResult) -> f64| -> Vec<(f64, f64)> {
            report
                .sizes
                .iter()
                .filter_map(|s| {
                    let p = s.parallel.iter().find(|p| p.placement == kind)?;
                    Some((s.rows as f64, pick(p)))
                })
                .collect()
        };
        wcet.series.push(Series::new(
            format!("shared, {}", kind.name()),
            SeriesStyle::LineWithMarkers,
            points(&|p| ms(p.shared.max)),
        ));
        wcet.series.push(Series::new(
            format!("private, {}", kind.name()),
            SeriesStyle::Dashed,
            points(&|p| ms(p.private.max)),
        ));
        slowdown.series.push(Series::new(
            kind.name(),
            SeriesStyle::LineWithMarkers,
            points(&|p| p.shared_over_sequential.wcet),
        ));
    }
    let first = report.sizes.first().map_or(1.0, |s| s.rows as f64);
    let last = report.sizes.last().map_or(1.0, |s| s.rows as f64);
    slowdown.series.push(Series::new(
        "1x (no slowdown)",
        SeriesStyle::Dashed,
        vec![(first, 1.0), (last, 1.0)],
    ));
    (wcet, slowdown)
}

/// Fig. 4(a) against 4(b) in one line: the largest parallel-shared /
/// sequential WCET ratio over the sizes timed as whole applications and
/// as the computation alone (threads placed by the OS in both).
fn fig4_line(report: &Report) -> Option<String> {
    let largest = |ratios: Vec<(usize, f64)>| ratios.into_iter().max_by(|a, b| a.1.total_cmp(&b.1));
    let (app_rows, app) = largest(
        report
            .sizes
            .iter()
            .map(|s| (s.rows, s.application.shared_over_sequential.wcet))
            .collect(),
    )?;
    let compute = largest(
        report
            .sizes
            .iter()
            .flat_map(|s| s.parallel.iter().map(move |p| (s.rows, p)))
            .filter(|(_, p)| p.placement == PlacementKind::OsChosen)
            .map(|(rows, p)| (rows, p.shared_over_sequential.wcet))
            .collect(),
    );
    Some(match compute {
        Some((rows, ratio)) => format!(
            "up to {app:.2}x as whole applications ({app_rows}x{app_rows}: kernel work timed, \
             4(a)), {ratio:.2}x as computation alone ({rows}x{rows}: the kernel's part taken \
             out entirely, where an optimised kernel tends, 4(b))"
        ),
        None => format!(
            "up to {app:.2}x as whole applications ({app_rows}x{app_rows}); the computation \
             alone with OS placement was not measured"
        ),
    })
}

/// The Fig. 9 counters in one line: per event its total over every
/// parallel-shared condition, or why there is none.
fn fig9_line(report: &Report) -> String {
    let shared = |name: &str| -> Option<u64> {
        report
            .header
            .counters
            .iter()
            .filter(|c| c.condition.contains("/parallel-shared/"))
            .try_fold(0u64, |sum, c| sum.checked_add(c.total(name)?))
    };
    let mut reasons: Vec<String> = Vec::new();
    let mut counts: Vec<String> = Vec::new();
    for f in &report.fig9 {
        match (&f.counter, &f.unresolved) {
            (Some(name), _) => match shared(name) {
                Some(total) => counts.push(format!("{} {total}", f.label)),
                None => {
                    let why = report
                        .header
                        .counters
                        .iter()
                        .flat_map(|c| &c.events)
                        .find(|e| &e.event == name)
                        .and_then(|e| e.unavailable.clone())
                        .unwrap_or_else(|| "no count".into());
                    if !reasons.contains(&why) {
                        reasons.push(why);
                    }
                }
            },
            (None, Some(why)) => {
                if !reasons.contains(why) {
                    reasons.push(why.clone());
                }
            }
            (None, None) => {}
        }
    }
    let mut parts = vec![report.fig9_machine.clone()];
    if !counts.is_empty() {
        parts.push(format!("parallel-shared totals: {}", counts.join(", ")));
    }
    if !reasons.is_empty() {
        parts.push(format!("unavailable: {}", reasons.join("; ")));
    }
    parts.join("; ")
}
