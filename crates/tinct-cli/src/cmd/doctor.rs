//! `tinct doctor`: what this machine offers for cache-aware real-time work
//! and what to change. The diagnosis, its text and its JSON live in
//! tinct-doctor; this module only parses
//! arguments and prints.

use crate::error::CliError;
use std::path::PathBuf;
use std::process::ExitCode;
use tinct_doctor::{doctor_json, doctor_text};

/// Arguments of `tinct doctor`.
#[derive(clap::Args, Debug)]
pub(crate) struct Args {
    /// Print the report as JSON (the same struct as the tables).
    #[arg(long)]
    pub json: bool,
    /// Read sysfs and procfs under DIR instead of / (a fixture or a copy of
    /// another machine made with crates/tinct-sys/tests/fixtures/capture.sh);
    /// live probes are then reported as "not probed".
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Also measure whether page coloring partitions this machine's caches
    /// (pointer chases through same-color vs spread pages; a few seconds,
    /// needs root). Answers effective / not effective / inconclusive.
    #[arg(long, conflicts_with = "root")]
    pub probe_colors: bool,
    /// Candidate colour bits of the last-level cache, e.g. `12-16`: the
    /// probe tests them, and `--save` saves them.
    #[arg(long, value_name = "BITS")]
    pub color_bits: Option<String>,
    /// Save the colour bits in force (`--color-bits`, TINCT_COLOR_BITS, or
    /// the derived rule's) in the machine file (/etc/tinct/machine.toml, or
    /// TINCT_MACHINE_FILE), where every tinct command on this machine finds
    /// them; with `--probe-colors`, its verdict is saved as their evidence.
    #[arg(long, conflicts_with = "root")]
    pub save: bool,
    /// With `--save`: also save the DRAM bank and controller functions of
    /// this `tinct bench dram-map` file (the parts a page allocator
    /// controls), which `tinct exec --banks` then uses without flags.
    #[arg(long, value_name = "FILE", requires = "save")]
    pub dram_map: Option<PathBuf>,
}

/// Runs the diagnosis and prints it. Exit status 0 whenever it ran, even
/// with blockers; 2 if `--root` is not a directory, `--color-bits` is
/// malformed, or `--save` has no bits to save.
pub(crate) fn run(args: Args) -> Result<ExitCode, CliError> {
    let (report, probe) = tinct_doctor::examine(
        args.root.as_deref(),
        args.probe_colors,
        args.color_bits.as_deref(),
    )?;
    let text = if args.json {
        doctor_json(&report, probe.as_ref()).map_err(anyhow::Error::from)?
    } else {
        doctor_text(&report, probe.as_ref())
    };
    tinct_sys::stdio::write_stdout(&text)?;
    if args.save {
        let saved = tinct_sys::color_source::save_in_force(
            args.color_bits.as_deref(),
            probe.as_ref().and_then(|p| p.as_ref().ok()),
        )?;
        eprintln!("tinct doctor: {saved}");
        if let Some(map) = &args.dram_map {
            let saved =
                tinct_exec::save_dram_map(map, &mut |note| eprintln!("tinct doctor: {note}"))?;
            eprintln!("tinct doctor: {saved}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
