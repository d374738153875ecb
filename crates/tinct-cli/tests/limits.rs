//! The limits of a run are checked once, where a task-set file is read:
//! `analyze`, `plan` and `run` refuse the same file with the same message
//! naming its line and field, exit status 2.

mod common;

use common::{Exits, stderr, tinct, write};

const PIPELINE: &str = include_str!("fixtures/pipeline_1gib_buffer.toml");

#[test]
fn analyze_plan_and_run_refuse_a_file_beyond_the_limits_alike() {
    let dir = tempfile::tempdir().unwrap();
    let tiny_working_set = PIPELINE
        .replace("buffer = \"1 GiB\"", "buffer = \"4KiB\"")
        .replace(
            "wcet = \"1ms\"\n\n[[task]]",
            "wcet = \"1ms\"\nbody = { kernel = \"chase\", working_set = \"8B\" }\n\n[[task]]",
        );
    for (name, text, located) in [
        (
            "buffer.toml",
            PIPELINE.to_string(),
            ":22: edge #1 field `buffer`",
        ),
        (
            "working-set.toml",
            tiny_working_set,
            ":12: task 'p' field `body.working_set`",
        ),
    ] {
        let file = write(dir.path(), name, text);
        let commands: [&[&str]; 3] = [
            &["analyze"],
            &["plan", "--placement", "static"],
            &["run", "--no-rt", "--uncolored", "--duration", "10ms", "-o"],
        ];
        let mut messages = Vec::new();
        for args in commands {
            let mut command = tinct();
            command.args(args);
            if args[0] == "run" {
                command.arg(dir.path().join("run"));
            }
            let out = command.arg(&file).exits(2);
            let err = stderr(&out);
            assert!(
                err.contains(&format!("{}{located}", file.display())),
                "{args:?} {name}: {err}"
            );
            messages.push(err);
        }
        assert!(
            messages.iter().all(|m| *m == messages[0]),
            "{name}: {messages:#?}"
        );
    }
}
