//! `policy = "deadline"` and `runtime` in the task-set file (issue 30):
//! what is read, what is refused with file, line and field, what a
//! written set re-reads, and what the analysis of a set of reservations
//! says (the verdict, the first overloaded interval, the bounds).

mod common;

use common::{assert_names, error};
use tinct_core::analysis::{Analysis, analyze};
use tinct_core::format::{Syntax, parse, to_json, to_toml};
use tinct_core::model::TaskPolicy;
use tinct_core::units::Nanos;

const HEADER: &str = include_str!("fixtures/one_core_platform.toml");

/// `HEADER` and the task tables in `tasks`.
fn set_text(tasks: &str) -> String {
    format!("{HEADER}{tasks}")
}

const RESERVATIONS: &str = include_str!("fixtures/reservations.toml");

#[test]
fn policy_and_runtime_are_read_and_written_back() {
    let set = parse(&set_text(RESERVATIONS), "set.toml", Syntax::Toml).unwrap();
    let policies: Vec<TaskPolicy> = set.tasks.iter().map(|t| t.policy).collect();
    assert_eq!(
        policies,
        [TaskPolicy::Deadline, TaskPolicy::Deadline, TaskPolicy::Fifo]
    );
    assert_eq!(set.tasks[0].runtime, Some(Nanos(2_000_000)));
    assert_eq!(set.tasks[1].runtime, None);
    // The reservations rank above the SCHED_FIFO task, which keeps its own.
    assert_eq!(set.priorities(), [0, 0, 1]);
    let toml = to_toml(&set, &[]);
    assert!(toml.contains(r#"policy = "deadline""#), "{toml}");
    let again = parse(&toml, "again.toml", Syntax::Toml).unwrap();
    assert_eq!(again.tasks, set.tasks);
    let from_json = parse(&to_json(&set), "again.json", Syntax::Json).unwrap();
    assert_eq!(from_json.tasks, set.tasks);
}

/// A table of `[[task]]` keys starting on line 6 (after `HEADER`).
fn refused(task_keys: &str) -> tinct_core::format::InputError {
    error(&set_text(&format!(
        "\n[[task]]\nname = \"x\"\nperiod = \"10ms\"\nmemory = \"1KiB\"\nwcet = \"1ms\"\n{task_keys}\n"
    )))
}

#[test]
fn what_a_reservation_cannot_have_is_refused_where_it_is_written() {
    let err = refused("policy = \"edf\"");
    assert_names(&err, 12, "task 'x' field `policy`", "\"edf\"");
    let err = refused("runtime = \"1ms\"");
    assert_names(&err, 12, "task 'x' field `runtime`", "a runtime");
    let err = refused("policy = \"deadline\"\npriority = 3");
    assert_names(&err, 13, "task 'x' field `priority`", "a priority");
    let err = refused("policy = \"deadline\"\nruntime = \"11ms\"");
    assert_names(&err, 13, "task 'x' field `runtime`", "11ms");
    let err = refused("policy = \"deadline\"\nblocking = \"4ms\"");
    assert_names(&err, 13, "task 'x' field `blocking`", "a blocking");
    let err = refused("policy = \"deadline\"\nruntime = \"1000ns\"");
    assert!(
        err.to_string().contains("1.024us (the kernel's smallest)"),
        "{err}"
    );
    let err = error(&set_text(
        r#"
[[resource]]
name = "bus"
protocol = "pcp"

[[task]]
name = "x"
policy = "deadline"
period = "10ms"
memory = "1KiB"
wcet = "1ms"
critical_sections = [{ resource = "bus", length = "100us" }]
"#,
    ));
    assert_names(
        &err,
        17,
        "task 'x' field `critical_sections`",
        "1 critical section",
    );
    let err = error(&set_text(
        r#"
[[task]]
name = "p"
period = "10ms"
memory = "1KiB"
wcet = "1ms"

[[task]]
name = "c"
policy = "deadline"
trigger = "data"
memory = "1KiB"
wcet = "1ms"

[[edge]]
from = "p"
to = "c"
buffer = "1KiB"
"#,
    ));
    assert_names(&err, 16, "task 'c' field `trigger`", "\"data\"");
}

#[test]
fn a_priority_is_asked_of_every_fifo_task_but_no_reservation() {
    let err = error(&set_text(
        r#"
[[task]]
name = "a"
period = "10ms"
memory = "1KiB"
wcet = "1ms"
priority = 1

[[task]]
name = "b"
period = "10ms"
memory = "1KiB"
wcet = "1ms"

[[task]]
name = "r"
policy = "deadline"
period = "10ms"
memory = "1KiB"
wcet = "1ms"
"#,
    ));
    // 'b' lacks one; 'r' needs none.
    assert_names(&err, 14, "task 'b' field `priority`", "no priority");
}

/// The analysis of `HEADER` and the task tables in `tasks` (the sets of
/// the tests below are in `fixtures/deadline_tasks/`).
fn analysis_of(tasks: &str) -> Analysis {
    analyze(&parse(&set_text(tasks), "set.toml", Syntax::Toml).unwrap()).unwrap()
}

/// The set above: the reservations fit, each with a response bound below
/// its deadline, and the SCHED_FIFO logger sees them as higher-priority
/// load.
#[test]
fn reservations_that_fit_are_bounded_by_their_deadlines() {
    let analysis = analysis_of(RESERVATIONS);
    assert!(analysis.schedulable, "{:?}", analysis.reasons);
    let edf = analysis.cores[0].edf.as_ref().unwrap();
    assert_eq!(edf.tasks, ["control", "video"]);
    assert!(edf.schedulable && edf.overload.is_none());
    let [control, video, logger] = &analysis.tasks[..] else {
        panic!("three tasks");
    };
    // Spuri's bounds: control, the shortest deadline, alone: C' = 1 ms +
    // ω + γ = 1.02 ms; video behind two of control's jobs: 10.01 + 2 ·
    // 1.02 = 12.05 ms (no jitter, so from the wake-up is from the release).
    assert_eq!(control.wcrt_ns, Some(1_020_000));
    assert_eq!(video.wcrt_ns, Some(12_050_000));
    assert_eq!(control.runtime_ns, Some(2_000_000));
    // Δ = 10 µs: control shares partition 2 with video (ω) and can
    // preempt it (γ); video shares it too, but preempts nothing.
    assert_eq!(
        (control.warmup_ns, control.crpd_caused_ns),
        (10_000, 10_000)
    );
    assert_eq!((video.warmup_ns, video.crpd_caused_ns), (10_000, 0));
    // video's runtime: C' = 10.01 ms, plus one resumption after each of
    // control's wake-ups within its 40 ms window (5 of them, at 0, 10, …,
    // 40 ms), each reloading partition 2: 10.06 ms.
    assert_eq!(video.runtime_ns, Some(10_060_000));
    // logger: C = 20 ms under control's jobs (1 ms + ω + γ = 1.02 ms,
    // jitter D − C = 4 ms: anywhere within their 5 ms deadline) and
    // video's (10 ms + ω = 10.01 ms, jitter 30 ms): w = 20 + ⌈(w + 4)/10⌉
    // · 1.02 + ⌈(w + 30)/40⌉ · 10.01 settles at 45.12 ms (5 and 2 jobs).
    assert_eq!(logger.policy, TaskPolicy::Fifo);
    assert_eq!(
        logger.wcrt_ns,
        Some(20_000_000 + 5 * 1_020_000 + 2 * 10_010_000)
    );
    // The analysis reads back what it writes.
    let json = serde_json::to_string(&analysis).unwrap();
    let back: Analysis = serde_json::from_str(&json).unwrap();
    assert_eq!(back, analysis);
}

/// U = 0.6 and still overloaded: both reservations need their runtime
/// within the same 3 ms. The interval is given, and the SCHED_FIFO task of
/// the core loses its bound with the reason.
#[test]
fn an_overloaded_core_names_its_first_overloaded_interval() {
    let analysis = analysis_of(include_str!("fixtures/deadline_tasks/overloaded_core.toml"));
    assert!(!analysis.schedulable);
    let edf = analysis.cores[0].edf.as_ref().unwrap();
    let overload = edf.overload.unwrap();
    assert_eq!(
        (overload.interval_ns, overload.demand_ns),
        (3_000_000, 4_000_000)
    );
    assert!(analysis.tasks.iter().all(|t| t.wcrt_ns.is_none()));
    let reasons = analysis.cores[0].reasons.join("\n");
    assert!(reasons.contains("within an interval of 3ms"), "{reasons}");
    assert!(
        reasons.contains("task 'f' misses its deadline: the SCHED_DEADLINE reservations"),
        "{reasons}"
    );
}

/// A `runtime` below what a job may consume is reported, though the
/// demand fits: the kernel would throttle the job.
#[test]
fn a_runtime_below_the_need_is_reported() {
    let analysis = analysis_of(include_str!(
        "fixtures/deadline_tasks/runtime_below_need.toml"
    ));
    assert!(!analysis.schedulable);
    let edf = analysis.cores[0].edf.as_ref().unwrap();
    assert!(edf.overload.is_none());
    assert!(
        // C' = 1 ms + ω + γ (b shares partition 1 and has the longer
        // deadline); a has the shortest deadline, so nothing preempts it.
        edf.reasons[0].contains("task 'a': its `runtime` 1ms is below the 1.02ms"),
        "{:?}",
        edf.reasons
    );
}

/// What the kernel would refuse or do differently is reported (review of
/// issue 30): a runtime above the kernel deadline D − J, runtimes past
/// the kernel's default admission of 95 %, and a runtime below the
/// kernel's smallest is raised to it; a jitter past D/2 leaves a kernel
/// deadline whose jobs still fit (the deadline runs from the wake-up).
#[test]
fn the_kernels_rules_are_applied() {
    let jittered = analysis_of(include_str!(
        "fixtures/deadline_tasks/runtime_above_kernel_deadline.toml"
    ));
    let reasons = jittered.cores[0].reasons.join("\n");
    assert!(
        reasons.contains("its `runtime` 9ms is above its kernel deadline D − J = 8ms"),
        "{reasons}"
    );
    let tiny = analysis_of(include_str!("fixtures/deadline_tasks/tiny_wcet.toml"));
    assert!(tiny.schedulable);
    assert_eq!(tiny.tasks[0].runtime_ns, Some(1024));
    let late = analysis_of(include_str!("fixtures/deadline_tasks/late_jitter.toml"));
    assert!(late.schedulable, "{:?}", late.reasons);
    assert_eq!(late.tasks[0].kernel_deadline_ns, Some(4_000_000));
    let full = analysis_of(include_str!("fixtures/deadline_tasks/past_admission.toml"));
    // The demand fits (8 ms in 10), but Σ Q/T = 0.96 > 0.95 − 0.05.
    assert!(full.cores[0].edf.as_ref().unwrap().overload.is_none());
    let reasons = full.cores[0].reasons.join("\n");
    assert!(
        reasons.contains("Σ Q/T = 0.9600 of the core: above the 0.9000"),
        "{reasons}"
    );
}
