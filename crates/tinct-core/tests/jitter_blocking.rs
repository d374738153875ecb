//! Release jitter, blocking and platform overheads in the response-time
//! analysis, on hand-derived examples (issues 12 and 14), and the
//! guarantee that without them every number is kim2013's Eq. (2).

mod common;

use common::three_tasks;
use tinct_core::analysis::{Analysis, analyze};
use tinct_core::format::{Syntax, parse};

fn analysis_of(text: &str) -> Analysis {
    analyze(&parse(text, "set.toml", Syntax::Toml).unwrap()).unwrap()
}

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// Per task: (J, B, R) in ns.
fn jbr(analysis: &Analysis) -> Vec<(Option<u64>, Option<u64>, Option<u64>)> {
    analysis
        .tasks
        .iter()
        .map(|t| (t.jitter_ns, t.blocking_ns, t.wcrt_ns))
        .collect()
}

/// By hand (ms). The ceiling of `bus` is τ2's priority.
/// B1 = 0 (no section with a ceiling at τ1's priority); B2 = 1 (τ3's
/// section); B3 = 0 (nothing below).
/// τ1: w = 1, R1 = J1 + w = 3.
/// τ2: w = B2 + C2 + ⌈(w + 2)/5⌉·1: 4 → ⌈6/5⌉ = 2 → 5 → ⌈7/5⌉ = 2 → 5; R2 = 5.
/// τ3: w = C3 + ⌈(w + 2)/5⌉·1 + ⌈w/12⌉·2: 6 → ⌈8/5⌉ = 2 → 7 → 7; R3 = 7.
#[test]
fn jitter_and_ceiling_blocking_by_hand() {
    let analysis = analysis_of(&three_tasks("pcp", ""));
    assert_eq!(
        jbr(&analysis),
        vec![
            (Some(2 * MS), Some(0), Some(3 * MS)),
            (Some(0), Some(MS), Some(5 * MS)),
            (Some(0), Some(0), Some(7 * MS)),
        ]
    );
    assert!(analysis.schedulable);
    assert!(
        analysis.tasks[1].blocking_source.contains("'t3' on 'bus'"),
        "{}",
        analysis.tasks[1].blocking_source
    );
    // The breakdown adds up: R2 = J + B + C + interference.
    let b = analysis.tasks[1].breakdown;
    assert_eq!(
        b.jitter_ns + b.blocking_ns + b.wcet_ns + b.interference_ns,
        5 * MS
    );
    assert_eq!(b.interference_ns, 2 * MS);
    // Without the jitter τ2 would see one job of τ1, not two.
    let no_jitter = analysis_of(&three_tasks("pcp", "").replace("jitter = \"2ms\"\n", ""));
    assert_eq!(no_jitter.tasks[1].wcrt_ns, Some(4 * MS));
}

/// δ = 0.1 ms, release latency 0.2 ms (by hand, ms): every C' = C + 0.2,
/// every J gains 0.2: J1 = 2.2, J2 = J3 = 0.2.
/// τ1: R1 = 2.2 + 1.2 = 3.4.
/// τ2: w = 1 + 2.2 + ⌈(w + 2.2)/5⌉·1.2: 4.4 → ⌈6.6/5⌉ = 2 → 5.6 → ⌈7.8/5⌉ = 2
///     → 5.6; R2 = 0.2 + 5.6 = 5.8 (PCP blocking pays no switch).
/// τ3: w = 3.2 + ⌈(w + 2.2)/5⌉·1.2 + ⌈(w + 0.2)/12⌉·2.2: 6.6 → ⌈8.8/5⌉ = 2
///     → 7.8 → ⌈10/5⌉ = 2, ⌈8/12⌉ = 1 → 7.8; R3 = 8.0.
#[test]
fn context_switches_and_release_latency_by_hand() {
    let overheads = r#"overheads = { context_switch = "0.1ms", release_latency = "0.2ms" }"#;
    let analysis = analysis_of(&three_tasks("pcp", overheads));
    assert_eq!(
        jbr(&analysis),
        vec![
            (Some(2200 * US), Some(0), Some(3400 * US)),
            (Some(200 * US), Some(MS), Some(5800 * US)),
            (Some(200 * US), Some(0), Some(8 * MS)),
        ]
    );
    for task in &analysis.tasks {
        assert_eq!(task.overhead_ns, 200 * US, "{}: 2δ per job", task.name);
    }
    assert_eq!(analysis.overheads.context_switch_ns, 100 * US);
    assert_eq!(analysis.overheads.release_latency_ns, 200 * US);
}

