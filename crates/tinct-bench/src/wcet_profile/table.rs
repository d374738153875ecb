//! From measured points to the task-set syntax: the `wcet = { … }` line
//! and a complete task-set file that `tinct analyze` accepts unchanged.

use super::{ProfilePoint, ProfiledBody};
use crate::harness::output::toml_line;
use std::collections::BTreeMap;
use tinct_core::PartitionSet;
use tinct_core::format::{InputError, Syntax};
use tinct_core::model::{Body, Platform, Task, TaskSet, WcetTable, Work};
use tinct_core::units::{Bytes, Nanos};

/// Sets each point's `table_ns` to the largest statistic over this and
/// every larger p (points sorted by p), rounded up to a whole microsecond:
/// C^p must not increase with p (kim2013 Section II-C), and raising a value
/// to a neighbour's measured one (or rounding it up) keeps it safe.
/// If a point has no statistic, no point gets a table value and the reason
/// is returned (naming the p and the condition).
pub fn make_non_increasing(points: &mut [ProfilePoint]) -> Option<String> {
    let missing = points.iter().find_map(|point| {
        point.conditions.iter().find_map(|c| {
            c.statistic_missing
                .as_ref()
                .map(|why| format!("p = {} ({}): {why}", point.p, c.condition))
        })
    });
    if missing.is_some() || points.iter().any(|p| p.statistic_ns.is_none()) {
        for point in points.iter_mut() {
            point.table_ns = None;
        }
        return Some(missing.unwrap_or_else(|| "a point has no statistic".into()));
    }
    let mut running = 0u64;
    for point in points.iter_mut().rev() {
        let value = point.statistic_ns.unwrap_or(0);
        running = running.max(value.div_ceil(1000).saturating_mul(1000));
        point.table_ns = Some(running);
    }
    None
}

/// The table value of a point (0 before [`make_non_increasing`] set it).
fn table_value(point: &ProfilePoint) -> Nanos {
    Nanos(point.table_ns.unwrap_or(0))
}

/// The `{ p = "C", … }` table (task-set syntax) as (p, C) pairs.
pub fn table(points: &[ProfilePoint]) -> BTreeMap<u32, Nanos> {
    points.iter().map(|p| (p.p, table_value(p))).collect()
}

/// The `wcet = { p = "C", … }` line (task-set syntax, ready to paste).
pub fn wcet_line(points: &[ProfilePoint]) -> String {
    toml_line("wcet", wcet_inline(&table(points)))
}

/// A `wcet` table as the task-set format writes it: `{ p = "C", … }`.
pub(super) fn wcet_inline(table: &BTreeMap<u32, Nanos>) -> toml_edit::InlineTable {
    table
        .iter()
        .map(|(p, c)| (p.to_string(), toml_edit::Value::from(c.to_string())))
        .collect()
}

/// 10 × the largest table value, rounded up to a whole millisecond.
pub fn default_period(points: &[ProfilePoint]) -> Nanos {
    let worst = points
        .iter()
        .map(|p| table_value(p).0)
        .max()
        .unwrap_or(0)
        .max(1);
    Nanos(
        worst
            .saturating_mul(10)
            .div_ceil(1_000_000)
            .saturating_mul(1_000_000),
    )
}

/// What the written task set is made of.
#[derive(Debug)]
pub struct TaskSetInput<'a> {
    /// Task name.
    pub name: &'a str,
    /// The profiled body.
    pub body: &'a ProfiledBody,
    /// The measured points (with `table_ns` set).
    pub points: &'a [ProfilePoint],
    /// N_P.
    pub partitions: u32,
    /// N_C.
    pub cores: u32,
    /// T_i (= D_i).
    pub period: Nanos,
    /// Δ.
    pub refill: Nanos,
}

