//! Will coloured pages hold their colours? The settings under which the
//! kernel migrates pages (a migrated page takes its new frame's colour),
//! each ok or a risk with the one-line fix. What each setting does, with
//! the kernel documentation read, is in tinct-mem's `locking` module.

use super::{finding, subject, unreadable};
use crate::{Facts, Finding, Level, MigrationSettings};
use tinct_sys::privilege::Capability;

/// The findings on page migration, then one summary: do colours hold?
pub(super) fn page_migration(facts: &Facts) -> Vec<Finding> {
    let Some(settings) = &facts.migration else {
        return vec![unreadable(
            subject::COLOURS_HOLD,
            facts,
            "page migration settings",
        )];
    };
    let nodes = facts.topology.as_ref().map(|t| t.numa_nodes.len());
    let findings = vec![
        compact_unevictable(settings),
        proactive_compaction(settings),
        thp_defrag(settings),
        numa_balancing(settings, nodes),
    ];
    let mut risks: Vec<&str> = findings
        .iter()
        .filter(|f| f.level != Level::Ok)
        .map(|f| f.subject.as_str())
        .collect();
    let memlock_refuses = facts
        .memlock
        .as_ref()
        .is_some_and(|l| l.soft_bytes.is_some())
        && !facts.privileges.is_some_and(|p| p.has(Capability::IpcLock));
    if memlock_refuses {
        risks.push(subject::MEMLOCK);
    }
    let summary = if risks.is_empty() {
        finding(
            subject::COLOURS_HOLD,
            Level::Ok,
            "yes: coloured pages are locked and no kernel setting migrates locked pages",
            None,
        )
    } else {
        finding(
            subject::COLOURS_HOLD,
            Level::Warning,
            format!(
                "at risk: the kernel can move coloured pages to frames of other colours ({}); \
                 runs count the pages that moved (summary.json `colored_pages_moved`)",
                risks.join(", ")
            ),
            Some("apply the fixes of the findings named".into()),
        )
    };
    let mut out = findings;
    out.push(summary);
    out
}

fn compact_unevictable(settings: &MigrationSettings) -> Finding {
    match settings.compact_unevictable_allowed {
        Some(0) => finding(
            subject::COMPACT_UNEVICTABLE,
            Level::Ok,
            "0: compaction leaves mlocked (coloured) pages on their frames",
            None,
        ),
        Some(value) => finding(
            subject::COMPACT_UNEVICTABLE,
            Level::Warning,
            format!(
                "{value}: compaction migrates mlocked pages too, so a coloured page can move to \
                 a frame of another colour at any moment"
            ),
            Some("sysctl vm.compact_unevictable_allowed=0".into()),
        ),
        None => finding(
            subject::COMPACT_UNEVICTABLE,
            Level::Ok,
            "not present: a kernel without compaction",
            None,
        ),
    }
}

fn proactive_compaction(settings: &MigrationSettings) -> Finding {
    let locked_spared = settings.compact_unevictable_allowed == Some(0);
    match settings.compaction_proactiveness {
        Some(0) => finding(
            subject::PROACTIVE_COMPACTION,
            Level::Ok,
            "0: no background compaction",
            None,
        ),
        Some(value) if locked_spared => finding(
            subject::PROACTIVE_COMPACTION,
            Level::Ok,
            format!(
                "{value}: kcompactd compacts in the background, but spares mlocked pages \
                 (vm.compact_unevictable_allowed = 0)"
            ),
            None,
        ),
        Some(value) => finding(
            subject::PROACTIVE_COMPACTION,
            Level::Warning,
            format!(
                "{value}: kcompactd compacts in the background and migrates mlocked pages \
                 (vm.compact_unevictable_allowed is not 0)"
            ),
            Some(
                "sysctl vm.compaction_proactiveness=0 (or vm.compact_unevictable_allowed=0)".into(),
            ),
        ),
        None => finding(
            subject::PROACTIVE_COMPACTION,
            Level::Ok,
            "not present: a kernel without proactive compaction",
            None,
        ),
    }
}

fn thp_defrag(settings: &MigrationSettings) -> Finding {
    match settings.thp_defrag.as_deref() {
        Some("always") => finding(
            subject::THP_DEFRAG,
            Level::Warning,
            "always: every huge-page fault compacts memory at once, migrating other pages \
             (coloured ones too unless vm.compact_unevictable_allowed = 0)",
            Some("echo madvise > /sys/kernel/mm/transparent_hugepage/defrag".into()),
        ),
        Some(mode) => finding(
            subject::THP_DEFRAG,
            Level::Ok,
            format!(
                "{mode}: no synchronous compaction for programs that do not ask for huge pages \
                 (coloured memory is MADV_NOHUGEPAGE, so khugepaged never collapses it)"
            ),
            None,
        ),
        None => finding(
            subject::THP_DEFRAG,
            Level::Ok,
            "not present: a kernel without transparent huge pages",
            None,
        ),
    }
}

