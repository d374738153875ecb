//! What the shim says when it cannot do its job: unreadable frame numbers
//! (a non-root process), with and without TINCT_ALLOW_UNCOLORED=1, and bad
//! settings. Each must name the cause and exit non-zero before the program
//! runs.

mod common;

use std::process::{Command, Output};

use common::{COLOR_BITS, shim};
use tinct_sys::testing::privileged_or_skip;

/// `sh -c 'echo ran'` under the shim with `env`, as user `nobody` if `unprivileged`.
fn run_sh(env: &[(&str, &str)], unprivileged: bool) -> Output {
    let mut command = if unprivileged {
        let mut c = Command::new("setpriv");
        c.args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "sh",
        ]);
        c
    } else {
        Command::new("sh")
    };
    command
        .args(["-c", "echo ran"])
        .env("LD_PRELOAD", shim())
        .env(COLOR_BITS.0, COLOR_BITS.1)
        .env_remove("TINCT_COLORS")
        .envs(env.iter().copied());
    command.output().expect("run sh")
}

#[test]
fn unreadable_frame_numbers_stop_the_program_with_the_reason() {
    if !privileged_or_skip("dropping to an unprivileged user with setpriv") {
        return;
    }
    let output = run_sh(&[("TINCT_COLORS", "0-3"), ("TINCT_POOL", "8MiB")], true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(output.stdout.is_empty(), "the program must not run");
    assert!(
        stderr.contains("physical frame numbers are not readable"),
        "{stderr}"
    );
    assert!(stderr.contains("CAP_SYS_ADMIN"), "{stderr}");
    assert!(stderr.contains("TINCT_ALLOW_UNCOLORED=1"), "{stderr}");
}

#[test]
fn allow_uncolored_runs_and_says_so() {
    if !privileged_or_skip("dropping to an unprivileged user with setpriv") {
        return;
    }
    let output = run_sh(
        &[
            ("TINCT_COLORS", "0-3"),
            ("TINCT_POOL", "8MiB"),
            ("TINCT_ALLOW_UNCOLORED", "1"),
        ],
        true,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "ran\n");
    assert!(stderr.contains("running UNCOLORED"), "{stderr}");
}

#[test]
fn bad_settings_name_the_variable() {
    for (env, expected) in [
        (vec![], "TINCT_COLORS is not set"),
        (vec![("TINCT_COLORS", "0-x")], "TINCT_COLORS=\"0-x\""),
        (
            vec![("TINCT_COLORS", "0"), ("TINCT_POOL", "huge")],
            "TINCT_POOL=\"huge\"",
        ),
        (
            vec![("TINCT_COLORS", "0"), ("TINCT_STRICT", "maybe")],
            "TINCT_STRICT=\"maybe\"",
        ),
        (
            vec![("TINCT_COLORS", "100000")],
            "color 100000 does not exist",
        ),
        // The shim reads the bits it is given, never the machine's cache.
        (
            vec![("TINCT_COLORS", "0"), ("TINCT_COLOR_BITS", "")],
            "TINCT_COLOR_BITS: expected the page-colour bits with TINCT_COLORS",
        ),
    ] {
        let output = run_sh(&env, false);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{env:?} ran");
        assert!(
            output.stdout.is_empty(),
            "{env:?}: the program must not run"
        );
        assert!(stderr.contains(expected), "{env:?}: {stderr}");
    }
}
