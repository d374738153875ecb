//! A whole run as `tinct run` does it, for any caller: check that the run
//! can start ([`crate::runtime::check_can_run`]), prepare its directory
//! before the first release ([`RunDir::prepare`]), run, summarize with the
//! proof that the colouring isolates ([`crate::isolation::prove`]), and
//! write every file ([`RunDir::write`], with its fallback).

use crate::Result;
use crate::output::{RunContext, RunDir, Summary, Written, summarize};
use crate::runtime::{RunOptions, RunResult, check_can_run};
use crate::spec::RunSpec;
use std::path::Path;
use tinct_core::analysis::Analysis;

/// What a run in a directory gives back.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The verdict, as written to `summary.json`.
    pub summary: Summary,
    /// Every job record.
    pub result: RunResult,
    /// Where the files went (the run directory, or a fallback).
    pub written: Written,
}

/// Runs `spec` and writes its directory `out`, with `analysis` (that of the
/// plan `spec` came from, if any) as `analysis.json` and the machine's
/// description. Errors before the first release (bad input, privileges, a
/// directory that cannot be written) leave no run; once the run started,
/// what it recorded is written.
pub fn run_in_dir(
    spec: &RunSpec,
    analysis: Option<&Analysis>,
    options: RunOptions,
    out: &Path,
) -> Result<Recorded> {
    check_can_run(spec, &options)?;
    let dir = RunDir::prepare(out)?;
    let machine = tinct_sys::machine::Machine::describe();
    let result = crate::runtime::run(spec, options)?;
    let mut summary = summarize(&spec.source, spec.duration_ns, &result);
    crate::isolation::prove(spec, &result.tasks).attach_to(&mut summary);
    let context = RunContext { analysis, machine };
    let written = dir.write(&summary, &result, &context)?;
    Ok(Recorded {
        summary,
        result,
        written,
    })
}
