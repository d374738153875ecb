//! Readers and probes on the running machine. Tests that need root use
//! `privileged_or_skip`, which fails instead of skipping under
//! `TINCT_REQUIRE_PRIVILEGED=1` (CI).

use tinct_sys::SysRoot;
use tinct_sys::perf::{EventSources, PerfEvent, ThreadCounters, probe_events};
use tinct_sys::privilege::{PagemapProbe, Privileges, Probe, probe_pagemap, probe_sched_fifo};
use tinct_sys::sched::{self, Policy};
use tinct_sys::testing::privileged_or_skip;
use tinct_sys::topology::Topology;

#[test]
fn live_topology_matches_what_the_process_sees() {
    let t = Topology::read(&SysRoot::live()).unwrap();
    let usable = sched::affinity().unwrap();
    assert!(!t.online_cpus.is_empty());
    assert!(
        usable.iter().all(|cpu| t.online_cpus.contains(cpu)),
        "{usable:?} vs {:?}",
        t.online_cpus
    );
    assert_eq!(t.cpus.len(), t.online_cpus.len());
    if SysRoot::live().exists("/sys/devices/system/cpu/cpu0/cache/index0") {
        let llc = t.last_level_caches();
        assert!(!llc.is_empty());
        // Every online CPU is covered by some last-level cache instance.
        for cpu in &t.online_cpus {
            assert!(
                llc.iter().any(|c| c.shared_cpus.contains(cpu)),
                "CPU {cpu} has no LLC"
            );
        }
    }
}

#[test]
fn live_privileges_agree_with_geteuid() {
    let privileges = Privileges::read(&SysRoot::live()).unwrap();
    assert_eq!(privileges.is_root(), rustix::process::geteuid().is_root());
}

/// `mlockall` populates every mapping of the process, which would steal the
/// page faults the counter test expects from its own thread: run them apart.
static MEMORY_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn pagemap_gives_frame_numbers_as_root() {
    if !privileged_or_skip("reading PFNs from /proc/self/pagemap") {
        return;
    }
    match probe_pagemap() {
        PagemapProbe::Readable { pfn } => assert!(pfn > 0),
        other => panic!("root must read PFNs, got {other:?}"),
    }
}

#[test]
fn sched_fifo_probe_and_round_trip_as_root() {
    if !privileged_or_skip("setting SCHED_FIFO") {
        return;
    }
    assert_eq!(probe_sched_fifo(), Probe::Ok);
    // The calling test thread is untouched by the probe.
    assert_eq!(sched::policy().unwrap(), Policy::Other);
    std::thread::spawn(|| {
        sched::set_fifo(7).unwrap();
        assert_eq!(sched::policy().unwrap(), Policy::Fifo(7));
        sched::set_other().unwrap();
        assert_eq!(sched::policy().unwrap(), Policy::Other);
    })
    .join()
    .unwrap();
}

#[test]
fn mlockall_and_back_as_root() {
    if !privileged_or_skip("mlockall") {
        return;
    }
    let _alone = MEMORY_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    sched::mlockall(false).unwrap();
    sched::munlockall().unwrap();
}

#[test]
fn hardware_events_open_exactly_when_sysfs_has_a_cpu_pmu() {
    let sources = EventSources::read(&SysRoot::live()).unwrap();
    let probes = probe_events();
    let cycles = probes
        .iter()
        .find(|p| p.event == PerfEvent::Cycles)
        .unwrap();
    if sources.cpu_pmus.is_empty() {
        match &cycles.probe {
            Probe::Failed { errno, .. } => assert!(errno.is_some(), "no errno: {cycles:?}"),
            Probe::Ok => panic!("cycles opened although sysfs shows no CPU PMU: {sources:?}"),
        }
    } else {
        assert_eq!(cycles.probe, Probe::Ok, "{sources:?}");
    }
}

#[test]
fn software_counters_count_page_faults_of_this_thread() {
    if !privileged_or_skip("software perf events (perf_event_paranoid may forbid them)") {
        return;
    }
    let _alone = MEMORY_TESTS.lock().unwrap_or_else(|e| e.into_inner());
    let mut counters = ThreadCounters::open(&[
        PerfEvent::TaskClock,
        PerfEvent::PageFaults,
        PerfEvent::ContextSwitches,
    ])
    .unwrap();
    counters.reset().unwrap();
    counters.enable().unwrap();
    let pages = 1024;
    let page = 4096;
    let mut buffer = vec![0u8; pages * page];
    for i in 0..pages {
        buffer[i * page] = 1;
    }
    std::hint::black_box(&buffer);
    counters.disable().unwrap();
    let values = counters.read().unwrap();
    let faults = values.get(PerfEvent::PageFaults).unwrap();
    assert!(
        faults >= pages as u64 / 2,
        "{faults} faults for {pages} fresh pages: {values:?}"
    );
    assert!(values.get(PerfEvent::TaskClock).unwrap() > 0);
    assert!(values.time_enabled_ns > 0 && values.time_running_ns > 0);
    // Disabled counters stay put.
    drop(buffer);
    let again = counters.read().unwrap();
    assert_eq!(again.get(PerfEvent::PageFaults), Some(faults));
}