fn numa_balancing(settings: &MigrationSettings, nodes: Option<usize>) -> Finding {
    match (settings.numa_balancing, nodes) {
        (Some(0), _) => finding(subject::NUMA_BALANCING, Level::Ok, "0: off", None),
        (Some(value), Some(1)) => finding(
            subject::NUMA_BALANCING,
            Level::Ok,
            format!("{value}: on, but one NUMA node has nowhere to migrate pages to"),
            None,
        ),
        (Some(value), _) => finding(
            subject::NUMA_BALANCING,
            Level::Warning,
            format!(
                "{value}: pages migrate towards the node that touches them, mlocked pages too \
                 (locking spares pages from compaction only)"
            ),
            Some("sysctl kernel.numa_balancing=0".into()),
        ),
        (None, _) => finding(
            subject::NUMA_BALANCING,
            Level::Ok,
            "not present: a kernel without NUMA balancing",
            None,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_sys::SysRoot;
    use tinct_sys::system::MemlockLimit;

    /// A fake root holding exactly these files.
    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = dir.path().join(path.trim_start_matches('/'));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn facts_of(files: &[(&str, &str)], memlock: Option<u64>) -> Facts {
        let dir = tree(files);
        Facts {
            migration: Some(MigrationSettings::read(&SysRoot::at(dir.path())).unwrap()),
            memlock: Some(MemlockLimit {
                soft_bytes: memlock,
                hard_bytes: memlock,
            }),
            ..Facts::default()
        }
    }

    fn level_of(findings: &[Finding], subject: &str) -> (Level, Option<String>) {
        let f = findings.iter().find(|f| f.subject == subject).unwrap();
        (f.level, f.fix.clone())
    }

    const RISKY: &[(&str, &str)] = &[
        ("/proc/sys/vm/compact_unevictable_allowed", "1\n"),
        ("/proc/sys/vm/compaction_proactiveness", "20\n"),
        (
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "[always] defer defer+madvise madvise never\n",
        ),
        ("/proc/sys/kernel/numa_balancing", "1\n"),
    ];

    #[test]
    fn each_risky_setting_is_a_warning_with_its_one_line_fix() {
        let findings = page_migration(&facts_of(RISKY, None));
        for (subject, fix) in [
            (
                subject::COMPACT_UNEVICTABLE,
                "sysctl vm.compact_unevictable_allowed=0",
            ),
            (
                subject::PROACTIVE_COMPACTION,
                "sysctl vm.compaction_proactiveness=0",
            ),
            (
                subject::THP_DEFRAG,
                "echo madvise > /sys/kernel/mm/transparent_hugepage/defrag",
            ),
            (subject::NUMA_BALANCING, "sysctl kernel.numa_balancing=0"),
        ] {
            let (level, found_fix) = level_of(&findings, subject);
            assert_eq!(level, Level::Warning, "{subject}");
            assert!(found_fix.unwrap().starts_with(fix), "{subject}");
        }
        let summary = findings
            .iter()
            .find(|f| f.subject == subject::COLOURS_HOLD)
            .unwrap();
        assert_eq!(summary.level, Level::Warning);
        assert!(
            summary.found.contains(subject::NUMA_BALANCING),
            "{summary:?}"
        );
    }

    #[test]
    fn safe_settings_say_colours_hold() {
        let findings = page_migration(&facts_of(
            &[
                ("/proc/sys/vm/compact_unevictable_allowed", "0\n"),
                ("/proc/sys/vm/compaction_proactiveness", "20\n"),
                (
                    "/sys/kernel/mm/transparent_hugepage/defrag",
                    "always defer defer+madvise [madvise] never\n",
                ),
                ("/proc/sys/kernel/numa_balancing", "0\n"),
            ],
            None,
        ));
        assert!(
            findings.iter().all(|f| f.level == Level::Ok),
            "{findings:?}"
        );
        // Proactive compaction spares locked pages when compaction does.
        assert!(
            findings
                .iter()
                .any(|f| f.subject == subject::PROACTIVE_COMPACTION && f.found.contains("spares"))
        );
    }

    #[test]
    fn a_memlock_limit_without_cap_ipc_lock_puts_colours_at_risk() {
        let safe = &[("/proc/sys/vm/compact_unevictable_allowed", "0\n")];
        let limited = page_migration(&facts_of(safe, Some(8 << 20)));
        let (level, _) = level_of(&limited, subject::COLOURS_HOLD);
        assert_eq!(level, Level::Warning);
        let unlimited = page_migration(&facts_of(safe, None));
        assert_eq!(level_of(&unlimited, subject::COLOURS_HOLD).0, Level::Ok);
    }

    #[test]
    fn numa_balancing_on_one_node_is_harmless_and_bad_values_are_named() {
        let settings = MigrationSettings {
            numa_balancing: Some(1),
            ..MigrationSettings::default()
        };
        assert_eq!(numa_balancing(&settings, Some(1)).level, Level::Ok);
        assert_eq!(numa_balancing(&settings, Some(2)).level, Level::Warning);
        assert_eq!(numa_balancing(&settings, None).level, Level::Warning);
        let dir = tree(&[("/proc/sys/vm/compact_unevictable_allowed", "yes\n")]);
        let error = MigrationSettings::read(&SysRoot::at(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("compact_unevictable_allowed") && error.contains("yes"),
            "{error}"
        );
    }
}