/// Under priority inheritance τ3's section blocks τ2 while τ2 is ready:
/// two more switches, B2 = 1 + 2δ = 1.2 ms.
/// τ2: w = 1.2 + 2.2 + ⌈(w + 2.2)/5⌉·1.2: 4.6 → ⌈6.8/5⌉ = 2 → 5.8 → ⌈8/5⌉ = 2
///     → 5.8; R2 = 6.0.
#[test]
fn inheritance_blocking_pays_its_switches() {
    let overheads = r#"overheads = { context_switch = "0.1ms", release_latency = "0.2ms" }"#;
    let analysis = analysis_of(&three_tasks("pip", overheads));
    assert_eq!(analysis.tasks[1].blocking_ns, Some(1200 * US));
    assert_eq!(analysis.tasks[1].wcrt_ns, Some(6 * MS));
    // Without overheads PIP and PCP give the same B here.
    let plain = analysis_of(&three_tasks("pip", ""));
    assert_eq!(jbr(&plain), jbr(&analysis_of(&three_tasks("pcp", ""))));
}

/// A plain mutex: τ2 waits for τ3 with nobody between them (bounded), but
/// a resource τ1 shares with τ3 leaves τ2 in between: τ1's blocking is
/// unbounded and τ1 is reported unschedulable with the reason.
#[test]
fn a_plain_mutex_is_bounded_only_without_a_task_between() {
    let bounded = analysis_of(&three_tasks("none", ""));
    assert_eq!(bounded.tasks[1].blocking_ns, Some(MS));
    assert!(bounded.schedulable);
    let text = three_tasks("none", "").replace(
        "wcet = \"1ms\"\njitter = \"2ms\"",
        "wcet = \"1ms\"\njitter = \"2ms\"\ncritical_sections = [{ resource = \"bus\", length = \"0.1ms\" }]",
    );
    let unbounded = analysis_of(&text);
    assert_eq!(unbounded.tasks[0].blocking_ns, None);
    assert_eq!(unbounded.tasks[0].wcrt_ns, None);
    assert!(!unbounded.schedulable);
    assert!(
        unbounded.cores[0]
            .reasons
            .iter()
            .any(|r| r.contains("'t1'") && r.contains("unbounded")),
        "{:?}",
        unbounded.cores[0].reasons
    );
    // The same under a ceiling: bounded by the longest section.
    let ceiling = analysis_of(&text.replace("protocol = \"none\"", "protocol = \"pcp\""));
    assert_eq!(ceiling.tasks[0].blocking_ns, Some(MS));
}

