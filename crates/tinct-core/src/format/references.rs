//! References from a task set to other files (`[platform] dram_map`, and
//! a program body's program when its path is relative: `./filter.py`),
//! rewritten when the set is written somewhere else.
//!
//! A relative `dram_map` is read relative to the task-set file. A set read
//! from one directory and written into another (`tinct plan FILE -o
//! OTHER/plan.toml`) must still name the same mapping file, so
//! [`relocated`] rewrites the reference for the new location:
//!
//! - unchanged when it is absolute, or when the map lies in the output's
//!   directory or below it: it is then written relative to the output file
//!   (`map.toml`, `maps/x.toml`), so a directory holding the plan and its
//!   map can be moved or copied whole;
//! - absolute otherwise: a `../` path would break as soon as either file
//!   moved, an absolute one only when the map itself moves.

use crate::model::TaskSet;
use std::path::{Component, Path, PathBuf};

/// `set`, read from the file `from`, as a file at `to` must write it: its
/// `[platform] dram_map` rewritten so that it names the same file (see the
/// module documentation for the rule). Relative `from` and `to` are taken
/// from the current directory; `..` is resolved by name (symbolic links
/// are not followed).
pub fn relocated(set: &TaskSet, from: &Path, to: &Path) -> TaskSet {
    let mut set = set.clone();
    if let Some(map) = &mut set.platform.dram_map {
        map.path = moved(&map.path, from, to);
    }
    for task in &mut set.tasks {
        // A program named without a `/` is looked up in PATH, not in a
        // directory: it stays as written.
        if let Some(program) = task.program.as_mut().and_then(|p| p.command.first_mut())
            && program.contains('/')
        {
            *program = moved(program, from, to).to_string();
            if !program.contains('/') {
                // Beside the output: still a path, not a name for PATH.
                *program = format!("./{program}");
            }
        }
    }
    set
}

/// A file reference `written` in the file `from`, as the file `to` must
/// write it (the module documentation's rule).
fn moved(written: &str, from: &Path, to: &Path) -> String {
    let written = Path::new(written);
    if written.is_absolute() {
        return written.display().to_string();
    }
    let target = normalized(&absolute(&directory_of(from)).join(written));
    let out_dir = normalized(&absolute(&directory_of(to)));
    match target.strip_prefix(&out_dir) {
        Ok(inside) => inside.display().to_string(),
        Err(_) => target.display().to_string(),
    }
}

/// The directory of a file (`.` for a bare file name).
fn directory_of(file: &Path) -> PathBuf {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// `path` from the current directory (unchanged if absolute or if the
/// current directory is unknown).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `path` without `.` components and with `..` taking away the previous
/// name.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram_map::{AddressKind, DramMap};
    use crate::model::PlatformDramMap;

    fn set_with_map(path: &str) -> TaskSet {
        let mut set = crate::format::parse(
            "[platform]\ncores = 1\npartitions = 2\nmemory = \"1MiB\"\nrefill = \"1us\"\n\n\
             [[task]]\nname = \"a\"\nperiod = \"10ms\"\nmemory = \"4KiB\"\nwcet = { 1 = \"1ms\" }\n",
            "set.toml",
            crate::format::Syntax::Toml,
        )
        .unwrap();
        set.platform.dram_map = Some(PlatformDramMap {
            path: path.into(),
            map: DramMap {
                bank_functions: vec![0x4000],
                controller_functions: vec![],
                confidence: vec![],
                physical: AddressKind::Host,
                machine: "test".into(),
            },
        });
        set
    }

    fn written(from: &str, map: &str, to: &str) -> String {
        let set = relocated(&set_with_map(map), Path::new(from), Path::new(to));
        set.platform.dram_map.unwrap().path
    }

    #[test]
    fn a_written_file_names_the_same_map_and_a_missing_directory_is_named() {
        let dir = std::env::temp_dir().join(format!("tinct-write-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let header = ["written by a test".to_string()];
        let write = |name: &str| {
            let out = dir.join(name);
            let set = set_with_map("map.toml");
            crate::format::write_file(&out, &set, Path::new("/a/set.toml"), &header).unwrap();
            std::fs::read_to_string(&out).unwrap()
        };
        let toml = write("plan.toml");
        assert!(toml.starts_with("# written by a test\n"), "{toml}");
        assert!(toml.contains("\"/a/map.toml\""), "{toml}");
        let json = write("plan.json");
        assert!(
            json.starts_with('{') && json.contains("/a/map.toml"),
            "{json}"
        );
        let out = dir.join("plan.toml");
        let missing = dir.join("absent/plan.toml");
        let error =
            crate::format::write_file(&missing, &set_with_map("m.toml"), &out, &[]).unwrap_err();
        assert!(
            error.starts_with(&format!("cannot write {}: ", missing.display())),
            "{error}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn beside_the_output_a_map_stays_relative_elsewhere_it_becomes_absolute() {
        for (from, map, to, expected) in [
            ("/a/set.toml", "map.toml", "/a/plan.toml", "map.toml"),
            (
                "/a/sets/set.toml",
                "../maps/m.toml",
                "/a/plan.toml",
                "maps/m.toml",
            ),
            ("/a/set.toml", "./m.toml", "/a/./plan.toml", "m.toml"),
            ("/a/set.toml", "map.toml", "/b/plan.toml", "/a/map.toml"),
            (
                "/a/set.toml",
                "map.toml",
                "/a/plans/plan.toml",
                "/a/map.toml",
            ),
            (
                "/a/set.toml",
                "/maps/m.toml",
                "/b/plan.toml",
                "/maps/m.toml",
            ),
        ] {
            assert_eq!(
                written(from, map, to),
                expected,
                "{map} from {from} to {to}"
            );
        }
    }

    /// A program body's relative program moves with the set as a map does;
    /// one named for PATH and an absolute one stay as written.
    #[test]
    fn a_program_path_names_the_same_program_wherever_the_set_is_written() {
        let program = |command: &str| {
            let mut set = set_with_map("/m.toml");
            set.tasks[0].program = Some(crate::model::ProgramBody {
                command: vec![command.to_string(), "--quiet".to_string()],
                protocol: crate::model::JobProtocol::Lines,
                mmap: false,
            });
            set
        };
        for (from, command, to, expected) in [
            ("/a/set.toml", "./filter.py", "/a/plan.toml", "./filter.py"),
            ("/a/set.toml", "bin/filter", "/a/plan.toml", "bin/filter"),
            (
                "/a/set.toml",
                "./filter.py",
                "/tmp/plan.toml",
                "/a/filter.py",
            ),
            (
                "/a/b/set.toml",
                "../filter.py",
                "/a/plan.toml",
                "./filter.py",
            ),
            ("/a/set.toml", "python3", "/tmp/plan.toml", "python3"),
            (
                "/a/set.toml",
                "/usr/bin/filter",
                "/tmp/plan.toml",
                "/usr/bin/filter",
            ),
        ] {
            let moved = relocated(&program(command), Path::new(from), Path::new(to));
            let body = moved.tasks[0].program.as_ref().unwrap();
            assert_eq!(
                body.command,
                [expected, "--quiet"],
                "{from} {command} -> {to}"
            );
        }
    }

    #[test]
    fn relative_locations_are_taken_from_the_current_directory() {
        let here = std::env::current_dir().unwrap();
        assert_eq!(written("set.toml", "map.toml", "plan.toml"), "map.toml");
        assert_eq!(
            written("set.toml", "map.toml", "out/plan.toml"),
            here.join("map.toml").display().to_string()
        );
    }
}
