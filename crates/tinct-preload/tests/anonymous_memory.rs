//! Issue 16.5: the program's own anonymous mappings on coloured pages
//! (`TINCT_MMAP=1`), and heap pages that keep their colours across `fork`
//! (`TINCT_FORK_KEEP=1`), each checked through /proc/<pid>/pagemap by this
//! test, with byte-identical output.

mod common;

use common::{compile_c, half_of_the_colors, run_plain, run_with_page_report, with_args};
use tinct_sys::testing::privileged_or_skip;

#[test]
fn anonymous_mappings_are_coloured_and_behave_as_the_kernels() {
    if !privileged_or_skip("checking mapped pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("maps", dir.path());
    let command = || with_args(&binary, &["3"]);
    let plain = run_plain(command(), None);
    let colors = half_of_the_colors();
    let checked = run_with_page_report(command(), None, &colors, "256MiB", &[("TINCT_MMAP", "1")]);
    assert_eq!(
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&plain.stdout),
        "mmap, mremap, munmap, madvise or mprotect behaved differently"
    );
    checked.assert_in_colors("TINCT_MMAP=1");
    assert!(checked.counter("mapped") >= 12, "{:?}", checked.counters);
    // The kept mappings: 1 + 2 + 2 + 2 pages, each translated and coloured.
    assert!(
        checked.mapped_in_colors >= 7,
        "{} mapped pages in the colours",
        checked.mapped_in_colors
    );
    // Without the option the same program's mappings are the kernel's.
    let off = run_with_page_report(command(), None, &colors, "256MiB", &[]);
    assert_eq!(off.stdout, plain.stdout);
    assert_eq!(off.counter("mapped"), 0);
    assert_eq!(off.mapped_in_colors, 0);
}

#[test]
fn a_parent_keeps_its_colours_across_fork_when_the_child_takes_the_copies() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("cow", dir.path());
    let command = || with_args(&binary, &["4"]);
    let plain = run_plain(command(), None);
    let colors = half_of_the_colors();
    // The parent writes its 4 MiB block while the child still shares it:
    // the kernel copies the parent's pages to frames of its choosing, and
    // the summary says so.
    let shared = run_with_page_report(command(), None, &colors, "256MiB", &[]);
    assert_eq!(shared.stdout, plain.stdout);
    assert!(
        shared.outside.is_empty(),
        "{:?}",
        &shared.outside[..shared.outside.len().min(5)]
    );
    // The kernel gave the parent's written pages new frames (its copies).
    // Which colours they have is the kernel's choice: right after another
    // process freed frames of these very colours (the suite's previous
    // shim run), most copies land on them, so only the move is asserted.
    assert!(
        shared.moved.len() > 100,
        "only {} of the parent's 1024 pages changed frame",
        shared.moved.len()
    );
    assert!(
        shared
            .stderr
            .contains("have another frame than when they entered"),
        "{}",
        shared.stderr
    );
    // With TINCT_FORK_KEEP the child takes the copies: every page of the
    // parent is in its colours.
    let kept = run_with_page_report(
        command(),
        None,
        &colors,
        "256MiB",
        &[("TINCT_FORK_KEEP", "1")],
    );
    assert_eq!(kept.stdout, plain.stdout);
    kept.assert_in_colors("TINCT_FORK_KEEP=1");
}

/// Issue 27: `mremap` growth under `TINCT_MMAP=1` as the kernel's: the
/// old contents are kept, only the new part is zero, and the old pages keep
/// their frames (read through pagemap by the program) whether the mapping
/// grows in place or must move (another mapping right after it); the
/// shim copied a moved mapping to other frames. With a partial `old_len`
/// (issue 27) the rest of the mapping stays, contents and all.
#[test]
fn mremap_growth_keeps_the_old_pages_and_their_frames() {
    if !privileged_or_skip("reading frames through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("remap", dir.path());
    let plain = run_plain(with_args(&binary, &[]), None);
    let expected = String::from_utf8_lossy(&plain.stdout);
    assert!(expected.ends_with("done\n"), "{expected}");
    assert!(
        !expected.contains("LOST") && !expected.contains("NOT") && !expected.contains("CHANGED"),
        "the kernel's mremap: {expected}"
    );
    let colors = half_of_the_colors();
    let checked = run_with_page_report(
        with_args(&binary, &[]),
        None,
        &colors,
        "256MiB",
        &[("TINCT_MMAP", "1")],
    );
    assert_eq!(String::from_utf8_lossy(&checked.stdout), expected);
    checked.assert_in_colors("TINCT_MMAP=1 after mremap");
    assert!(checked.counter("mapped") >= 8, "{:?}", checked.counters);
}