/// An explicit `blocking` at least the derived B_i replaces it (it may
/// cover blocking the set does not model); below it, the derived value is
/// used (a smaller B_i could only give a wrong SCHEDULABLE) and the
/// analysis warns with the file's line, the field and both values.
/// t2's derived B_2 is t3's 1 ms section on `bus` (pcp).
#[test]
fn explicit_blocking_is_used_only_at_or_above_the_derived_one() {
    let with_blocking = |value: &str| {
        three_tasks("pcp", "").replace(
            "name = \"t2\"\nperiod = \"12ms\"",
            &format!("name = \"t2\"\nperiod = \"12ms\"\nblocking = \"{value}\""),
        )
    };
    let above = analysis_of(&with_blocking("1.5ms"));
    assert_eq!(above.tasks[1].blocking_ns, Some(1500 * US));
    assert_eq!(above.tasks[1].blocking_source, "explicit `blocking`");
    assert!(above.warnings.is_empty(), "{:?}", above.warnings);

    let below = analysis_of(&with_blocking("0.25ms"));
    let t2 = &below.tasks[1];
    assert_eq!(t2.blocking_ns, Some(MS), "the derived, larger B_2");
    assert!(
        t2.blocking_source.contains("'t3' on 'bus'")
            && t2.blocking_source.contains("explicit `blocking` 250us"),
        "{}",
        t2.blocking_source
    );
    assert_eq!(below.warnings.len(), 1);
    let warning = &below.warnings[0];
    assert_eq!(
        (warning.task_index, warning.line, warning.field.as_str()),
        (1, Some(19), "task 't2' field `blocking`")
    );
    let values = warning.blocking.as_ref().unwrap();
    assert_eq!(
        (values.explicit_ns, values.derived_ns),
        (250 * US, Some(MS))
    );
    assert_eq!(
        warning.located("set.toml"),
        "set.toml:19: task 't2' field `blocking`: the explicit `blocking` 250us is below the B_i \
         1ms derived from the task set's resources and critical sections; the analysis uses the \
         larger, 1ms"
    );
    assert!(t2.notes.contains(&warning.message), "{:?}", t2.notes);
    // R_2 as with no explicit blocking (5 ms by hand above), not smaller.
    let derived = analysis_of(&three_tasks("pcp", ""));
    assert_eq!(t2.wcrt_ns, derived.tasks[1].wcrt_ns);
    assert_eq!(t2.wcrt_ns, Some(5 * MS));

    // Below an unbounded derived B_i (a plain mutex with t2 in between):
    // unbounded, never the explicit value.
    let unbounded = analysis_of(
        &three_tasks("none", "")
            .replace(
                "name = \"t1\"\nperiod = \"5ms\"",
                "name = \"t1\"\nperiod = \"5ms\"\nblocking = \"0.1ms\"",
            )
            .replace(
                "wcet = \"1ms\"\njitter = \"2ms\"",
                "wcet = \"1ms\"\njitter = \"2ms\"\ncritical_sections = [{ resource = \"bus\", length = \"0.1ms\" }]",
            ),
    );
    assert_eq!(unbounded.tasks[0].blocking_ns, None);
    assert_eq!(
        unbounded.warnings[0].blocking.as_ref().unwrap().derived_ns,
        None
    );
    assert!(!unbounded.schedulable);
}

/// The periodic tick is a top-priority task of its period and cost, and
/// every release is one timer interrupt for every task of the core.
/// τ1 alone (by hand, ms): C = 1, T = 5, tick 0.01 every 1, ε = 0.01:
/// w = 1 + ⌈w/1⌉·0.01 + ⌈w/5⌉·0.01: 1.02 → ⌈1.02⌉ = 2 → 1.03 → 1.03.
#[test]
fn the_tick_and_release_interrupts_by_hand() {
    let text = include_str!("fixtures/tick_and_release_interrupts.toml");
    let analysis = analysis_of(text);
    assert_eq!(analysis.tasks[0].wcrt_ns, Some(1030 * US));
    let b = analysis.tasks[0].breakdown;
    // The tick's two interruptions are interference of a hp task; the
    // task's own release interrupt is an interrupt.
    assert_eq!((b.interference_ns, b.interrupts_ns), (20 * US, 10 * US));
}

/// `none`: no overheads, no jitter, no blocking: every number of the
/// paper's Table II is unchanged and the new terms are zero.
#[test]
fn without_the_new_terms_table_ii_is_unchanged() {
    let set = tinct_core::format::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/kim2013-table2.toml"
    )))
    .unwrap();
    let analysis = analyze(&set).unwrap();
    let wcrt: Vec<Option<u64>> = analysis.tasks.iter().map(|t| t.wcrt_ns).collect();
    // kim2013 Table II, CInt column (12.30, 25.72, 101.36, 273.78 ms).
    let ms: Vec<u64> = wcrt.iter().map(|r| (r.unwrap() + 5_000) / 10_000).collect();
    assert_eq!(ms, vec![1230, 2572, 10136, 27378]);
    for task in &analysis.tasks {
        assert_eq!(
            (task.jitter_ns, task.blocking_ns, task.overhead_ns),
            (Some(0), Some(0), 0)
        );
        assert_eq!(task.breakdown.interrupts_ns, 0);
    }
    assert!(analysis.chains.is_empty());
}

