//! Colored working sets in a real run: every page of a task's working set
//! lies in the page colors of its partitions S(i) (checked from the frame
//! numbers pagemap gives after the run, against colors computed here
//! independently), tasks with disjoint S(i) get disjoint colors, and the
//! cache model (tinct-sim) replaying the real frames of the two tasks shows
//! no cross-core eviction — while the same frames split between two cores
//! that share colors do evict each other (the check can fail). A task set's
//! `[platform] color_bits` replaces the machine's colour rule, and the pages
//! are checked against those bits.

use tinct_base::InputError;
use tinct_core::model::{Kernel, Work};
use tinct_core::units::Nanos;
use tinct_mem::mapping::LayoutSpec;
use tinct_mem::{PartitionColors, machine_mapping};
use tinct_rt::memory::Placement;
use tinct_rt::record::Accounting;
use tinct_rt::runtime::{RunOptions, run};
use tinct_rt::spec::{RunSpec, TaskSpec};
use tinct_rt::testing::{TaskBuilder, run_spec};
use tinct_rt::watchdog::StopReason;
use tinct_sim::{CacheGeometry, ReplayConfig, replay_pages};

const PARTITIONS: u32 = 4;
const WORKING_SET: u64 = 2 << 20;

fn task(name: &str, cpu: u32, priority: u8, partitions: Vec<u32>) -> TaskSpec {
    TaskBuilder::periodic(name, 50_000_000)
        .cpu(cpu)
        .fifo(priority)
        .kernel(Kernel::Chase, Work::Target(Nanos(1_000_000)))
        .working_set(WORKING_SET)
        .partitions(partitions)
        .build()
}

fn frames_of(placement: &Placement) -> &[u64] {
    match placement {
        Placement::Colored {
            frames,
            pages_outside_colors,
            pages,
            ..
        } => {
            assert_eq!(*pages_outside_colors, Some(0), "{placement:?}");
            assert_eq!(frames.len() as u64, *pages);
            frames
        }
        other => panic!("expected a colored working set, got {other:?}"),
    }
}

/// The tests' colour mapping and the colours of `partitions` of
/// [`PARTITIONS`] under it.
fn mapping_and_colors_of(partitions: &[u32]) -> (tinct_mem::AddressMapping, Vec<u32>) {
    let mapping = machine_mapping(&LayoutSpec {
        color_bits: Some(tinct_sys::testing::mechanism_color_bits()),
        ..LayoutSpec::default()
    })
    .unwrap();
    let allowed = PartitionColors::even(mapping.colors(), PARTITIONS)
        .unwrap()
        .colors_of_all(partitions)
        .unwrap();
    (mapping, allowed)
}

/// Runs `spec` in this process; every task ran jobs and its counts balance.
fn run_to_completion(spec: &RunSpec) -> tinct_rt::runtime::RunResult {
    let options = RunOptions {
        handle_signals: false,
        ..RunOptions::default()
    };
    let result = run(spec, options).unwrap();
    assert_eq!(result.stop, StopReason::Completed);
    for t in &result.tasks {
        assert!(Accounting::of(&t.records).balances());
        assert!(!t.records.is_empty(), "{} ran no job", t.spec.name);
    }
    result
}

#[test]
fn working_sets_lie_in_their_partitions_colors_and_do_not_interfere() {
    if !tinct_sys::testing::privileged_or_skip("colored working sets (frame numbers, SCHED_FIFO)") {
        return;
    }
    let cpus = tinct_sys::sched::affinity().unwrap();
    let spec = RunSpec {
        source: "colored test".into(),
        platform_partitions: Some(PARTITIONS),
        // As `--color-bits`: before a developer's TINCT_COLOR_BITS.
        color_bits_flag: Some(tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT.into()),
        ..run_spec(
            vec![
                task("low", cpus[0], 80, vec![1]),
                task("high", *cpus.last().unwrap(), 79, vec![3, 4]),
            ],
            300_000_000,
        )
    };
    let result = run_to_completion(&spec);

    // The colors of each task, computed here from the machine's LLC.
    let mapping = machine_mapping(&LayoutSpec {
        color_bits: Some(tinct_sys::testing::mechanism_color_bits()),
        ..LayoutSpec::default()
    })
    .unwrap();
    let groups = PartitionColors::even(mapping.colors(), PARTITIONS).unwrap();
    let mut colors_used = Vec::new();
    for t in &result.tasks {
        let allowed = groups.colors_of_all(&t.spec.partitions).unwrap();
        let frames = frames_of(&t.placement);
        assert_eq!(frames.len() as u64, WORKING_SET / mapping.page_size);
        let mut used: Vec<u32> = frames
            .iter()
            .map(|&f| mapping.classify_frame(f).color)
            .collect();
        for color in &used {
            assert!(
                allowed.contains(color),
                "task {}: color {color} is outside S(i) = {:?}",
                t.spec.name,
                t.spec.partitions
            );
        }
        used.sort_unstable();
        used.dedup();
        assert_eq!(used.len(), allowed.len(), "round robin over every color");
        colors_used.push(used);
        assert!(t.placement.describe().contains("every page checked"));
    }
    assert!(
        colors_used[0].iter().all(|c| !colors_used[1].contains(c)),
        "disjoint S(i) must give disjoint colors"
    );

    // The cache model: a cache with the machine's colors (way size =
    // colors × page) but 2 ways, so each task's working set overflows its
    // partitions and only coloring keeps the cores apart.
    let way = u64::from(mapping.colors()) * mapping.page_size;
    let geometry = CacheGeometry::new(2 * way, 2, 64).unwrap();
    let low = frames_of(&result.tasks[0].placement);
    let high = frames_of(&result.tasks[1].placement);
    let mut config = ReplayConfig::new(200_000, 7);
    config.warmup_accesses_per_core = 100_000;
    let isolated = replay_pages(&geometry, &[low, high], &config).unwrap();
    assert_eq!(isolated.shared_colors, 0);
    assert_eq!(
        isolated.cross_core_evictions, 0,
        "disjoint colors must not evict each other: {isolated:?}"
    );
    assert!(
        isolated.totals.misses > 0,
        "warm caches still miss: the working sets overflow their partitions"
    );
    // Control: the same frames of one task split over two cores share
    // colors, and the model does show interference.
    let (first, second) = low.split_at(low.len() / 2);
    let shared = replay_pages(&geometry, &[first, second], &config).unwrap();
    assert!(shared.shared_colors > 0);
    assert!(
        shared.cross_core_evictions > 0,
        "sharing colors must show cross-core evictions: {shared:?}"
    );
}

