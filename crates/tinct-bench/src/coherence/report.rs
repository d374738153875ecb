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
    Series,
    SeriesStyle::{Dashed, LineWithMarkers},
    Summary, ratio_keys, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_report::stats::ratio;

/// The parameters as run (written to `coherence.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameters {
    /// Array dimensions swept (ROWS = COLS).
    pub sizes: Vec<usize>,
    /// Element updates per function per run (`null` in the fixed-repetitions mode).
    pub work_per_function: Option<u64>,
    /// Loop repetitions at every size, the paper's mode (`null` in the equal-work mode).
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

ratio_keys!(shared_over_sequential = "shared_over_sequential_");
ratio_keys!(private_over_sequential = "private_over_sequential_");
ratio_keys!(slowdown = "slowdown_");

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

/// The three versions timed as whole applications, kernel work included, as
/// the paper timed them (Fig. 4(a)); the module's docs say why.
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ordering {
    /// Array dimension.
    pub rows: usize,
    /// Placement.
    pub placement: PlacementKind,
    /// `parallel-shared > parallel-private` (the cost of coherence).
    pub shared_slower_than_private: bool,
    /// `parallel-private < sequential` (two CPUs beat one; not expected on one CPU).
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
    /// The machine (from `/proc/cpuinfo`) and how the Fig. 9 events were encoded.
    pub fig9_machine: String,
    /// The counters of gracioli Fig. 9, counted per condition (totals in `counters`).
    pub fig9: Vec<Fig9Counter>,
    /// Caveats for the reader.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

/// What `coherence.json` derives from the sizes, after the report's fields.
#[derive(Debug, Serialize)]
pub struct Derived {
    /// The largest parallel-shared slowdown over all sizes and placements.
    pub worst: Option<Worst>,
    /// The orderings of the medians at each size and placement.
    pub orderings: Vec<Ordering>,
}

/// Every parallel result with its size.
fn parallel(sizes: &[SizeResult]) -> impl Iterator<Item = (&SizeResult, &ParallelResult)> + Clone {
    sizes
        .iter()
        .flat_map(|s| s.parallel.iter().map(move |p| (s, p)))
}

/// The largest parallel-shared slowdown under the placements `under` admits.
fn worst(sizes: &[SizeResult], under: impl Fn(PlacementKind) -> bool) -> Option<Worst> {
    let slowdowns = parallel(sizes).filter(|(_, p)| under(p.placement));
    let worst = slowdowns.map(|(s, p)| Worst {
        rows: s.rows,
        placement: p.placement,
        shared_over_sequential_wcet: p.shared_over_sequential.wcet,
    });
    worst.max_by(|a, b| {
        a.shared_over_sequential_wcet
            .total_cmp(&b.shared_over_sequential_wcet)
    })
}

/// The orderings of the medians at each size and placement.
fn orderings(sizes: &[SizeResult]) -> impl Iterator<Item = Ordering> + Clone + '_ {
    parallel(sizes).map(|(s, p)| Ordering {
        rows: s.rows,
        placement: p.placement,
        shared_slower_than_private: p.shared.median > p.private.median,
        private_faster_than_sequential: p.private.median < s.sequential.median,
    })
}

impl crate::harness::Bench for Report {
    const NAME: &'static str = "coherence";
    type Plan = Plan;

