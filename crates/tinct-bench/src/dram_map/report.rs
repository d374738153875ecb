//! The result of `tinct bench dram-map` (`dram-map.json`): its type, the
//! notes on what was found, the files and the summary.

use super::measure::Measured;
use super::plan::Plan;
use super::solver::{self, Cluster, FoundFunction, Solution, SolverOptions};
use crate::Result;
use crate::harness::{
    Columns, LineChart, Machine, OutputDir, RunHeader, Series, SeriesStyle, Summary, report_fields,
};
use serde::{Deserialize, Serialize};
use tinct_core::dram_map::{AddressKind, DramMap};
use tinct_report::stats::Histogram;

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
        // A stopped search refused itself as interrupted.
        let interrupted = solution.refusal.as_deref() == Some(solver::INTERRUPTED);
        Ok(Report {
            header: RunHeader {
                interrupted,
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

    /// Writes `dram-map.csv`, `dram-map.svg` and `dram-map.toml` (only when found).
    fn write(&self, out: &mut OutputDir) -> Result<()> {
        let functions = &self.solution.functions;
        let rows = functions.iter().map(|f| {
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
                confidence: functions
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
            let (samples, mib) = (self.samples, self.buffer_bytes >> 20);
            let measured = self.solution.measurements;
            let header = [
                "tinct bench dram-map: DRAM bank functions found by row-buffer conflict timing"
                    .into(),
                format!(
                    "{samples} addresses of {mib} MiB, {measured} measurements; bank bit i = \
                     parity(address & mask i)"
                ),
            ];
            out.write_text("dram-map.toml", &map.to_toml(&header))?;
        }
        Ok(())
    }

    /// The one-screen summary.
    fn summary(&self, _: &super::Params, _: &OutputDir) -> Summary {
        let (solution, mib) = (&self.solution, self.buffer_bytes >> 20);
        let mut s = Summary::titled(
            "tinct bench dram-map (row-buffer conflict timing)",
            &self.header,
        );
        s.fact(
            "sampled",
            format!(
                "{} addresses of a {mib} MiB buffer, {} timings each, {} measurements in {:.0} ms",
                self.samples, self.rounds, solution.measurements, self.elapsed_ms
            ),
        );
        let cluster = |c: &Cluster| format!("{:.0} ± {:.0}", c.mean, c.stddev);
        let (fast_is, slow_is) = (cluster(&solution.fast), cluster(&solution.slow));
        let (slow, pairs) = (
            solution.slow.count,
            solution.fast.count + solution.slow.count,
        );
        let separation = solution.separation;
        s.fact(
            "timing",
            format!(
                "fast {fast_is}, slow {slow_is} cycles ({slow} of {pairs} pairs); separation \
                 {separation:.1} standard deviations"
            ),
        );
        let found = solution.functions.len();
        let verdict = match &solution.refusal {
            _ if solution.found => format!(
                "FOUND {found} functions ({} bank classes); same-bank check {:.0} %",
                1u64 << found,
                100.0 * solution.same_bank_slow_rate
            ),
            Some(why) => format!("REFUSED: {why}"),
            None => "REFUSED".into(),
        };
        s.fact("verdict", verdict);
        if found > 0 {
            s.table(&["function", "address bits", "confidence", "pairs (slow)"]);
            for f in &solution.functions {
                let (mask, confidence, pairs) = (f.mask, f.confidence, f.pairs);
                s.row(vec![
                    format!("{mask:#x}"),
                    bits(f),
                    format!("{confidence:.3}"),
                    format!("{pairs} ({})", f.slow),
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

/// What the reader must know: a VM's addresses are not the host's, the
/// address bits the functions are known on, channels listed as banks.
fn notes(solution: &Solution, guest: bool) -> Vec<String> {
    let top = 63 - solution.varying_bits.leading_zeros();
    let guest = guest.then(|| {
        "virtual machine: these are guest-physical addresses, which the hypervisor maps to host \
         frames in its own way; the host's DRAM banks cannot be found from here, and whatever \
         was found describes nothing real"
            .to_string()
    });
    let known = format!(
        "functions are known on address bits 6-{top} (the bits the sampled addresses vary in); \
         a function may also read higher bits (a larger --buffer spans more)"
    );
    let channels = "row-buffer timing cannot tell channels from banks: every function is listed \
                    as a bank function";
    guest.into_iter().chain([known, channels.into()]).collect()
}

/// A function's address bits, `6 13 17`.
fn bits(f: &FoundFunction) -> String {
    let bits: Vec<String> = f.bits.iter().map(u32::to_string).collect();
    bits.join(" ")
}

/// The latency histogram of the threshold pairs, with the threshold.
fn histogram(report: &Report) -> LineChart {
    let title = "Row-buffer timing: latency of random address pairs";
    let mut chart = LineChart::new(title, "latency (cycles)", "pairs");
    let latencies: Vec<u64> = report
        .threshold_latencies
        .iter()
        .map(|&l| u64::from(l))
        .collect();
    if let Some(histogram) = Histogram::of(&latencies, 60) {
        chart.series = Series::grouped(histogram.step_points(), |(latency, pairs)| {
            Some((
                "pairs".into(),
                SeriesStyle::Steps,
                latency as f64,
                pairs as f64,
            ))
        });
        let threshold = f64::from(report.solution.threshold);
        chart.x_markers.push((threshold, "threshold".into()));
    }
    chart
}
