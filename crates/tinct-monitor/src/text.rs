//! The text of `tinct monitor`: the summary of a recording (what was
//! counted, what is missing, the overhead of sampling, the files), the live
//! line while it samples, and the sharing found by the CPU's memory
//! sampling or by the replay of a plan's streams (gracioli Section IV).

use super::sample::Sample;
use super::sharing::{SampledSharing, SharingCheck};
use super::{Ended, Overhead, Params, PerfEvent, Recording};
use std::fmt::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a recording counts, as the summary says it.
pub const COUNTED: &str = "every thread of the process and of the processes it started \
     (children, grandchildren), each from the sample after it appeared; one that lives \
     shorter than a sampling period, or outlives its parent, is not seen";

/// What a recording measured, as people read it.
pub fn summary_text(r: &Recording, overhead: Option<&Overhead>, files: &[PathBuf]) -> String {
    let mut out = String::new();
    write_summary(&mut out, r, overhead, files).expect("writing to a String cannot fail");
    out
}

/// What the CPU's memory samples show.
pub fn sampled_sharing_text(sharing: &SampledSharing) -> String {
    let mut out = String::new();
    write_sampled_sharing(&mut out, sharing).expect("writing to a String cannot fail");
    out
}

/// Which tasks of the plan `plan` share cache lines.
pub fn plan_sharing_text(plan: &Path, check: &SharingCheck) -> String {
    let mut out = String::new();
    write_plan_sharing(&mut out, plan, check).expect("writing to a String cannot fail");
    out
}

/// [`summary_text`] into any writer.
pub fn write_summary(
    out: &mut impl Write,
    r: &Recording,
    overhead: Option<&Overhead>,
    files: &[PathBuf],
) -> fmt::Result {
    writeln!(out, "tinct monitor: {}", r.target)?;
    let ended = match r.ended {
        Ended::CommandExited => match r.exit_code {
            Some(code) => format!("the command exited with status {code}"),
            None => "the command was ended by a signal".into(),
        },
        Ended::ProcessExited => "the process exited".into(),
        Ended::Duration => "the duration passed".into(),
        Ended::Interrupted => "interrupted (what was recorded is kept)".into(),
    };
    writeln!(
        out,
        "  {} samples of {} thread(s) over {:.2} s at {} Hz; ended: {ended}",
        r.samples.len(),
        r.threads_seen,
        r.duration_ns as f64 / 1e9,
        r.rate_hz
    )?;
    let counting: Vec<&str> = r
        .events
        .iter()
        .filter(|e| e.availability.is_counting())
        .map(|e| e.event.as_str())
        .collect();
    writeln!(
        out,
        "  counting: {}",
        if counting.is_empty() {
            "nothing".into()
        } else {
            counting.join(", ")
        }
    )?;
    writeln!(out, "  counted: {COUNTED}")?;
    if let Some(totals) = &r.totals {
        let counts: Vec<String> = r
            .events
            .iter()
            .zip(totals)
            .filter(|(e, _)| e.availability.is_counting())
            .map(|(e, count)| match count {
                Some(n) => format!("{} {n}", e.event),
                None => format!("{} not read", e.event),
            })
            .collect();
        writeln!(
            out,
            "  totals over the command's life (every process and thread it started, as perf stat counts): {}",
            if counts.is_empty() {
                "none".into()
            } else {
                counts.join(", ")
            }
        )?;
    }
    if r.threads_seen == 0 {
        writeln!(
            out,
            "  no samples: the process ended before its first sample{}",
            if r.totals.is_some() {
                " (its totals are above)"
            } else {
                " (a process this short is better measured whole: run it as `tinct monitor -- COMMAND`, or with `perf stat`)"
            }
        )?;
    }
    for missing in r.missing() {
        writeln!(out, "  missing: {missing}")?;
    }
    match overhead {
        Some(o) => writeln!(
            out,
            "  overhead of sampling at {} Hz: {:.3}x (reference workload median {} monitored vs {} plain, {} runs each, {} samples per run)",
            o.rate_hz,
            o.ratio,
            tinct_base::units::ms_with_unit(o.monitored.median),
            tinct_base::units::ms_with_unit(o.plain.median),
            o.plain.count,
            o.samples_per_run
        )?,
        None => writeln!(out, "  overhead: not measured (--no-overhead)")?,
    }
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    writeln!(out, "  files: {}", files.join(", "))?;
    Ok(())
}

