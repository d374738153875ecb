//! The counter layer on the running machine. On this project's VM there is
//! no CPU PMU: hardware events must be reported unavailable with the
//! kernel's reason (never a count of 0), and software events must count.

use std::sync::mpsc::channel;
use tinct_sys::SysRoot;
use tinct_sys::perf::{
    Availability, CounterEvent, Counters, EventSources, PerfEvent, Target, parse_event,
};
use tinct_sys::sched;
use tinct_sys::testing::privileged_or_skip;

/// `events` opened on the calling thread, every one counting, enabled,
/// with a first reading.
fn counting(events: &[CounterEvent]) -> (Counters, Vec<Option<tinct_sys::perf::Count>>) {
    let mut counters = Counters::open(events, Target::CallingThread);
    assert!(
        counters.unavailable().is_empty(),
        "{:?}",
        counters.unavailable_reason()
    );
    counters.enable().unwrap();
    let first = counters.read().unwrap();
    (counters, first)
}

/// Touches one byte of each of `pages` freshly allocated pages.
fn touch_fresh_pages(pages: usize) {
    let mut buffer = vec![0u8; pages * 4096];
    for i in 0..pages {
        buffer[i * 4096] = 1;
    }
    std::hint::black_box(&buffer);
}

fn no_cpu_pmu() -> bool {
    EventSources::read(&SysRoot::live())
        .unwrap()
        .cpu_pmus
        .is_empty()
}

#[test]
fn hardware_events_count_or_say_the_kernels_reason() {
    let events: Vec<CounterEvent> = PerfEvent::GENERIC.iter().map(|&e| e.into()).collect();
    let mut counters = Counters::open(&events, Target::CallingThread);
    counters.enable().unwrap();
    let reading = counters.read().unwrap();
    for ((event, availability), count) in events.iter().zip(counters.availability()).zip(&reading) {
        match availability {
            Availability::Counting => {
                assert!(count.is_some(), "{}: counting but no count", event.name)
            }
            Availability::Unavailable(why) => {
                assert!(
                    count.is_none(),
                    "{}: unavailable but read {count:?}",
                    event.name
                );
                assert!(
                    why.starts_with('E'),
                    "{}: not the kernel's errno: {why}",
                    event.name
                );
            }
        }
        if no_cpu_pmu() && !event.is_software() {
            assert!(
                availability
                    .reason()
                    .is_some_and(|why| why.starts_with("ENOENT")),
                "{}: without a CPU PMU the kernel answers ENOENT, got {availability}",
                event.name
            );
        }
    }
    for event in PerfEvent::SOFTWARE {
        let i = PerfEvent::GENERIC.iter().position(|&e| e == event).unwrap();
        assert!(
            counters.availability()[i].is_counting() || !privileged_or_skip("software events"),
            "{}: {}",
            event.name(),
            counters.availability()[i]
        );
    }
}

#[test]
fn a_named_sysfs_event_counts_where_its_pmu_exists() {
    let root = SysRoot::live();
    if !root.exists("/sys/bus/event_source/devices/msr/events/tsc") {
        assert!(parse_event("msr/tsc/", &root).is_err());
        return;
    }
    if !privileged_or_skip("msr/tsc counts kernel time") {
        return;
    }
    let tsc = parse_event("msr/tsc/", &root).unwrap();
    let mut counters = Counters::open(&[tsc], Target::CallingThread);
    assert!(counters.any(), "{:?}", counters.unavailable_reason());
    counters.enable().unwrap();
    let a = counters.read().unwrap()[0].unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2));
    let b = counters.read().unwrap()[0].unwrap();
    assert!(b.value > a.value, "{a:?} -> {b:?}");
}

/// Two threads on one CPU under SCHED_FIFO hand the CPU to each other
/// `rounds` times: each round, the measured thread blocks once (one
/// context switch) and, pinned, never migrates.
#[test]
fn context_switches_of_a_ping_pong_equal_the_hand_overs() {
    if !privileged_or_skip("SCHED_FIFO ping-pong") {
        return;
    }
    let cpu = sched::affinity().unwrap()[0];
    let rounds = 2000u64;
    let (to_partner, partner_gets) = channel::<u64>();
    let (to_me, i_get) = channel::<u64>();
    let partner = std::thread::spawn(move || {
        sched::set_affinity(&[cpu]).unwrap();
        sched::set_fifo(20).unwrap();
        for ball in partner_gets {
            if to_me.send(ball + 1).is_err() {
                return;
            }
        }
    });
    sched::set_affinity(&[cpu]).unwrap();
    sched::set_fifo(20).unwrap();
    // Warm the partner up (it has pinned itself once it answers).
    to_partner.send(0).unwrap();
    i_get.recv().unwrap();
    let events: Vec<CounterEvent> = vec![
        PerfEvent::ContextSwitches.into(),
        PerfEvent::CpuMigrations.into(),
        PerfEvent::TaskClock.into(),
    ];
    let (mut counters, before) = counting(&events);
    for round in 0..rounds {
        to_partner.send(round).unwrap();
        assert_eq!(i_get.recv().unwrap(), round + 1);
    }
    let after = counters.read().unwrap();
    sched::set_other().unwrap();
    drop(to_partner);
    partner.join().unwrap();
    let delta = |i: usize| after[i].unwrap().value - before[i].unwrap().value;
    let switches = delta(0);
    // One switch per hand-over; a little more for the rare preemption by
    // a higher-priority kernel thread on a shared machine.
    assert!(
        switches >= rounds && switches <= rounds + rounds / 20 + 10,
        "{switches} context switches for {rounds} hand-overs"
    );
    assert_eq!(delta(1), 0, "pinned: no migration");
    assert!(delta(2) > 0);
}

