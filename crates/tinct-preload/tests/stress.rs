//! Stress (issue 5): many threads allocate, reallocate and free random
//! sizes through the whole malloc family for a fixed number of operations,
//! in strict mode. No crash, identical results, no page outside the colors
//! (translated by this test through pagemap), and no leak growth: four
//! times the rounds leave no more memory in use than one round.

mod common;

use common::{Checked, compile_c, half_of_the_colors, run_plain, run_under_shim, with_args};
use tinct_sys::testing::privileged_or_skip;

/// The number after `label` in the shim's summary.
fn summary_number(checked: &Checked, label: &str) -> u64 {
    let rest = checked
        .stderr
        .split(label)
        .nth(1)
        .unwrap_or_else(|| panic!("no {label:?} in the summary:\n{}", checked.stderr));
    rest.split(|c: char| !c.is_ascii_digit())
        .find(|s| !s.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn many_threads_random_sizes_strict_no_leak_growth() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("threads", dir.path());
    let colors = half_of_the_colors();
    let mut in_use = Vec::new();
    for rounds in ["1", "4"] {
        let args = ["8", "3000", rounds, "99"];
        let plain = run_plain(with_args(&binary, &args), None);
        let checked = run_under_shim(with_args(&binary, &args), None, &colors, "256MiB");
        assert_eq!(checked.stdout, plain.stdout, "results differ");
        assert!(String::from_utf8_lossy(&checked.stdout).ends_with("ok\n"));
        // (A free of a pointer the shim never handed out would have
        // aborted the program: see tests/misuse.rs.)
        assert_eq!(checked.counter("failures"), 0, "allocations failed");
        assert!(checked.pages_in_colors > 500, "{}", checked.pages_in_colors);
        let live_kib = summary_number(&checked, "KiB in use, ");
        // Area pages in use at exit: pages carved into size classes stay
        // with their class (their free objects are reused), so this must
        // not grow with the rounds.
        let pages = summary_number(&checked, "area pages in use at exit: ");
        assert!(
            live_kib <= 64,
            "{live_kib} KiB still allocated after freeing everything"
        );
        in_use.push(pages);
    }
    // Each of the 8 threads may keep up to two batches (about 8 KiB) of
    // free objects per size class in its cache: bounded, not a leak.
    let thread_caches = 8 * tinct_mem::SIZE_CLASSES.len() as u64 * 2;
    assert!(
        in_use[1] <= in_use[0] + in_use[0] / 4 + thread_caches,
        "area pages in use grew from {} (1 round) to {} (4 rounds)",
        in_use[0],
        in_use[1]
    );
}
