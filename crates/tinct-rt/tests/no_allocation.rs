//! "No allocation while tasks run": a counting global allocator records the
//! time of every allocation during a real run; none may fall between the
//! common release and the first instant a task thread leaves its job loop
//! (while every task runs jobs, the watchdog only looks, and the main thread
//! waits in `join`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;
use tinct_rt::runtime::{RunOptions, run};
use tinct_rt::spec::{RunSpec, Step, TaskSpec};
use tinct_rt::testing::{TaskBuilder, run_spec, test_options};
use tinct_rt::watchdog::StopReason;
use tinct_sys::testing::privileged_serial;

const SLOTS: usize = 1 << 18;

struct Recording;

static RECORDING: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicUsize = AtomicUsize::new(0);
static TIMES: [std::sync::atomic::AtomicU64; SLOTS] =
    [const { std::sync::atomic::AtomicU64::new(0) }; SLOTS];

// SAFETY: every method forwards to the system allocator unchanged; the
// bookkeeping only touches atomics and a clock read, which never allocate.
unsafe impl GlobalAlloc for Recording {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if RECORDING.load(Ordering::Relaxed) {
            let slot = NEXT.fetch_add(1, Ordering::Relaxed);
            if slot < SLOTS {
                TIMES[slot].store(tinct_rt::clock::now_ns(), Ordering::Relaxed);
            }
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if RECORDING.load(Ordering::Relaxed) {
            let slot = NEXT.fetch_add(1, Ordering::Relaxed);
            if slot < SLOTS {
                TIMES[slot].store(tinct_rt::clock::now_ns(), Ordering::Relaxed);
            }
        }
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Recording = Recording;

fn task(name: &str, cpu: u32, kernel: Kernel, period_ms: u64) -> TaskSpec {
    TaskBuilder::periodic(name, period_ms * 1_000_000)
        .cpu(cpu)
        .fifo(70)
        .steps(vec![
            Step::Kernel {
                kernel,
                memory_percent: 50,
                work: Work::Target(Nanos(300_000)),
            },
            Step::Busy {
                duration_ns: 100_000,
            },
        ])
        .working_set(128 * 1024)
        .build()
}

#[test]
fn task_threads_do_not_allocate_while_they_run() {
    let Some(_serial) = privileged_serial("a SCHED_FIFO run") else {
        return;
    };
    let cpus = tinct_sys::sched::affinity().unwrap();
    let spec = RunSpec {
        source: "no-allocation test".into(),
        ..run_spec(
            vec![
                task("mixed", cpus[0], Kernel::Mixed, 5),
                task("chase", *cpus.last().unwrap(), Kernel::Chase, 7),
            ],
            400_000_000,
        )
    };
    RECORDING.store(true, Ordering::SeqCst);
    let result = run(&spec, test_options()).unwrap();
    RECORDING.store(false, Ordering::SeqCst);
    assert_eq!(
        result.stop,
        StopReason::Completed,
        "{}",
        result.stop.describe()
    );
    let recorded = NEXT.load(Ordering::SeqCst);
    assert!(
        recorded > 0,
        "the allocator must have seen the setup allocations"
    );
    assert!(
        recorded < SLOTS,
        "more allocations than slots: the check would be incomplete"
    );
    // Until the first thread's last finished job: a job still running at
    // the run's end is recorded aborted (no finish), whatever the host did.
    let window_end = result
        .tasks
        .iter()
        .map(|t| {
            t.records
                .iter()
                .filter_map(|r| r.finish_ns)
                .max()
                .unwrap_or_else(|| panic!("{}: no job finished", t.spec.name))
        })
        .min()
        .unwrap();
    let jobs: usize = result.tasks.iter().map(|t| t.records.len()).sum();
    assert!(jobs > 100, "{jobs} jobs");
    assert_none_between(0..recorded, result.start_ns, window_end, "while tasks ran");
}

/// Fails naming the allocations of `slots` recorded from `start_ns` to
/// `end_ns` (as ns after `start_ns`).
fn assert_none_between(slots: std::ops::Range<usize>, start_ns: u64, end_ns: u64, what: &str) {
    let during: Vec<u64> = slots
        .map(|i| TIMES[i].load(Ordering::Relaxed))
        .filter(|&t| t >= start_ns && t <= end_ns)
        .map(|t| t - start_ns)
        .collect();
    assert!(
        during.is_empty(),
        "{} allocation(s) {what}, at ns after release: {:?}",
        during.len(),
        &during[..during.len().min(10)]
    );
}

#[test]
fn the_events_between_threads_do_not_allocate_either() {
    let Some(_serial) = privileged_serial("a SCHED_FIFO run") else {
        return;
    };
    // Every event but iorun (the workload's own I/O) and fork.
    let file = tinct_rt::rtapp::parse(
        r#"{ "global": { "pi_enabled": true }, "tasks": {
          "producer": { "policy": "SCHED_FIFO", "priority": 30, "cpus": [0],
            "run": 200, "lock": "m", "signal": "data", "broad": "all", "unlock": "m",
            "mem": 8192, "resume": "consumer", "yield": "",
            "timer": { "ref": "tick", "period": 4000 } },
          "consumer": { "policy": "SCHED_RR", "priority": 20, "cpus": [1],
            "lock": "m", "wait": { "ref": "data", "mutex": "m" }, "unlock": "m",
            "runtime": 100, "sleep": 100,
            "timer": { "ref": "tick", "period": 4000 } },
          "left": { "runtime": 300, "barrier": "B", "sleep": 2000 },
          "right": { "runtime": 600, "barrier": "B", "sleep": 2000 },
          "sleeper": { "priority": -5, "suspend": "consumer", "runtime": 50 } } }"#,
        "events.json",
        400_000_000,
    )
    .unwrap();
    RECORDING.store(true, Ordering::SeqCst);
    let start_slot = NEXT.load(Ordering::SeqCst);
    let result = run(
        &file.spec,
        RunOptions {
            handle_signals: false,
            // Waits inside jobs make them late by design: let it run.
            watchdog: tinct_rt::spec::WatchdogMode::Off,
            ..RunOptions::default()
        },
    )
    .unwrap();
    RECORDING.store(false, Ordering::SeqCst);
    let recorded = NEXT.load(Ordering::SeqCst);
    assert!(recorded < SLOTS, "more allocations than slots");
    assert_eq!(
        result.stop,
        StopReason::Completed,
        "{}",
        result.stop.describe()
    );
    // The producer never waits on another thread: its jobs keep coming.
    let jobs: usize = result.tasks.iter().map(|t| t.records.len()).sum();
    assert!(result.tasks[0].records.len() > 20, "{jobs} jobs");
    // From the release to the first moment a thread left its job loop.
    let window_end = result.tasks[..4]
        .iter()
        .filter_map(|t| t.records.iter().filter_map(|r| r.finish_ns).max())
        .min()
        .expect("jobs finished");
    assert_none_between(
        start_slot..recorded,
        result.start_ns,
        window_end,
        "while the threads exchanged events",
    );
}
