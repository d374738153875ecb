//! The result of `tinct bench dram-map` (`dram-map.json`): its type, the
//! notes on what was found, the files and the summary.

use super::measure::Measured;
use super::plan::Plan;
use super::solver::{self, FoundFunction, Solution, SolverOptions};
use crate::Result;
use crate::harness::{
    Columns, LineChart, Machine, OutputDir, RunHeader, Series, SeriesStyle, Summary, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_core::dram_map::{AddressKind, DramMap};

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

impl crate::harness::Bench for Report {
    const NAME: &'static str = "dram-map";
    const ROUNDS: bool = false;
    type Plan = Plan;

    /// The report of a measured plan, with its notes; a stopped search is
    /// `interrupted` (and writes no `dram-map.toml`).
    fn assemble(plan: Plan, measured: Measured, _stopped: bool) -> Result<Report> {
        let machine = Machine::describe();
        let guest_physical = machine.virtualized == Some(true);
        let solution = measured.solution;
        Ok(Report {
            header: RunHeader {
                // Stopped: the search refused itself as interrupted, so no
                // dram-map.toml is written (only found functions are).
                interrupted: solution.refusal.as_deref() == Some(solver::INTERRUPTED),
                ..RunHeader::of_run("dram-map", plan.run, machine, Vec::new())
            },
            buffer_bytes: plan.buffer_bytes,
            samples: measured.samples,
            rounds: plan.rounds,
            options: plan.options,
            notes: notes(&solution, guest_physical),
            solution,
            guest_physical,
            elapsed_ms: measured.elapsed_ms,
            threshold_latencies: measured.threshold_latencies,
            files: Vec::new(),
        })
    }

    report_fields!(header, files);

    /// Writes `dram-map.csv`, `dram-map.svg` and `dram-map.toml` (only when
    /// found).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let rows = self.solution.functions.iter().map(|f| {
            Columns::of(f)
                .with("mask", format!("{:#x}", f.mask))
                .with("bits", bits(f))
        });
        out.write_columns("dram-map.csv", &["mask,bits,confidence,pairs,slow"], rows)?;
        out.write_svg("dram-map.svg", &histogram(self))?;
        if self.solution.found {
            let map = DramMap {
                bank_functions: self.solution.masks(),
                controller_functions: Vec::new(),
                confidence: self
                    .solution
                    .functions
                    .iter()
                    .map(|f| (f.confidence * 1e4).round() / 1e4)
                    .collect(),
                physical: if self.guest_physical {
                    AddressKind::Guest
                } else {
                    AddressKind::Host
                },
                machine: self.header.machine.one_line(),
            };
            let header = [
                "tinct bench dram-map: DRAM bank functions found by row-buffer conflict timing"
                    .into(),
                format!(
                    "{} addresses of {} MiB, {} measurements; bank bit i = parity(address & mask i)",
                    self.samples,
                    self.buffer_bytes >> 20,
                    self.solution.measurements
                ),
            ];
            out.write_text("dram-map.toml", &map.to_toml(&header))?;
        }
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let solution = &self.solution;
        let mut s = Summary::titled(
            "tinct bench dram-map (row-buffer conflict timing)",
            &self.header,
        );
        s.fact(
            "sampled",
            format!(
                "{} addresses of a {} MiB buffer, {} timings each, {} measurements in {:.0} ms",
                self.samples,
                self.buffer_bytes >> 20,
                self.rounds,
                solution.measurements,
                self.elapsed_ms
            ),
        );
        s.fact(
            "timing",
            format!(
                "fast {:.0} ± {:.0}, slow {:.0} ± {:.0} cycles ({} of {} pairs); separation {:.1} \
                 standard deviations",
                solution.fast.mean,
                solution.fast.stddev,
                solution.slow.mean,
                solution.slow.stddev,
                solution.slow.count,
                solution.fast.count + solution.slow.count,
                solution.separation
            ),
        );
        s.fact(
            "verdict",
            match (&solution.refusal, solution.found) {
                (_, true) => format!(
                    "FOUND {} functions ({} bank classes); same-bank check {:.0} %",
                    solution.functions.len(),
                    1u64 << solution.functions.len(),
                    100.0 * solution.same_bank_slow_rate
                ),
                (Some(why), false) => format!("REFUSED: {why}"),
                (None, false) => "REFUSED".into(),
            },
        );
        if !solution.functions.is_empty() {
            s.table(&["function", "address bits", "confidence", "pairs (slow)"]);
            for f in &solution.functions {
                s.row(vec![
                    format!("{:#x}", f.mask),
                    bits(f),
                    format!("{:.3}", f.confidence),
                    format!("{} ({})", f.pairs, f.slow),
                ]);
            }
        }
        s.notes.extend(self.notes.iter().cloned());
        if self.header.interrupted {
            s.note("interrupted: no dram-map.toml is written from an interrupted search");
        }
        s
    }
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

/// A function's address bits, `6 13 17`.
fn bits(f: &FoundFunction) -> String {
    let bits: Vec<String> = f.bits.iter().map(u32::to_string).collect();
    bits.join(" ")
}

/// The latency histogram of the threshold pairs, with the threshold.
fn histogram(report: &Report) -> LineChart {
    let latencies = &report.threshold_latencies;
    let mut chart = LineChart::new(
        "Row-buffer timing: latency of random address pairs",
        "latency (cycles)",
        "pairs",
    );
    if latencies.is_empty() {
        return chart;
    }
    let low = *latencies.iter().min().unwrap_or(&0);
    let high = *latencies.iter().max().unwrap_or(&1);
    let bins = 60u32;
    let width = ((high - low) / bins).max(1);
    let mut counts = vec![0u32; bins as usize + 1];
    for &latency in latencies {
        counts[((latency - low) / width).min(bins) as usize] += 1;
    }
    let points = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (f64::from(low + i as u32 * width), f64::from(c)))
        .collect();
    chart
        .series
        .push(Series::new("pairs", SeriesStyle::LineWithMarkers, points));
    chart
        .x_markers
        .push((f64::from(report.solution.threshold), "threshold".into()));
    chart
}