/// [`sampled_sharing_text`] into any writer.
pub fn write_sampled_sharing(out: &mut impl Write, sharing: &SampledSharing) -> fmt::Result {
    match &sharing.report {
        Some(report) => {
            writeln!(
                out,
                "tinct monitor: sharing ({}): {} samples",
                sharing.mechanism.as_deref().unwrap_or("-"),
                sharing.samples
            )?;
            for pair in report.contended_pairs() {
                writeln!(
                    out,
                    "  {} and {} share {} written line(s) (true {}, false {}), e.g. {}",
                    pair.a,
                    pair.b,
                    pair.true_sharing + pair.false_sharing,
                    pair.true_sharing,
                    pair.false_sharing,
                    hex_list(&pair.example_lines)
                )?;
            }
            for line in sharing.hitm_lines.iter().take(10) {
                writeln!(
                    out,
                    "  {:#x}: {} loads of {} hit another core's modified copy (HITM)",
                    line.line, line.samples, line.thread
                )?;
            }
        }
        None => writeln!(
            out,
            "tinct monitor: sharing detection by the CPU: unavailable: {}; for a tinct task \
             set, `tinct monitor --plan FILE` replays its tasks' memory through the cache model",
            sharing.unavailable.as_deref().unwrap_or("no mechanism")
        )?,
    }
    Ok(())
}

fn hex_list(lines: &[u64]) -> String {
    let shown: Vec<String> = lines.iter().take(3).map(|l| format!("{l:#x}")).collect();
    shown.join(", ")
}

/// [`plan_sharing_text`] into any writer.
pub fn write_plan_sharing(out: &mut impl Write, plan: &Path, check: &SharingCheck) -> fmt::Result {
    writeln!(
        out,
        "tinct monitor --plan {}: cache lines shared by the tasks' per-job streams \
         (job kernels, runtime bookkeeping), replayed through tinct-sim",
        plan.display()
    )?;
    if check.cross_cpu_pairs.is_empty() {
        writeln!(out, "  no two tasks on different CPUs share a written line")?;
    }
    for pair in check.cross_cpu() {
        writeln!(
            out,
            "  {} and {} (different CPUs): {} line(s) of true sharing, {} of false sharing",
            pair.a, pair.b, pair.true_sharing, pair.false_sharing
        )?;
    }
    for line in check.written_lines() {
        writeln!(
            out,
            "  {:#x} in {}: {:?} sharing by {}",
            line.line,
            line.region,
            line.kind,
            line.tasks.join(", ")
        )?;
    }
    writeln!(
        out,
        "  working sets: {} shared line(s)",
        check.working_set_lines()
    )?;
    if !check.unmodelled.is_empty() {
        writeln!(
            out,
            "  NOT MODELLED: the own accesses of the program(s) of {} (only tinct's bookkeeping \
             of their jobs is; `tinct monitor --sharing -- PROGRAM` samples a program's on a \
             machine with precise memory sampling)",
            check.unmodelled.join(", ")
        )?;
    }
    Ok(())
}

/// The live line while a recording samples: the latest sample summed over
/// the threads ([`live_line`]), at most every [`LiveLine::PERIOD`].
#[derive(Debug, Clone)]
pub struct LiveLine {
    names: Vec<String>,
    last_shown: Option<Instant>,
}

impl LiveLine {
    /// The least time between two lines shown.
    pub const PERIOD: Duration = Duration::from_millis(500);

    /// The live line of a recording of `params`' events.
    pub fn new(params: &Params) -> LiveLine {
        LiveLine {
            names: params.events.iter().map(|e| e.name.clone()).collect(),
            last_shown: None,
        }
    }

    /// The line to show for one sampling round's `rows` at `now`: `None`
    /// without rows, or when the last line shown is younger than
    /// [`Self::PERIOD`].
    pub fn next(&mut self, rows: &[Sample], now: Instant) -> Option<String> {
        if self
            .last_shown
            .is_some_and(|shown| now.duration_since(shown) < Self::PERIOD)
        {
            return None;
        }
        let total = Sample::total(rows)?;
        self.last_shown = Some(now);
        Some(live_line(&total, rows.len(), &self.names))
    }
}

