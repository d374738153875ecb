//! Task sets for experiments: copies of a given set (kim2013 IV-E
//! duplicates Table I) and random sets for schedulability studies.
//!
//! Random sets follow the usual recipe of the literature:
//! - utilizations by UUniFast-Discard (Bini and Buttazzo's UUniFast, Davis
//!   and Burns' discard rule for multiprocessors: a vector with some
//!   u_i > 1 is drawn again);
//! - periods log-uniform in [T_min, T_max], rounded to whole microseconds, D = T;
//! - memory M_i uniform in [M_min, M_max], which fixes the least p;
//! - a cache-sensitivity curve per task: C^p falls from C^{p_min} = u_i·T_i
//!   by a fraction σ_i ~ U(0, σ_max) at p = N_P, along
//!   1 − exp(−(p − p_min)/κ_i) with κ_i ~ U(1, N_P/2) (fast or slow knees,
//!   and plateaus like the paper's Figure 6).
//!
//! Generation is pure and seeded: ChaCha8 with the seed, one stream per
//! task set, so any subset of sets can be drawn alone (sharding).

use crate::model::{Overheads, Platform, Task, TaskSet, WcetTable};
use crate::units::{Bytes, Nanos};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Parameters of random task sets (times in nanoseconds, memory in
/// bytes). With the feature `cli`, they are the generator's options of
/// `tinct experiment random`, each field's doc comment its help text and
/// its defaults those of [`RandomParams::default`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RandomParams {
    /// Tasks per set (n).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 8))]
    pub tasks: usize,
    /// Cores (N_C).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 4))]
    pub cores: u32,
    /// Cache partitions (N_P).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 32))]
    pub partitions: u32,
    /// Total memory M_total.
    #[cfg_attr(
        feature = "cli",
        arg(long = "memory", value_name = "MEMORY", default_value = "1GiB", value_parser = crate::cli::bytes)
    )]
    pub total_memory: u64,
    /// Partition refill time Δ.
    #[cfg_attr(
        feature = "cli",
        arg(long = "refill", value_name = "REFILL", default_value = "45.3us", value_parser = crate::cli::nanos)
    )]
    pub refill_ns: u64,
    /// Least period (periods are log-uniform).
    #[cfg_attr(
        feature = "cli",
        arg(long = "period-min", value_name = "PERIOD_MIN", default_value = "10ms", value_parser = crate::cli::nanos)
    )]
    pub period_min_ns: u64,
    /// Greatest period.
    #[cfg_attr(
        feature = "cli",
        arg(long = "period-max", value_name = "PERIOD_MAX", default_value = "1s", value_parser = crate::cli::nanos)
    )]
    pub period_max_ns: u64,
    /// Least task memory M_i (uniform).
    #[cfg_attr(
        feature = "cli",
        arg(long = "task-memory-min", value_name = "TASK_MEMORY_MIN", default_value = "1MiB", value_parser = crate::cli::bytes)
    )]
    pub memory_min: u64,
    /// Greatest task memory M_i.
    #[cfg_attr(
        feature = "cli",
        arg(long = "task-memory-max", value_name = "TASK_MEMORY_MAX", default_value = "64MiB", value_parser = crate::cli::bytes)
    )]
    pub memory_max: u64,
    /// Largest fraction by which a task's WCET falls from its least to N_P partitions.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0.5))]
    pub sensitivity_max: f64,
}

impl Default for RandomParams {
    /// The study of `tinct experiment random` by default: n = 8, N_C = 4,
    /// N_P = 32, M_total = 1 GiB, Δ = 45.3 µs (kim2013's platform), periods
    /// 10 ms to 1 s, task memory 1 to 64 MiB, σ_max = 0.5.
    fn default() -> RandomParams {
        RandomParams {
            tasks: 8,
            cores: 4,
            partitions: 32,
            total_memory: 1 << 30,
            refill_ns: 45_300,
            period_min_ns: 10_000_000,
            period_max_ns: 1_000_000_000,
            memory_min: 1 << 20,
            memory_max: 64 << 20,
            sensitivity_max: 0.5,
        }
    }
}

/// n utilizations summing to `total`, each at most 1 (UUniFast-Discard);
/// `None` after 1000 discarded draws (e.g. `total` > n).
pub fn uunifast_discard(rng: &mut impl Rng, n: usize, total: f64) -> Option<Vec<f64>> {
    if n == 0 || total > n as f64 {
        return None;
    }
    for _ in 0..1000 {
        let mut utils = Vec::with_capacity(n);
        let mut sum = total;
        for i in 1..n {
            let next = sum * rng.random::<f64>().powf(1.0 / (n - i) as f64);
            utils.push(sum - next);
            sum = next;
        }
        utils.push(sum);
        if utils.iter().all(|&u| u <= 1.0) {
            return Some(utils);
        }
    }
    None
}

