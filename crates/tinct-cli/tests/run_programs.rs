//! A program body's heap on its task's partitions (issue 26): `tinct run`
//! preloads the shim into a program task with partitions, which serves its
//! heap from the colours of S(i); after the run the frames it wrote are
//! read back and checked, and the isolation proof covers them. A program
//! the shim cannot enter (statically linked) is refused naming the file,
//! line and field, or runs uncoloured under `--uncolored`, saying so.
//!
//! The colours are the set's own (`color_bits = [12, ..., 17]`: 64
//! colours, partition 2 of 4 is colours 16-31), so the check of every
//! frame below is plain arithmetic, independent of tinct's. Runs that
//! read frame numbers need root; without it they skip, unless
//! TINCT_REQUIRE_PRIVILEGED=1 makes them fail.

mod common;

use common::{TEST_WATCHDOG_FACTOR, assert_completed, read_json, stdout, tinct, write};
use serde_json::Value;
use std::path::{Path, PathBuf};
use tinct_sys::testing::privileged_serial;

/// A C program of the `lines` protocol: per job it allocates `kib` KiB,
/// writes every byte, sums them and frees them, then answers.
const LINES_PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t bytes = (size_t)atoi(argv[1]) << 10;
    char line[64];
    unsigned long sum = 0;
    while (fgets(line, sizeof line, stdin)) {
        unsigned char *buffer = malloc(bytes);
        if (!buffer) { fprintf(stderr, "malloc failed\n"); return 1; }
        memset(buffer, (int)strlen(line), bytes);
        for (size_t i = 0; i < bytes; i += 64) sum += buffer[i];
        free(buffer);
        printf("%lu\n", sum);
        fflush(stdout);
    }
    return 0;
}
"#;

/// `LINES_PROGRAM` compiled into `dir/name` with `flags`.
fn compile(dir: &Path, name: &str, flags: &[&str]) -> PathBuf {
    let source = write(dir, &format!("{name}.c"), LINES_PROGRAM);
    let program = dir.join(name);
    let status = std::process::Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&program)
        .arg(&source)
        .args(flags)
        .status()
        .expect("a C compiler `cc`");
    assert!(status.success(), "cc {flags:?} {name}.c");
    program
}

/// A set of a kernel task `sensor` (partition 1) and the program task
/// `filter` (partition 2) running `./program 256` (256 KiB per job), both
/// on this process's first CPU, written to `dir/set.toml`.
fn program_set(dir: &Path, program: &str) -> PathBuf {
    program_set_with_period(dir, program, "20ms")
}

/// [`program_set`] with the program task's period (its deadline): a
/// profile writes the largest job it saw as C, and a set whose C exceeds D
/// does not validate, so profiling tests give room for a host stall.
fn program_set_with_period(dir: &Path, program: &str, period: &str) -> PathBuf {
    let cpu = tinct_sys::sched::affinity().unwrap()[0];
    write(
        dir,
        "set.toml",
        format!(
            "[platform]\ncores = {}\npartitions = 4\ncolor_bits = [12, 13, 14, 15, 16, 17]\n\
             memory = \"64MiB\"\nrefill = \"10us\"\n\n\
             [[task]]\nname = \"sensor\"\nperiod = \"10ms\"\nmemory = \"64KiB\"\nwcet = \"2ms\"\n\
             core = {cpu}\npartitions = [1]\n\
             body = {{ kernel = \"read\", working_set = \"64KiB\", iterations = 200 }}\n\n\
             [[task]]\nname = \"filter\"\nperiod = \"{period}\"\nmemory = \"1MiB\"\nwcet = \"8ms\"\n\
             core = {cpu}\npartitions = [2]\n\
             body = {{ command = [\"./{program}\", \"256\"], protocol = \"lines\" }}\n",
            cpu + 1
        ),
    )
}

/// `tinct run set --duration 500ms --out dir/run`, with `extra` flags.
fn run(dir: &Path, set: &Path, extra: &[&str]) -> std::process::Output {
    tinct()
        .env("TINCT_TOPOLOGY_ROOT", common::unsliced_machine())
        .env("TINCT_PRELOAD_LIB", common::shim())
        .args(["run", set.to_str().unwrap(), "--duration", "500ms"])
        .args(["--watchdog-factor", TEST_WATCHDOG_FACTOR])
        .args(extra)
        .arg("--out")
        .arg(dir.join("run"))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap()
}

/// Task `name` of summary.json.
fn task<'a>(summary: &'a Value, name: &str) -> &'a Value {
    common::find_by(&summary["tasks"], "name", name)
}

