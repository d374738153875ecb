//! The color probe runs on this machine and gives a verdict that agrees
//! with its own numbers. (Which verdict is the machine's business: on a VM
//! it is usually "not effective" or "inconclusive", on bare metal with an
//! unhashed cache "effective"; no test can assert that here.)

use tinct_sys::color_probe::{
    EFFECTIVE_RATIO, NOT_EFFECTIVE_RATIO, ProbeOptions, Verdict, probe_colors,
};
use tinct_sys::testing::privileged_or_skip;

#[test]
fn the_probe_measures_and_its_verdicts_follow_its_numbers() {
    if !privileged_or_skip("the color probe reads frame numbers") {
        return;
    }
    let report = probe_colors(ProbeOptions {
        rounds: 3,
        max_arena_bytes: 64 << 20,
        ..ProbeOptions::default()
    })
    .unwrap();
    assert!(!report.levels.is_empty(), "no cache level probed");
    let measured: Vec<_> = report.levels.iter().filter(|l| l.rounds > 0).collect();
    assert!(!measured.is_empty(), "no level measured: {report:?}");
    for level in &report.levels {
        assert!(level.pages >= 2 * level.ways as usize, "{level:?}");
        if level.rounds == 0 {
            assert_eq!(level.verdict, Verdict::Inconclusive);
            assert!(
                level.explanation.contains("not measured"),
                "{}",
                level.explanation
            );
            continue;
        }
        assert_eq!(level.rounds, 3);
        assert_eq!(level.lines, level.pages * 64, "every line of every page");
        assert!(
            level.conflict_ns > 0.0 && level.control_ns > 0.0,
            "{level:?}"
        );
        match level.verdict {
            Verdict::Effective => assert!(level.ratio >= EFFECTIVE_RATIO, "{level:?}"),
            Verdict::NotEffective => assert!(level.ratio < NOT_EFFECTIVE_RATIO, "{level:?}"),
            Verdict::Inconclusive => {}
        }
        assert!(
            level
                .explanation
                .contains(&format!("{:.1} ns/load", level.conflict_ns)),
            "{}",
            level.explanation
        );
    }
}

#[test]
fn candidate_bits_are_what_the_probe_tests_on_the_last_level() {
    if !privileged_or_skip("the color probe reads frame numbers") {
        return;
    }
    // Bits 12-15 (16 colours), whatever the machine's rule says: how a
    // user checks bits that cannot be derived (`doctor --color-bits`).
    let report = probe_colors(ProbeOptions {
        rounds: 1,
        max_arena_bytes: 64 << 20,
        llc_bits: Some((12, 16)),
    })
    .unwrap();
    let llc = report.last_level().expect("the last level was probed");
    assert_eq!(llc.colors, 16, "{llc:?}");
}