/// The random generator of set number `stream` of an experiment seeded with `seed`.
pub fn rng_for(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// A period in ns drawn log-uniformly between `min_ns` and `max_ns` (each
/// taken as at least 1 µs), in whole microseconds.
pub fn log_uniform_period(rng: &mut impl Rng, min_ns: u64, max_ns: u64) -> u64 {
    let (lo, hi) = (min_ns.max(1000) as f64, max_ns.max(1000) as f64);
    let period_us = (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp() / 1000.0;
    // Whole microseconds, at most the largest that fits in u64 ns (the
    // float-to-int cast saturates; the product then cannot wrap).
    (period_us.round() as u64).clamp(1, u64::MAX / 1000) * 1000
}

/// A random task set with total utilization (at each task's least partition
/// count) `utilization`; `None` if UUniFast-Discard gives up.
pub fn random_task_set(
    params: &RandomParams,
    utilization: f64,
    rng: &mut impl Rng,
) -> Option<TaskSet> {
    let utils = uunifast_discard(rng, params.tasks, utilization)?;
    let platform = Platform {
        cores: params.cores,
        partitions: params.partitions,
        memory: Bytes(params.total_memory),
        refill: Nanos(params.refill_ns),
        color_bits: None,
        dram_map: None,
        overheads: Overheads::NONE,
        cache_domains: None,
    };
    let tasks = utils
        .iter()
        .enumerate()
        .map(|(i, &u)| random_task(params, &platform, i, u, rng))
        .collect();
    Some(TaskSet::new(platform, tasks))
}

fn random_task(
    params: &RandomParams,
    platform: &Platform,
    index: usize,
    u: f64,
    rng: &mut impl Rng,
) -> Task {
    let period = log_uniform_period(rng, params.period_min_ns, params.period_max_ns);
    let memory_max = params
        .memory_max
        .min(params.total_memory)
        .max(params.memory_min);
    let memory = rng.random_range(params.memory_min..=memory_max).max(1);
    let first_p = platform
        .min_partitions_for(Bytes(memory))
        .clamp(1, params.partitions);
    let sensitivity = rng.random::<f64>() * params.sensitivity_max.clamp(0.0, 1.0);
    let knee = 1.0 + rng.random::<f64>() * (f64::from(params.partitions) / 2.0 - 1.0).max(0.0);
    let worst = ((u * period as f64).round() as u64).clamp(1, period);
    let span = f64::from(params.partitions - first_p);
    let full = 1.0 - (-span / knee).exp();
    let mut listed = BTreeMap::new();
    let mut previous = worst;
    for p in first_p..=params.partitions {
        let reach = if full > 0.0 {
            (1.0 - (-f64::from(p - first_p) / knee).exp()) / full
        } else {
            0.0
        };
        let c = ((worst as f64 * (1.0 - sensitivity * reach)).round() as u64).clamp(1, previous);
        if c < previous || p == first_p {
            listed.insert(p, Nanos(c));
        }
        previous = c;
    }
    Task::periodic(
        format!("t{}", index + 1),
        Nanos(period),
        Bytes(memory),
        WcetTable::new(listed),
    )
}

/// `copies` copies of every task of `set`, in the order τ1..τn, τ1'..τn', ...
/// (kim2013 IV-E: "we have duplicated the taskset"). Copies after the first
/// get a suffix `-2`, `-3`, ... Assignment fields are cleared. Each copy
/// has its own copy of the affinity graph's edges; resources are shared.
pub fn replicate(set: &TaskSet, copies: usize) -> TaskSet {
    let mut tasks = Vec::with_capacity(set.tasks.len() * copies);
    let mut edges = Vec::with_capacity(set.edges.len() * copies);
    for copy in 1..=copies {
        let offset = (copy - 1) * set.tasks.len();
        edges.extend(set.edges.iter().map(|e| crate::model::Edge {
            from: e.from + offset,
            to: e.to + offset,
            buffer: e.buffer,
        }));
        for task in &set.tasks {
            let mut task = task.clone();
            if copy > 1 {
                task.name = format!("{}-{copy}", task.name);
            }
            task.priority = None;
            task.core = None;
            task.partitions = None;
            tasks.push(task);
        }
    }
    TaskSet {
        platform: set.platform.clone(),
        tasks,
        resources: set.resources.clone(),
        edges,
        task_lines: Vec::new(),
        period_lines: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> RandomParams {
        RandomParams {
            sensitivity_max: 0.4,
            ..RandomParams::default()
        }
    }

    #[test]
    fn uunifast_sums_and_bounds() {
        let mut rng = rng_for(7, 0);
        for total in [0.5, 2.0, 2.8] {
            let u = uunifast_discard(&mut rng, 4, total).unwrap();
            assert!((u.iter().sum::<f64>() - total).abs() < 1e-9);
            assert!(u.iter().all(|&x| (0.0..=1.0).contains(&x)));
        }
        assert!(uunifast_discard(&mut rng, 2, 2.5).is_none());
    }

    #[test]
    fn random_sets_are_valid_and_reproducible() {
        let p = params();
        let a = random_task_set(&p, 2.0, &mut rng_for(1, 5)).unwrap();
        let b = random_task_set(&p, 2.0, &mut rng_for(1, 5)).unwrap();
        let c = random_task_set(&p, 2.0, &mut rng_for(1, 6)).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        // The written file re-reads equal, so it passes every validation rule.
        let text = crate::format::to_toml(&a, &[]);
        let back = crate::format::parse(&text, "gen.toml", crate::format::Syntax::Toml).unwrap();
        assert_eq!(back.tasks, a.tasks);
        let total: f64 = a
            .tasks
            .iter()
            .map(|t| t.wcet.worst().0 as f64 / t.period.0 as f64)
            .sum();
        assert!((total - 2.0).abs() < 0.01, "{total}");
    }
}