/// A task that misses through its own release jitter is told so — its
/// jitter with its parts, and its own demand — never a producer's miss or
/// higher-priority interference. `lo` shares a core with `hi` (C = 1 ms,
/// T = 10 ms) and has D = T = 2^64 − 1 ns.
#[test]
fn a_miss_through_its_own_jitter_names_the_jitter() {
    let set = |jitter: &str| include_str!("fixtures/own_jitter.toml").replace("{jitter}", jitter);
    let reason = |jitter: &str| {
        let analysis = analysis_of(&set(jitter));
        assert_eq!(analysis.tasks[1].wcrt_ns, None, "{jitter}");
        analysis.cores[0].reasons.clone()
    };
    // The largest jitter a file can give: not a producer's miss (`lo` has
    // no producer).
    assert_eq!(
        reason("18446744073.709551615s"),
        [
            "task 'lo' misses its deadline 18446744073.709551615s: its release jitter \
          J = 18446744073.709551615s (its own `jitter` 18446744073.709551615s) alone reaches it"
        ]
    );
    // J + C passes D (and 2^64 ns) with no interference at all: J leaves
    // D − J = 15 ns for a C of 1 ms.
    assert_eq!(
        reason("18446744073.7095516s"),
        [
            "task 'lo' misses its deadline 18446744073.709551615s: its release jitter \
          J = 18446744073.7095516s (its own `jitter` 18446744073.7095516s) plus its own \
          C + 2δ + ω + B = 1ms come to 18446744073710551600 ns, beyond 2^64 ns without any \
          interference"
        ]
    );
    // With the jitter leaving room for C alone, the interference of `hi`
    // is what passes D.
    let text = set("1ms")
        .replace("period = \"10ms\"", "period = \"10ms\"\npriority = 1")
        .replace(
            "period = \"18446744073.709551615s\"",
            "period = \"2.5ms\"\npriority = 2",
        );
    let analysis = analysis_of(&text);
    assert!(
        analysis.cores[0].reasons[0].contains("interference of higher-priority tasks"),
        "{:?}",
        analysis.cores[0].reasons
    );
}

/// One task of a one-core set with one resource `R`, priorities in the
/// order given, memory 1 KiB: (name, T, D (`None`: D = T), C, its one
/// partition, the length of its section on `R` if it has one).
type Sketch<'a> = (
    &'a str,
    &'a str,
    Option<&'a str>,
    &'a str,
    u32,
    Option<&'a str>,
);

