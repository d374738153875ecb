//! The reports tinct-core writes as JSON read back as the types that write
//! them: the analysis (`analysis.json` of a run
//! directory, `tinct analyze --json`), the plan and the static placement
//! (`tinct plan --json`). Each is written, read back, compared with what
//! was written and written again to the same bytes.

mod common;

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::fmt::Debug;
use std::path::Path;
use tinct_core::alloc::{
    Algorithm, PlacementOptions, PlacementReport, PlanOptions, PlanReport, place_static, plan,
};
use tinct_core::analysis::{Analysis, analyze};
use tinct_core::format::{Syntax, parse};
use tinct_core::model::{Overheads, TaskSet};
use tinct_core::overheads::{AnalysisReport, MissingOverhead, OverheadsSource};
use tinct_core::units::Nanos;

/// `value` written as JSON reads back equal to `expected` (what `value`
/// holds that the JSON leaves out, cleared) and writes the same bytes.
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(value: &T, expected: &T) {
    let json = serde_json::to_string_pretty(value).unwrap();
    let read: T = serde_json::from_str(&json).unwrap();
    assert_eq!(&read, expected);
    assert!(
        serde_json::to_string_pretty(&read).unwrap() == json,
        "written again, other bytes"
    );
}

fn example(name: &str) -> TaskSet {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    parse(&text, name, Syntax::Toml).unwrap()
}

/// One core, overheads, a `pcp` resource and an explicit `blocking`
/// below the derived B_i: an analysis with overheads, blocking and a
/// warning.
fn warned() -> String {
    let overheads = r#"overheads = { context_switch = "5us", release_latency = "20us", tick = "1us", tick_period = "4ms" }"#;
    common::three_tasks("pcp", overheads).replace(
        "name = \"t2\"\nperiod = \"12ms\"",
        "name = \"t2\"\nperiod = \"12ms\"\nblocking = \"0.25ms\"",
    )
}

/// The pipeline example placed on its cache domains: data-triggered
/// tasks, chains and a resource.
fn placed_pipeline() -> tinct_core::alloc::StaticPlacement {
    let placement = place_static(&example("pipeline.toml"), &PlacementOptions::default()).unwrap();
    assert!(placement.found, "{:?}", placement.reason);
    placement
}

fn analyses() -> Vec<Analysis> {
    let warned = analyze(&parse(&warned(), "warned.toml", Syntax::Toml).unwrap()).unwrap();
    assert_eq!(warned.warnings.len(), 1, "{:?}", warned.warnings);
    assert!(warned.overheads.tick_period_ns.is_some());
    let pipeline = placed_pipeline().analysis.unwrap();
    assert!(!pipeline.chains.is_empty());
    vec![warned, pipeline, analyze(&example("light.toml")).unwrap()]
}

#[test]
fn an_analysis_reads_back_equal_and_writes_the_same_bytes() {
    for analysis in analyses() {
        round_trip(&analysis, &analysis);
    }
}

#[test]
fn an_analysis_missing_a_term_is_refused_not_read_as_unbounded() {
    // A `null` bound means "unbounded" or "passed the deadline": a file
    // without the key says neither, so reading it must fail, naming it.
    let analysis = &analyses()[0];
    let json = serde_json::to_value(analysis).unwrap();
    for key in [
        "jitter_ns",
        "jitter_inherited_ns",
        "blocking_ns",
        "wcrt_ns",
        "wcrt_nocint_ns",
        "notes",
        "policy",
    ] {
        let mut without = json.clone();
        without["tasks"][0].as_object_mut().unwrap().remove(key);
        let error = serde_json::from_value::<Analysis>(without).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("missing field `{key}`")),
            "{key}: {error}"
        );
    }
    let mut without = json.clone();
    without.as_object_mut().unwrap().remove("holistic_rounds");
    assert!(serde_json::from_value::<Analysis>(without).is_err());
}

#[test]
fn the_analysis_report_reads_back_equal_and_writes_the_same_bytes() {
    let source = OverheadsSource {
        overheads: Overheads {
            context_switch: Nanos(5_000),
            release_latency: Nanos(20_000),
            tick: Nanos(1_000),
            tick_period: None,
        },
        from: "calibrate.json".into(),
        missing: vec![MissingOverhead {
            name: "tick".into(),
            why: "not measured".into(),
        }],
    };
    for analysis in analyses() {
        for refill_source in [None, Some("Δ from the file")] {
            let report = AnalysisReport {
                analysis: Cow::Borrowed(&analysis),
                refill_source: refill_source.map(Cow::Borrowed),
                overheads_source: Cow::Borrowed(&source),
            };
            round_trip(&report, &report);
            // The report reads as the analysis too (`analysis.json`).
            let json = serde_json::to_string(&report).unwrap();
            assert_eq!(serde_json::from_str::<Analysis>(&json).unwrap(), analysis);
        }
    }
}

#[test]
fn a_plan_report_reads_back_equal_and_writes_the_same_bytes() {
    let set = example("light.toml");
    let plans = [
        plan(&set, Algorithm::Cata, &PlanOptions::default()),
        plan(
            &set,
            Algorithm::Bfd,
            &PlanOptions {
                partitions: Some(1),
                ..PlanOptions::default()
            },
        ),
    ];
    assert!(plans[0].schedulable && plans[0].planned.is_some());
    for plan in &plans {
        let report = PlanReport {
            file: "light.toml".into(),
            plan: Cow::Borrowed(plan),
            output: Some("planned.toml".into()),
            refill_source: "Δ 45.3us from the file".into(),
        };
        // The planned set and its analysis stay out of the JSON.
        let mut expected = report.clone();
        let owned = expected.plan.to_mut();
        owned.planned = None;
        owned.analysis = None;
        round_trip(&report, &expected);
    }
}

#[test]
fn a_placement_report_reads_back_equal_and_writes_the_same_bytes() {
    let placement = placed_pipeline();
    let report = PlacementReport {
        file: "pipeline.toml".into(),
        placement: "static".into(),
        result: Cow::Borrowed(&placement),
        output: None,
        refill_source: "Δ 20us from the file".into(),
    };
    let mut expected = report.clone();
    let owned = expected.result.to_mut();
    owned.planned = None;
    owned.analysis = None;
    round_trip(&report, &expected);
}
