//! The doctor against tinct-sys' fixture trees: `kvm-epyc` (copied from
//! the 2-vCPU KVM guest this project is developed on) and `intel-2node` (a
//! generated dual-socket Intel box with SMT, PREEMPT_RT and resctrl), and
//! copies of them broken on purpose.

use tinct_doctor::{Backend, Finding, Level, Report, diagnose, subject};
use tinct_sys::SysRoot;
use tinct_sys::testing::fixture_tree;
use tinct_sys::topology::Topology;

/// The report's finding about `subject`.
fn finding<'a>(report: &'a Report, subject: &str) -> &'a Finding {
    report
        .finding(subject)
        .unwrap_or_else(|| panic!("no finding about {subject}"))
}

/// The level of the report's finding about `subject`.
fn level_of(report: &Report, subject: &str) -> Level {
    finding(report, subject).level
}

/// The fix the report's finding about `subject` proposes (it must propose one).
fn fix_of<'a>(report: &'a Report, subject: &str) -> &'a str {
    finding(report, subject)
        .fix
        .as_deref()
        .unwrap_or_else(|| panic!("no fix for {subject}"))
}

#[test]
fn doctor_on_the_kvm_fixture() {
    let report = diagnose(&fixture_tree("kvm-epyc"));
    assert!(!report.live);
    assert!(
        report.facts.read_errors.is_empty(),
        "{:?}",
        report.facts.read_errors
    );
    assert_eq!(level_of(&report, subject::CPUS), Level::Ok);
    assert_eq!(level_of(&report, subject::COLORS), Level::Ok);
    // A Zen guest: the complex's 8 slices (bits 12-17), not the way-size
    // rule's 512 colours (cache_slices: a VM counts no vCPUs).
    let colors = &finding(&report, subject::COLORS).found;
    assert!(
        colors.contains("64 colors") && colors.contains("bits 12-17"),
        "{colors}"
    );
    assert_eq!(level_of(&report, subject::PERF_HARDWARE), Level::Warning);
    let fix = fix_of(&report, subject::PERF_HARDWARE);
    assert!(fix.contains("bare metal or enable vPMU"), "{fix}");
    assert_eq!(level_of(&report, subject::RESCTRL), Level::Warning);
    assert_eq!(level_of(&report, subject::RT_THROTTLING), Level::Warning);
    assert_eq!(level_of(&report, subject::PAGEMAP), Level::NotProbed);
    assert_eq!(level_of(&report, subject::SCHED_FIFO), Level::NotProbed);
    assert_eq!(level_of(&report, subject::ISOLATION), Level::Warning);
    let fix = fix_of(&report, subject::ISOLATION);
    assert!(fix.contains("isolcpus=domain,managed_irq,1"), "{fix}");
    // The fixture's process was root, so coloring is expected to work; no resctrl.
    assert_eq!(report.backend, Backend::Coloring);
    let backend = finding(&report, subject::BACKEND);
    assert!(backend.found.contains("VM"), "{}", backend.found);
    assert_eq!(report.caches.len(), 7);
    let l3 = report.caches.iter().find(|c| c.name == "L3").unwrap();
    assert_eq!(l3.shared_cpus, "0-1");
    assert_eq!(l3.colors.as_ref().unwrap().colors, 64);
}

#[test]
fn doctor_on_the_intel_fixture() {
    let report = diagnose(&fixture_tree("intel-2node"));
    assert!(
        report.facts.read_errors.is_empty(),
        "{:?}",
        report.facts.read_errors
    );
    assert_eq!(
        level_of(&report, subject::CPUS),
        Level::Warning,
        "SMT is on"
    );
    let fix = fix_of(&report, subject::CPUS);
    assert!(fix.contains("smt/control"), "{fix}");
    assert_eq!(level_of(&report, subject::NUMA), Level::Warning);
    assert_eq!(level_of(&report, subject::KERNEL), Level::Ok);
    assert_eq!(level_of(&report, subject::RT_THROTTLING), Level::Ok);
    assert_eq!(level_of(&report, subject::ISOLATION), Level::Ok);
    assert_eq!(level_of(&report, subject::THP), Level::Ok);
    let governor = finding(&report, subject::GOVERNOR);
    assert_eq!(governor.level, Level::Warning);
    assert!(governor.found.contains("CPUs 0,8"), "{}", governor.found);
    assert_eq!(level_of(&report, subject::MEMLOCK), Level::Warning);
    let fix = fix_of(&report, subject::MEMLOCK);
    assert!(fix.contains("cap_ipc_lock"), "{fix}");
    assert_eq!(level_of(&report, subject::PERF_HARDWARE), Level::NotProbed);
    let resctrl = finding(&report, subject::RESCTRL);
    assert_eq!(resctrl.level, Level::Ok);
    assert!(
        resctrl.found.contains("cbm_mask fffff (20 bits"),
        "{}",
        resctrl.found
    );
    // Unprivileged: PFNs would be hidden, so only resctrl is usable.
    assert_eq!(report.backend, Backend::Resctrl);
    let pagemap = finding(&report, subject::PAGEMAP);
    assert!(
        pagemap.found.contains("lacks CAP_SYS_ADMIN"),
        "{}",
        pagemap.found
    );
}