    /// The report of a measured plan: its Fig. 9 counters and notes.
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<Report> {
        let machine = Machine::describe();
        let skipped = plan.placements.iter().filter_map(|p| {
            let why = p.skipped.as_ref()?;
            Some(format!("placement {} skipped: {why}", p.kind.name()))
        });
        let mut notes: Vec<String> = skipped.collect();
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
        let fig9 = plan.fig9.events.iter().map(|r| Fig9Counter {
            key: r.event.key().into(),
            label: r.event.label().into(),
            vendor_name: r.vendor_name.clone(),
            counter: r.counter.as_ref().ok().map(|c| c.name.clone()),
            unresolved: r.counter.as_ref().err().cloned(),
        });
        let cpu = plan.fig9.microarchitecture.as_deref();
        let fig9_machine = format!(
            "{}; encoded with {}",
            cpu.unwrap_or("a CPU outside the Fig. 9 table"),
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
            fig9_machine,
            fig9: fig9.collect(),
            notes,
            files: Vec::new(),
        })
    }

    report_fields!(header, files);

    /// The worst slowdown and the orderings.
    fn derived(&self) -> impl Serialize {
        Derived {
            worst: worst(&self.sizes, |_| true),
            orderings: orderings(&self.sizes).collect(),
        }
    }

    /// Writes `coherence.csv`, `coherence-counters.csv` and the two SVG charts.
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
        let (reps, p) = (self.header.reps, &self.parameters);
        let warmup = p.warmup_rounds;
        s.fact(
            "runs",
            format!("{reps} per condition (+{warmup} warm-up), interleaved; WCET = largest run"),
        );
        let loops = match (p.fixed_repetitions, p.work_per_function) {
            (Some(r), _) => format!("{r} repetitions at every size (the paper's fixed loop)"),
            (None, Some(w)) => format!("{w} element updates per function at every size"),
            (None, None) => "unknown".into(),
        };
        s.fact("loop", loops);
        let two_cpus = orderings(&self.sizes).filter(|o| o.placement != PlacementKind::SameCpu);
        let held = |f: fn(&Ordering) -> bool| {
            let held = two_cpus.clone().filter(&f).count();
            format!("{held} of {}", two_cpus.clone().count())
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
        if let Some(w) = worst(&self.sizes, |_| true) {
            let (ratio, rows, at) = (w.shared_over_sequential_wcet, w.rows, w.placement.name());
            let said =
                format!("{ratio:.2}x parallel-shared vs sequential WCET at {rows}x{rows}, {at}");
            s.fact("worst slowdown", said);
        }
        if let Some(fig4) = fig4_line(self) {
            s.fact("Fig. 4(a) vs 4(b), shared / sequential WCET", fig4);
        }
        for f in &self.false_sharing {
            let (same, separate) = (ms(f.same_line.median), ms(f.separate_lines.median));
            let said = format!("{:.2}x (median {same} vs {separate} ms)", f.slowdown.median);
            s.fact(format!("false sharing, {}", f.placement.name()), said);
        }
        s.table_of(
            "size,placement,seq WCET ms,shared WCET ms,private WCET ms,shared/seq WCET,\
             private/seq WCET,shared/seq median",
        );
        for (size, p) in parallel(&self.sizes) {
            let (shared, private) = (&p.shared_over_sequential, &p.private_over_sequential);
            s.row(vec![
                format!("{}x{}", size.rows, size.cols),
                p.placement.name().into(),
                ms(size.sequential.max),
                ms(p.shared.max),
                ms(p.private.max),
                format!("{:.2}", shared.wcet),
                format!("{:.2}", private.wcet),
                format!("{:.2}", shared.median),
            ]);
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

/// One version's times at one size, with the sequential times it is compared with.
struct Version<'a> {
    rows: usize,
    variant: &'static str,
    placement: &'static str,
    time: &'a Durations,
    sequential: &'a Durations,
}

/// Every version, as `coherence.csv` lists them: per size the sequential
/// version, the three whole applications (over their own sequential one),
/// then each placement's parallel versions.
fn versions(report: &Report) -> impl Iterator<Item = Version<'_>> {
    report.sizes.iter().flat_map(|size| {
        let (rows, app, seq) = (size.rows, &size.application, &size.sequential);
        let version = move |variant, placement, time, sequential| Version {
            rows,
            variant,
            placement,
            time,
            sequential,
        };
        let parallel = size.parallel.iter().flat_map(move |p| {
            let at = p.placement.name();
            [
                version("parallel-shared", at, &p.shared, seq),
                version("parallel-private", at, &p.private, seq),
            ]
        });
        let os = "os-chosen";
        [
            version("sequential", "", seq, seq),
            version(
                "application-sequential",
                os,
                &app.sequential,
                &app.sequential,
            ),
            version(
                "application-parallel-shared",
                os,
                &app.shared,
                &app.sequential,
            ),
            version(
                "application-parallel-private",
                os,
                &app.private,
                &app.sequential,
            ),
        ]
        .into_iter()
        .chain(parallel)
    })
}

