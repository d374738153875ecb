//! Acceptance (issue 5): real, unmodified programs give byte-identical
//! output with and without the shim, and every heap page they were handed
//! lies in the requested colors (translated by this test through
//! /proc/<pid>/pagemap while the program is stopped at exit). Strict mode:
//! no allocation may fall back to uncolored memory.

mod common;

use std::process::Command;

use common::{
    compile_c, half_of_the_colors, python, run_plain, run_under_shim, text_file, with_args,
};
use tinct_sys::testing::privileged_or_skip;

const PYTHON_SCRIPT: &str = r#"
import hashlib, random
random.seed(12345)
numbers = [random.randint(0, 10**9) for _ in range(300000)]
numbers.sort()
words = {"k%d" % random.randint(0, 10**7): i for i in range(150000)}
items = sorted(words.items())
text = ",".join("%s=%d" % kv for kv in items[:100000])
rows = [[random.random() for _ in range(20)] for _ in range(5000)]
rows.sort(key=sum)
digest = hashlib.sha256()
digest.update(repr(numbers[::97]).encode())
digest.update(text.encode())
digest.update(repr([round(sum(r), 6) for r in rows]).encode())
print(len(numbers), len(words), len(text), digest.hexdigest())
print(numbers[:5], items[:3])
"#;

#[test]
fn python_builds_and_sorts_lists_and_dicts_identically_in_colored_memory() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("work.py");
    std::fs::write(&script, PYTHON_SCRIPT).unwrap();
    let python = python();
    let command = || with_args(&python, &[script.to_str().unwrap()]);
    let plain = run_plain(command(), None);
    let colors = half_of_the_colors();
    let shimmed = run_under_shim(command(), None, &colors, "512MiB");
    assert_eq!(
        String::from_utf8_lossy(&shimmed.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    assert!(
        shimmed.pages_in_colors > 2000,
        "only {} pages checked: was Python's heap routed through malloc?\n{}",
        shimmed.pages_in_colors,
        shimmed.stderr
    );
    assert!(
        shimmed.counter("colored") > 100_000,
        "{:?}",
        shimmed.counters
    );
}

#[test]
fn sort_of_a_multi_megabyte_file_is_identical() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.txt");
    text_file(&input, 6 << 20);
    let command = || {
        let mut c = with_args("sort", &["-S", "16M", input.to_str().unwrap()]);
        c.env("LC_ALL", "C");
        c
    };
    let plain = run_plain(command(), None);
    let shimmed = run_under_shim(command(), None, &half_of_the_colors(), "256MiB");
    assert!(shimmed.stdout == plain.stdout, "sort output differs");
    assert_eq!(
        shimmed.stdout.len(),
        std::fs::metadata(&input).unwrap().len() as usize
    );
    assert!(
        shimmed.pages_in_colors > 1000,
        "{}",
        shimmed.pages_in_colors
    );
}

#[test]
fn xz_round_trips_are_identical() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input.txt");
    text_file(&input, 4 << 20);
    let original = std::fs::read(&input).unwrap();
    let colors = half_of_the_colors();
    // (compress, decompress): xz runs two threads. (gzip would prove
    // nothing here: it never calls malloc.)
    let tools: [(&str, &[&str], &[&str]); 1] = [("xz", &["-1", "-T2", "-c"], &["-d", "-c"])];
    for (tool, compress, decompress) in tools {
        let mut command = Command::new(tool);
        command.args(compress).arg(&input);
        let packed_plain = run_plain(command, None).stdout;
        let mut command = Command::new(tool);
        command.args(compress).arg(&input);
        let packed = run_under_shim(command, None, &colors, "256MiB");
        assert!(
            packed.stdout == packed_plain,
            "{tool}: compressed bytes differ"
        );
        let packed_path = dir.path().join(format!("packed.{tool}"));
        std::fs::write(&packed_path, &packed.stdout).unwrap();
        let mut command = Command::new(tool);
        command.args(decompress);
        let unpacked = run_under_shim(command, Some(&packed_path), &colors, "256MiB");
        assert!(unpacked.stdout == original, "{tool}: round trip differs");
        assert!(
            packed.pages_in_colors > 10,
            "{tool}: {}",
            packed.pages_in_colors
        );
    }
}

#[test]
fn a_multi_threaded_program_mixing_the_whole_malloc_family_is_identical() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let binary = compile_c("threads", dir.path());
    let command = || with_args(&binary, &["4", "4000", "2", "11"]);
    let plain = run_plain(command(), None);
    let shimmed = run_under_shim(command(), None, &half_of_the_colors(), "256MiB");
    assert_eq!(
        String::from_utf8_lossy(&shimmed.stdout),
        String::from_utf8_lossy(&plain.stdout)
    );
    assert!(String::from_utf8_lossy(&plain.stdout).ends_with("ok\n"));
    assert!(shimmed.pages_in_colors > 500, "{}", shimmed.pages_in_colors);
}

/// Issue 16.5: byte-identical output under every shim option. The
/// multi-threaded C program and Python run under each option (coloured
/// anonymous mappings, Python with its own arena allocator on them, the
/// child taking fork copies, banks with a fallback mode), every heap and
/// mapped page checked through pagemap.
#[test]
fn output_is_identical_under_every_shim_option() {
    if !privileged_or_skip("checking heap pages through pagemap") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let threads = compile_c("threads", dir.path());
    let script = dir.path().join("work.py");
    std::fs::write(&script, PYTHON_SCRIPT).unwrap();
    let python = python();
    let colors = half_of_the_colors();
    let c_program = || with_args(&threads, &["4", "2000", "2", "5"]);
    let plain_c = run_plain(c_program(), None);
    let options: [&[(&str, &str)]; 4] = [
        &[("TINCT_MMAP", "1")],
        &[("TINCT_FORK_KEEP", "1")],
        &[("TINCT_MMAP", "1"), ("TINCT_FORK_KEEP", "1")],
        &[
            ("TINCT_BANKS", "0,1"),
            ("TINCT_BANK_FUNCTIONS", "0x200000"),
            ("TINCT_BANK_MODE", "restricted,split"),
        ],
    ];
    for env in options {
        let checked = common::run_with_page_report(c_program(), None, &colors, "256MiB", env);
        assert_eq!(checked.stdout, plain_c.stdout, "{env:?}: results differ");
        checked.assert_in_colors(&format!("{env:?}"));
    }
    // Python with its own small-object allocator (pymalloc), whose arenas
    // come from mmap: coloured only with TINCT_MMAP.
    let py = || with_args(&python, &[script.to_str().unwrap()]);
    let plain_py = run_plain(py(), None);
    let checked = common::run_with_page_report(
        py(),
        None,
        &colors,
        "512MiB",
        &[("TINCT_MMAP", "1"), ("PYTHONMALLOC", "pymalloc")],
    );
    assert_eq!(
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&plain_py.stdout)
    );
    checked.assert_in_colors("pymalloc, TINCT_MMAP=1");
    assert!(checked.counter("mapped") > 10, "{:?}", checked.counters);
    assert!(
        checked.mapped_in_colors > 100,
        "{} of Python's arena pages checked in the colours",
        checked.mapped_in_colors
    );
}
