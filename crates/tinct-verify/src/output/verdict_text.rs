//! The text of a run's verdict, as `tinct run` prints it: response and
//! execution times next to the analysis' bounds (kim2013 Section IV),
//! blocking at locks, the cache-isolation proof, hardware counters, the
//! stall sentinel and the jobs above their bounds with their causes, then
//! the loud lines. [`verdict_alarms`] are the loud lines again, for the
//! error stream.

use super::Summary;
use crate::attribution::Cause;
use std::fmt::{self, Write};
use tinct_report::text::{ms, ms_with_unit, opt_ms, opt_us, table, us};

/// A mean (or ρ) of nanoseconds in the one `ms` rule, rounded to the
/// nanosecond first (half a nanosecond at most).
fn ms_of_mean(ns: f64) -> String {
    ms(ns.round() as u64)
}

/// The exit status of a run whose jobs exceeded the analysis' bound with
/// no cause found (the analysis or its inputs are wrong).
pub const UNEXPLAINED_EXIT: u8 = 3;

/// The verdict as people read it: tables and loud flags.
pub fn verdict_text(summary: &Summary) -> String {
    let mut out = String::new();
    write_verdict(&mut out, summary).expect("writing to a String cannot fail");
    out
}

/// The loud lines of the verdict (isolation alarms, bounds exceeded, jobs
/// unexplained), in the order the text has them, for the error stream.
pub fn verdict_alarms(summary: &Summary) -> Vec<String> {
    let mut alarms = summary.isolation.alarms();
    alarms.extend(bound_alarms(summary));
    alarms.extend(unexplained_alarm(summary));
    alarms
}

/// [`verdict_text`] into any writer.
pub fn write_verdict(out: &mut impl Write, summary: &Summary) -> fmt::Result {
    writeln!(out, "\nscheduling: {}", summary.scheduling)?;
    writeln!(out, "RT throttling: {}", summary.rt_throttling)?;
    writeln!(out, "run: {}", summary.stop_description)?;
    for note in &summary.notes {
        writeln!(out, "note: {note}")?;
    }
    let mut jobs = table(&[
        "task",
        "CPU",
        "policy",
        "released",
        "ok",
        "missed",
        "aborted",
        "R max",
        "R p99",
        "R mean",
        "ρ(R)=μ+2σ",
        "WCRT CInt",
        "WCRT NoCInt",
        "verdict",
    ]);
    for t in &summary.tasks {
        let policy = if t.scheduling.is_empty() {
            t.policy.kernel_name()
        } else {
            t.scheduling.join(", ")
        };
        let cpus = t
            .cpus
            .as_ref()
            .map_or("any".into(), |c| tinct_sys::format_cpu_list(c));
        let verdict = super::verdict_word(
            t.exceeds_bound,
            t.jobs.missed,
            t.error.is_some(),
            t.bound.is_some_and(|b| b.wcrt_ns.is_some()),
            t.jobs.completed,
        );
        let r = &t.response;
        jobs.add_row(vec![
            t.name.clone(),
            cpus,
            policy,
            t.jobs.released.to_string(),
            t.jobs.completed.to_string(),
            t.jobs.missed.to_string(),
            t.jobs.aborted.to_string(),
            ms(r.max),
            ms(r.p99),
            ms_of_mean(r.mean),
            ms_of_mean(r.rho),
            opt_ms(t.bound.and_then(|b| b.wcrt_ns)),
            opt_ms(t.bound.and_then(|b| b.wcrt_nocint_ns)),
            verdict.into(),
        ]);
    }
    writeln!(
        out,
        "\nresponse time (finish − planned release), ms [{}]",
        summary.scheduling
    )?;
    writeln!(out, "{jobs}")?;
    let mut exec = table(&[
        "task",
        "work per job",
        "C max",
        "C p99",
        "C mean",
        "ρ(C)",
        "C bound",
        "latency p50/p99/max (µs)",
        "preempt.",
        "migr.",
        "working set",
    ]);
    for t in &summary.tasks {
        let work = t
            .work
            .iter()
            .map(|w| match w.target_ns {
                Some(target) => format!("calibrated to {}", ms_with_unit(target)),
                None => format!("fixed {} it.", w.work.memory + w.work.compute),
            })
            .collect::<Vec<_>>()
            .join(", ");
        let c = &t.exec;
        let l = &t.latency;
        exec.add_row(vec![
            t.name.clone(),
            if work.is_empty() { "—".into() } else { work },
            ms(c.max),
            ms(c.p99),
            ms_of_mean(c.mean),
            ms_of_mean(c.rho),
            opt_ms(t.bound.map(|b| b.wcet_ns)),
            format!("{}/{}/{}", us(l.median), us(l.p99), us(l.max)),
            t.preemptions.to_string(),
            t.migrations.to_string(),
            t.placement.describe(),
        ]);
    }
    writeln!(
        out,
        "\nexecution time (thread CPU time), ms, and release latency"
    )?;
    writeln!(out, "{exec}")?;
    write_blocking(out, summary)?;
    write_isolation(out, summary)?;
    write_counters(out, summary)?;
    write_sentinel(out, summary)?;
    write_late_jobs(out, summary)?;
    for message in bound_alarms(summary) {
        writeln!(out, "{message}")?;
    }
    for t in &summary.tasks {
        if let Some(program) = &t.program {
            writeln!(
                out,
                "task '{}': program {} (pid {}) {}{}{}; its stderr: {}/{}",
                t.name,
                program.command.join(" "),
                program.pid,
                if program.ready.is_empty() {
                    String::new()
                } else {
                    format!("{}, ", program.ready)
                },
                program.ended,
                if program.killed {
                    ", killed: it had not ended a second after its input did"
                } else {
                    ""
                },
                super::PROGRAMS_DIR,
                super::program_stderr_name(&t.name)
            )?;
        }
    }
    for t in summary.tasks.iter().filter(|t| t.error.is_some()) {
        writeln!(
            out,
            "!!! task '{}' failed: {}",
            t.name,
            t.error.as_deref().unwrap_or("")
        )?;
    }
    if !summary.balanced {
        writeln!(
            out,
            "!!! job accounting does not balance (released ≠ completed + missed + aborted): a runtime bug"
        )?;
    }
    if summary.misses > 0 {
        writeln!(out, "{} deadline miss(es)", summary.misses)?;
    }
    if let Some(message) = unexplained_alarm(summary) {
        writeln!(out, "{message}")?;
    }
    Ok(())
}

