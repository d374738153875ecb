//! Fork safety: a program forks repeatedly while two threads allocate;
//! children allocate, reallocate and read a 16 MiB block inherited from
//! the parent. A lock inherited in the held state would hang a child: the
//! test fails after a timeout instead of hanging.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{COLOR_BITS, compile_c, half_of_the_colors, shim};
use tinct_sys::testing::privileged_or_skip;

#[test]
fn forking_while_threads_allocate_neither_hangs_nor_corrupts() {
    if !privileged_or_skip("the shim's colored pool reads frame numbers") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("forks", dir.path());
    let stdout = dir.path().join("stdout");
    let stderr = dir.path().join("stderr");
    let mut child = Command::new(&binary)
        .arg("20")
        .env("LD_PRELOAD", shim())
        .env(COLOR_BITS.0, COLOR_BITS.1)
        .env("TINCT_COLORS", half_of_the_colors().0)
        .env("TINCT_POOL", "256MiB")
        .env("TINCT_STATS", "1")
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    // A hang here is a fork that left an allocator lock held.
    let status = tinct_sys::testing::wait_within(
        &mut child,
        Duration::from_secs(120),
        "the forking program (a lock held across fork would hang it)",
    );
    let err = std::fs::read_to_string(&stderr).unwrap();
    assert!(status.success(), "{status}: {err}");
    assert_eq!(std::fs::read_to_string(&stdout).unwrap(), "ok\n");
    assert!(
        err.contains(", 20 forks"),
        "the parent saw every fork: {err}"
    );
    assert!(err.contains("0 fallbacks"), "{err}");
}
