//! `tinct bench dram-map`: the DRAM address mapping (bank, rank, channel
//! XOR functions) found from user space, with pagemap and row-buffer
//! conflict timing, as DRAMA did (Pessl et al., USENIX Security 2016) but
//! by linear algebra instead of a search, checking itself and refusing to
//! guess ([`solver`]). The solver is tested against a simulated DRAM that
//! follows published Intel and AMD mappings ([`simulated`]).
//!
//! Writes `dram-map.json` (everything measured, the functions with their
//! confidence, or why it refused), `dram-map.csv` (one line per function),
//! `dram-map.svg` (the latency histogram and its threshold) and, only when
//! the mapping was found, `dram-map.toml`: the file `tinct exec
//! --dram-map`, `tinct bench banks --dram-map` and a task set's `[platform]
//! dram_map` read (`tinct_core::dram_map::DramMap`).
//!
//! Row-buffer timing tells same-bank pairs from others; it cannot tell a
//! channel from a bank, so every function is written as a bank function.
//! On a virtual machine the addresses are guest-physical, not the host's:
//! the file says so (`physical = "guest"`) and the summary warns.

mod report;
pub mod simulated;
pub mod solver;

use crate::Result;
use crate::harness::{BenchOptions, Finished, Machine, Progress, RunHeader};
use serde::{Deserialize, Serialize};
use solver::{RowConflictTimer, Solution, SolverOptions};
use tinct_core::units::Bytes;
use tinct_mem::row_conflict::RowConflictProbe;

/// Parameters of `tinct bench dram-map`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Params {
    /// Parameters shared by every bench (`--quick`: a small buffer, few
    /// samples).
    pub common: BenchOptions,
    /// Memory to sample addresses from (default 1 GiB, quick 64 MiB): it
    /// must span the address bits the functions read.
    pub buffer: Option<Bytes>,
    /// Addresses sampled (default 2048, quick 512).
    pub samples: Option<usize>,
    /// Timed repetitions per measurement (default 32, quick 8).
    pub rounds: Option<usize>,
}

/// The result of `tinct bench dram-map` (written as `dram-map.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Bench, options, machine.
    #[serde(flatten)]
    pub header: RunHeader,
    /// Bytes sampled from.
    pub buffer_bytes: u64,
    /// Addresses sampled.
    pub samples: usize,
    /// Timed repetitions per measurement.
    pub rounds: usize,
    /// The solver's settings.
    pub options: SolverOptions,
    /// What it found, or why it refused.
    pub solution: Solution,
    /// True on a virtual machine: the addresses were guest-physical.
    pub guest_physical: bool,
    /// Measuring time in ms.
    pub elapsed_ms: f64,
    /// The latencies of the threshold pairs, for the histogram.
    pub threshold_latencies: Vec<u32>,
    /// Caveats.
    pub notes: Vec<String>,
    /// Files written.
    pub files: Vec<String>,
}

/// The probe as the solver's timer, keeping the first latencies for the
/// histogram.
struct ProbeTimer<'a> {
    probe: &'a RowConflictProbe,
    kept: Vec<u32>,
    keep: usize,
    progress: &'a dyn Progress,
}

impl RowConflictTimer for ProbeTimer<'_> {
    fn latency(&mut self, a: usize, b: usize) -> u32 {
        let latency = self.probe.latency(a, b);
        if self.kept.len() < self.keep {
            self.kept.push(latency);
        }
        self.progress.inc(1);
        latency
    }

    fn stop_requested(&self) -> bool {
        self.progress.stop_requested()
    }
}

/// Runs the bench: samples addresses, solves, writes the files.
pub fn run(params: &Params, progress: &dyn Progress) -> Result<Finished<Report>> {
    let quick = params.common.quick;
    let buffer = params
        .buffer
        .map_or(if quick { 64 << 20 } else { 1 << 30 }, |b| b.0);
    let samples = params.samples.unwrap_or(if quick { 512 } else { 2048 });
    let rounds = params.rounds.unwrap_or(if quick { 8 } else { 32 });
    if samples < 64 {
        return Err(crate::Error::InvalidInput(format!(
            "--samples: expected at least 64 addresses, found {samples}"
        )));
    }
    let buffer_usize = usize::try_from(buffer)
        .map_err(|_| crate::Error::InvalidInput(format!("--buffer {buffer} bytes: too large")))?;
    let options = SolverOptions {
        seed: params.common.seed,
        ..SolverOptions::default()
    };
    let started = std::time::Instant::now();
    let probe = RowConflictProbe::new(buffer_usize, samples, rounds, params.common.seed)
        .map_err(|e| crate::Error::Measurement(format!("cannot sample addresses: {e}")))?;
    let expected = options.threshold_pairs + options.sets * samples * 2;
    progress.start(expected as u64, "dram-map");
    let mut timer = ProbeTimer {
        probe: &probe,
        kept: Vec::new(),
        keep: options.threshold_pairs,
        progress,
    };
    let solution = solver::solve(probe.physical(), &mut timer, &options);
    progress.finish();
    let machine = Machine::describe();
    let guest_physical = machine.virtualized == Some(true);
    let mut report = Report {
        header: RunHeader {
            // Stopped: the search refused itself as interrupted, so no
            // dram-map.toml is written (only found functions are).
            interrupted: solution.refusal.as_deref() == Some(solver::INTERRUPTED),
            ..RunHeader::of_run(
                "dram-map",
                params.common.settings(1, tinct_sys::sched::affinity()?),
                machine,
                Vec::new(),
            )
        },
        buffer_bytes: buffer,
        samples: probe.physical().len(),
        rounds,
        options,
        notes: notes(&solution, guest_physical),
        solution,
        guest_physical,
        elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
        threshold_latencies: timer.kept,
        files: Vec::new(),
    };
    report::write(&mut report, &params.common)?;
    let mut summary = report::summary(&report);
    summary.interruption(&report.header, &params.common.out_dir("dram-map"));
    if report.header.interrupted {
        summary.note("interrupted: no dram-map.toml is written from an interrupted search");
    }
    Ok(Finished {
        summary,
        result: report,
    })
}

fn notes(solution: &Solution, guest: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if guest {
        notes.push(
            "virtual machine: these are guest-physical addresses, which the hypervisor maps to \
             host frames in its own way; the host's DRAM banks cannot be found from here, and \
             whatever was found describes nothing real"
                .into(),
        );
    }
    let top = 63 - solution.varying_bits.leading_zeros();
    notes.push(format!(
        "functions are known on address bits 6-{top} (the bits the sampled addresses vary in); \
         a function may also read higher bits (a larger --buffer spans more)"
    ));
    notes.push(
        "row-buffer timing cannot tell channels from banks: every function is listed as a bank \
         function"
            .into(),
    );
    notes
}