/// A task set with the profiled task on core 0 with every partition
/// (so `tinct analyze` takes it as is), validated by reading its TOML back.
pub fn task_set(input: &TaskSetInput) -> Result<TaskSet, InputError> {
    let working_set = input.body.working_set_bytes;
    // M_total holds N_P copies of the working set, so even p = 1 is memory-feasible.
    let memory = (working_set * u64::from(input.partitions))
        .max(1 << 30)
        .div_ceil(1 << 20)
        * (1 << 20);
    let listed = table(input.points);
    let total = input.body.memory_iterations + input.body.compute_iterations;
    let kernel = super::worker::kernel_by_name(&input.body.kernel)
        .unwrap_or(tinct_core::model::Kernel::Chase);
    let memory_percent = (kernel == tinct_core::model::Kernel::Mixed && total > 0)
        .then(|| (input.body.memory_iterations * 100 / total) as u8);
    let set =
        TaskSet {
            platform: Platform {
                cores: input.cores,
                partitions: input.partitions,
                memory: Bytes(memory),
                refill: input.refill,
                color_bits: None,
                dram_map: None,
                overheads: Default::default(),
                cache_domains: None,
            },
            tasks: vec![Task {
                name: input.name.to_string(),
                period: input.period,
                deadline: input.period,
                memory: Bytes(working_set),
                wcet: WcetTable::new(listed),
                priority: None,
                core: Some(0),
                partitions: Some(PartitionSet::range(1, input.partitions)),
                body: input.body.program.is_none().then_some(Body {
                    kernel,
                    working_set: Some(Bytes(working_set)),
                    work: Some(Work::Iterations(total)),
                    memory_percent,
                }),
                program: input.body.program.as_ref().map(|program| {
                    tinct_core::model::ProgramBody {
                        command: program.command.clone(),
                        protocol: program.protocol,
                        mmap: program.mmap,
                    }
                }),
                critical_sections: Vec::new(),
                jitter: Nanos::ZERO,
                blocking: None,
                trigger: Default::default(),
                policy: Default::default(),
                runtime: None,
            }],
            resources: Vec::new(),
            edges: Vec::new(),
            task_lines: Vec::new(),
            period_lines: Vec::new(),
        };
    let text = tinct_core::format::to_toml(&set, &[]);
    tinct_core::format::parse(&text, "taskset.toml", Syntax::Toml)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wcet_profile::ConditionPoint;
    use crate::wcet_profile::condition::Condition;
    use tinct_report::Durations;
    use tinct_report::stats::evt::{EvtOptions, fit};

    fn condition(condition: Condition, ns: Option<u64>) -> ConditionPoint {
        let jobs = [ns.unwrap_or(1)];
        ConditionPoint {
            condition,
            jobs: Durations::of(&jobs).unwrap(),
            p999_ns: jobs[0],
            evt: fit(&jobs, &EvtOptions::default()).unwrap(),
            statistic_ns: ns,
            statistic_missing: ns.is_none().then(|| "too few blocks".into()),
            llc_misses_max: None,
            pages_checked: 0,
            pages_in_colors: 0,
            co_runners: None,
            job_ns: jobs.to_vec(),
        }
    }

    pub(crate) fn point(p: u32, statistic: u64) -> ProfilePoint {
        ProfilePoint {
            p,
            colors: vec![],
            conditions: vec![condition(Condition::Alone, Some(statistic))],
            statistic_ns: Some(statistic),
            worst_condition: Some(Condition::Alone),
            table_ns: None,
        }
    }

    #[test]
    fn noise_is_raised_never_lowered() {
        let mut points = vec![
            point(1, 900_000),
            point(2, 700_000),
            point(4, 750_000),
            point(8, 499_001),
        ];
        assert_eq!(make_non_increasing(&mut points), None);
        let table: Vec<Option<u64>> = points.iter().map(|p| p.table_ns).collect();
        assert_eq!(
            table,
            vec![Some(900_000), Some(750_000), Some(750_000), Some(500_000)]
        );
        assert!(points.iter().all(|p| p.table_ns >= p.statistic_ns));
    }

    #[test]
    fn a_missing_statistic_leaves_no_table_and_says_where() {
        let mut points = vec![point(1, 900_000), point(2, 700_000)];
        points[1].conditions.push(condition(Condition::Cold, None));
        points[1].statistic_ns = None;
        let why = make_non_increasing(&mut points).unwrap();
        assert_eq!(why, "p = 2 (cold): too few blocks");
        assert!(points.iter().all(|p| p.table_ns.is_none()));
    }

    #[test]
    fn the_line_and_the_file_read_back() {
        let mut points = vec![
            point(1, 22_760_000),
            point(8, 11_940_000),
            point(12, 10_300_000),
        ];
        assert_eq!(make_non_increasing(&mut points), None);
        assert_eq!(
            wcet_line(&points),
            r#"wcet = { 1 = "22.76ms", 8 = "11.94ms", 12 = "10.3ms" }"#
        );
        assert_eq!(default_period(&points), Nanos(228_000_000));
        let body = ProfiledBody {
            kernel: "chase".into(),
            working_set_bytes: 18 << 20,
            memory_iterations: 1000,
            compute_iterations: 0,
            program: None,
        };
        let set = task_set(&TaskSetInput {
            name: "streamcluster",
            body: &body,
            points: &points,
            partitions: 32,
            cores: 2,
            period: default_period(&points),
            refill: Nanos(45_300),
        })
        .unwrap();
        assert_eq!(set.tasks[0].wcet.at(10), Some(Nanos(11_940_000)));
        assert_eq!(set.platform.refill, Nanos(45_300));
        assert!(set.platform.min_partitions_for(set.tasks[0].memory) <= 1);
    }

    /// The written task set of a profiled program has the program as its
    /// body, which `tinct analyze` and `tinct run` take.
    #[test]
    fn a_program_s_task_set_has_the_program_as_its_body() {
        let mut points = vec![point(1, 5_000_000), point(2, 4_000_000)];
        make_non_increasing(&mut points);
        let body = ProfiledBody {
            kernel: "program".into(),
            working_set_bytes: 1 << 20,
            memory_iterations: 0,
            compute_iterations: 0,
            program: Some(crate::wcet_profile::ProfiledProgram {
                command: vec!["/opt/filter".into(), "--fast".into()],
                protocol: tinct_core::model::JobProtocol::Futex,
                mmap: true,
            }),
        };
        let set = task_set(&TaskSetInput {
            name: "filter",
            body: &body,
            points: &points,
            partitions: 2,
            cores: 1,
            period: default_period(&points),
            refill: Nanos(45_300),
        })
        .unwrap();
        let task = &set.tasks[0];
        assert!(task.body.is_none(), "{:?}", task.body);
        let program = task.program.as_ref().expect("the program body");
        assert_eq!(program.command, ["/opt/filter", "--fast"]);
        assert_eq!(program.protocol, tinct_core::model::JobProtocol::Futex);
        assert!(program.mmap, "its mmap stays coloured");
        assert_eq!(task.wcet.at(2), Some(Nanos(4_000_000)));
    }

    #[test]
    fn a_period_below_the_wcet_is_refused() {
        let mut points = vec![point(1, 5_000_000)];
        make_non_increasing(&mut points);
        let body = ProfiledBody {
            kernel: "read".into(),
            working_set_bytes: 1 << 20,
            memory_iterations: 10,
            compute_iterations: 0,
            program: None,
        };
        let err = task_set(&TaskSetInput {
            name: "t",
            body: &body,
            points: &points,
            partitions: 4,
            cores: 1,
            period: Nanos(1_000_000),
            refill: Nanos(1000),
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("wcet") || err.to_string().contains("deadline"),
            "{err}"
        );
    }
}
