//! tinct's own rt-app workloads (examples/rt-app/) cover rt-app's whole
//! grammar: every top-level, global, task, phase and scheduling key and
//! every event appears in at least one of them, and each parses. (Running
//! them is the CLI's test, tests/run_rtapp.rs of tinct-cli.)

use std::collections::BTreeSet;
use std::path::PathBuf;
use tinct_rt::rtapp::{
    EVENTS, GLOBAL_KEYS, PHASE_KEYS, SCHED_KEYS, TASK_KEYS, TOP_KEYS, event_of, parse,
};

fn workloads() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .filter(|p| !p.ends_with("refused.json"))
        .collect();
    files.sort();
    files
}

/// Every quoted name followed by a colon: the keys of the file (comments
/// may name keys too, which only makes this check stricter on the files).
fn keys(text: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        let name = &after[..close];
        let tail = after[close + 1..].trim_start();
        if tail.starts_with(':') {
            keys.insert(name.to_string());
        }
        rest = &after[close + 1..];
    }
    keys
}

#[test]
fn the_workloads_parse_and_cover_every_key_and_event() {
    let files = workloads();
    assert!(files.len() >= 5, "{files:?}");
    let mut seen = BTreeSet::new();
    let mut events = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        parse(&text, &file.display().to_string(), 1_000_000_000)
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for key in keys(&text) {
            if let Some(event) = event_of(&key) {
                events.insert(event);
            }
            seen.insert(key);
        }
    }
    let missing_events: Vec<&str> = EVENTS
        .iter()
        .copied()
        .filter(|e| !events.contains(e))
        .collect();
    assert!(
        missing_events.is_empty(),
        "events no workload uses: {missing_events:?}"
    );
    let all_keys = TOP_KEYS
        .iter()
        .chain(&GLOBAL_KEYS)
        .chain(&TASK_KEYS)
        .chain(&PHASE_KEYS)
        .chain(&SCHED_KEYS);
    let missing: Vec<&&str> = all_keys
        .filter(|k| !seen.contains(**k))
        // Two spellings of one key: rt-app's parser reads `nodes_membind`,
        // its tutorial writes `membind_nodes`.
        .filter(|k| **k != "membind_nodes")
        .collect();
    assert!(missing.is_empty(), "keys no workload uses: {missing:?}");
}

#[test]
fn the_refused_example_is_refused_by_name() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/rt-app/refused.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let error = parse(&text, "refused.json", 1).unwrap_err().to_string();
    assert!(
        error.contains("`exec`") && error.contains("refused.json:7"),
        "{error}"
    );
}
