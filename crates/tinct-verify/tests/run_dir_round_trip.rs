//! A real run directory reads back as the types that wrote it (issue 11
//! item 3): `summary.json` and `analysis.json` of a run of a planned set
//! with a shared resource (bounds, blocking, the sentinel, the isolation
//! proof, real job records) read back equal to what the run returned and,
//! written again, give the same bytes.

use tinct_core::format::{Syntax, parse};
use tinct_rt::critical_sections::Synchronization;
use tinct_rt::memory::Placement;
use tinct_rt::spec::RunSpec;
use tinct_verify::output::RunFiles;
use tinct_verify::run_in_dir::run_in_dir;

const MS: u64 = 1_000_000;

#[test]
fn a_real_run_directory_reads_back_equal_to_what_was_written() {
    if !tinct_sys::testing::privileged_or_skip("SCHED_FIFO and priority inheritance") {
        return;
    }
    let text = tinct_rt::testing::shared_resource_set("pip", 0);
    let set = parse(&text, "shared.toml", Syntax::Toml).unwrap();
    let analysis = tinct_core::analysis::analyze(&set).unwrap();
    let spec = RunSpec::from_plan(&set, Some(&analysis), "shared.toml", 200 * MS)
        .unwrap()
        .with_synchronization(&Synchronization::of_set(&set))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recorded = run_in_dir(
        &spec,
        Some(&analysis),
        tinct_rt::testing::test_options(),
        dir.path(),
    )
    .unwrap();
    assert_eq!(recorded.written.dir, dir.path());
    let files = RunFiles::read(dir.path()).unwrap();

    let same_bytes = |name: &str, again: String| {
        let file = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(file == again + "\n", "{name} reads back to other bytes");
    };
    same_bytes(
        "summary.json",
        serde_json::to_string_pretty(&files.summary).unwrap(),
    );
    same_bytes(
        "analysis.json",
        serde_json::to_string_pretty(files.analysis.as_ref().unwrap()).unwrap(),
    );
    // Equal to what the run returned but for the frames of the working
    // sets, which stay out of the file.
    let mut written = recorded.summary.clone();
    for task in &mut written.tasks {
        if let Placement::Heap { frames, .. } | Placement::Colored { frames, .. } =
            &mut task.placement
        {
            frames.clear();
        }
    }
    assert_eq!(files.summary, written);
    assert_eq!(files.analysis, Some(analysis));
    assert!(
        files.summary.sentinel.is_some(),
        "the sentinel's part read back"
    );
    assert!(files.summary.tasks.iter().all(|t| t.jobs.completed > 0));
}