/// The sketched tasks on one core of 4 partitions, Δ = 1 ms, with `R`
/// under `protocol`.
fn one_resource(protocol: &str, tasks: &[Sketch<'_>]) -> String {
    let mut text = format!(
        "[platform]\ncores = 1\npartitions = 4\nmemory = \"4MiB\"\nrefill = \"1ms\"\n\n\
         [[resource]]\nname = \"R\"\nprotocol = \"{protocol}\"\n"
    );
    for (k, &(name, period, deadline, wcet, partition, section)) in tasks.iter().enumerate() {
        text += &format!(
            "\n[[task]]\nname = \"{name}\"\nperiod = \"{period}\"\nmemory = \"1KiB\"\nwcet = \"{wcet}\"\npriority = {}\npartitions = [{partition}]\n",
            k + 1
        );
        if let Some(deadline) = deadline {
            text += &format!("deadline = \"{deadline}\"\n");
        }
        if let Some(length) = section {
            text +=
                &format!("critical_sections = [{{ resource = \"R\", length = \"{length}\" }}]\n");
        }
    }
    text
}

/// A ceiling-protocol set where `j`, above the ceiling, shares partition 1
/// with `l`, the holder that blocks `i` (Δ = 1 ms; `i`'s partition 2 is
/// its own). `l_partition` is where `l` lives; `deadline_i` is D_i.
fn holder_shares_with_a_task_above_the_ceiling(l_partition: u32, deadline_i: &str) -> String {
    one_resource(
        "pcp",
        &[
            ("j", "5ms", None, "1ms", 1, None),
            ("i", "20ms", Some(deadline_i), "1ms", 2, Some("500us")),
            ("l", "100ms", None, "3ms", l_partition, Some("3ms")),
        ],
    )
}

/// The holder of a resource runs inside the blocked task's busy window, so
/// its cache costs are the blocked task's too. By hand (ms), `l` on
/// partition 1:
/// B_i = 3 (the section) + ω_{l,n} = |{1} ∩ {1, 2}| · 1 = 1 → 4: a section
/// is timed warm, and `j` may have evicted `l` just before it.
/// `j` against hep(i) ∪ blk(i) = {2} ∪ {1}: ω_{j,i} = 1, γ_{j,i} = 1
/// (it evicts `l`'s partition between its jobs, and `l` reloads it after
/// each preemption), ω_{j,n} = 1: each release of `j` costs 1 + 1 + 1.
/// w_i = 4 + 1 + ⌈w/5⌉·3: 7 → 11 > D_i = 8, a miss. (Without blk(i) in
/// ω and γ and without the holder's warm-up: w = 3 + 1 + ⌈w/5⌉·1 + 1 = 7,
/// a wrong SCHEDULABLE; a schedule reaches 10: j 0-2, l reloads and runs
/// 2-5, j reloads and runs 5-7, l reloads and ends 7-9, i 9-10.)
/// With D_i = 20: 11 → ⌈11/5⌉ = 3 → 14 → 14, R_i = 14, and the terms add up.
/// `l` on partition 3 shares nothing: B_i = 3, j costs 1 per release,
/// w = 4 + ⌈w/5⌉·1 = 5.
#[test]
fn a_holder_preempted_above_the_ceiling_pays_its_cache_costs_inside_the_blocking() {
    let analysis = analysis_of(&holder_shares_with_a_task_above_the_ceiling(1, "8ms"));
    assert!(!analysis.schedulable);
    assert_eq!(analysis.tasks[1].blocking_ns, Some(4 * MS));
    assert_eq!(analysis.tasks[1].wcrt_ns, None);

    let analysis = analysis_of(&holder_shares_with_a_task_above_the_ceiling(1, "20ms"));
    let i = &analysis.tasks[1];
    assert_eq!(i.wcrt_ns, Some(14 * MS));
    let terms = &i.breakdown;
    assert_eq!(
        (
            terms.blocking_ns,
            terms.wcet_ns,
            terms.warmup_ns,
            terms.interference_ns,
            terms.hp_warmup_ns,
            terms.crpd_ns
        ),
        (4 * MS, MS, 0, 3 * MS, 3 * MS, 3 * MS),
        "B + C + ω_{{i,n}} + 3 jobs of j + ω_{{j,n}} + 2 ω_{{j,i}} + 3 γ_{{j,i}}"
    );

    let apart = analysis_of(&holder_shares_with_a_task_above_the_ceiling(3, "8ms"));
    assert!(apart.schedulable);
    assert_eq!(apart.tasks[1].blocking_ns, Some(3 * MS));
    assert_eq!(apart.tasks[1].wcrt_ns, Some(5 * MS));
}

/// Under inheritance the holder runs at the priority of whichever task it
/// blocks, so it can run while a higher-priority task is part-way through
/// a job; that task then reloads what the holder evicted. Tasks `h` and
/// `i` use `R`, which `l` holds; `h` and `l` are in partition 1, `i` in
/// partition 3; Δ = 1 ms, δ = 0. By hand (ms):
/// B_i = 1 (the section) + ω_{l,n} = |{1} ∩ {1, 3}| = 1, plus what hep(i)
/// reloads after it: |S(h) ∩ S(l)| + |S(i) ∩ S(l)| = 1 + 0 → 3.
/// `h` against hep(i) ∪ blk(i) = {3} ∪ {1}: ω_{h,i} = γ_{h,i} = ω_{h,n} = 1,
/// so each release costs 1 + 1 + 1. w_i = 3 + 1 + ⌈w/10⌉·3 = 7.
/// A schedule reaches 7 (`l` reloads and runs 0-1, `h` reloads 1-2, works
/// to 2.5 and blocks, `l` reloads 2.5-3.5 and ends its section 3.5-4.5, `h`
/// reloads 4.5-5.5 and ends at 6, `i` 6-7), so with D_i = 6 the set is not
/// schedulable (it was certified with R_i = 6 when only τ_i's refill was
/// charged).
#[test]
fn an_inheriting_holder_makes_every_task_it_interrupts_reload() {
    let set = |deadline_i: &str| {
        one_resource(
            "pip",
            &[
                ("h", "10ms", None, "1ms", 1, Some("500us")),
                ("i", "20ms", Some(deadline_i), "1ms", 3, Some("500us")),
                ("l", "100ms", None, "2ms", 1, Some("1ms")),
            ],
        )
    };
    let analysis = analysis_of(&set("20ms"));
    let i = &analysis.tasks[1];
    assert_eq!((i.blocking_ns, i.wcrt_ns), (Some(3 * MS), Some(7 * MS)));
    let tight = analysis_of(&set("6ms"));
    assert!(!tight.schedulable);
    assert_eq!(tight.tasks[1].wcrt_ns, None);
}

/// Under the ceiling protocol a task at or below the ceiling cannot preempt
/// the holder's section: the holder ends before that task's first job
/// (whose ω_{j,n} counts what it evicted) and does not run again in the
/// window, so that task's ω and γ leave the holder out. `h` (partition 3)
/// sets the ceiling of `R`; `j` (partition 1, below the ceiling) shares
/// partition 1 with the holder `l`. By hand (ms):
/// B_i = 3 + ω_{l,n} = |{1} ∩ {1, 2, 3}| = 1 → 4; ω_{i,n} = 0;
/// `h`: C = 1, no shared partition; `j`: C = 1, ω_{j,i} = γ_{j,i} = 0 (the
/// holder left out), first job ω_{j,n} = 1.
/// w_i = 4 + 1 + ⌈w/100⌉·1 + ⌈w/5⌉·1 + 1: 9 → 9. (With `l` in `j`'s terms
/// it would be 15.)
#[test]
fn a_task_below_the_ceiling_does_not_pay_for_the_holder() {
    let analysis = analysis_of(&one_resource(
        "pcp",
        &[
            ("h", "100ms", None, "1ms", 3, Some("500us")),
            ("j", "5ms", None, "1ms", 1, None),
            ("i", "20ms", None, "1ms", 2, Some("500us")),
            ("l", "100ms", None, "3ms", 1, Some("3ms")),
        ],
    ));
    let i = &analysis.tasks[2];
    assert_eq!((i.blocking_ns, i.wcrt_ns), (Some(4 * MS), Some(9 * MS)));
    assert_eq!((i.breakdown.hp_warmup_ns, i.breakdown.crpd_ns), (MS, 0));
}

/// Issue 27: a resource whose users run on two cores is a global resource,
/// which the uniprocessor protocols (pcp, pip, a plain mutex) do not bound
/// (Sha, Rajkumar and Lehoczky 1990 analyse one processor). A set built by
/// hand with one (no file validation on the way) is never certified with
/// a B_i that ignores the remote blocking: the analysis refuses it, naming
/// the resource, both users and both cores.
#[test]
fn a_resource_used_on_two_cores_is_refused_never_schedulable() {
    for protocol in ["pcp", "pip", "none"] {
        let mut set = parse(&three_tasks(protocol, ""), "set.toml", Syntax::Toml).unwrap();
        set.platform.cores = 2;
        for (task, core) in set.tasks.iter_mut().zip([0, 0, 1]) {
            task.core = Some(core);
        }
        let refused = analyze(&set).expect_err("a global resource is refused");
        assert!(
            matches!(
                &refused,
                tinct_core::analysis::AnalysisError::GlobalResource { resource, cores, .. }
                    if resource == "bus" && *cores == [0, 1]
            ),
            "{protocol}: {refused:?}"
        );
        let words = refused.to_string();
        assert!(
            words.contains("resource 'bus' is used on core 0 (task 't2') and core 1 (task 't3')"),
            "{protocol}: {words}"
        );
    }
}
