//! gracioli Fig. 9's coherence events (`coherence::fig9`): resolved on
//! tinct-sys' PMU fixtures of one Intel (Ice Lake-SP) and one AMD (Zen 4)
//! machine, refused with a reason elsewhere, and on the running machine
//! counted or unavailable with the kernel's reason.

use tinct_bench::coherence::fig9::{self as coherence, Fig9Event};
use tinct_sys::SysRoot;
use tinct_sys::perf::{Counters, Encoding, EventSources, Target, parse_event};
use tinct_sys::testing::fixture_tree;

/// True when the running machine has no CPU PMU (a VM).
fn no_cpu_pmu() -> bool {
    EventSources::read(&SysRoot::live())
        .unwrap()
        .cpu_pmus
        .is_empty()
}

/// (event, config, config1) of each Fig. 9 counter, from the vendors' event
/// tables by hand: event | umask << 8 (| AMD's event[11:8] << 32).
const INTEL: [(Fig9Event, u64, u64); 7] = [
    (Fig9Event::L2RequestI, 0x2724, 0),
    (Fig9Event::L2RequestS, 0xc124, 0),
    (Fig9Event::LlcMisses, 0x412e, 0),
    (Fig9Event::SnoopHit, 0x02d2, 0),
    (Fig9Event::SnoopInvalidate, 0x04b0, 0),
    (Fig9Event::SnoopShare, 0x04d2, 0),
    (Fig9Event::SnoopShareInvalidate, 0x01b7, 0x10_003c_0002),
];
const AMD: [(Fig9Event, u64, u64); 7] = [
    (Fig9Event::L2RequestI, 0x0864, 0),
    (Fig9Event::L2RequestS, 0x2064, 0),
    (Fig9Event::LlcMisses, 0x4843, 0),
    (Fig9Event::SnoopHit, 0x1443, 0),
    (Fig9Event::SnoopInvalidate, 0x0860, 0),
    (Fig9Event::SnoopShare, 0x2060, 0),
    (Fig9Event::SnoopShareInvalidate, 0x4060, 0),
];

#[test]
fn every_fig9_event_resolves_on_the_intel_and_amd_fixtures() {
    for (name, arch, expected) in [
        ("pmu-intel-icx", "Intel Ice Lake-SP", INTEL),
        ("pmu-amd-zen4", "AMD Zen 4", AMD),
    ] {
        let table = coherence::resolve(&fixture_tree(name)).unwrap();
        assert_eq!(table.microarchitecture.as_deref(), Some(arch), "{name}");
        assert!(
            table.encoded_with.contains("sysfs"),
            "{name}: {}",
            table.encoded_with
        );
        assert_eq!(table.events.len(), 7);
        for ((resolved, (event, config, config1)), wanted) in
            table.events.iter().zip(expected).zip(Fig9Event::ALL)
        {
            assert_eq!(resolved.event, wanted);
            assert_eq!(resolved.event, event);
            let counter = resolved
                .counter
                .as_ref()
                .unwrap_or_else(|e| panic!("{name} {}: {e}", event.label()));
            assert_eq!(
                counter.encoding,
                Encoding::raw(config, config1),
                "{name} {} ({})",
                event.label(),
                resolved.vendor_name
            );
        }
        assert_eq!(table.counters().len(), 7);
    }
    // Ice Lake's LLC miss row is the kernel's own cache-misses event.
    let intel = fixture_tree("pmu-intel-icx");
    assert_eq!(
        parse_event("cpu/cache-misses/", &intel).unwrap().encoding,
        coherence::resolve(&intel).unwrap().events[2]
            .counter
            .as_ref()
            .unwrap()
            .encoding
    );
}

#[test]
fn a_cpu_outside_the_table_gets_a_reason_per_event() {
    let table = coherence::resolve(&fixture_tree("intel-2node")).unwrap();
    assert_eq!(table.microarchitecture, None);
    for resolved in &table.events {
        let why = resolved.counter.as_ref().unwrap_err();
        assert!(why.contains("no Fig. 9 encodings"), "{why}");
        assert!(
            why.contains("Ice Lake-SP") && why.contains("Zen 4"),
            "{why}"
        );
    }
}

#[test]
fn fig9_events_here_are_counted_or_unavailable_with_a_reason() {
    let table = coherence::resolve(&SysRoot::live()).unwrap();
    let counters = Counters::open(&table.counters(), Target::CallingThread);
    for (event, availability) in counters.events().iter().zip(counters.availability()) {
        if no_cpu_pmu() {
            let why = availability
                .reason()
                .unwrap_or_else(|| panic!("{} opened", event.name));
            assert!(why.starts_with("ENOENT"), "{}: {why}", event.name);
        }
    }
    for resolved in &table.events {
        if let Err(why) = &resolved.counter {
            assert!(why.contains("no Fig. 9 encodings"), "{why}");
        }
    }
}