#[test]
fn inherited_counters_include_the_threads_created_after_opening() {
    if !privileged_or_skip("software events with kernel counting") {
        return;
    }
    let mut counters = Counters::open(
        &[PerfEvent::PageFaults.into()],
        Target::CallingThreadAndChildren,
    );
    assert!(counters.any(), "{:?}", counters.unavailable_reason());
    counters.enable().unwrap();
    let before = counters.read().unwrap()[0].unwrap().value;
    let pages = 512;
    std::thread::spawn(move || {
        touch_fresh_pages(pages);
    })
    .join()
    .unwrap();
    let after = counters.read().unwrap()[0].unwrap().value;
    assert!(
        after - before >= pages as u64 / 2,
        "the child's {pages} page faults are counted: {before} -> {after}"
    );
}

/// The page faults of `sh -c SCRIPT` and all it starts, counted as
/// `perf stat` would, after the calling thread touched `own` fresh pages
/// of its own.
fn faults_of_a_command(script: &str, own: usize) -> u64 {
    let counters = Counters::open(&[PerfEvent::PageFaults.into()], Target::ChildrenFromExec);
    assert!(counters.any(), "{:?}", counters.unavailable_reason());
    touch_fresh_pages(own);
    let mut child = std::process::Command::new("sh")
        .args(["-c", script])
        .spawn()
        .unwrap();
    let status = tinct_sys::testing::wait_within(
        &mut child,
        std::time::Duration::from_secs(60),
        "the counted command",
    );
    assert!(status.success(), "{status}");
    let mut counters = counters;
    counters.read().unwrap()[0]
        .unwrap()
        .scaled()
        .value()
        .unwrap()
}

#[test]
fn counters_from_exec_count_a_command_and_its_children_but_not_the_opener() {
    if !privileged_or_skip("software events with kernel counting") {
        return;
    }
    // 64 MiB touched by a grandchild (python3 under sh, which forks it: a
    // command follows), counted once it exited.
    let script =
        "python3 -c 'b = bytearray(64 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1'; true";
    let faults = faults_of_a_command(script, 0);
    assert!(
        faults >= (64 << 20) / 4096 / 2,
        "the grandchild's 16384 page faults are counted: {faults}"
    );
    // The opening thread's own 20 000 page faults are not (`true` makes a
    // few hundred).
    let own = 20_000;
    let faults = faults_of_a_command("true", own);
    assert!(
        faults < own as u64 / 2,
        "the opener's {own} faults are not counted: {faults}"
    );
}

#[test]
fn every_software_event_of_one_group_counts() {
    if !privileged_or_skip("software events with kernel counting") {
        return;
    }
    // All four at once: each must count (see Counters on software groups).
    let events: Vec<CounterEvent> = PerfEvent::SOFTWARE.iter().map(|&e| e.into()).collect();
    let (mut counters, before) = counting(&events);
    let pages = 1024;
    touch_fresh_pages(pages);
    std::thread::sleep(std::time::Duration::from_millis(1));
    let after = counters.read().unwrap();
    let delta = |event: PerfEvent| {
        let i = PerfEvent::SOFTWARE
            .iter()
            .position(|&e| e == event)
            .unwrap();
        after[i].unwrap().value - before[i].unwrap().value
    };
    assert!(
        delta(PerfEvent::PageFaults) >= pages as u64 / 2,
        "{}",
        delta(PerfEvent::PageFaults)
    );
    assert!(delta(PerfEvent::ContextSwitches) >= 1, "slept once");
    assert!(delta(PerfEvent::TaskClock) > 0);
}

#[test]
fn precise_memory_sampling_opens_or_says_why_not() {
    use tinct_sys::perf::memory_sampling::{detect, probe};
    let support = detect(&SysRoot::live()).unwrap();
    match probe(&support) {
        Ok(()) => assert!(support.mechanism.is_some()),
        Err(why) => {
            assert!(!why.is_empty());
            if no_cpu_pmu() && !SysRoot::live().exists("/sys/bus/event_source/devices/ibs_op") {
                assert!(why.contains("no precise memory sampling"), "{why}");
            }
        }
    }
}
