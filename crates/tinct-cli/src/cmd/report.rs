//! `tinct report DIR`: one self-contained HTML page (no network: style,
//! script and charts inline) from a run directory (`tinct run`, `tinct
//! demo`) or a bench directory (`tinct bench ... --out DIR`). The pages are
//! made by tinct-rt (`output::page`, run directories) and tinct-report
//! (`bench_page`); this command picks one, writes the file and says where.

use crate::cmd::run::rt_error;
use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_report::ReportError;
use tinct_report::bench_page::{bench_page, is_bench_dir};
use tinct_verify::output::RunFiles;
use tinct_verify::output::page::run_page;

/// Arguments of `tinct report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// A run directory (summary.json, jobs.csv, ...) or a bench directory
    /// (a bench's result JSON, SVG and CSV files).
    pub dir: PathBuf,
    /// Where to write the page. Default: DIR/report.html.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

fn report_error(e: ReportError) -> CliError {
    match e {
        ReportError::Input { .. } => CliError::Input(e.to_string()),
        other => CliError::Failed(anyhow::Error::new(other)),
    }
}

/// Writes the page. Exit status 0 when written, 1 when it cannot be
/// written, 2 when DIR is neither kind of directory or a file in it does
/// not read (the file and line named).
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let dir = &args.dir;
    if let Some(out) = &args.out {
        crate::output::output_file(out, "--out")?;
    }
    let page = if RunFiles::is_run_dir(dir) {
        run_page(&RunFiles::read(dir).map_err(rt_error)?)
    } else if is_bench_dir(dir) {
        bench_page(dir).map_err(report_error)?
    } else {
        return Err(CliError::Input(format!(
            "{}: expected a run directory (summary.json and jobs.csv) or a bench directory \
             (a result JSON with `bench` and `machine`), found neither",
            dir.display()
        )));
    };
    let out = args.out.clone().unwrap_or_else(|| dir.join("report.html"));
    std::fs::write(&out, page.to_html())
        .map_err(|e| CliError::Failed(anyhow::anyhow!("cannot write {}: {e}", out.display())))?;
    println!("wrote {} (one file, no network needed)", out.display());
    Ok(ExitCode::SUCCESS)
}
