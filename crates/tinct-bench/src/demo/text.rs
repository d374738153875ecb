//! The demo's results as people read them: the comparison of measured C,
//! bound and observation per task, and where an interrupted demo stopped.
//! Strings, so the CLI only prints them (as `tinct_verify::output::verdict_text`).

use super::{DemoVerdict, InterruptedVerdict};
use std::fmt::Write as _;
use std::path::Path;
use tinct_report::text::{ms, table};

/// Measured C, bound and observation per task, and the demo's conclusion
/// (for stdout; ends with a newline).
pub fn comparison_text(verdict: &DemoVerdict) -> String {
    let mut out = String::new();
    write_comparison(&mut out, verdict).expect("writing to a String cannot fail");
    out
}

fn write_comparison(out: &mut String, verdict: &DemoVerdict) -> std::fmt::Result {
    writeln!(
        out,
        "\nthe loop closed: C measured (max, {}), bound with the overheads ({}), observed",
        verdict.conditions.join(", "),
        verdict.overheads.from
    )?;
    let mut t = table(&[
        "task",
        "CPU",
        "|S|",
        "C (ms)",
        "exec max (ms)",
        "T = D (ms)",
        "bound (ms)",
        "observed max (ms)",
        "jobs",
        "late",
        "unexplained",
    ]);
    for task in &verdict.tasks {
        t.add_row(vec![
            task.name.clone(),
            task.cpu.map_or("-".into(), |c| c.to_string()),
            task.partitions.map_or("-".into(), |p| p.to_string()),
            ms(task.c_ns),
            ms(task.exec_max_ns),
            ms(task.period_ns),
            task.bound_ns.map_or("> D".into(), ms),
            ms(task.observed_max_ns),
            task.jobs.to_string(),
            task.late.to_string(),
            task.unexplained.to_string(),
        ]);
    }
    writeln!(out, "{t}")?;
    for task in verdict.tasks.iter().filter(|t| t.exec_max_ns > t.c_ns) {
        writeln!(
            out,
            "note: '{}' executed up to {} ms, above its measured C {} ms: the maximum of the \
             demo's short profile (40 jobs per p) is no safe worst case (`tinct bench \
             wcet-profile` measures 100 jobs per launch, `--use pwcet:P` extrapolates); the \
             bound {}",
            task.name,
            ms(task.exec_max_ns),
            ms(task.c_ns),
            if task.late == 0 {
                "held on the analysis' slack"
            } else {
                "was exceeded: see the causes above"
            }
        )?;
    }
    if verdict.coloured {
        writeln!(out, "colours: {}", verdict.colours)?;
    } else {
        writeln!(
            out,
            "note: working sets NOT coloured, S(i) not enforced: {}",
            verdict.colours
        )?;
    }
    if let Some(note) = &verdict.isolation_absent {
        writeln!(out, "note: {note}")?;
    }
    writeln!(
        out,
        "analysis: {} (periods × {}); {}",
        if verdict.schedulable {
            "SCHEDULABLE"
        } else {
            "NOT SCHEDULABLE"
        },
        verdict.period_scale,
        if verdict.bound_met {
            "every job within its bound".to_string()
        } else if verdict.unexplained == 0 {
            format!(
                "{} job(s) above their bound, every one with its cause",
                verdict.late
            )
        } else {
            format!(
                "{} job(s) above their bound, {} UNEXPLAINED",
                verdict.late, verdict.unexplained
            )
        }
    )?;
    writeln!(out, "demo took {:.1} s", verdict.seconds)
}

/// Where an interrupted demo stopped and which files it kept in `out`
/// (one line, without its newline, for stderr).
pub fn interrupted_text(verdict: &InterruptedVerdict, out: &Path) -> String {
    format!(
        "tinct: demo interrupted (Ctrl-C) at step '{}'{}; kept in {}: {}",
        verdict.phase,
        verdict
            .error
            .as_ref()
            .map_or(String::new(), |e| format!(" (which then failed: {e})")),
        out.display(),
        verdict
            .files
            .iter()
            .map(String::as_str)
            .chain(["verdict.json"])
            .collect::<Vec<_>>()
            .join(", ")
    )
}
