//! The committed seed corpora run through their targets' checks (on
//! stable, in every `cargo test`), and the target list, the binaries, the
//! seed directories and the examples agree.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use tinct_fuzz::TARGETS;

fn fuzz_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

fn stems(dir: &Path) -> BTreeSet<String> {
    files_in(dir)
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_seed_passes_its_target() {
    let mut seeds = 0;
    for target in TARGETS {
        let dir = fuzz_dir().join("seeds").join(target.name);
        let files = files_in(&dir);
        assert!(!files.is_empty(), "{}: no seeds", dir.display());
        for file in files {
            let data = fs::read(&file).unwrap();
            let outcome = std::panic::catch_unwind(|| (target.check)(&data));
            assert!(outcome.is_ok(), "{} fails {}", file.display(), target.name);
            seeds += 1;
        }
    }
    assert!(seeds >= TARGETS.len());
}

#[test]
fn targets_binaries_and_seed_directories_agree() {
    let names: BTreeSet<String> = TARGETS.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(names.len(), TARGETS.len(), "a target is listed twice");
    assert_eq!(stems(&fuzz_dir().join("fuzz_targets")), names);
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    for name in &names {
        assert!(
            manifest.contains(&format!(
                "name = \"{name}\"\npath = \"fuzz_targets/{name}.rs\""
            )),
            "Cargo.toml has no [[bin]] for {name}"
        );
        let binary =
            fs::read_to_string(fuzz_dir().join(format!("fuzz_targets/{name}.rs"))).unwrap();
        assert!(binary.contains("fuzz_target!"), "{name}.rs");
    }
    let seed_dirs: BTreeSet<String> = fs::read_dir(fuzz_dir().join("seeds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(seed_dirs, names);
}

/// The examples are seeds byte for byte, so a new or changed example is
/// fuzzed from (copy it into the seeds when this fails).
#[test]
fn every_example_is_a_seed() {
    let examples = fuzz_dir().join("../examples");
    for (dir, target) in [
        (examples.clone(), "task_set_toml"),
        (examples.join("rt-app"), "rt_app"),
    ] {
        let files = files_in(&dir);
        assert!(!files.is_empty(), "{}", dir.display());
        for example in files {
            let seed = fuzz_dir()
                .join("seeds")
                .join(target)
                .join(example.file_name().unwrap());
            assert_eq!(
                fs::read(&seed).ok(),
                Some(fs::read(&example).unwrap()),
                "{} is not the seed {}",
                example.display(),
                seed.display()
            );
        }
    }
}

/// The checks can fail: a property broken on purpose is caught.
#[test]
fn a_broken_property_is_caught() {
    // The reference agrees with the parser only on the true value.
    let wrong = tinct_fuzz::units::reference("45.3us", tinct_fuzz::units::DURATION_UNITS);
    assert_eq!(wrong, Some(45_300));
    assert_ne!(wrong, Some(45_299));
    // An analysis whose verdict contradicts its numbers is refused.
    let set = tinct_core::format::parse(
        &fs::read_to_string(fuzz_dir().join("seeds/task_set_toml/kim2013-table2.toml")).unwrap(),
        "kim2013-table2.toml",
        tinct_core::format::Syntax::Toml,
    )
    .unwrap();
    let mut analysis = tinct_core::analysis::analyze(&set).unwrap();
    tinct_fuzz::task_set::check_analysis(&analysis);
    analysis.tasks[0].wcrt_ns = analysis.tasks[0].wcrt_ns.map(|r| r - 1);
    let caught = std::panic::catch_unwind(|| tinct_fuzz::task_set::check_analysis(&analysis));
    assert!(caught.is_err(), "R one below its terms went unnoticed");
}