/// The rows of `coherence.csv`.
fn csv_rows(report: &Report) -> impl Iterator<Item = Columns> + '_ {
    versions(report).map(|v| {
        Columns::distribution(v.time)
            .with("rows", v.rows)
            .with("variant", v.variant)
            .with("placement", v.placement)
            .with("wcet_ns", v.time.max)
            .with("wcet_over_sequential", ratio(v.time.max, v.sequential.max))
    })
}

/// The WCET of the sequential and parallel versions, and the parallel-shared
/// slowdown (each placement a line), over the array size.
fn charts(report: &Report) -> (LineChart, LineChart) {
    let size = "array dimension (ROWS = COLS)";
    let mut wcet = LineChart::new(
        "Gracioli benchmark: WCET per version (ms)",
        size,
        "WCET (ms)",
    );
    wcet.series = Series::grouped(versions(report), |v| {
        let (name, style) = match v.variant {
            "sequential" => ("sequential".into(), LineWithMarkers),
            "parallel-shared" => (format!("shared, {}", v.placement), LineWithMarkers),
            "parallel-private" => (format!("private, {}", v.placement), Dashed),
            _ => return None,
        };
        Some((name, style, v.rows as f64, v.time.max as f64 / 1e6))
    });
    let title = "Parallel-shared WCET / sequential WCET";
    let mut slowdown = LineChart::new(title, size, "slowdown (x)");
    slowdown.series = Series::grouped(versions(report), |v| {
        let slowdown = ratio(v.time.max, v.sequential.max);
        let line = (v.placement.into(), LineWithMarkers, v.rows as f64, slowdown);
        (v.variant == "parallel-shared").then_some(line)
    });
    let ends = [report.sizes.first(), report.sizes.last()];
    let no_slowdown = ends.into_iter().flatten().map(|s| (s.rows as f64, 1.0));
    slowdown.series.push(Series::new(
        "1x (no slowdown)",
        Dashed,
        no_slowdown.collect(),
    ));
    (wcet.log2_x, slowdown.log2_x) = (true, true);
    (wcet, slowdown)
}

/// Fig. 4(a) against 4(b) in one line: the largest parallel-shared /
/// sequential WCET ratio over the sizes timed as whole applications and
/// as the computation alone (threads placed by the OS in both).
fn fig4_line(report: &Report) -> Option<String> {
    let apps = report.sizes.iter();
    let (app_rows, app) = apps
        .map(|s| (s.rows, s.application.shared_over_sequential.wcet))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let computed = worst(&report.sizes, |at| at == PlacementKind::OsChosen);
    Some(
        match computed.map(|w| (w.rows, w.shared_over_sequential_wcet)) {
            Some((rows, ratio)) => format!(
                "up to {app:.2}x as whole applications ({app_rows}x{app_rows}: kernel work timed, \
             4(a)), {ratio:.2}x as computation alone ({rows}x{rows}: the kernel's part taken \
             out entirely, where an optimised kernel tends, 4(b))"
            ),
            None => format!(
                "up to {app:.2}x as whole applications ({app_rows}x{app_rows}); the computation \
             alone with OS placement was not measured"
            ),
        },
    )
}

/// The Fig. 9 counters in one line: per event its total over every
/// parallel-shared condition, or why there is none.
fn fig9_line(report: &Report) -> String {
    let counters = &report.header.counters;
    let (mut counts, mut reasons) = (Vec::new(), Vec::<String>::new());
    for f in &report.fig9 {
        let why = match (&f.counter, &f.unresolved) {
            (Some(name), _) => {
                let mut shared = counters
                    .iter()
                    .filter(|c| c.condition.contains("/parallel-shared/"));
                if let Some(total) = shared.try_fold(0u64, |sum, c| sum.checked_add(c.total(name)?))
                {
                    counts.push(format!("{} {total}", f.label));
                    continue;
                }
                let event = counters
                    .iter()
                    .flat_map(|c| &c.events)
                    .find(|e| &e.event == name);
                event
                    .and_then(|e| e.unavailable.clone())
                    .unwrap_or_else(|| "no count".into())
            }
            (None, Some(why)) => why.clone(),
            (None, None) => continue,
        };
        if !reasons.contains(&why) {
            reasons.push(why);
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
