//! The counter layer against the PMU fixtures of one Intel (Ice Lake-SP)
//! and one AMD (Zen 4) machine (`tests/fixtures/make-pmu-fixtures.sh`):
//! sysfs named events and format files encode exactly (the coherence
//! bench tests gracioli Fig. 9's events on them).

use tinct_sys::perf::{Encoding, Pmu, parse_event};
use tinct_sys::testing::fixture_tree;

#[test]
fn named_events_and_terms_encode_with_the_fixtures_formats() {
    let intel = fixture_tree("pmu-intel-icx");
    assert_eq!(
        parse_event("cpu/cache-misses/", &intel).unwrap().encoding,
        Encoding::raw(0x412e, 0)
    );
    let loads = parse_event("cpu/mem-loads/", &intel).unwrap();
    assert_eq!(
        loads.encoding,
        Encoding::raw(0x01cd, 3),
        "ldlat=3 lands in config1"
    );
    assert_eq!(loads.name, "cpu/mem-loads/");
    assert_eq!(
        parse_event("cpu/event=0x3c,umask=0x0,cmask=1,inv/", &intel)
            .unwrap()
            .encoding,
        Encoding::raw(0x3c | 1 << 23 | 1 << 24, 0)
    );
    let tsc = parse_event("msr/tsc/", &intel).unwrap();
    assert_eq!((tsc.encoding.pmu_type, tsc.encoding.config), (9, 0));

    let amd = fixture_tree("pmu-amd-zen4");
    // PMCx1D4: the event select's high nibble goes to bits 32-35.
    assert_eq!(
        parse_event("cpu/event=0x1d4,umask=0x1/", &amd)
            .unwrap()
            .encoding,
        Encoding::raw(0xd4 | 0x1 << 8 | 1 << 32, 0)
    );
    assert_eq!(
        parse_event("cpu/cache-misses/", &amd).unwrap().encoding,
        Encoding::raw(0x0964, 0)
    );
    let ibs = Pmu::read(&amd, "ibs_op").unwrap();
    assert_eq!(ibs.pmu_type, 11);
    assert!(ibs.has_field("cnt_ctl"));
}

#[test]
fn bad_terms_name_the_term_and_what_was_expected() {
    let amd = fixture_tree("pmu-amd-zen4");
    let err = parse_event("cpu/ldlat=3/", &amd).unwrap_err().to_string();
    assert!(
        err.contains("expected a format field") && err.contains("\"ldlat\""),
        "{err}"
    );
    let err = parse_event("cpu/event=0x1000/", &amd)
        .unwrap_err()
        .to_string();
    assert!(err.contains("12 bits wide"), "{err}");
    let err = parse_event("cpu/umask=zz/", &amd).unwrap_err().to_string();
    assert!(
        err.contains("expected a decimal or 0x-hexadecimal value"),
        "{err}"
    );
}

#[test]
fn precise_memory_sampling_is_found_where_the_cpu_has_it() {
    use tinct_sys::perf::memory_sampling::{Mechanism, detect};
    let intel = detect(&fixture_tree("pmu-intel-icx")).unwrap();
    match intel.mechanism {
        Some(Mechanism::IntelLoadLatency { loads, stores }) => {
            assert_eq!(
                loads.encoding,
                Encoding::raw(0x01cd, 30),
                "mem-loads with ldlat=30"
            );
            assert_eq!(stores.unwrap().encoding, Encoding::raw(0x82d0, 0));
        }
        other => panic!("Ice Lake has PEBS load latency: {other:?}"),
    }
    let amd = detect(&fixture_tree("pmu-amd-zen4")).unwrap();
    match amd.mechanism {
        Some(Mechanism::AmdIbsOp { op }) => {
            assert_eq!((op.encoding.pmu_type, op.encoding.config), (11, 1 << 19));
        }
        other => panic!("Zen 4 has IBS: {other:?}"),
    }
    let none = detect(&fixture_tree("intel-2node")).unwrap();
    assert_eq!(none.mechanism, None);
    assert!(none.missing.unwrap().contains("ibs_op"));
}
