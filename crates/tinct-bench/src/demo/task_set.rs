//! The demo's task set: four tasks named after kim2013 Table I's PARSEC
//! programs, each a `mixed` body (half pointer chase over its working set,
//! half computation, like the paper's tasks) of a fixed iteration count,
//! so the body `tinct run` executes is exactly the one profiled; then the
//! periods from the measured C and a utilisation share per task.

use std::collections::BTreeMap;
use tinct_core::model::{Body, Kernel, Platform, Task, TaskSet, WcetTable, Work};
use tinct_core::units::{Bytes, Nanos};

/// N_P of the demo: few partitions keep the profile short (p = 1, 2, 4).
pub const PARTITIONS: u32 = 4;
/// Percent of each job in the memory phase of the `mixed` kernel.
pub const MEMORY_PERCENT: u8 = 50;

/// One task of the demo before it is measured.
#[derive(Debug, Clone, Copy)]
pub struct DemoTask {
    /// Its name (kim2013 Table I).
    pub name: &'static str,
    /// Its working set, bytes.
    pub working_set: u64,
    /// The job length its iteration count is sized to, alone and warm, ns.
    pub target_ns: u64,
    /// Its share of one CPU, in per mille of the period: T = C / share.
    pub utilisation_permille: u64,
}

/// The four tasks: 1.0 to 4.0 ms jobs, 0.5 of a CPU in all.
pub const TASKS: [DemoTask; 4] = [
    DemoTask {
        name: "streamcluster",
        working_set: 1 << 20,
        target_ns: 1_000_000,
        utilisation_permille: 100,
    },
    DemoTask {
        name: "ferret",
        working_set: 512 << 10,
        target_ns: 2_000_000,
        utilisation_permille: 100,
    },
    DemoTask {
        name: "canneal",
        working_set: 2 << 20,
        target_ns: 3_000_000,
        utilisation_permille: 150,
    },
    DemoTask {
        name: "fluidanimate",
        working_set: 1 << 20,
        target_ns: 4_000_000,
        utilisation_permille: 150,
    },
];

/// Iterations of a `mixed` job of about `target_ns` on this machine: the
/// kernels' rates measured on the calling thread over a working set of the
/// task's size (tinct-rt's calibration). Only a size: C is measured after.
pub fn iterations_for(task: &DemoTask) -> u64 {
    let words = (task.working_set / 8) as usize;
    let mut state = tinct_rt::kernels::KernelState::new(Kernel::Mixed, vec![0u64; words].into(), 1);
    let rates = tinct_rt::calibrate::measure(&mut state);
    let share = f64::from(MEMORY_PERCENT) / 100.0;
    let per_iteration = share * rates.memory_ns + (1.0 - share) * rates.compute_ns;
    ((task.target_ns as f64 / per_iteration.max(1e-3)).round() as u64).max(1)
}

/// The period of a task before its C is measured: long enough for any
/// cold job the profile may see (the profile refuses a C above D); the
/// periods are set from the measured C after ([`set_periods`]).
pub const PLACEHOLDER_PERIOD: Nanos = Nanos(1_000_000_000);

/// The task set to profile: every task with its fixed-iteration body, a
/// placeholder C (its target) and [`PLACEHOLDER_PERIOD`], on `cores` cores
/// with [`PARTITIONS`] partitions and the measured Δ.
pub fn unmeasured(iterations: &[u64], cores: u32, refill: Nanos) -> TaskSet {
    let tasks = TASKS
        .iter()
        .zip(iterations)
        .map(|(t, &n)| {
            let mut task = Task::periodic(
                t.name.to_string(),
                PLACEHOLDER_PERIOD,
                Bytes(t.working_set),
                WcetTable::constant(Nanos(t.target_ns)),
            );
            task.body = Some(Body {
                kernel: Kernel::Mixed,
                working_set: Some(Bytes(t.working_set)),
                work: Some(Work::Iterations(n)),
                memory_percent: Some(MEMORY_PERCENT),
            });
            task
        })
        .collect();
    let platform = Platform {
        cores,
        partitions: PARTITIONS,
        // Each partition holds every working set: memory (Eq. 3) never
        // decides the demo's plan.
        memory: Bytes(256 << 20),
        refill,
        color_bits: None,
        dram_map: None,
        overheads: Default::default(),
        cache_domains: None,
    };
    TaskSet::new(platform, tasks)
}

/// Sets each task's measured C^p table.
pub fn set_measured(set: &mut TaskSet, tables: &[BTreeMap<u32, Nanos>]) {
    for (task, table) in set.tasks.iter_mut().zip(tables) {
        task.wcet = WcetTable::new(table.clone());
    }
}

/// Sets every period (and deadline) to `scale` × C / share, C the worst
/// measured value, rounded up to a whole millisecond. Checked: `None` if a
/// period does not fit 64-bit nanoseconds.
pub fn set_periods(set: &mut TaskSet, scale: u64) -> Option<()> {
    for (task, demo) in set.tasks.iter_mut().zip(TASKS.iter()) {
        let c = task.wcet.worst().0;
        let base = c
            .checked_mul(1000)?
            .div_ceil(demo.utilisation_permille)
            .div_ceil(1_000_000)
            .checked_mul(1_000_000)?;
        let period = Nanos(base.checked_mul(scale)?);
        task.period = period;
        task.deadline = period;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_follow_the_measured_c_and_the_share() {
        let mut set = unmeasured(&[10, 10, 10, 10], 2, Nanos(40_000));
        let tables: Vec<BTreeMap<u32, Nanos>> = [1_234_567u64, 2_000_000, 3_000_001, 10]
            .iter()
            .map(|&c| BTreeMap::from([(1, Nanos(c)), (4, Nanos(c / 2))]))
            .collect();
        set_measured(&mut set, &tables);
        set_periods(&mut set, 1).unwrap();
        // 1.234567 ms / 0.1 = 12.34567 ms → 13 ms; 3.000001 / 0.15 → 21 ms.
        assert_eq!(set.tasks[0].period, Nanos(13_000_000));
        assert_eq!(set.tasks[1].period, Nanos(20_000_000));
        assert_eq!(set.tasks[2].period, Nanos(21_000_000));
        assert_eq!(set.tasks[3].period, Nanos(1_000_000), "at least 1 ms");
        assert_eq!(set.tasks[2].deadline, set.tasks[2].period);
        set_periods(&mut set, 4).unwrap();
        assert_eq!(set.tasks[0].period, Nanos(52_000_000));
        assert!(
            set_periods(&mut set, u64::MAX).is_none(),
            "refused, not wrapped"
        );
    }

    #[test]
    fn the_unmeasured_set_validates_as_a_task_set_file() {
        let set = unmeasured(&[100, 200, 300, 400], 2, Nanos(40_000));
        let text = tinct_core::format::to_toml(&set, &[]);
        let back = tinct_core::format::parse(&text, "t.toml", tinct_core::format::Syntax::Toml)
            .expect("the demo's task set is valid");
        assert_eq!(back.tasks.len(), 4);
        assert_eq!(
            back.tasks[3].body.as_ref().and_then(|b| b.work),
            Some(Work::Iterations(400))
        );
    }
}