#[test]
fn a_broken_tree_gives_findings_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("sys/devices/system/cpu")).unwrap();
    std::fs::write(dir.path().join("sys/devices/system/cpu/online"), "0-x\n").unwrap();
    let report = diagnose(&SysRoot::at(dir.path()));
    let cpus = finding(&report, subject::CPUS);
    assert_eq!(cpus.level, Level::Warning);
    assert!(
        cpus.found.contains("online") && cpus.found.contains("0-x"),
        "{}",
        cpus.found
    );
    assert_eq!(report.backend, Backend::None);
    assert_eq!(level_of(&report, subject::BACKEND), Level::Blocker);
}

#[test]
fn the_report_serializes_with_stable_field_names() {
    let report = diagnose(&fixture_tree("intel-2node"));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["backend"], "resctrl");
    assert_eq!(json["live"], false);
    let first = &json["findings"][0];
    for key in ["subject", "level", "found", "fix"] {
        assert!(first.get(key).is_some(), "finding lacks {key}: {first}");
    }
    assert_eq!(json["caches"][0]["type"], "data");
    assert_eq!(json["facts"]["resctrl"]["info"]["l3"]["cbm_mask"], "fffff");
}

/// A writable copy of fixture `name` in a temporary directory, for trees
/// broken on purpose.
fn copy_of(name: &str) -> tempfile::TempDir {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
    let dir = tempfile::tempdir().unwrap();
    copy(fixture_tree(name).base(), dir.path());
    dir
}

fn write(tree: &tempfile::TempDir, rel: &str, text: &str) {
    std::fs::write(tree.path().join(rel), text).unwrap();
}

/// Issue 10: one malformed cache file cost the whole topology, and then
/// the isolation advice said "with one CPU there is nothing to isolate"
/// for a two-CPU machine.
#[test]
fn a_malformed_cache_file_costs_that_cache_only_and_is_named() {
    let tree = copy_of("kvm-epyc");
    let size = "sys/devices/system/cpu/cpu0/cache/index3/size";
    write(&tree, size, "32Q\n");
    let root = SysRoot::at(tree.path());
    assert!(Topology::read(&root).is_err(), "the strict reader refuses");
    let (topology, problems) = Topology::read_partial(&root).unwrap();
    assert_eq!(topology.online_cpus, vec![0, 1]);
    assert_eq!(problems.len(), 1, "{problems:?}");
    // cpu1 shares the same L3: it is still known, from cpu1's files.
    assert_eq!(topology.caches.len(), 7);

    let report = diagnose(&root);
    let cpus = finding(&report, subject::CPUS);
    assert!(cpus.found.contains("2 online CPUs"), "{}", cpus.found);
    let fix = fix_of(&report, subject::ISOLATION);
    assert!(fix.contains("isolcpus=domain,managed_irq,1"), "{fix}");
    assert!(!fix.contains("one CPU"), "{fix}");
    let malformed = report
        .findings
        .iter()
        .find(|f| f.subject == format!("reading {}", tinct_doctor::TOPOLOGY_FILE))
        .expect("a finding naming the malformed file");
    assert_eq!(malformed.level, Level::Warning);
    assert!(
        malformed.found.contains(size) && malformed.found.contains("\"32Q\""),
        "{}",
        malformed.found
    );
}

/// Issue 10: `sched_rt_runtime_us = -5` was printed as "-1" (disabled).
#[test]
fn rt_runtime_is_printed_as_the_file_says_and_only_minus_one_is_unlimited() {
    let tree = copy_of("kvm-epyc");
    let runtime = "proc/sys/kernel/sched_rt_runtime_us";
    write(&tree, runtime, "-5\n");
    let report = diagnose(&SysRoot::at(tree.path()));
    let rt = finding(&report, subject::RT_THROTTLING);
    assert_eq!(rt.level, Level::Warning);
    assert!(
        rt.found.contains(runtime) && rt.found.contains("found \"-5\""),
        "{}",
        rt.found
    );
    assert!(!rt.found.contains("disabled"), "{}", rt.found);

    write(&tree, runtime, "-1\n");
    let report = diagnose(&SysRoot::at(tree.path()));
    let rt = finding(&report, subject::RT_THROTTLING);
    assert_eq!(rt.level, Level::Ok);
    assert!(
        rt.found.contains("sched_rt_runtime_us = -1"),
        "{}",
        rt.found
    );
}

