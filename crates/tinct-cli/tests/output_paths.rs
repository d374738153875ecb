//! Every command that writes files refuses an output path it cannot use —
//! a regular file where a directory is wanted, a path under a file, a
//! directory where a file is wanted — at once, as bad input (exit 2), in
//! one line naming the path and what was expected, before any work.

mod common;

use common::{Exits, example, stderr, tinct};
use std::path::Path;

/// What a command's output path must be.
#[derive(Clone, Copy, Debug)]
enum Wants {
    Directory,
    File,
}

/// Every command with an output path: its arguments around the path.
fn commands(dir: &Path) -> Vec<(Vec<String>, Wants)> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let light = example("light.toml").display().to_string();
    let table2 = example("kim2013-table2.toml").display().to_string();
    let mut commands = vec![
        (
            s(&[
                "run",
                &light,
                "--no-rt",
                "--uncolored",
                "--duration",
                "10ms",
                "-o",
            ]),
            Wants::Directory,
        ),
        (s(&["plan", &table2, "-o"]), Wants::File),
        (
            s(&["demo", "--no-rt", "--duration", "1s", "-o"]),
            Wants::Directory,
        ),
        (s(&["monitor", "--", "true", "-o"]), Wants::Directory),
        (
            s(&["report", &dir.display().to_string(), "-o"]),
            Wants::File,
        ),
        (
            s(&["experiment", "random", "--tasks", "2", "--sets", "1", "-o"]),
            Wants::Directory,
        ),
        (
            s(&["experiment", "merge", "shard.json", "--out"]),
            Wants::Directory,
        ),
    ];
    for bench in [
        "calibrate",
        "overheads",
        "crpd",
        "wcet-profile",
        "coherence",
        "banks",
        "dram-map",
        "isolation",
        "pipeline",
    ] {
        commands.push((s(&["bench", bench, "--quick", "--out"]), Wants::Directory));
    }
    // Checked before the profile measures (minutes), not after.
    commands.push((
        s(&[
            "bench",
            "wcet-profile",
            "--quick",
            "--task",
            "t",
            "--write-taskset",
        ]),
        Wants::File,
    ));
    commands
}

#[test]
fn an_output_path_that_cannot_be_used_is_refused_at_once_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "keep me").unwrap();
    let under_file = file.join("sub");
    for (args, wants) in commands(tmp.path()) {
        let bad: Vec<(&Path, &str)> = match wants {
            Wants::Directory => vec![
                (&file, "found a regular file"),
                (&under_file, "is a regular file"),
            ],
            Wants::File => vec![
                (tmp.path(), "found a directory"),
                (&under_file, "is a regular file"),
            ],
        };
        for (path, found) in bad {
            // `monitor -- true -o X` would hand `-o` to the command: put the
            // path before `--` there.
            let mut full = args.clone();
            let path_text = path.display().to_string();
            match full.iter().position(|a| a == "--") {
                Some(dash) => {
                    let flag = full.pop().unwrap();
                    full.insert(dash, path_text.clone());
                    full.insert(dash, flag);
                }
                None => full.push(path_text.clone()),
            }
            let out = tinct().args(&full).current_dir(tmp.path()).exits(2);
            let err = stderr(&out);
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "{full:?}: one line, got:\n{err}");
            let line = lines[0];
            let expected = match wants {
                Wants::Directory => "expected a directory",
                Wants::File => "expected a file path",
            };
            assert!(
                line.contains(&path_text) && line.contains(expected) && line.contains(found),
                "{full:?}: {line}"
            );
            assert!(!line.contains("os error"), "{full:?}: {line}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
        }
    }
}
