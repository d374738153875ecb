//! `--write-taskset FILE`: the measured C^p table written straight into a
//! task-set file.
//!
//! If FILE exists, the `wcet` table of the named task is replaced and
//! nothing else changes (TOML is edited in place with toml_edit, so
//! comments and layout stay; JSON is re-written with its keys sorted). The
//! result is validated as tinct-core reads task sets before it replaces
//! the file (atomically: a temporary file renamed), so a table the task
//! cannot take (C above its deadline, a p below its partition minimum)
//! leaves the file as it was and says why. If FILE does not exist, the
//! complete task set the bench generates (`taskset.toml`) is written there.

use super::table;
use super::{Params, WcetProfileResult, WrittenTaskSet};
use crate::{Error, InputError, Result};
use std::collections::BTreeMap;
use std::path::Path;
use tinct_core::format::{LoadOptions, RefillCalibration, Syntax};
use tinct_core::units::Nanos;

/// Writes the table of `result` into `path` for the task `params.task`
/// (or the profiled task's name).
pub(super) fn write(
    path: &Path,
    params: &Params,
    result: &WcetProfileResult,
) -> Result<WrittenTaskSet> {
    let task = params.task.clone().unwrap_or_else(|| result.task.clone());
    let shown = path.display();
    let (Some(generated), None) = (&result.taskset, &result.table_missing) else {
        return Err(Error::Measurement(format!(
            "--write-taskset {shown}: no C^p table to write with --use {}: {}",
            result.statistic,
            result
                .table_missing
                .as_deref()
                .unwrap_or("no table was made")
        )));
    };
    if !path.exists() {
        replace_file(path, generated)?;
        return Ok(WrittenTaskSet {
            path: shown.to_string(),
            action: "created".into(),
            task: result.task.clone(),
        });
    }
    let text =
        tinct_core::format::read_text(path, tinct_core::format::MAX_FILE_BYTES, "task-set file")
            .map_err(|e| {
                Error::Input(InputError {
                    field: "--write-taskset".into(),
                    ..e
                })
            })?;
    let syntax = Syntax::from_path(path);
    let wcet = table::table(&result.points);
    let edited = match syntax {
        Syntax::Toml => edit_toml(&text, &task, &wcet),
        Syntax::Json => edit_json(&text, &task, &wcet),
    }
    .map_err(|why| {
        Error::Input(InputError::new(
            shown.to_string(),
            "--write-taskset",
            "a task-set file whose task takes the table",
            why,
        ))
    })?;
    // A file without `refill` takes Δ from the calibration when analysed;
    // any Δ serves to validate the table here.
    let options = LoadOptions {
        default_refill: Some(RefillCalibration {
            refill: Nanos(1),
            partitions: 1,
        }),
    };
    tinct_core::format::parse_with(&edited, &shown.to_string(), syntax, &options).map_err(|e| {
        Error::Measurement(format!(
            "--write-taskset {shown}: the measured table does not fit task `{task}`, the file is unchanged: {e}"
        ))
    })?;
    replace_file(path, &edited)?;
    Ok(WrittenTaskSet {
        path: shown.to_string(),
        action: "updated".into(),
        task,
    })
}

/// The task names of a list, for messages.
fn listing(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Replaces the `wcet` of `[[task]]` named `task` in TOML text.
fn edit_toml(
    text: &str,
    task: &str,
    wcet: &BTreeMap<u32, Nanos>,
) -> std::result::Result<String, String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| format!("expected a TOML task-set file, found {e}"))?;
    let inline = table::wcet_inline(wcet);
    let mut names = Vec::new();
    let found = match doc.get_mut("task") {
        Some(toml_edit::Item::ArrayOfTables(tasks)) => tasks.iter_mut().find(|t| {
            let name = t.get("name").and_then(|n| n.as_str()).unwrap_or("");
            names.push(name.to_string());
            name == task
        }),
        _ => None,
    };
    let Some(table) = found else {
        return Err(format!(
            "expected a [[task]] named `{task}`, found the tasks {}",
            listing(&names)
        ));
    };
    table.insert("wcet", toml_edit::value(inline));
    Ok(doc.to_string())
}

