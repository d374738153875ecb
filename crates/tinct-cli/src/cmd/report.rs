//! `tinct report DIR`: one self-contained HTML page (no network: style,
//! script and charts inline) from a run directory (`tinct run`, `tinct
//! demo`) or a bench directory (`tinct bench ... --out DIR`). The pages are
//! made by tinct-rt (`output::page`, run directories) and tinct-report
//! (`bench_page`); tinct-rt's `output::page::write_report` picks one and
//! writes it, this command says where.

use crate::cmd::run::rt_error;
use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_verify::output::page::write_report;

/// Arguments of `tinct report`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// A run directory (summary.json, jobs.csv, ...) or a bench directory
    /// (a bench's result JSON, SVG and CSV files).
    pub dir: PathBuf,
    /// Where to write the page. Default: DIR/report.html.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

/// Writes the page. Exit status 0 when written, 1 when it cannot be
/// written, 2 when DIR is neither kind of directory or a file in it does
/// not read (the file and line named).
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    if let Some(out) = &args.out {
        crate::output::output_file(out, "--out")?;
    }
    let out = write_report(&args.dir, args.out.as_deref()).map_err(rt_error)?;
    println!("wrote {} (one file, no network needed)", out.display());
    Ok(ExitCode::SUCCESS)
}
