//! Heap misuse (issue 27): a double free (of the most recently freed
//! object, of one further down a free list, of one freed by a thread that
//! has ended, of a run, of an uncoloured fallback), `free` of a pointer
//! the shim never returned (the stack, static data, another mapping) or of
//! one inside a block, and `realloc` of a freed, foreign or interior
//! pointer must abort the program as glibc's allocator does: one line on
//! stderr naming the call and the problem, then SIGABRT. Each mistake is
//! made by `tests/c/misuse.c`, also run without the shim: whatever glibc
//! aborts on, the shim must abort on too (here it aborts on every one).
//! A program without mistakes, fallback blocks included, still runs.
//!
//! Placement does not matter here: without root the shim runs uncoloured
//! (`TINCT_ALLOW_UNCOLORED=1`), so these tests need no privileges.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Output;
use std::time::Duration;

use common::{compile_c, run_limited, under_shim, with_args};

/// Every run of the program ends well within this.
const LIMIT: Duration = Duration::from_secs(60);

/// The settings of every run: a 32 MiB pool, so a 64 MiB block is an
/// uncoloured fallback (not strict).
const POOL: (&str, &str) = ("TINCT_POOL", "32MiB");

/// One scenario of `tests/c/misuse.c`: its name, the settings added, and
/// the call and problem the shim's line must name.
struct Mistake {
    name: &'static str,
    env: &'static [(&'static str, &'static str)],
    problem: &'static str,
}

const INTERIOR: &str = "free(): invalid pointer, inside a block";
const NEVER_RETURNED: &str = "free(): invalid pointer, never returned by malloc";

fn describe(output: &Output) -> String {
    format!(
        "{}; stdout {:?}; stderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn double_frees_and_foreign_or_interior_pointers_abort_as_with_glibc() {
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("misuse", dir.path());
    let mistake = |name, env, problem| Mistake { name, env, problem };
    let scenarios = [
        mistake("double-free-last", &[], "free(): double free detected"),
        mistake("double-free-listed", &[], "free(): double free detected"),
        mistake(
            "double-free-other-thread",
            &[],
            "free(): double free detected",
        ),
        mistake("double-free-run", &[], "free(): double free detected"),
        mistake("double-free-fallback", &[], "free(): double free detected"),
        mistake("interior-small", &[], INTERIOR),
        mistake("interior-run", &[], INTERIOR),
        mistake("interior-run-start", &[], INTERIOR),
        mistake("stack", &[], NEVER_RETURNED),
        mistake("static", &[], NEVER_RETURNED),
        mistake("mapping", &[], NEVER_RETURNED),
        // The program's own mapping, served from the area.
        mistake("mapping", &[("TINCT_MMAP", "1")], NEVER_RETURNED),
        mistake("realloc-freed", &[], "realloc(): pointer already freed"),
        mistake("realloc-freed-run", &[], "realloc(): pointer already freed"),
        mistake(
            "realloc-stack",
            &[],
            "realloc(): invalid pointer, never returned by malloc",
        ),
        mistake(
            "realloc-interior",
            &[],
            "realloc(): invalid pointer, inside a block",
        ),
    ];
    let mut failures = Vec::new();
    for Mistake {
        name: scenario,
        env,
        problem: expected,
    } in scenarios
    {
        let glibc = run_limited(with_args(&binary, &[scenario]), LIMIT);
        let mut settings = vec![POOL];
        settings.extend_from_slice(env);
        let shim = run_limited(
            under_shim(with_args(&binary, &[scenario]), &settings),
            LIMIT,
        );
        let stderr = String::from_utf8_lossy(&shim.stderr);
        let line = format!("tinct-preload: {expected} (0x");
        let aborted = shim.status.signal() == Some(libc::SIGABRT)
            && stderr
                .lines()
                .any(|l| l.starts_with(&line) && l.ends_with(')'))
            && !String::from_utf8_lossy(&shim.stdout).contains("survived");
        if !aborted {
            failures.push(format!(
                "{scenario} {env:?}: expected SIGABRT after {line:?}...; under the shim: {}\n\
                 (glibc: {})",
                describe(&shim),
                describe(&glibc)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_program_without_mistakes_runs_fallback_blocks_included() {
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("misuse", dir.path());
    let glibc = run_limited(with_args(&binary, &["valid"]), LIMIT);
    assert!(glibc.status.success(), "{}", describe(&glibc));
    let shim = run_limited(
        under_shim(
            with_args(&binary, &["valid"]),
            &[POOL, ("TINCT_STATS", "1")],
        ),
        LIMIT,
    );
    assert!(shim.status.success(), "{}", describe(&shim));
    assert_eq!(shim.stdout, glibc.stdout);
    let stderr = String::from_utf8_lossy(&shim.stderr);
    assert!(
        stderr.contains(" 1 fallbacks (67108864 bytes uncolored)"),
        "the 64 MiB block was a fallback, freed and reallocated: {stderr}"
    );
}
