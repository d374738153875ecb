//! The HTML report of a run directory (`tinct report DIR`): one
//! self-contained page (tinct-report's [`html`](tinct_report::html)) with
//! the verdict and its explanations, the plan (cores, priorities, S(i),
//! Eq. 1-2), where each working set lived with the proof that the colouring
//! isolates them, kim2013 Fig. 8 per task, the response-time CDFs, the
//! execution-time histograms, kim2013 Fig. 10, the migrations map, the
//! hardware counters when they were read, and the machine.

use super::figures::{exec_histogram, response_cdf, response_times, utilization};
use super::read::RunFiles;
use super::summary::TaskVerdict;
use super::verdict_word;
use crate::isolation::IsolationStatus;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tinct_base::InputError;
use tinct_report::ReportError;
use tinct_report::bench_page::{bench_page, is_bench_dir};
use tinct_report::html::{Block, Cell, Page, Section, Table, Tone, json_table};
use tinct_report::text::{ms, opt_ms, us};
use tinct_report::{Counts, LineChart, Series, SeriesStyle};
use tinct_rt::RtError;
use tinct_rt::spec::Policy;

/// Per-task charts are drawn for at most this many tasks (the page stays
/// usable for rt-app files with hundreds of threads); the tables have all.
pub const MAX_TASK_CHARTS: usize = 32;
/// Tasks per CDF chart (one legend entry each).
const TASKS_PER_CDF: usize = 8;

/// Four decimals, and never `-0.0000` (an empty core's sum can be −0).
fn fixed4(x: f64) -> String {
    format!("{:.4}", x + 0.0)
}

/// `FIFO 90`, `OTHER`: the policy as `summary.json` names it, in capitals.
fn policy(policy: Policy) -> String {
    let value = serde_json::to_value(policy).unwrap_or_default();
    let name = value["policy"].as_str().unwrap_or("?").to_uppercase();
    match &value["priority"] {
        serde_json::Value::Null => name,
        p => format!("{name} {p}"),
    }
}

fn cpus(list: &Option<Vec<u32>>) -> String {
    list.as_ref().map_or("any".into(), |c| {
        c.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
    })
}