#[test]
fn a_program_heap_comes_from_its_partitions_colours_and_is_read_back() {
    let Some(_serial) = privileged_serial("tinct run (frame numbers, SCHED_FIFO)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path(), "filter", &[]);
    let set = program_set(dir.path(), "filter");
    let output = run(dir.path(), &set, &[]);
    assert_completed(&output);
    let summary = read_json(&dir.path().join("run/summary.json"));
    let filter = task(&summary, "filter");
    let placement = &filter["placement"];
    assert_eq!(placement["placement"], "colored", "{filter}");
    assert_eq!(placement["colors"], "16-31", "{filter}");
    assert_eq!(placement["pages_outside_colors"], 0, "{filter}");
    assert!(
        filter["jobs"]["completed"].as_u64().unwrap() >= 20,
        "{filter}"
    );

    // The frames the shim wrote, checked here by arithmetic: bits 12-17 of
    // the physical address are bits 0-5 of the frame number.
    let programs = dir.path().join("run/programs");
    let reports: Vec<PathBuf> = std::fs::read_dir(&programs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("filter.frames.")
        })
        .collect();
    assert_eq!(reports.len(), 1, "one process, one report: {reports:?}");
    let text = std::fs::read_to_string(&reports[0]).unwrap();
    let frames: Vec<u64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("frame 0x"))
        .map(|hex| u64::from_str_radix(hex, 16).unwrap())
        .collect();
    // 256 KiB per job: at least 64 pages of heap.
    assert!(frames.len() >= 64, "{} frames:\n{text}", frames.len());
    assert_eq!(placement["pages"], frames.len() as u64, "{filter}");
    let outside: Vec<u64> = frames
        .iter()
        .copied()
        .filter(|f| !(16..=31).contains(&(f & 63)))
        .collect();
    assert!(
        outside.is_empty(),
        "frames outside colours 16-31: {outside:x?}"
    );

    // The proof covers the program: disjoint from the sensor's colours.
    // The program's process beyond its heap is not read: isolated except
    // for what it can touch uncoloured, which the verdict says.
    let isolation = &summary["isolation"];
    assert_eq!(isolation["status"], "isolated_except", "{isolation}");
    assert!(
        isolation["residue"]["unread"][0]
            .as_str()
            .unwrap()
            .contains("runs a program, of whose process only the coloured heap is read"),
        "{isolation}"
    );
    assert_eq!(
        filter["isolation"]["pages"],
        frames.len() as u64,
        "{filter}"
    );
    let printed = stdout(&output);
    assert!(
        printed.contains("colored, S(i) {2} = colors 16-31 (16 of 64), every page checked"),
        "{printed}"
    );
    // Its shim's own summary is in its stderr file.
    let stderr = std::fs::read_to_string(programs.join("filter.stderr")).unwrap();
    assert!(
        stderr.contains("colors 16-31 of 64") && stderr.contains("0 failed (strict)"),
        "{stderr}"
    );
}

#[test]
fn a_static_program_with_partitions_is_refused_or_runs_uncoloured_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path(), "static-filter", &["-static"]);
    let set = program_set(dir.path(), "static-filter");
    let refused = run(dir.path(), &set, &[]);
    let text = common::stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{text}");
    // Line 17: the filter's [[task]].
    for part in [
        &format!("{}:17: task 'filter' body.command: expected", set.display()),
        "is statically linked",
        "--uncolored",
    ] {
        assert!(text.contains(part), "{part:?} in:\n{text}");
    }
    assert!(
        !dir.path().join("run/summary.json").exists(),
        "refused before anything ran"
    );

    // Asked for: it runs, and every output says its S(i) is not enforced.
    let Some(_serial) = privileged_serial("tinct run (SCHED_FIFO)") else {
        return;
    };
    let output = run(dir.path(), &set, &["--uncolored"]);
    assert_completed(&output);
    let summary = read_json(&dir.path().join("run/summary.json"));
    let placement = &task(&summary, "filter")["placement"];
    assert_eq!(placement["placement"], "uncolored", "{placement}");
    assert!(
        placement["reason"]
            .as_str()
            .unwrap()
            .contains("is statically linked"),
        "{placement}"
    );
    assert_ne!(summary["isolation"]["status"], "isolated", "{summary}");
}

/// `tinct bench wcet-profile --quick --no-progress ARGS --out DIR/wp`
/// (`args` may end with `--command ...`, which takes the rest).
fn wcet_profile(dir: &Path, args: &[&str]) -> std::process::Output {
    tinct()
        .env("TINCT_PRELOAD_LIB", common::shim())
        .args(["bench", "wcet-profile", "--quick", "--no-progress", "--out"])
        .arg(dir.join("wp"))
        .args(args)
        .timeout(std::time::Duration::from_secs(300))
        .output()
        .unwrap()
}