/// Issue 10: a FIFO in a copied tree blocked doctor for ever.
#[test]
fn a_fifo_in_the_tree_is_a_finding_not_a_hang() {
    let tree = copy_of("kvm-epyc");
    let cpuinfo = tree.path().join("proc/cpuinfo");
    std::fs::remove_file(&cpuinfo).unwrap();
    tinct_sys::testing::make_fifo(&cpuinfo).unwrap();
    let report = diagnose(&SysRoot::at(tree.path()));
    let reading = report
        .findings
        .iter()
        .find(|f| f.subject == "reading cpuinfo")
        .expect("a finding about /proc/cpuinfo");
    assert!(
        reading
            .found
            .contains("proc/cpuinfo: expected a regular file, found a FIFO"),
        "{}",
        reading.found
    );
    // Everything else was still read.
    assert_eq!(report.caches.len(), 7);
}

/// Issue 16: colours of a sliced LLC lie below the slice hash. The doctor
/// says which rule it used and why: the way-size rule on the VM (the host's
/// slices are invisible), one slice per core on a known Intel, counted
/// slices from the uncore PMUs, and unknown bits when a slice's way is not
/// a power of two.
#[test]
fn doctor_says_which_colour_rule_it_used_and_why() {
    let kvm = diagnose(&fixture_tree("kvm-epyc"));
    let rule = kvm.llc_colors.as_ref().unwrap();
    assert_eq!(
        rule.rule,
        tinct_sys::topology::ColorRule::Sliced { slices: 8 }
    );
    let found = &finding(&kvm, subject::COLORS).found;
    assert!(
        found.contains("sliced-cache rule") && found.contains("virtual machine"),
        "{found}"
    );

    // The Intel box as a Skylake-SP (family 6, model 0x55): 4 cores share
    // each 20 MiB 20-way L3, so 4 slices of 5 MiB: 64 colours, not 256.
    let tree = copy_of("intel-2node");
    let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\n\
                   flags\t\t: fpu ht cat_l3\n";
    write(&tree, "proc/cpuinfo", cpuinfo);
    let report = diagnose(&SysRoot::at(tree.path()));
    let colors = finding(&report, subject::COLORS);
    assert_eq!(colors.level, Level::Ok, "{}", colors.found);
    assert!(
        colors.found.contains("64 colors")
            && colors.found.contains("sliced-cache rule, 4 slices")
            && colors.found.contains("4 physical cores")
            && colors.found.contains("bits 12-17"),
        "{}",
        colors.found
    );
    let l3 = report.caches.iter().find(|c| c.name == "L3").unwrap();
    assert_eq!(l3.colors.as_ref().unwrap().colors, 64);

    // Ten CHA PMUs: 10 slices of 2 MiB, 20 ways: a way of 104857.6 bytes,
    // so the bits are not known and the doctor asks for them.
    for n in 0..10 {
        let dir = tree
            .path()
            .join(format!("sys/bus/event_source/devices/uncore_cha_{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("type"), "30\n").unwrap();
    }
    let report = diagnose(&SysRoot::at(tree.path()));
    let colors = finding(&report, subject::COLORS);
    assert_eq!(colors.level, Level::Warning, "{}", colors.found);
    assert!(
        colors.found.contains("uncore_cha_0") && colors.found.contains("not known"),
        "{}",
        colors.found
    );
    let fix = fix_of(&report, subject::COLORS);
    assert!(
        fix.contains("safe to assume: bits 12-15")
            && fix.contains("tinct doctor --probe-colors --color-bits 12-15")
            && fix.contains("tinct doctor --save --color-bits 12-15"),
        "{fix}"
    );
}

/// Bad input to `examine` is tinct's input error with the flag and its
/// value as the field, what was expected and what was found.
#[test]
fn bad_bits_and_a_root_that_is_not_a_directory_are_input_errors() {
    let Err(error) = tinct_doctor::examine(None, false, Some("12-x")) else {
        panic!("12-x is no list of bits");
    };
    assert_eq!(error.file, "");
    assert_eq!(error.field, "--color-bits 12-x");
    assert_eq!(error.expected, "bits such as 12-15");
    let Err(error) = tinct_doctor::examine(None, false, Some("14-15")) else {
        panic!("14-15 does not start at the page offset");
    };
    assert_eq!(error.field, "--color-bits 14-15");
    assert_eq!(error.found, "14-15");
    assert!(
        error.expected.starts_with("consecutive address bits"),
        "{error}"
    );
    let root = std::path::Path::new("/nonexistent/tinct-root");
    let Err(error) = tinct_doctor::examine(Some(root), false, None) else {
        panic!("no directory there");
    };
    assert_eq!(
        error.to_string(),
        "--root /nonexistent/tinct-root: expected a directory holding sys/ and proc/, found nothing"
    );
}
