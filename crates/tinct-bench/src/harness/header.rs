//! The fields every bench result starts with.

use super::counters::{ConditionCounters, prefixed, start_log, take_log};
use super::interleaved::{Samples, start_rounds, take_rounds};
use super::machine::Machine;
use super::options::{BenchOptions, RunSettings};
use crate::scheduling_and_load::RunConditions;
use serde::{Deserialize, Serialize};

/// What ran, how, and where; flatten it into a bench's result struct with
/// `#[serde(flatten)] pub header: RunHeader`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// Bench name (`calibrate`, `crpd`, ...).
    pub bench: String,
    /// True for a `--quick` smoke run.
    pub quick: bool,
    /// Repetitions per condition.
    pub reps: u32,
    /// Seed of every random choice.
    pub seed: u64,
    /// CPUs the bench used.
    pub cpus: Vec<u32>,
    /// The machine.
    pub machine: Machine,
    /// Performance counter totals of every measured condition (see
    /// [`super::counters`]).
    #[serde(default)]
    pub counters: Vec<ConditionCounters>,
    /// True if the run was stopped early (Ctrl-C): the result holds the
    /// rounds it finished, conditions it never reached are absent.
    #[serde(default)]
    pub interrupted: bool,
    /// Rounds the bench's interleaved runs asked for, summed over the runs
    /// that started ([`RunHeader::record_rounds`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_requested: Option<u64>,
    /// Rounds that ran to their end, summed the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_completed: Option<u64>,
    /// Scheduling policy and machine load during the run, for the benches
    /// that time threads against each other (banks, coherence, isolation;
    /// [`RunHeader::with_conditions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_conditions: Option<RunConditions>,
}

impl RunHeader {
    /// The header for `bench` run with `options`, `reps` and on `cpus`
    /// (it also starts this thread's log of counter totals).
    pub fn new(bench: &str, options: &BenchOptions, reps: u32, cpus: Vec<u32>) -> Self {
        start_log();
        start_rounds();
        Self::of_run(
            bench,
            options.settings(reps, cpus),
            Machine::describe(),
            Vec::new(),
        )
    }

    /// The header of a `bench` run with `settings` on `machine`, with the
    /// counter totals the bench collected itself: not interrupted, no
    /// rounds recorded yet ([`RunHeader::record_rounds`] adds them). For a
    /// bench that plans, measures, then assembles its result; unlike
    /// [`RunHeader::new`] it starts no log.
    pub fn of_run(
        bench: &str,
        settings: RunSettings,
        machine: Machine,
        counters: Vec<ConditionCounters>,
    ) -> Self {
        let RunSettings {
            quick,
            reps,
            seed,
            cpus,
        } = settings;
        Self {
            bench: bench.to_string(),
            quick,
            reps,
            seed,
            cpus,
            machine,
            counters,
            interrupted: false,
            rounds_requested: None,
            rounds_completed: None,
            run_conditions: None,
        }
    }

    /// This header with the scheduling policy and load the run was
    /// measured under.
    pub fn with_conditions(mut self, conditions: RunConditions) -> Self {
        self.run_conditions = Some(conditions);
        self
    }

    /// Records the rounds of every interleaved run of this thread since
    /// the header was made, and whether a stop cut them short (also
    /// `interrupted` when `stopped`: the bench saw the stop itself, between
    /// its own steps).
    pub fn record_rounds(&mut self, stopped: bool) {
        let tally = take_rounds();
        self.rounds_requested = Some(tally.requested);
        self.rounds_completed = Some(tally.completed);
        self.interrupted = tally.interrupted || stopped;
    }

    /// Adds the counter totals of `samples`, each condition named
    /// `prefix` + its name (see [`prefixed`]).
    pub fn add_counters(&mut self, prefix: &str, samples: &Samples) {
        self.counters.extend(prefixed(prefix, &samples.counters));
    }

    /// Adds the counter totals of every interleaved run of this thread
    /// since the header was made, named `run K/condition`.
    pub fn add_logged_counters(&mut self) {
        self.counters.extend(take_log());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_through_json() {
        let options = BenchOptions {
            quick: true,
            seed: 7,
            ..BenchOptions::default()
        };
        let header = RunHeader::new("calibrate", &options, 3, vec![0]);
        let json = serde_json::to_string(&header).unwrap();
        let back: RunHeader = serde_json::from_str(&json).unwrap();
        assert_eq!(back, header);
        assert!(json.contains("\"machine\"") && json.contains("\"seed\":7"));
        // A bench that assembles its header after measuring gets the same.
        let settings = options.settings(3, vec![0]);
        assert_eq!(
            RunHeader::of_run("calibrate", settings, header.machine.clone(), Vec::new()),
            header
        );
    }

    #[test]
    fn logged_counters_are_the_runs_since_the_header_was_made() {
        use crate::harness::{Interleaved, NoProgress};
        let run = |names: &[&str]| {
            Interleaved::new(names.to_vec(), 2)
                .run::<()>(&NoProgress, |_| Ok(1))
                .unwrap()
        };
        run(&["before"]);
        let mut header = RunHeader::new("t", &BenchOptions::default(), 2, vec![0]);
        run(&["a", "b"]);
        run(&["a"]);
        header.add_logged_counters();
        let names: Vec<&str> = header
            .counters
            .iter()
            .map(|c| c.condition.as_str())
            .collect();
        assert_eq!(names, ["run 1/a", "run 1/b", "run 2/a"]);
        assert!(header.counters.iter().all(|c| c.runs == 2));
        header.add_logged_counters();
        assert_eq!(header.counters.len(), 3, "taken once");
    }
}
