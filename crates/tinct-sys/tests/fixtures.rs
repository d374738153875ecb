//! Readers against fixture trees (the doctor's tests read them too): `kvm-epyc` (copied from the
//! 2-vCPU KVM guest this project is developed on) and `intel-2node` (a
//! generated dual-socket Intel box with SMT, PREEMPT_RT and resctrl).

use std::path::PathBuf;
use tinct_sys::perf::EventSources;
use tinct_sys::privilege::{Capability, Privileges};
use tinct_sys::resctrl::ResctrlStatus;
use tinct_sys::system::{
    Isolation, Kernel, MemlockLimit, PageSize, PageSizeSource, Preemption, RtThrottling, ThpMode,
};
use tinct_sys::testing::fixture_tree;
use tinct_sys::topology::{CacheType, Topology};

#[test]
fn kvm_topology_has_two_cpus_and_one_shared_l3() {
    let t = Topology::read(&fixture_tree("kvm-epyc")).unwrap();
    assert_eq!(t.online_cpus, vec![0, 1]);
    assert!(!t.smt_active());
    assert_eq!(t.physical_cores(), 2);
    assert_eq!(t.packages(), vec![0]);
    assert_eq!(t.numa_nodes.len(), 1);
    assert_eq!(t.numa_nodes[0].cpus, vec![0, 1]);
    // L1d, L1i, L2 per CPU (2 each) and one L3.
    assert_eq!(t.caches.len(), 7);
    let llc = t.last_level_caches();
    assert_eq!(llc.len(), 1);
    let l3 = llc[0];
    assert_eq!((l3.level, l3.kind), (3, CacheType::Unified));
    assert_eq!(l3.size_bytes, 32 << 20);
    assert_eq!(
        (l3.ways, l3.sets, l3.line_bytes),
        (Some(16), Some(32768), Some(64))
    );
    assert_eq!(l3.shared_cpus, vec![0, 1]);
    let colors = l3.page_colors(4096).unwrap();
    assert_eq!((colors.colors, colors.address_bits), (512, Some((12, 21))));
    let l2 = t.caches.iter().find(|c| c.level == 2).unwrap();
    assert_eq!(l2.page_colors(4096).unwrap().colors, 32);
}

#[test]
fn intel_topology_has_smt_two_nodes_and_two_l3_instances() {
    let t = Topology::read(&fixture_tree("intel-2node")).unwrap();
    assert_eq!(t.online_cpus.len(), 16);
    assert!(t.smt_active());
    assert_eq!(t.physical_cores(), 8);
    assert_eq!(t.packages(), vec![0, 1]);
    assert_eq!(t.smt_sibling_groups()[0], vec![0, 8]);
    assert_eq!(t.numa_nodes.len(), 2);
    assert_eq!(t.numa_nodes[1].cpus, vec![4, 5, 6, 7, 12, 13, 14, 15]);
    assert_eq!(t.numa_nodes[1].memory_bytes, Some(64 << 30));
    let llc = t.last_level_caches();
    assert_eq!(llc.len(), 2);
    assert_eq!(llc[0].shared_cpus, vec![0, 1, 2, 3, 8, 9, 10, 11]);
    assert_eq!(llc[1].shared_cpus, vec![4, 5, 6, 7, 12, 13, 14, 15]);
    let colors = llc[0].page_colors(4096).unwrap();
    assert_eq!((colors.colors, colors.address_bits), (256, Some((12, 20))));
    // 8 cores x (L1d + L1i + L2) + 2 L3.
    assert_eq!(t.caches.len(), 26);
}

#[test]
fn system_facts_of_both_machines() {
    let kvm = fixture_tree("kvm-epyc");
    let kernel = Kernel::read(&kvm).unwrap();
    assert!(kernel.release.starts_with("6.18"));
    assert_eq!(kernel.preemption, Preemption::Dynamic);
    assert_eq!(ThpMode::read(&kvm).unwrap(), Some(ThpMode::Madvise));
    let rt = RtThrottling::read(&kvm).unwrap();
    assert_eq!((rt.runtime_us, rt.period_us), (950_000, 1_000_000));
    let page = PageSize::read(&kvm).unwrap();
    assert_eq!((page.bytes, page.source), (4096, PageSizeSource::Smaps));
    assert!(Isolation::read(&kvm).unwrap().isolated.is_empty());

    let intel = fixture_tree("intel-2node");
    assert_eq!(Kernel::read(&intel).unwrap().preemption, Preemption::Rt);
    assert_eq!(ThpMode::read(&intel).unwrap(), Some(ThpMode::Never));
    assert!(RtThrottling::read(&intel).unwrap().is_disabled());
    let iso = Isolation::read(&intel).unwrap();
    assert_eq!(
        iso.isolated,
        tinct_sys::parse_cpu_list("2-7,10-15").unwrap()
    );
    assert_eq!(
        iso.cmdline_isolcpus.as_deref(),
        Some("domain,managed_irq,2-7,10-15")
    );
    assert_eq!(iso.nohz_full.as_ref().map(Vec::len), Some(12));
    let memlock = MemlockLimit::read(&intel).unwrap();
    assert_eq!(memlock.soft_bytes, Some(8 << 20));
    let privileges = Privileges::read(&intel).unwrap();
    assert!(!privileges.is_root() && !privileges.has(Capability::SysAdmin));
}

#[test]
fn pmu_and_resctrl_detection() {
    let kvm = fixture_tree("kvm-epyc");
    assert!(EventSources::read(&kvm).unwrap().cpu_pmus.is_empty());
    let status = ResctrlStatus::read(&kvm).unwrap();
    assert_eq!(status.mount_point, None);
    assert!(!status.filesystem_available);
    assert!(status.cpu_flags.is_empty());

    let intel = fixture_tree("intel-2node");
    assert_eq!(EventSources::read(&intel).unwrap().cpu_pmus, vec!["cpu"]);
    let status = ResctrlStatus::read(&intel).unwrap();
    assert_eq!(status.mount_point, Some(PathBuf::from("/sys/fs/resctrl")));
    assert!(status.filesystem_available && status.cpu_has_cache_allocation());
    let info = status.info.as_ref().unwrap();
    let l3 = info.l3.as_ref().unwrap();
    assert_eq!((l3.cbm_mask.as_str(), l3.cbm_bits), ("fffff", 20));
    assert_eq!((l3.num_closids, l3.min_cbm_bits), (Some(16), Some(1)));
    assert_eq!(
        info.memory_bandwidth.as_ref().unwrap().bandwidth_gran,
        Some(10)
    );
    assert_eq!(
        info.l3_monitoring.as_ref().unwrap().features,
        vec!["llc_occupancy", "mbm_total_bytes", "mbm_local_bytes"]
    );
    assert!(status.offers_cache_allocation());
}
