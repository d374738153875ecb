//! The worked examples of kim2013, reproduced exactly.

use std::path::PathBuf;
use tinct_core::analysis::analyze;
use tinct_core::format::load;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

/// Rounds ns to the paper's printed 0.01 ms.
fn ms2(ns: Option<u64>) -> f64 {
    (ns.expect("schedulable") as f64 / 1e4).round() / 100.0
}

/// Table II of kim2013: all four tasks on one core sharing 8 partitions,
/// Δ = 45.3 us. NoCInt and CInt to the printed 0.01 ms.
#[test]
fn table_ii_is_reproduced() {
    let set = load(&example("kim2013-table2.toml")).unwrap();
    let analysis = analyze(&set).unwrap();
    let got: Vec<(String, f64, f64, f64)> = analysis
        .tasks
        .iter()
        .map(|t| {
            (
                t.name.clone(),
                t.wcet_ns as f64 / 1e6,
                ms2(t.wcrt_nocint_ns),
                ms2(t.wcrt_ns),
            )
        })
        .collect();
    let want = [
        ("streamcluster", 11.94, 11.94, 12.30),
        ("ferret", 13.15, 25.09, 25.72),
        ("canneal", 49.58, 98.55, 101.36),
        ("fluidanimate", 44.30, 179.88, 273.78),
    ];
    for ((name, c, nocint, cint), (wname, wc, wnocint, wcint)) in got.iter().zip(want) {
        assert_eq!(name, wname);
        assert!((c - wc).abs() < 1e-9, "{name}: C {c} vs {wc}");
        assert_eq!(*nocint, wnocint, "{name} NoCInt");
        assert_eq!(*cint, wcint, "{name} CInt");
    }
    assert!(analysis.schedulable);
    assert!(analysis.cores[0].memory_feasible);
}

/// Figure 3 of kim2013: S(1) = {1,2}, S(2) = {1}, S(3) = {2}, C = 2,
/// T = D = 12, Δ = 1 (here 1 ms), priorities τ1 > τ2 > τ3.
///
/// By hand, with hep/int as in Section III-B:
/// - τ1: R = C1 + ω_{1,n} = 2 + |{1,2} ∩ ({1} ∪ {2})|·1 = 4; it is never preempted.
/// - τ2: ω_{2,n} = |{1} ∩ ({1,2} ∪ {2})| = 1. From τ1 (one release in R ≤ 12):
///   C1 = 2, ω_{1,n} = 2 (first release), γ_{1,2} = |S1 ∩ S2| = 1.
///   R = 2 + 1 + 2 + 2 + 1 = 8: "one warm-up delay and one preemption delay due to τ1".
/// - τ3: ω_{3,n} = |{2} ∩ ({1,2} ∪ {1})| = 1. From τ1: 2 + ω_{1,n} 2 + γ_{1,3},
///   with γ_{1,3} = |S1 ∩ (S2 ∪ S3)| = 2. From τ2: 2 + ω_{2,n} 1 + γ_{2,3},
///   with γ_{2,3} = |S2 ∩ S3| = 0.
///   R = 2 + 1 + (2 + 2 + 2) + (2 + 1 + 0) = 12 = D: schedulable, just.
///
/// Without cache interference: 2, 4, 6.
#[test]
fn figure_3_example() {
    let text = include_str!("fixtures/kim2013_figure_3.toml");
    let set =
        tinct_core::format::parse(text, "fig3.toml", tinct_core::format::Syntax::Toml).unwrap();
    let analysis = analyze(&set).unwrap();
    let r: Vec<Option<u64>> = analysis.tasks.iter().map(|t| t.wcrt_ns).collect();
    assert_eq!(r, vec![Some(4_000_000), Some(8_000_000), Some(12_000_000)]);
    let classic: Vec<Option<u64>> = analysis.tasks.iter().map(|t| t.wcrt_nocint_ns).collect();
    assert_eq!(
        classic,
        vec![Some(2_000_000), Some(4_000_000), Some(6_000_000)]
    );
    let t3 = &analysis.tasks[2].breakdown;
    assert_eq!(t3.warmup_ns, 1_000_000);
    assert_eq!(t3.interference_ns, 4_000_000);
    assert_eq!(t3.hp_warmup_ns, 3_000_000);
    assert_eq!(t3.crpd_ns, 2_000_000);
    assert!(analysis.schedulable);
}