/// The loud lines about jobs above their bounds: a response time above the
/// WCRT, then a wait at a lock above B_i.
fn bound_alarms(summary: &Summary) -> Vec<String> {
    let mut alarms = Vec::new();
    for t in summary.tasks.iter().filter(|t| t.exceeds_bound) {
        let bound = t.bound.and_then(|b| b.wcrt_ns).unwrap_or(0);
        let message = format!(
            "!!! task '{}': observed response time {} ms EXCEEDS the analysis bound (WCRT with cache interference) {} ms; causes: {}",
            t.name,
            ms(t.response.max),
            ms(bound),
            t.causes.describe()
        );
        let message = if summary.realtime {
            message
        } else {
            format!("{message} (under SCHED_OTHER, --no-rt: the bound does not apply)")
        };
        alarms.push(message);
    }
    for t in summary.tasks.iter().filter(|t| t.blocking.exceeds_bound) {
        let message = format!(
            "!!! task '{}': a job waited {} µs at a lock, above the analysis' blocking B_i = {} µs",
            t.name,
            us(t.blocking.observed_max_ns),
            opt_us(t.blocking.bound_ns)
        );
        alarms.push(message);
    }
    alarms
}

/// The loud line about jobs above the bound with no cause found.
fn unexplained_alarm(summary: &Summary) -> Option<String> {
    (summary.unexplained > 0).then(|| {
        format!(
            "!!! {} job(s) exceeded the analysis' bound with NO explanation (no host stall, \
             execution above C or platform overhead long enough to cover it; colouring {}): the \
             analysis or its inputs are wrong; exit status {UNEXPLAINED_EXIT}",
            summary.unexplained,
            summary.colouring.describe()
        )
    })
}

/// The columns of the late-job table: a title for each cause people know,
/// a cause added later under its name in the files, then the unexplained.
fn cause_columns() -> Vec<(Cause, &'static str)> {
    const TITLED: [(Cause, &str); 8] = [
        (Cause::HostStall, "host stall"),
        (Cause::CbsThrottle, "CBS throttle"),
        (Cause::ExecAboveC, "exec above C"),
        (Cause::PlatformOverhead, "overhead"),
        (Cause::ColouringNotEffective, "colouring"),
        (Cause::NotRealTime, "not real-time"),
        (Cause::Predicted, "predicted"),
        (Cause::NoAnalysis, "no analysis"),
    ];
    let mut columns = TITLED.to_vec();
    columns.extend(
        Cause::ALL
            .into_iter()
            .filter(|c| *c != Cause::Unexplained && !TITLED.iter().any(|(t, _)| t == c))
            .map(|c| (c, c.name())),
    );
    columns.push((Cause::Unexplained, "UNEXPLAINED"));
    columns
}

