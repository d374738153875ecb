//! The resctrl cache reservation backend against a fake resctrl tree in a
//! temporary directory: the files it writes, the clean-up, the lock, the
//! monitoring counters, and a write the "kernel" rejects (its
//! `info/last_cmd_status` must reach the user).

use std::fs;
use std::path::Path;

use tinct_sys::resctrl::{Resctrl, partition_mask};

/// A resctrl mount as the kernel lays it out (Intel, 2 L3 domains, 11-bit
/// masks, monitoring), with the files a new group gets created by the test
/// (the kernel would create them on mkdir).
fn fake_tree(root: &Path) {
    let write = |rel: &str, text: &str| {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    };
    write("info/L3/cbm_mask", "7ff\n");
    write("info/L3/min_cbm_bits", "1\n");
    write("info/L3/num_closids", "16\n");
    write("info/L3/shareable_bits", "0\n");
    write(
        "info/L3_MON/mon_features",
        "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n",
    );
    write("info/last_cmd_status", "ok\n");
    write("schemata", "    L3:0=7ff;1=7ff\n");
    write("tasks", "1\n");
}

#[test]
fn a_group_per_core_gets_its_mask_cpus_and_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let resctrl = Resctrl::at(dir.path());
    let l3 = resctrl.l3().unwrap();
    assert_eq!(l3.cbm_bits, 11);
    assert_eq!(l3.domains, vec![0, 1]);
    let _lock = resctrl.lock().unwrap();
    // Core 1 runs tasks whose partitions are S = {2, 3} of N_P = 4.
    let mask = partition_mask(&l3, 4, &[2, 3]).unwrap();
    assert_eq!(mask, 0b000_1111_1100, "bits 2..8 of 11");
    let group = resctrl.create_group("tinct-core1").unwrap();
    group
        .set_l3_masks(&l3.domains.iter().map(|&d| (d, mask)).collect::<Vec<_>>())
        .unwrap();
    group.assign_cpus(&[1]).unwrap();
    group.assign_tasks(&[4242, 4243]).unwrap();
    let group_dir = dir.path().join("tinct-core1");
    assert_eq!(
        fs::read_to_string(group_dir.join("schemata")).unwrap(),
        "L3:0=fc;1=fc\n"
    );
    assert_eq!(
        fs::read_to_string(group_dir.join("cpus_list")).unwrap(),
        "1\n"
    );
    assert_eq!(
        fs::read_to_string(group_dir.join("tasks")).unwrap(),
        "4242\n4243\n"
    );
    // Monitoring as the kernel exposes it, one directory per L3 domain.
    for (domain, occupancy) in [(0, "1048576\n"), (1, "Unavailable\n")] {
        let mon = group_dir.join(format!("mon_data/mon_L3_{domain:02}"));
        fs::create_dir_all(&mon).unwrap();
        fs::write(mon.join("llc_occupancy"), occupancy).unwrap();
        fs::write(mon.join("mbm_total_bytes"), "123456\n").unwrap();
    }
    let readings = group.read_monitoring().unwrap();
    assert_eq!(readings.len(), 2);
    assert_eq!(readings[0].llc_occupancy, Some(1 << 20));
    assert_eq!(readings[1].llc_occupancy, None, "Unavailable is no number");
    assert_eq!(readings[0].mbm_total_bytes, Some(123_456));
    assert_eq!(readings[0].mbm_local_bytes, None, "not offered");
    group.remove().unwrap();
    assert!(!group_dir.exists(), "the group is removed");
    assert!(
        dir.path().join("schemata").exists(),
        "the default group is untouched"
    );
}

#[test]
fn a_dropped_group_is_cleaned_up_and_a_kept_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let resctrl = Resctrl::at(dir.path());
    {
        let group = resctrl.create_group("task-a").unwrap();
        group.set_l3_masks(&[(0, 0x3)]).unwrap();
    }
    assert!(!dir.path().join("task-a").exists(), "removed on drop");
    resctrl.create_group("task-b").unwrap().keep();
    assert!(dir.path().join("task-b").is_dir(), "kept");
    let again = resctrl.create_group("task-b").unwrap_err().to_string();
    assert!(again.contains("mkdir"), "{again}");
    let bad = resctrl.create_group("info").unwrap_err().to_string();
    assert!(bad.contains("expected a plain name"), "{bad}");
}

#[test]
fn a_rejected_write_reports_last_cmd_status() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let resctrl = Resctrl::at(dir.path());
    let group = resctrl.create_group("tinct-bad").unwrap();
    // The "kernel" refuses the schemata write (a directory cannot be
    // written, even by root) and explains why, as resctrl does.
    fs::create_dir(dir.path().join("tinct-bad/schemata")).unwrap();
    fs::write(
        dir.path().join("info/last_cmd_status"),
        "Mask out of range\n",
    )
    .unwrap();
    let error = group.set_l3_masks(&[(0, 0xfff)]).unwrap_err().to_string();
    assert!(error.contains("L3:0=fff"), "{error}");
    assert!(
        error.contains("the kernel says (info/last_cmd_status): Mask out of range"),
        "{error}"
    );
    group.remove().unwrap();
    assert!(!dir.path().join("tinct-bad").exists());
}

#[test]
fn the_lock_excludes_a_second_holder() {
    let dir = tempfile::tempdir().unwrap();
    fake_tree(dir.path());
    let resctrl = Resctrl::at(dir.path());
    let held = resctrl.lock().unwrap();
    let directory = fs::File::open(dir.path()).unwrap();
    let busy = rustix::fs::flock(
        &directory,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    );
    assert!(busy.is_err(), "a second exclusive lock must not be granted");
    drop(held);
    rustix::fs::flock(
        &directory,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .expect("free after the holder dropped it");
}

#[test]
fn missing_l3_allocation_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("info")).unwrap();
    let error = Resctrl::at(dir.path()).l3().unwrap_err().to_string();
    assert!(error.contains("info/L3/cbm_mask"), "{error}");
}