/// The live line of one sample summed over `threads` threads.
pub fn live_line(total: &Sample, threads: usize, names: &[String]) -> String {
    let or_dash = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("-".into(), f);
    format!(
        "  {:7.2} s  {} thread(s)  IPC {}  LLC miss {}  cpu {}  cs/s {}  migr/s {}  faults/s {}",
        total.t_ns as f64 / 1e9,
        threads,
        or_dash(total.ipc(names), &|v| format!("{v:.2}")),
        or_dash(total.miss_ratio(names), &|v| format!("{:.1}%", v * 100.0)),
        or_dash(total.cpu_share(names), &|v| format!("{:.0}%", v * 100.0)),
        or_dash(total.rate(names, PerfEvent::ContextSwitches), &|v| format!(
            "{v:.0}"
        )),
        or_dash(total.rate(names, PerfEvent::CpuMigrations), &|v| format!(
            "{v:.0}"
        )),
        or_dash(total.rate(names, PerfEvent::PageFaults), &|v| format!(
            "{v:.0}"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Target;
    use crate::output::tests::recording;

    #[test]
    fn the_live_line_shows_a_round_at_most_twice_a_second() {
        let params = Params::new(Target::Pid(1), 100);
        let mut live = LiveLine::new(&params);
        let rows = recording(false).samples;
        let start = Instant::now();
        assert_eq!(live.next(&[], start), None, "no rows, no line");
        let first = live
            .next(&rows[..1], start)
            .expect("the first round is shown");
        assert!(first.contains("1 thread(s)"), "{first}");
        assert_eq!(live.next(&rows[1..2], start + LiveLine::PERIOD / 2), None);
        let later = live.next(&rows[1..2], start + LiveLine::PERIOD);
        assert!(later.is_some_and(|line| line.contains("0.02 s")));
    }

    #[test]
    fn the_summary_says_what_counted_what_is_missing_and_where_the_files_are() {
        let text = summary_text(&recording(false), None, &[PathBuf::from("d/monitor.csv")]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "tinct monitor: test");
        assert_eq!(
            lines[1],
            "  4 samples of 1 thread(s) over 0.04 s at 100 Hz; ended: the command exited with status 0"
        );
        assert!(
            lines[2].starts_with("  counting: ") && !lines[2].contains("cycles"),
            "{text}"
        );
        assert_eq!(lines[3], format!("  counted: {COUNTED}"));
        assert_eq!(
            lines[4],
            "  totals over the command's life (every process and thread it started, as perf stat counts): \
             task-clock 20000000, context-switches 4, cpu-migrations 0, page-faults 12"
        );
        assert!(!text.contains("no samples"), "{text}");
        let mut nothing_seen = recording(false);
        nothing_seen.threads_seen = 0;
        nothing_seen.samples.clear();
        let text = summary_text(&nothing_seen, None, &[]);
        assert!(
            text.contains(
                "  no samples: the process ended before its first sample (its totals are above)"
            ),
            "{text}"
        );
        nothing_seen.totals = None;
        let text = summary_text(&nothing_seen, None, &[]);
        assert!(!text.contains("totals"), "{text}");
        assert!(
            text.contains("run it as `tinct monitor -- COMMAND`"),
            "{text}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("  missing: cycles: ")),
            "{text}"
        );
        assert!(
            lines.contains(&"  overhead: not measured (--no-overhead)"),
            "{text}"
        );
        assert_eq!(lines.last(), Some(&"  files: d/monitor.csv"));
    }

    #[test]
    fn the_live_line_shows_rates_and_dashes_for_what_is_not_counted() {
        let with = recording(true);
        let total = Sample::total(&with.samples[3..]).unwrap();
        let line = live_line(&total, 1, &with.event_names());
        assert!(
            line.starts_with("     0.04 s  1 thread(s)  IPC 2.00  "),
            "{line}"
        );
        let without = recording(false);
        let total = Sample::total(&without.samples[3..]).unwrap();
        let line = live_line(&total, 1, &without.event_names());
        assert!(line.contains("IPC -  LLC miss -"), "{line}");
    }
}