/// What the stall sentinel saw and what it cost, per CPU.
fn write_sentinel(out: &mut impl Write, summary: &Summary) -> fmt::Result {
    writeln!(out, "colouring: {}", summary.colouring.describe())?;
    let Some(sentinel) = &summary.sentinel else {
        writeln!(
            out,
            "stall sentinel: off (no late job can be blamed on a host stall)"
        )?;
        return Ok(());
    };
    writeln!(
        out,
        "stall sentinel: one thread per CPU every {} µs{}, a wake-up {} µs late is a stall",
        us(sentinel.period_ns),
        if sentinel.top_priority {
            " at SCHED_FIFO 99"
        } else {
            " under SCHED_OTHER (--no-rt: its gaps prove nothing)"
        },
        us(sentinel.threshold_ns)
    )?;
    for cpu in &sentinel.cpus {
        let share = cpu
            .cpu_share
            .map_or("—".into(), |s| format!("{:.2} %", s * 100.0));
        let steal = cpu.steal_ns.map_or("unknown".into(), ms_with_unit);
        writeln!(
            out,
            "  CPU {}: {} wake-ups, own CPU time {share}; {} stall(s), {} ms in all, longest {} ms; steal time {steal}",
            cpu.cpu,
            cpu.wakes,
            cpu.stalls,
            ms(cpu.stalled_ns),
            ms(cpu.longest_ns)
        )?;
    }
    Ok(())
}

/// The jobs above their bound: counts per cause, then the first few of
/// each task with their explanation (all of them are in summary.json).
fn write_late_jobs(out: &mut impl Write, summary: &Summary) -> fmt::Result {
    const SHOWN: usize = 5;
    if summary.causes.total() == 0 {
        return Ok(());
    }
    let columns = cause_columns();
    let mut header = vec!["task", "late jobs"];
    header.extend(columns.iter().map(|&(_, title)| title));
    let mut t = table(&header);
    for task in summary.tasks.iter().filter(|t| t.causes.total() > 0) {
        let c = &task.causes;
        let mut row = vec![task.name.clone(), c.total().to_string()];
        row.extend(columns.iter().map(|&(cause, _)| c.get(cause).to_string()));
        t.add_row(row);
    }
    writeln!(
        out,
        "\njobs above their bound (the WCRT, else the deadline), by cause"
    )?;
    writeln!(out, "{t}")?;
    for task in &summary.tasks {
        for job in task.late.iter().take(SHOWN) {
            writeln!(
                out,
                "  {} job {}: R {} ms > {} {} ms by {} ms: {}",
                task.name,
                job.job,
                ms(job.response_ns),
                match job.bound {
                    crate::attribution::BoundKind::Wcrt => "WCRT",
                    crate::attribution::BoundKind::Deadline => "D",
                },
                ms(job.bound_ns),
                ms(job.exceedance_ns),
                job.explanation
            )?;
        }
        if task.late.len() > SHOWN {
            writeln!(
                out,
                "  {}: {} more in summary.json (late) and jobs.csv (cause)",
                task.name,
                task.late.len() - SHOWN
            )?;
        }
    }
    Ok(())
}

/// Blocking met at locks next to the analysis' B_i, when the run has
/// shared resources or a job waited at a lock.
fn write_blocking(out: &mut impl Write, summary: &Summary) -> fmt::Result {
    use tinct_rt::spec::BlockingShows;
    let relevant = |t: &&super::TaskVerdict| {
        t.blocking.shows != BlockingShows::Nowhere || t.blocking.observed_max_ns > 0
    };
    if !summary.tasks.iter().any(|t| relevant(&t)) {
        return Ok(());
    }
    let mut blocking = table(&[
        "task",
        "blocked at a lock max (µs)",
        "release latency max (µs)",
        "B_i (µs)",
    ]);
    let mut notes: Vec<&str> = Vec::new();
    for t in summary.tasks.iter().filter(relevant) {
        blocking.add_row(vec![
            t.name.clone(),
            us(t.blocking.observed_max_ns),
            us(t.latency.max),
            opt_us(t.blocking.bound_ns),
        ]);
        if !notes.contains(&t.blocking.note.as_str()) {
            notes.push(&t.blocking.note);
        }
    }
    writeln!(out, "\nblocking (observed at locks; B_i of the analysis)")?;
    writeln!(out, "{blocking}")?;
    for note in notes {
        writeln!(out, "blocking: {note}")?;
    }
    Ok(())
}

