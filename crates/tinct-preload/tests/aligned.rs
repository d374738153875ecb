//! Aligned allocations (issue 27): `aligned_alloc`, `memalign`,
//! `posix_memalign`, `valloc`, `pvalloc` and the overflow cases of
//! `malloc`, `calloc`, `realloc` and `reallocarray` answer every edge case
//! as the C library of this machine does: `tests/c/aligned.c` prints one
//! line per call (a block and whether it is aligned as glibc promises, or
//! NULL and errno; posix_memalign's error and whether `*memptr` was left
//! alone), compiled once and run with and without the shim, strict and
//! not: the outputs must be identical. Live blocks of each kind (issue 27,
//! the class searched again): a failed `realloc`/`reallocarray` keeps the
//! block and its contents, `reallocarray(p, n, 0)` frees it, successful
//! calls and `free` leave errno alone, `malloc_usable_size(NULL)` is 0 —
//! no difference found, kept as a guard. glibc 2.36 serves
//! `aligned_alloc(0, 16)` and `aligned_alloc(3, 9)` as `memalign`; the shim
//! refused them (EINVAL).
//!
//! Placement does not matter here: without root the shim runs uncoloured
//! (`TINCT_ALLOW_UNCOLORED=1`), so this test needs no privileges.

mod common;

use std::time::Duration;

use common::{compile_c, run_limited, run_plain, under_shim, with_args};

#[test]
fn aligned_allocations_answer_every_edge_case_as_glibc() {
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("aligned", dir.path());
    let glibc = run_plain(with_args(&binary, &[]), None);
    let expected = String::from_utf8_lossy(&glibc.stdout);
    assert!(expected.ends_with("done\n"), "{expected}");
    for strict in ["0", "1"] {
        let shim = run_limited(
            under_shim(
                with_args(&binary, &[]),
                &[("TINCT_POOL", "64MiB"), ("TINCT_STRICT", strict)],
            ),
            Duration::from_secs(120),
        );
        assert!(
            shim.status.success(),
            "TINCT_STRICT={strict}: {}: {}",
            shim.status,
            String::from_utf8_lossy(&shim.stderr)
        );
        let found = String::from_utf8_lossy(&shim.stdout);
        let differences: Vec<String> = expected
            .lines()
            .zip(found.lines())
            .filter(|(glibc, shim)| glibc != shim)
            .map(|(glibc, shim)| format!("glibc: {glibc}\nshim:  {shim}"))
            .collect();
        assert!(
            differences.is_empty() && expected.lines().count() == found.lines().count(),
            "TINCT_STRICT={strict}: {} lines differ (of {} and {}):\n{}",
            differences.len(),
            expected.lines().count(),
            found.lines().count(),
            differences.join("\n")
        );
    }
}