#[test]
fn a_task_sets_color_bits_decide_the_colors_of_the_pages() {
    if !tinct_sys::testing::privileged_or_skip("colored working sets (frame numbers, SCHED_FIFO)") {
        return;
    }
    // Bits 12-16: 32 colours, 8 per partition, where this machine's own
    // rule gives another count (512 on the development VM) and so other
    // colours for the same partitions.
    let bits: Vec<u32> = (12..=16).collect();
    let cpus = tinct_sys::sched::affinity().unwrap();
    let spec = RunSpec {
        source: "color_bits test".into(),
        platform_partitions: Some(PARTITIONS),
        color_bits: Some(bits.clone()),
        ..run_spec(
            vec![
                task("low", cpus[0], 80, vec![1]),
                task("high", *cpus.last().unwrap(), 79, vec![3, 4]),
            ],
            200_000_000,
        )
    };
    let layout = tinct_rt::memory::ColorLayout::of_spec(&spec).unwrap();
    assert_eq!(layout.mapping.colors(), 32);
    assert!(
        layout.rule.contains("explicit colour bits")
            && layout
                .rule
                .contains("32 colours on physical address bits 12-16")
            && layout.rule.contains("[platform] color_bits"),
        "{}",
        layout.rule
    );
    let result = run_to_completion(&spec);
    for t in &result.tasks {
        // Partition k of 4 over 32 colours: colours 8(k-1) .. 8k, computed
        // here from the frame number's bits 0-4 (address bits 12-16).
        let allowed: Vec<u64> = t
            .spec
            .partitions
            .iter()
            .flat_map(|&k| u64::from(k - 1) * 8..u64::from(k) * 8)
            .collect();
        let frames = frames_of(&t.placement);
        assert_eq!(frames.len() as u64, WORKING_SET / 4096);
        let mut used: Vec<u64> = frames.iter().map(|&f| f & 31).collect();
        used.sort_unstable();
        used.dedup();
        assert_eq!(used, allowed, "task {}", t.spec.name);
        match &t.placement {
            Placement::Colored { machine_colors, .. } => assert_eq!(*machine_colors, 32),
            other => panic!("expected a colored working set, got {other:?}"),
        }
    }
}

#[test]
fn color_bits_inside_a_page_are_bad_input_naming_the_field() {
    let spec = RunSpec {
        source: "set.toml".into(),
        platform_partitions: Some(2),
        color_bits: Some(vec![6, 7]),
        ..run_spec(vec![task("t", 0, 80, vec![1])], 1_000_000)
    };
    match tinct_rt::memory::ColorLayout::of_spec(&spec) {
        Err(tinct_rt::RtError::Input(InputError {
            file, field, found, ..
        })) => {
            assert_eq!(
                (file.as_str(), field.as_str()),
                ("set.toml", "platform.color_bits")
            );
            assert_eq!(found, "6-7");
        }
        other => panic!("expected bad input, got {other:?}"),
    }
}