fn partitions(list: &[u32]) -> String {
    format!(
        "{{{}}}",
        list.iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The task's verdict and why, in words.
fn explain(files: &RunFiles, t: &TaskVerdict) -> (String, Tone) {
    let word = verdict_word(
        t.exceeds_bound,
        t.jobs.missed,
        t.error.is_some(),
        t.bound.is_some_and(|b| b.wcrt_ns.is_some()),
        t.jobs.completed,
    );
    let mut why = Vec::new();
    if let Some(b) = t.bound {
        match b.wcrt_ns {
            Some(w) => why.push(format!(
                "observed max response {} ms against WCRT CInt {} ms (NoCInt {} ms)",
                ms(t.response.max),
                ms(w),
                opt_ms(b.wcrt_nocint_ns)
            )),
            None => why.push("the analysis found no WCRT within the deadline".into()),
        }
    }
    if t.jobs.missed > 0 {
        why.push(format!(
            "{} of {} jobs missed their deadline",
            t.jobs.missed, t.jobs.released
        ));
    }
    if let Some(e) = &t.error {
        why.push(format!("failed: {e}"));
    }
    if !files.summary.realtime {
        why.push("SCHED_OTHER (--no-rt): the bounds do not apply".into());
    }
    let tone = match word {
        "within bound" | "ok" => Tone::Good,
        _ => Tone::Bad,
    };
    (format!("{}: {word} — {}", t.name, why.join("; ")), tone)
}

fn verdict(files: &RunFiles) -> Section {
    let s = &files.summary;
    let mut section = Section::new("Verdict");
    let clean = s.misses == 0 && s.bound_exceeded.is_empty() && s.balanced;
    section.push(Block::Line(
        format!(
            "{}: {} deadline miss(es), {} task(s) over their bound; {}",
            if clean { "CLEAN" } else { "NOT CLEAN" },
            s.misses,
            s.bound_exceeded.len(),
            s.stop_description
        ),
        if clean { Tone::Good } else { Tone::Bad },
    ));
    if let Some(a) = &files.analysis {
        let mut lines = vec![(
            format!(
                "analysis of the plan: {}",
                if a.schedulable {
                    "SCHEDULABLE"
                } else {
                    "NOT SCHEDULABLE"
                }
            ),
            if a.schedulable { Tone::Good } else { Tone::Bad },
        )];
        lines.extend(a.reasons.iter().map(|r| (r.clone(), Tone::Plain)));
        section.push(Block::List(lines));
    }
    section.push(Block::List(
        s.tasks.iter().map(|t| explain(files, t)).collect(),
    ));
    if !s.balanced {
        section.push(Block::Line(
            "job accounting does not balance (released ≠ completed + missed + aborted)".into(),
            Tone::Bad,
        ));
    }
    let mut facts = Table::new(&["run", ""]);
    for (k, v) in [
        ("workload", s.source.clone()),
        ("scheduling", s.scheduling.clone()),
        (
            "duration",
            format!(
                "{} ms planned, {} ms observed",
                ms(s.duration_ns),
                ms(s.observed_ns)
            ),
        ),
        ("memory locked", s.memory_locked.to_string()),
        ("RT throttling", s.rt_throttling.clone()),
        ("watchdog", format!("{} × deadline", s.watchdog_factor)),
    ] {
        facts.row(vec![Cell::new(k), Cell::new(v)]);
    }
    section.push(Block::Table(facts));
    section
}

fn plan(files: &RunFiles) -> Section {
    let mut section = Section::new("Plan");
    let mut tasks = Table::new(&[
        "task",
        "CPU",
        "policy",
        "S(i)",
        "T (ms)",
        "D (ms)",
        "C (ms)",
        "ω (ms)",
        "WCRT NoCInt",
        "WCRT CInt",
        "analysis",
    ]);
    for t in &files.summary.tasks {
        let a = files.analysed(&t.name);
        tasks.row(vec![
            Cell::new(t.name.clone()),
            Cell::new(cpus(&t.cpus)),
            Cell::new(policy(t.policy)),
            Cell::new(a.map_or("—".into(), |a| partitions(&a.partitions))),
            Cell::new(a.map_or("—".into(), |a| ms(a.period_ns))),
            // Without an analysis, the run's own (first phase's) deadline.
            Cell::new(opt_ms(
                a.map(|a| a.deadline_ns)
                    .or_else(|| t.phases.first().and_then(|p| p.deadline_ns)),
            )),
            Cell::new(opt_ms(t.bound.map(|b| b.wcet_ns))),
            Cell::new(a.map_or("—".into(), |a| ms(a.warmup_ns))),
            Cell::new(opt_ms(t.bound.and_then(|b| b.wcrt_nocint_ns))),
            Cell::new(opt_ms(t.bound.and_then(|b| b.wcrt_ns))),
            match a {
                Some(a) if a.schedulable => Cell::toned("ok", Tone::Good),
                Some(_) => Cell::toned("misses D", Tone::Bad),
                None => Cell::new("—"),
            },
        ]);
    }
    section.push(Block::Table(tasks));
    match &files.analysis {
        Some(a) => {
            section.push(Block::Text(format!(
                "Δ (partition refill time) = {} µs. ω is the cache warm-up delay ω_(i,n) \
                 (kim2013 Section III-B).",
                us(a.refill_ns)
            )));
            let mut cores = Table::new(&[
                "core",
                "tasks",
                "partitions",
                "U NoCInt",
                "U Eq. (1)",
                "Liu-Layland",
                "verdict",
            ]);
            for c in &a.cores {
                cores.row(vec![
                    Cell::new(c.core.to_string()),
                    Cell::new(c.tasks.join(", ")),
                    Cell::new(partitions(&c.partitions)),
                    Cell::new(fixed4(c.utilization_nocint)),
                    Cell::new(fixed4(c.utilization)),
                    Cell::new(fixed4(c.utilization_bound)),
                    if c.schedulable {
                        Cell::toned("schedulable", Tone::Good)
                    } else {
                        Cell::toned(c.reasons.join("; "), Tone::Bad)
                    },
                ]);
            }
            section.push(Block::Table(cores));
        }
        None => {
            section.push(Block::Text(
                "This run did not come from an analysed plan (an rt-app file, or a set the \
                 analysis could not take): no partitions, utilization or bounds to show."
                    .into(),
            ));
        }
    }
    section
}

/// Where each working set lived and the proof that the colouring isolates
/// them (tinct-sim's model of the last-level cache, from the frames).
fn placement(files: &RunFiles) -> Section {
    let s = &files.summary;
    let proof = &s.isolation;
    let mut section = Section::new("Memory placement and cache isolation");
    let tone = match proof.status {
        IsolationStatus::Isolated => Tone::Good,
        IsolationStatus::NotIsolated => Tone::Bad,
        IsolationStatus::IsolatedExcept
        | IsolationStatus::Unavailable
        | IsolationStatus::NotClaimed => Tone::Plain,
    };
    section.push(Block::Line(proof.headline(), tone));
    if let Some(note) = proof.analysis_note() {
        section.push(Block::Text(format!("{note}.")));
    }
    let alarms = proof.alarms();
    if !alarms.is_empty() {
        section.push(Block::List(
            alarms.into_iter().map(|a| (a, Tone::Bad)).collect(),
        ));
    }
    if let Some(line) = proof.model_line() {
        section.push(Block::Text(format!("{line}.")));
    }
    let mut table = Table::new(&[
        "task",
        "CPU",
        "working set",
        "pages",
        "colours (model)",
        "cache sets",
        "can be evicted by",
    ]);
    for t in &s.tasks {
        let working_set = t.placement.describe();
        let Some(i) = &t.isolation else {
            table.row(vec![
                Cell::new(t.name.clone()),
                Cell::new(cpus(&t.cpus)),
                Cell::new(working_set),
                Cell::new("—"),
                Cell::new("—"),
                Cell::new("—"),
                Cell::new("—"),
            ]);
            continue;
        };
        let evictors = if i.evicted_by.is_empty() {
            Cell::toned("nobody", Tone::Good)
        } else {
            let list: Vec<String> = i
                .evicted_by
                .iter()
                .map(|e| format!("{} ({} sets, {})", e.task, e.sets, e.sharing.describe()))
                .collect();
            let tone = if i.evicted_by.iter().any(|e| e.sharing.breaks_isolation()) {
                Tone::Bad
            } else {
                Tone::Plain
            };
            Cell::toned(list.join("; "), tone)
        };
        table.row(vec![
            Cell::new(t.name.clone()),
            Cell::new(cpus(&t.cpus)),
            Cell::new(working_set),
            Cell::new(i.pages.to_string()),
            Cell::new(i.colors.clone()),
            Cell::new(format!("{} of {}", i.sets, i.total_sets)),
            evictors,
        ]);
    }
    section.push(Block::Table(table));
    section
}

fn charted(files: &RunFiles) -> (Vec<&TaskVerdict>, Option<Block>) {
    let tasks: Vec<&TaskVerdict> = files.summary.tasks.iter().take(MAX_TASK_CHARTS).collect();
    let note = (files.summary.tasks.len() > MAX_TASK_CHARTS).then(|| {
        Block::Text(format!(
            "Charts for the first {MAX_TASK_CHARTS} of {} tasks; the tables have all.",
            files.summary.tasks.len()
        ))
    });
    (tasks, note)
}

fn distributions(files: &RunFiles) -> Vec<Section> {
    let (tasks, note) = charted(files);
    let mut fig8 = Section::new("Response time per job against the WCRT bounds (kim2013 Fig. 8)");
    fig8.push(Block::Charts(
        tasks
            .iter()
            .map(|t| response_times(files, t).to_svg())
            .collect(),
    ));
    let mut cdf = Section::new("Response-time distributions");
    cdf.push(Block::Charts(
        tasks
            .chunks(TASKS_PER_CDF)
            .map(|group| response_cdf(files, group).to_svg())
            .collect(),
    ));
    let mut hist = Section::new("Execution-time histograms (thread CPU time of finished jobs)");
    hist.push(Block::Charts(
        tasks
            .iter()
            .map(|t| exec_histogram(files, t).to_svg())
            .collect(),
    ));
    let mut sections = vec![fig8, cdf, hist];
    if let Some(note) = note {
        for s in &mut sections {
            s.push(note.clone());
        }
    }
    let mut fig10 = Section::new("Utilization per core (kim2013 Fig. 10)");
    match utilization(files) {
        Some(chart) => {
            fig10.push(Block::Charts(vec![chart.to_svg()]));
            fig10.push(Block::Text(
                "Observed: Σ e_i / T_i over the tasks of the core, e_i the maximum (worst case) \
                 or mean (average) measured execution time."
                    .into(),
            ));
        }
        None => {
            fig10.push(Block::Text(
                "No analysis in this run directory: nothing to compare with Eq. (1).".into(),
            ));
        }
    }
    sections.push(fig10);
    sections
}

fn migrations(files: &RunFiles) -> Section {
    let cpus: BTreeSet<u32> = files.jobs.iter().filter_map(|r| r.cpu).collect();
    let mut header: Vec<String> = vec!["task".into()];
    header.extend(cpus.iter().map(|c| format!("CPU {c}")));
    header.push("migrated".into());
    let mut table = Table {
        header,
        rows: Vec::new(),
    };
    for t in &files.summary.tasks {
        let rows: Vec<_> = files.jobs_of(&t.name).collect();
        let started = rows.iter().filter(|r| r.cpu.is_some()).count().max(1) as f64;
        let mut cells = vec![Cell::new(t.name.clone())];
        for cpu in &cpus {
            let n = rows.iter().filter(|r| r.cpu == Some(*cpu)).count();
            cells.push(Cell::heat(n.to_string(), n as f64 / started));
        }
        let migrated = rows.iter().filter(|r| r.migrations > 0).count();
        cells.push(if migrated > 0 {
            Cell::toned(migrated.to_string(), Tone::Bad)
        } else {
            Cell::new("0")
        });
        table.rows.push(cells);
    }
    let mut section = Section::new("Migrations map");
    section.push(Block::Text(
        "Jobs started on each CPU, per task (shaded by share); migrated: jobs that ended on \
         another CPU than they started on."
            .into(),
    ));
    section.push(Block::Table(table));
    section
}

fn counters(files: &RunFiles) -> Section {
    let mut section = Section::new("Hardware counters");
    type Pick = fn(&super::JobRow) -> Option<u64>;
    let columns: [(&str, Pick); 4] = [
        ("cycles", |r| r.cycles),
        ("instructions", |r| r.instructions),
        ("LLC references", |r| r.llc_references),
        ("LLC misses", |r| r.llc_misses),
    ];
    if !files
        .jobs
        .iter()
        .any(|r| columns.iter().any(|(_, pick)| pick(r).is_some()))
    {
        let why = files
            .summary
            .tasks
            .iter()
            .find_map(|t| t.counters_unavailable.clone())
            .unwrap_or_else(|| "no job recorded a counter".into());
        section.push(Block::Text(format!("Not available in this run: {why}.")));
        return section;
    }
    let mut header = vec!["task"];
    let titles: Vec<String> = columns
        .iter()
        .map(|(n, _)| format!("{n} per job (mean / max)"))
        .collect();
    header.extend(titles.iter().map(String::as_str));
    let mut table = Table::new(&header);
    for t in &files.summary.tasks {
        let mut cells = vec![Cell::new(t.name.clone())];
        for (_, pick) in &columns {
            let values: Vec<u64> = files.jobs_of(&t.name).filter_map(pick).collect();
            cells.push(Cell::new(
                Counts::of(&values).map_or("—".into(), |c| format!("{:.0} / {}", c.mean, c.max)),
            ));
        }
        table.rows.push(cells);
    }
    section.push(Block::Table(table));
    let (tasks, _) = charted(files);
    let charts: Vec<String> = tasks
        .iter()
        .filter_map(|t| {
            let points: Vec<(f64, f64)> = files
                .jobs_of(&t.name)
                .filter_map(|r| Some((r.job as f64, r.llc_misses? as f64)))
                .collect();
            (!points.is_empty()).then(|| {
                LineChart::new(
                    format!("{}: LLC misses per job (as kim2013 Fig. 9)", t.name),
                    "job",
                    "LLC misses",
                )
                .add_series(Series::new("LLC misses", SeriesStyle::Markers, points))
                .to_svg()
            })
        })
        .collect();
    if !charts.is_empty() {
        section.push(Block::Charts(charts));
    }
    section
}

fn machine(files: &RunFiles) -> Section {
    let mut section = Section::new("Machine");
    match &files.machine {
        Some(m) => {
            section.push(Block::Text(m.one_line()));
            let value = serde_json::to_value(m).unwrap_or_default();
            section.push(Block::Table(json_table(&value)));
        }
        None => {
            section.push(Block::Text(
                "Not recorded (machine.json is missing: a run directory of an older tinct).".into(),
            ));
        }
    }
    section
}

/// The report page of a run directory.
pub fn run_page(files: &RunFiles) -> Page {
    let mut sections = vec![verdict(files), plan(files), placement(files)];
    sections.extend(distributions(files));
    sections.push(migrations(files));
    sections.push(counters(files));
    sections.push(machine(files));
    let mut raw = Section::new("Files");
    raw.push(Block::Details(
        "summary.json".into(),
        vec![Block::Pre(
            serde_json::to_string_pretty(&files.summary_raw).unwrap_or_default(),
        )],
    ));
    raw.push(Block::Text(
        "The trace is in trace.perfetto-trace (open it in ui.perfetto.dev) and trace.json; \
         every job is a row of jobs.csv."
            .into(),
    ));
    sections.push(raw);
    Page {
        title: format!("tinct run report: {}", files.summary.source),
        subtitle: format!(
            "run directory {} — {}",
            files.dir.display(),
            files.summary.scheduling
        ),
        sections,
    }
}

/// `tinct report DIR`: the page of a run directory ([`run_page`]) or of a
/// bench directory (tinct-report's `bench_page`), written to `out`
/// (default: `DIR/report.html`); returns where. A directory of neither
/// kind, or a file in it that does not read, is bad input.
pub fn write_report(dir: &Path, out: Option<&Path>) -> Result<PathBuf, RtError> {
    let page = if RunFiles::is_run_dir(dir) {
        run_page(&RunFiles::read(dir)?)
    } else if is_bench_dir(dir) {
        bench_page(dir).map_err(|e| match e {
            ReportError::Input(e) => RtError::Input(e),
            ReportError::Read { path, source } => RtError::Read { path, source },
            ReportError::Write { path, source } => RtError::Write { path, source },
        })?
    } else {
        return Err(InputError::new(
            dir.display().to_string(),
            "",
            "a run directory (summary.json and jobs.csv) or a bench directory \
             (a result JSON with `bench` and `machine`)",
            "neither",
        )
        .into());
    };
    let out = out.map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    std::fs::write(&out, page.to_html()).map_err(|source| RtError::Write {
        path: out.display().to_string(),
        source,
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::written;

    fn page(with_analysis: bool) -> String {
        let (_dir, files) = written(with_analysis);
        run_page(&files).to_html()
    }

    #[test]
    fn the_page_has_every_section_and_explains_the_verdict() {
        let html = page(true);
        for heading in [
            "Verdict",
            "Plan",
            "kim2013 Fig. 8",
            "Response-time distributions",
            "Execution-time histograms",
            "kim2013 Fig. 10",
            "Migrations map",
            "Hardware counters",
            "Machine",
        ] {
            assert!(html.contains(heading), "{heading}");
        }
        assert!(html.contains("NOT CLEAN"));
        assert!(html.contains("a: EXCEEDS BOUND — observed max response 0.00 ms"));
        assert!(html.contains("1 of 4 jobs missed their deadline"));
        assert!(html.contains("analysis of the plan: SCHEDULABLE"));
        assert!(html.contains("<td>{1}</td>"), "S(i) of the plan");
        assert!(html.contains("<td>FIFO 90</td>"));
        // Fig. 8, a CDF, a histogram and Fig. 10.
        assert_eq!(html.matches("<svg").count(), 4);
        assert!(html.contains("Not available in this run"));
    }

    #[test]
    fn the_placement_section_shows_the_proof_and_its_alarm() {
        use crate::isolation::{
            EvictingPair, Evictor, ModelFacts, PairMember, RunIsolation, Sharing, TaskIsolation,
        };
        let (_dir, mut files) = written(true);
        let before = run_page(&files).to_html();
        assert!(before.contains("Memory placement and cache isolation"));
        assert!(
            before.contains("proof not available: not checked"),
            "{before}"
        );
        let member = |task: &str, cpu, partition| PairMember {
            task: task.into(),
            cpu: Some(cpu),
            partitions: vec![partition],
        };
        files.summary.isolation = RunIsolation {
            status: IsolationStatus::NotIsolated,
            reason: None,
            model: Some(ModelFacts {
                name: "L2 1 MiB 8-way".into(),
                sets: 2048,
                colors: 32,
                page_size: 4096,
            }),
            color_rule: Some("explicit colour bits: 32 colours".into()),
            pairs: vec![EvictingPair {
                tasks: [member("a", 1, 1), member("b", 0, 2)],
                sets: 64,
                sharing: Sharing::DisjointInPlan,
            }],
            residue: None,
        };
        files.summary.tasks[0].isolation = Some(TaskIsolation {
            pages: 8,
            colors: "0-1".into(),
            sets: 128,
            total_sets: 2048,
            residue_sets: Some(3),
            evicted_by: vec![Evictor {
                task: "b".into(),
                sets: 64,
                sharing: Sharing::DisjointInPlan,
            }],
        });
        let html = run_page(&files).to_html();
        for text in [
            "NOT ISOLATED: 1 pair(s)",
            "tasks 'a' (CPU 1) and 'b' (CPU 0) can evict each other in 64 cache sets although \
             the plan gives them disjoint partitions {1} and {2}",
            "tinct-sim model of the L2 1 MiB 8-way: 2048 sets, 32 colours of 4096 B pages; \
             colour rule of the run: explicit colour bits",
            "<td>128 of 2048</td>",
            "b (64 sets, DISJOINT partitions in the plan)",
        ] {
            assert!(html.contains(text), "{text}");
        }
    }

    #[test]
    fn without_an_analysis_the_page_says_what_it_cannot_show() {
        let html = page(false);
        assert!(html.contains("did not come from an analysed plan"));
        assert!(html.contains("nothing to compare with Eq. (1)"));
        assert_eq!(html.matches("<svg").count(), 3);
    }
}