/// Figure 3's set with `t3` given no partitions: `t3` runs in memory of
/// every colour, so with Δ > 0 the analysis charges it both partitions —
/// exactly as if it had `partitions = [1, 2]` — and, with no task
/// partitioned, every task. "No cache information" is never "no cache
/// cost" (issue 27 W1): only Δ = 0 drops the cache terms. On another core,
/// `t3` shares the cache with both, and the set cannot be schedulable.
#[test]
fn a_task_without_partitions_is_charged_every_partition() {
    let text = |refill: &str, p1: &str, p2: &str, p3: &str| {
        format!(
            "[platform]\ncores = 2\npartitions = 2\nmemory = \"2MiB\"\nrefill = \"{refill}\"\n\
             [[task]]\nname = \"t1\"\nperiod = \"12ms\"\nmemory = \"0B\"\nwcet = \"2ms\"\ncore = 0\n{p1}\n\
             [[task]]\nname = \"t2\"\nperiod = \"12ms\"\nmemory = \"0B\"\nwcet = \"2ms\"\ncore = 0\n{p2}\n\
             [[task]]\nname = \"t3\"\nperiod = \"12ms\"\nmemory = \"0B\"\nwcet = \"2ms\"\n{p3}\n"
        )
    };
    let analysis_of = |text: String| {
        analyze(
            &tinct_core::format::parse(&text, "fig3.toml", tinct_core::format::Syntax::Toml)
                .unwrap(),
        )
        .unwrap()
    };
    let wcrt = |a: &tinct_core::analysis::Analysis| -> Vec<Option<u64>> {
        a.tasks.iter().map(|t| t.wcrt_ns).collect()
    };
    let (p1, p2) = ("partitions = [1, 2]", "partitions = [1]");
    let mixed = analysis_of(text("1ms", p1, p2, "core = 0"));
    let explicit = analysis_of(text("1ms", p1, p2, "core = 0\npartitions = [1, 2]"));
    assert_eq!(wcrt(&mixed), wcrt(&explicit));
    assert_eq!(mixed.schedulable, explicit.schedulable);
    // By hand (ms): ω_{i,n} = 2, 1, 2 (t3 meets t1 in {1, 2}); R1 = 2 + 2;
    // R2 = 2 + 1 + (2 + 2 + γ 1) = 8; R3 = 2 + 2 + (2 + 2 + 2) + (2 + 1 + 1) = 14 > 12.
    assert_eq!(wcrt(&mixed), vec![Some(4_000_000), Some(8_000_000), None]);
    assert!(!mixed.schedulable);
    assert_eq!(mixed.tasks[2].partition_count, 2);
    assert!(
        mixed.tasks[2]
            .notes
            .iter()
            .any(|n| n.contains("charge it all 2 partitions")),
        "{:?}",
        mixed.tasks[2].notes
    );
    // No task partitioned: all charged {1, 2}.
    let none = analysis_of(text("1ms", "", "", "core = 0"));
    let all = "partitions = [1, 2]";
    let all_explicit = analysis_of(text("1ms", all, all, "core = 0\npartitions = [1, 2]"));
    assert_eq!(wcrt(&none), wcrt(&all_explicit));
    assert!(wcrt(&none).iter().all(|r| r.is_none_or(|r| r > 2_000_000)));
    // Δ = 0: no cache term, the classic analysis.
    let classic = analysis_of(text("0ns", "", "", "core = 0"));
    assert_eq!(
        wcrt(&classic),
        vec![Some(2_000_000), Some(4_000_000), Some(6_000_000)]
    );
    assert!(classic.schedulable);
    // t3 on core 1 beside partitioned tasks on core 0: unbounded sharing.
    let across = analysis_of(text("1ms", p1, p2, "core = 1"));
    assert!(!across.schedulable);
    assert!(
        across
            .reasons
            .iter()
            .any(|r| r.starts_with("task 't3' (core 1) has no `partitions`")),
        "{:?}",
        across.reasons
    );
    assert!(analysis_of(text("0ns", p1, p2, "core = 1")).schedulable);
}