/// The stack pointer of thread `tid` of this process while it sleeps in a
/// system call (`/proc/self/task/TID/syscall`: `nr args… sp pc`), looked
/// for until `deadline`.
fn sleeping_stack_pointer(tid: i32, deadline: std::time::Instant) -> Option<usize> {
    while std::time::Instant::now() < deadline {
        let path = format!("/proc/self/task/{tid}/syscall");
        let text = std::fs::read_to_string(&path).ok()?;
        let fields: Vec<&str> = text.split_whitespace().collect();
        // "running", or "-1 sp pc" outside a system call: look again.
        if fields.len() == 9 {
            return usize::from_str_radix(fields[7].trim_start_matches("0x"), 16).ok();
        }
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
    None
}

#[test]
fn a_task_sleeps_between_jobs_on_a_stack_of_its_own_colours() {
    if !tinct_sys::testing::privileged_or_skip("a coloured stack (frame numbers, SCHED_FIFO)") {
        return;
    }
    // A kernel without CONFIG_HAVE_ARCH_TRACEHOOK shows no system call.
    if let Err(e) = std::fs::read_to_string("/proc/self/syscall") {
        let why = format!("/proc/self/syscall is unreadable here ({e})");
        assert!(
            !tinct_sys::testing::privileges_required(),
            "{why}, where privileged tests are required"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let cpus = tinct_sys::sched::affinity().unwrap();
    let spec = RunSpec {
        source: "coloured stack test".into(),
        platform_partitions: Some(PARTITIONS),
        color_bits_flag: Some(tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT.into()),
        // Long enough that the second of looking (found late on a loaded
        // machine) still ends among its jobs, not at the run's end.
        ..run_spec(vec![task("stacked", cpus[0], 80, vec![2])], 5_000_000_000)
    };
    let pid = std::process::id() as i32;
    let looked = std::thread::spawn(move || {
        let tid = tinct_rt::testing::thread_releasing_jobs(
            pid,
            "tinct-stacked",
            std::time::Duration::from_millis(1),
        )?;
        let sp = sleeping_stack_pointer(
            tid,
            std::time::Instant::now() + std::time::Duration::from_secs(1),
        )?;
        let frame = tinct_sys::pagemap::Pagemap::open_self()
            .ok()?
            .frame_of(sp)
            .ok()??;
        Some((sp, frame))
    });
    let result = run_to_completion(&spec);
    let (sp, frame) = looked
        .join()
        .unwrap()
        .expect("the task thread was found asleep between jobs, its stack page resident");
    let (mapping, allowed) = mapping_and_colors_of(&[2]);
    let color = mapping.classify_frame(frame).color;
    assert!(
        allowed.contains(&color),
        "the stack pointer {sp:#x} is on frame {frame:#x} of colour {color}, outside S(i) = {{2}}'s colours {allowed:?}"
    );
    // And the placement read back after the run has the same stack.
    let placement = &result.tasks[0].placement;
    assert!(placement.stack_frames().contains(&frame), "{placement:?}");
}

/// A task with partitions and no working set (a compute-only job) in a run
/// that colours memory has its stack alone from its partitions' colours:
/// read back page by page after the run, every frame of it is of S(i)'s
/// colours, and its placement says it has no working set.
#[test]
fn a_compute_only_task_with_partitions_runs_on_a_stack_of_its_colours() {
    if !tinct_sys::testing::privileged_or_skip("coloured stacks (frame numbers, SCHED_FIFO)") {
        return;
    }
    let cpus = tinct_sys::sched::affinity().unwrap();
    let compute = TaskBuilder::periodic("compute", 50_000_000)
        .cpu(cpus[0])
        .fifo(70)
        .kernel(Kernel::Compute, Work::Target(Nanos(1_000_000)))
        .partitions(vec![3])
        .build();
    let spec = RunSpec {
        source: "compute-only stack test".into(),
        platform_partitions: Some(PARTITIONS),
        color_bits_flag: Some(tinct_sys::testing::MECHANISM_COLOR_BITS_TEXT.into()),
        ..run_spec(
            vec![task("memory", cpus[0], 80, vec![1]), compute],
            300_000_000,
        )
    };
    let result = run_to_completion(&spec);
    let (mapping, allowed) = mapping_and_colors_of(&[3]);
    let placement = &result.tasks[1].placement;
    let Placement::Colored {
        bytes,
        pages,
        stack_bytes,
        pages_outside_colors,
        ..
    } = placement
    else {
        panic!("expected a coloured stack, got {placement:?}");
    };
    assert_eq!((*bytes, *pages), (0, 0), "{placement:?}");
    assert!(*stack_bytes >= tinct_rt::memory::TASK_STACK_BYTES);
    assert_eq!(*pages_outside_colors, Some(0), "{placement:?}");
    let stack = placement.stack_frames();
    assert!(!stack.is_empty(), "{placement:?}");
    for &frame in stack {
        let color = mapping.classify_frame(frame).color;
        assert!(
            allowed.contains(&color),
            "stack frame {frame:#x} of colour {color}"
        );
    }
    assert!(
        placement.describe().starts_with("no working set, its "),
        "{}",
        placement.describe()
    );
}
