//! Compiles a C program against include/tinct_mem.h and the built shared
//! and static libraries, runs it, and lets it check its colors itself
//! through /proc/self/pagemap (needs root).

use std::path::{Path, PathBuf};
use std::process::Command;

use tinct_sys::testing::privileged_or_skip;

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");
const SCRATCH: &str = env!("CARGO_TARGET_TMPDIR");

/// Directory holding libtinct_mem_ffi.so and libtinct_mem_ffi.a built with this
/// test (target/<profile>/deps, next to the test binary, or its parent).
fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps, deps.parent().unwrap()]
        .into_iter()
        .find(|dir| {
            dir.join("libtinct_mem_ffi.so").exists() && dir.join("libtinct_mem_ffi.a").exists()
        })
        .unwrap_or_else(|| panic!("libtinct_mem_ffi.so/.a not found next to {}", exe.display()))
        .to_path_buf()
}

fn compile(output: &Path, link: &[String]) {
    let manifest = Path::new(MANIFEST);
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-I"])
        .arg(manifest.join("include"))
        .arg(manifest.join("tests/c/check_colors.c"))
        .arg("-o")
        .arg(output)
        .args(link)
        .status()
        .expect("a C compiler `cc` is needed (apt-get install gcc)");
    assert!(status.success(), "cc failed: {status}");
}

fn run(binary: &Path, library_dir: &Path) {
    // cargo puts target/<profile> (with a possibly stale, uplifted copy of
    // the library) on LD_LIBRARY_PATH, which wins over the rpath: point it
    // at the library built with this test.
    let output = Command::new(binary)
        .env("LD_LIBRARY_PATH", library_dir)
        // The mechanism's bits, on any machine (check_colors.c checks them).
        .env(
            "TINCT_COLOR_BITS",
            tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT,
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} failed ({}):\n{stdout}\n{stderr}",
        binary.display(),
        output.status
    );
    assert!(stdout.contains("tinct_mem C ABI ok"), "{stdout}");
    let checked: u64 = stdout
        .split_whitespace()
        .rev()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .expect("page count in output");
    assert!(checked > 50, "only {checked} pages checked");
}

#[test]
fn c_program_allocates_and_verifies_colors_with_the_shared_library() {
    if !privileged_or_skip("the C ABI test reads frame numbers") {
        return;
    }
    let dir = library_dir();
    let binary = Path::new(SCRATCH).join("check_colors_shared");
    compile(
        &binary,
        &[
            format!("-L{}", dir.display()),
            "-ltinct_mem_ffi".into(),
            format!("-Wl,-rpath,{}", dir.display()),
        ],
    );
    run(&binary, &dir);
}

#[test]
fn c_program_links_the_static_library() {
    if !privileged_or_skip("the C ABI test reads frame numbers") {
        return;
    }
    let dir = library_dir();
    let binary = Path::new(SCRATCH).join("check_colors_static");
    compile(
        &binary,
        &[
            dir.join("libtinct_mem_ffi.a").display().to_string(),
            "-lpthread".into(),
            "-ldl".into(),
            "-lm".into(),
        ],
    );
    run(&binary, &dir);
}