/// The proof that the colouring isolates the working sets: the verdict,
/// the cache model and colour rule, one line per task, and a loud line for
/// every two tasks that can run at the same time and evict each other
/// although the plan keeps their partitions disjoint.
fn write_isolation(out: &mut impl Write, summary: &Summary) -> fmt::Result {
    let isolation = &summary.isolation;
    writeln!(out, "\ncache isolation: {}", isolation.headline())?;
    if let Some(line) = isolation.model_line() {
        writeln!(out, "  {line}")?;
    }
    if let Some(note) = isolation.analysis_note() {
        writeln!(out, "  {note}")?;
    }
    for task in &summary.tasks {
        if let Some(proof) = &task.isolation {
            writeln!(out, "  {}", proof.describe(&task.name))?;
        }
    }
    for alarm in isolation.alarms() {
        writeln!(out, "!!! {alarm}")?;
    }
    Ok(())
}

/// Hardware counters per job, or why there are none.
fn write_counters(out: &mut impl Write, summary: &Summary) -> fmt::Result {
    if summary
        .tasks
        .iter()
        .any(|t| t.llc_misses.is_some() || t.instructions.is_some())
    {
        let mut t = table(&[
            "task",
            "LLC misses/job mean",
            "LLC misses/job max",
            "instructions/job mean",
        ]);
        for task in &summary.tasks {
            let mean = |d: Option<tinct_report::Counts>| {
                d.map_or("—".into(), |d| format!("{:.0}", d.mean))
            };
            let max =
                |d: Option<tinct_report::Counts>| d.map_or("—".into(), |d| d.max.to_string());
            t.add_row(vec![
                task.name.clone(),
                mean(task.llc_misses),
                max(task.llc_misses),
                mean(task.instructions),
            ]);
        }
        writeln!(out, "\nhardware counters per job")?;
        writeln!(out, "{t}")?;
    } else if let Some(why) = summary
        .tasks
        .iter()
        .find_map(|t| t.counters_unavailable.as_deref())
    {
        writeln!(out, "hardware counters: not available here ({why})")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::fixture::result;
    use crate::output::summarize;

    fn summary() -> Summary {
        summarize("x.toml", 400, &result())
    }

    #[test]
    fn the_verdict_prints_each_task_with_its_jobs_and_bounds() {
        let text = verdict_text(&summary());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "");
        assert!(lines[1].starts_with("scheduling: "), "{text}");
        assert_eq!(lines[2], "RT throttling: 950000 µs per 1000000 µs");
        // a: 4 released, 2 ok, 1 missed, 1 aborted; WCRT 30 ns, NoCInt 20 ns.
        let row = lines
            .iter()
            .find(|l| l.starts_with("│ a ") && l.contains("SCHED_FIFO"))
            .unwrap_or_else(|| panic!("no row of a:\n{text}"));
        let cells: Vec<&str> = row.split(['│', '┆']).map(str::trim).collect();
        assert_eq!(&cells[4..8], ["4", "2", "1", "1"], "{row}");
        assert_eq!(&cells[12..14], ["0.00", "0.00"], "{row}");
        assert!(text.contains("\n1 deadline miss(es)\n"), "{text}");
    }

    #[test]
    fn late_jobs_have_a_column_per_cause_and_a_line_each() {
        let text = verdict_text(&summary());
        let header = text
            .lines()
            .find(|l| l.contains("late jobs"))
            .unwrap_or_else(|| panic!("no late-job table:\n{text}"));
        for title in [
            "host stall",
            "exec above C",
            "overhead",
            "colouring",
            "UNEXPLAINED",
        ] {
            assert!(header.contains(title), "{header}");
        }
        assert!(
            text.lines().any(|l| l.starts_with("  a job 2: R ")),
            "{text}"
        );
    }

    #[test]
    fn every_alarm_is_in_the_text_too() {
        let summary = summary();
        let alarms = verdict_alarms(&summary);
        assert!(
            alarms
                .iter()
                .any(|a| a.starts_with("!!! task 'a': observed response time")),
            "{alarms:?}"
        );
        let text = verdict_text(&summary);
        for alarm in &alarms {
            assert!(
                text.lines()
                    .any(|l| l == alarm || l == format!("!!! {alarm}")),
                "{alarm} is not in\n{text}"
            );
        }
    }

    #[test]
    fn a_cause_without_a_title_gets_a_column_under_its_name() {
        let columns = cause_columns();
        assert_eq!(columns.len(), Cause::ALL.len());
        assert_eq!(columns.last(), Some(&(Cause::Unexplained, "UNEXPLAINED")));
        for cause in Cause::ALL {
            assert!(columns.iter().any(|&(c, _)| c == cause), "{cause:?}");
        }
    }
}