/// Replaces the `wcet` of the `task` entry named `task` in JSON text.
fn edit_json(
    text: &str,
    task: &str,
    wcet: &BTreeMap<u32, Nanos>,
) -> std::result::Result<String, String> {
    let mut doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| format!("expected a JSON task-set file, found {e}"))?;
    let table: serde_json::Map<String, serde_json::Value> = wcet
        .iter()
        .map(|(p, c)| (p.to_string(), serde_json::Value::from(c.to_string())))
        .collect();
    let mut names = Vec::new();
    let found = doc
        .get_mut("task")
        .and_then(|t| t.as_array_mut())
        .and_then(|tasks| {
            tasks.iter_mut().find(|t| {
                let name = t.get("name").and_then(|n| n.as_str()).unwrap_or("");
                names.push(name.to_string());
                name == task
            })
        })
        .and_then(|t| t.as_object_mut());
    let Some(entry) = found else {
        return Err(format!(
            "expected a task named `{task}`, found the tasks {}",
            listing(&names)
        ));
    };
    entry.insert("wcet".into(), serde_json::Value::Object(table));
    serde_json::to_string_pretty(&doc)
        .map(|s| s + "\n")
        .map_err(|e| e.to_string())
}

/// Writes `text` to `path` atomically: a reader sees the old file or the
/// new one, never half.
fn replace_file(path: &Path, text: &str) -> Result<()> {
    let failed = |e: std::io::Error| {
        Error::Measurement(format!(
            "--write-taskset {}: cannot write: {e}",
            path.display()
        ))
    };
    crate::harness::write_atomically(path, text.as_bytes()).map_err(failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(entries: &[(u32, u64)]) -> BTreeMap<u32, Nanos> {
        entries.iter().map(|&(p, ns)| (p, Nanos(ns))).collect()
    }

    const SET: &str = r#"# my task set
[platform]
cores = 2
partitions = 8
memory = "1GiB"

[[task]]
name = "a"   # the one we profile
period = "10ms"
memory = "1MiB"
wcet = { 1 = "5ms" }

[[task]]
name = "b"
period = "20ms"
memory = "1MiB"
wcet = { 1 = "1ms" }
"#;

    #[test]
    fn toml_keeps_everything_but_the_table() {
        let edited = edit_toml(SET, "a", &table(&[(1, 2_500_000), (4, 1_200_000)])).unwrap();
        assert!(
            edited.contains(r#"wcet = { 1 = "2.5ms", 4 = "1.2ms" }"#),
            "{edited}"
        );
        assert!(edited.contains("# my task set") && edited.contains("# the one we profile"));
        assert!(
            edited.contains(r#"wcet = { 1 = "1ms" }"#),
            "task b untouched"
        );
        let set = tinct_core::format::parse(&edited, "x.toml", Syntax::Toml).unwrap_err();
        // No refill in the file: the plain parse asks for it; with a default it reads.
        assert!(set.to_string().contains("refill"));
        let options = LoadOptions {
            default_refill: Some(RefillCalibration {
                refill: Nanos(1),
                partitions: 1,
            }),
        };
        let loaded =
            tinct_core::format::parse_with(&edited, "x.toml", Syntax::Toml, &options).unwrap();
        assert_eq!(loaded.set.tasks[0].wcet.at(4), Some(Nanos(1_200_000)));
    }

    #[test]
    fn an_unknown_task_names_the_ones_there() {
        let err = edit_toml(SET, "c", &table(&[(1, 1000)])).unwrap_err();
        assert_eq!(err, "expected a [[task]] named `c`, found the tasks a, b");
        let err = edit_toml("x = 1", "c", &table(&[(1, 1000)])).unwrap_err();
        assert!(err.contains("found the tasks none"), "{err}");
        assert!(edit_toml("[[", "a", &table(&[])).is_err());
    }

    #[test]
    fn json_tables_are_replaced_too() {
        let json = r#"{"platform": {"cores": 1, "partitions": 4, "memory": "1GiB", "refill": "1us"},
            "task": [{"name": "a", "period": "10ms", "memory": "1MiB", "wcet": {"1": "5ms"}}]}"#;
        let edited = edit_json(json, "a", &table(&[(1, 3_000_000), (2, 2_000_000)])).unwrap();
        let set = tinct_core::format::parse(&edited, "x.json", Syntax::Json).unwrap();
        assert_eq!(set.tasks[0].wcet.at(2), Some(Nanos(2_000_000)));
        assert!(
            edit_json(json, "z", &table(&[(1, 1)]))
                .unwrap_err()
                .contains("found the tasks a")
        );
    }

    #[test]
    fn the_file_is_replaced_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.toml");
        std::fs::write(&path, "old").unwrap();
        replace_file(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary left"
        );
        assert!(replace_file(&dir.path().join("missing/set.toml"), "x").is_err());
    }
}