/// Issue 26: a program task's C^p, profiled under the shim's colours of p
/// partitions, goes into its task set, which `tinct analyze` accepts; every
/// page its heap used was in the colours of its p partitions.
#[test]
fn wcet_profile_profiles_a_program_task_into_its_task_set() {
    let Some(_serial) = privileged_serial("wcet-profile on colored memory (frame numbers)") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    compile(dir.path(), "filter", &[]);
    // D = 200 ms: one job the host stalls for tens of ms still fits.
    let set = program_set_with_period(dir.path(), "filter", "200ms");
    let set_arg = set.to_str().unwrap();
    let output = wcet_profile(
        dir.path(),
        &[
            "--taskset",
            set_arg,
            "--task",
            "filter",
            "--p",
            "1,2,4",
            "--jobs",
            "5",
            "--conditions",
            "alone,cold",
            "--write-taskset",
            set_arg,
        ],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let json = read_json(&dir.path().join("wp/wcet-profile.json"));
    let command = json["body"]["program"]["command"].as_array().unwrap();
    assert!(
        command[0].as_str().unwrap().ends_with("/filter") && command[1] == "256",
        "{}",
        json["body"]
    );
    for point in json["points"].as_array().unwrap() {
        for condition in point["conditions"].as_array().unwrap() {
            assert!(
                condition["pages_checked"].as_u64().unwrap() > 0,
                "{condition}"
            );
            assert_eq!(
                condition["pages_checked"], condition["pages_in_colors"],
                "{condition}"
            );
        }
    }
    let written = tinct_core::format::load(&set).unwrap();
    let filter = written.tasks.iter().find(|t| t.name == "filter").unwrap();
    assert!(filter.program.is_some(), "still the program: {filter:?}");
    for p in [1, 2, 4] {
        assert!(
            filter.wcet.at(p).is_some(),
            "C^{p} written: {:?}",
            filter.wcet
        );
    }
    let analyzed = tinct().arg("analyze").arg(&set).output().unwrap();
    assert!(analyzed.status.success(), "{}", common::stderr(&analyzed));

    // A static program cannot be coloured: refused, naming the field.
    compile(dir.path(), "static-filter", &["-static"]);
    let static_set = program_set(dir.path(), "static-filter");
    let refused = wcet_profile(
        dir.path(),
        &[
            "--taskset",
            static_set.to_str().unwrap(),
            "--task",
            "filter",
        ],
    );
    let text = common::stderr(&refused);
    assert_eq!(refused.status.code(), Some(2), "{text}");
    assert!(
        text.contains("task 'filter' body.command") && text.contains("statically linked"),
        "{text}"
    );
}

/// `--command` profiles a program given on the command line (here
/// uncoloured, which needs no privilege) and writes a new task set whose
/// body is that program.
#[test]
fn wcet_profile_command_writes_a_task_set_of_the_program() {
    let _serial = tinct_sys::testing::serial();
    let dir = tempfile::tempdir().unwrap();
    let program = compile(dir.path(), "filter", &[]);
    let fresh = dir.path().join("fresh.toml");
    let output = wcet_profile(
        dir.path(),
        &[
            "--uncolored",
            "--working-set",
            "1MiB",
            "--p",
            "1,4",
            "--jobs",
            "3",
            "--conditions",
            "alone",
            "--refill",
            "45.3us",
            "--task",
            "mine",
            "--write-taskset",
            fresh.to_str().unwrap(),
            "--command",
            program.to_str().unwrap(),
            "64",
        ],
    );
    assert!(output.status.success(), "{}", common::stderr(&output));
    let created = tinct_core::format::load(&fresh).unwrap();
    let task = &created.tasks[0];
    assert_eq!(task.name, "mine");
    let body = task.program.as_ref().expect("the program as its body");
    assert_eq!(body.command, [program.to_str().unwrap(), "64"]);
    assert!(task.wcet.at(1).is_some() && task.wcet.at(4).is_some());
    let analyzed = tinct().arg("analyze").arg(&fresh).output().unwrap();
    assert!(analyzed.status.success(), "{}", common::stderr(&analyzed));
    // A program that is not there: bad input naming --command.
    let missing = wcet_profile(
        dir.path(),
        &[
            "--uncolored",
            "--working-set",
            "1MiB",
            "--command",
            "./no-such-program",
        ],
    );
    let text = common::stderr(&missing);
    assert_eq!(missing.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--command") && text.contains("no-such-program"),
        "{text}"
    );
    // Its memory M_i must be given: it goes into the task set.
    let no_memory = wcet_profile(dir.path(), &["--uncolored", "--command", "./filter"]);
    let text = common::stderr(&no_memory);
    assert_eq!(no_memory.status.code(), Some(2), "{text}");
    assert!(text.contains("--working-set"), "{text}");
}
