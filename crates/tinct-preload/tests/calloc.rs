//! calloc (issue 27): memory fresh from the kernel is zero already and is
//! not written, so a gigabyte `calloc` of which two bytes are touched stays
//! lazy as with glibc (it took 3.8 s and 4.7 GB resident for 4 GiB);
//! recycled memory is cleared, fresh area pages lose their mark byte.
//!
//! A block larger than the coloured area can ever hold (the pool) is an
//! uncoloured fallback from fresh anonymous memory, left untouched. A
//! block the area serves is resident in any case: its pages are populated
//! when the area grows, to know their frames and colours (the crate's
//! README, "Limits").

mod common;

use std::time::Duration;

use common::{
    compile_c, half_of_the_colors, run_limited, run_plain, run_under_shim, under_shim, with_args,
};
use tinct_sys::testing::privileged_or_skip;

/// The block of the resident-set test, in MiB.
const BLOCK_MIB: u64 = 1024;

/// "grew KIB of KIB" from `calloc rss`.
fn growth(stdout: &[u8]) -> (u64, u64) {
    let text = String::from_utf8_lossy(stdout);
    let numbers: Vec<u64> = text
        .split_whitespace()
        .filter_map(|word| word.parse().ok())
        .collect();
    match numbers[..] {
        [grew, of] => (grew, of),
        _ => panic!("expected \"grew KIB of KIB\", found {text:?}"),
    }
}

#[test]
fn a_large_calloc_touching_two_bytes_stays_lazy() {
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("calloc", dir.path());
    let args = ["rss", &BLOCK_MIB.to_string()];
    let plain = run_plain(with_args(&binary, &args), None);
    let (glibc_grew, block) = growth(&plain.stdout);
    assert_eq!(block, BLOCK_MIB << 10);
    // The shim's default pool (512 MiB): the block is a fallback.
    let shim = run_limited(
        under_shim(with_args(&binary, &args), &[("TINCT_POOL", "512MiB")]),
        Duration::from_secs(120),
    );
    assert!(
        shim.status.success(),
        "{}: {}",
        shim.status,
        String::from_utf8_lossy(&shim.stderr)
    );
    let (shim_grew, _) = growth(&shim.stdout);
    // A ratio, not a time: both far below the block (a few pages each).
    for (who, grew) in [("glibc", glibc_grew), ("the shim", shim_grew)] {
        assert!(
            grew * 64 < block,
            "{who}: the resident set grew by {grew} KiB for a {block} KiB calloc touched in two \
             bytes: expected under 1/64 of it"
        );
    }
}

#[test]
fn calloc_is_zero_on_fresh_and_recycled_coloured_memory() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("calloc", dir.path());
    let plain = run_plain(with_args(&binary, &["zeros"]), None);
    let shimmed = run_under_shim(
        with_args(&binary, &["zeros"]),
        None,
        &half_of_the_colors(),
        "256MiB",
    );
    assert_eq!(shimmed.stdout, plain.stdout, "{}", shimmed.stderr);
    assert_eq!(String::from_utf8_lossy(&shimmed.stdout), "ok\n");
    assert!(shimmed.pages_in_colors > 500, "{}", shimmed.pages_in_colors);
}
