//! The bench protocol: what every bench provides ([`Bench`]) and the one
//! driver that runs it ([`run`]), in the spirit of hyperfine's
//! `benchmark/` and `export/`.
//!
//! A bench says how to plan a run from its parameters and measure the plan
//! (its interleaved rounds): its plan type implements [`Plan`]; and how to
//! assemble the measurements into the report its JSON holds, write its
//! tables and charts, and summarise the report: its report type implements
//! [`Bench`]. Each step is written once, where the bench's code for it
//! lives (`plan.rs`, `measure.rs`, `report.rs`). The
//! driver owns what every bench repeats: the round tally, recording the
//! rounds and a Ctrl-C stop in the header, the output directory (every
//! file written atomically), the JSON result and its list of files, and the
//! summary's `interrupted` fact.

use super::{BenchOptions, Finished, OutputDir, Progress, RunHeader, Summary, WithDerived};
use crate::Result;
use serde::Serialize;

/// A bench's plan: what it will measure, resolved from the parameters and
/// the machine before anything runs (so bad input is refused first), and
/// its measurement. Implemented by each bench's plan type.
pub trait Plan: Sized {
    /// The bench's parameters.
    type Params;
    /// What the rounds measured.
    type Measured;

    /// Resolves the parameters into a plan (no measurement yet).
    fn plan(params: &Self::Params) -> Result<Self>;

    /// Measures the plan: its rounds, cut short by a stop of `progress`.
    fn measure(&self, progress: &dyn Progress) -> Result<Self::Measured>;
}

/// The parameters a bench's [`Bench::Plan`] resolves from.
pub type ParamsOf<B> = <<B as Bench>::Plan as Plan>::Params;
/// What a bench's [`Bench::Plan`] measures.
pub type MeasuredOf<B> = <<B as Bench>::Plan as Plan>::Measured;

/// One bench, implemented by its report (the result written as
/// `<NAME>.json` and returned to the caller): how the report is assembled
/// from the measurements, its files and its summary, driven by [`run`].
pub trait Bench: Serialize + Sized {
    /// The bench's name: its default output directory
    /// (`tinct-bench/<NAME>`) and its JSON result (`<NAME>.json`).
    const NAME: &'static str;
    /// Whether the bench measures in interleaved rounds, whose tally (and
    /// a stop) the driver records in the header; a bench without rounds
    /// records its own interruption in [`Bench::assemble`].
    const ROUNDS: bool = true;
    /// What the bench plans and measures.
    type Plan: Plan;

    /// The report of a measured plan (`stopped`: a stop was requested).
    fn assemble(plan: Self::Plan, measured: MeasuredOf<Self>, stopped: bool) -> Result<Self>;

    /// The run's header inside the report.
    fn header(&mut self) -> &mut RunHeader;

    /// The report's list of the files written (the JSON itself included),
    /// if it keeps one: filled just before the JSON is written, and the
    /// summary's last note.
    fn files(&mut self) -> Option<&mut Vec<String>> {
        None
    }

    /// Stores what the run found outside its output directory (a
    /// calibration file, a task set), recording where in the report. A
    /// failure fails the run, after its files are written.
    fn store(&mut self, _params: &ParamsOf<Self>) -> Result<()> {
        Ok(())
    }

    /// Writes the bench's tables, charts and other files besides
    /// `<NAME>.json`.
    fn write(&self, out: &mut OutputDir) -> Result<()>;

    /// What `<NAME>.json` states beyond the report's own fields, derived
    /// from them when it is written (extremes, orderings) and written
    /// after them: never stored, so never out of step with what was
    /// measured. Nothing by default.
    fn derived(&self) -> impl Serialize {}

    /// The one-screen summary (the driver adds the `interrupted` fact).
    fn summary(&self, params: &ParamsOf<Self>, out: &OutputDir) -> Summary;
}

/// The accessors of [`Bench`] for a report whose run header is its field
/// `header` and, with `files`, whose list of files is its field `files`:
/// `report_fields!(header, files);` inside the `impl Bench`.
macro_rules! report_fields {
    (header) => {
        fn header(&mut self) -> &mut $crate::harness::RunHeader {
            &mut self.header
        }
    };
    (header, files) => {
        $crate::harness::report_fields!(header);

        fn files(&mut self) -> Option<&mut Vec<String>> {
            Some(&mut self.files)
        }
    };
}
pub(crate) use report_fields;

/// Runs bench `B`: plans, measures the rounds, assembles the report,
/// records the rounds and any stop in its header, stores what it stores,
/// writes its files and `<NAME>.json` (which lists them) into the output
/// directory of `options` (the shared options among `params`), and returns
/// the report with its summary.
pub fn run<B: Bench>(
    options: &BenchOptions,
    params: &ParamsOf<B>,
    progress: &dyn Progress,
) -> Result<Finished<B>> {
    let mut report = measure::<B>(params, progress)?;
    let stored = report.store(params);
    let mut out = OutputDir::create(options.out_dir(B::NAME))?;
    let json = format!("{}.json", B::NAME);
    // A previous run's JSON goes first: should writing stop halfway, the
    // directory holds this run's files and no JSON describing another run.
    let previous = out.path().join(&json);
    match std::fs::remove_file(&previous) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => {
            return Err(crate::Error::Write {
                path: previous,
                source,
            });
        }
    }
    report.write(&mut out)?;
    if let Some(files) = report.files() {
        *files = out.files_with(&json);
    }
    out.write_json(&json, &as_written(&report))?;
    stored?;
    let mut summary = report.summary(params, &out);
    if let Some(files) = report.files().filter(|files| !files.is_empty()) {
        summary.note(format!("files: {}", files.join(", ")));
    }
    summary.interruption(report.header(), out.path());
    Ok(Finished {
        result: report,
        summary,
    })
}

/// The report as `<NAME>.json` holds it: its own fields, then those
/// [`Bench::derived`] derives from them.
pub fn as_written<B: Bench>(report: &B) -> WithDerived<'_, B, impl Serialize + '_> {
    WithDerived {
        value: report,
        derived: report.derived(),
    }
}

/// Runs bench `B` without writing anything: plans, measures the rounds and
/// assembles the report, the rounds and any stop recorded in its header.
pub fn measure<B: Bench>(params: &ParamsOf<B>, progress: &dyn Progress) -> Result<B> {
    let plan = B::Plan::plan(params)?;
    if B::ROUNDS {
        super::interleaved::start_rounds();
    }
    let measured = plan.measure(progress)?;
    let stopped = progress.stop_requested();
    let mut report = B::assemble(plan, measured, stopped)?;
    if B::ROUNDS {
        report.header().record_rounds(stopped);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::{Interleaved, NoProgress, StopAfter};

    /// A toy bench: three conditions timed by the interleaved rounds.
    #[derive(Serialize)]
    struct ToyReport {
        header: RunHeader,
        medians: Vec<u64>,
        files: Vec<String>,
    }

    #[derive(Serialize)]
    struct Row {
        condition: usize,
        median_ns: u64,
    }

    impl Plan for RunHeader {
        type Params = BenchOptions;
        type Measured = Vec<u64>;

        fn plan(params: &BenchOptions) -> Result<RunHeader> {
            Ok(RunHeader::new(ToyReport::NAME, params, 5, vec![0]))
        }

        fn measure(&self, progress: &dyn Progress) -> Result<Vec<u64>> {
            let samples = Interleaved::new(["a", "b", "c"], self.reps)
                .seed(self.seed)
                .run::<crate::Error>(progress, |c| Ok(std::hint::black_box(c as u64 + 1)))?;
            Ok((0..3)
                .filter_map(|c| samples.stats(c).map(|s| s.median))
                .collect())
        }
    }

    impl Bench for ToyReport {
        const NAME: &'static str = "toy";
        type Plan = RunHeader;

        fn assemble(header: RunHeader, medians: Vec<u64>, _: bool) -> Result<ToyReport> {
            let files = Vec::new();
            Ok(ToyReport {
                header,
                medians,
                files,
            })
        }

        report_fields!(header, files);

        /// The condition of the smallest median, derived when written.
        fn derived(&self) -> impl Serialize {
            let fastest = (0..self.medians.len()).min_by_key(|&c| self.medians[c]);
            serde_json::json!({ "fastest": fastest })
        }

        fn write(&self, out: &mut OutputDir) -> Result<()> {
            let rows: Vec<Row> = self
                .medians
                .iter()
                .enumerate()
                .map(|(condition, &median_ns)| Row {
                    condition,
                    median_ns,
                })
                .collect();
            out.write_csv("toy.csv", &rows)?;
            Ok(())
        }

        fn summary(&self, _: &BenchOptions, _: &OutputDir) -> Summary {
            Summary::of_run(&self.header)
        }
    }

    fn options(dir: &std::path::Path) -> BenchOptions {
        BenchOptions {
            quick: true,
            out: Some(dir.to_path_buf()),
            ..BenchOptions::default()
        }
    }

    /// The files of `dir`, sorted.
    fn listing(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_run_whose_writing_fails_leaves_no_json_of_an_earlier_run() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("toy");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("toy.json"), "an earlier run's JSON").unwrap();
        // toy.csv cannot be written: a directory holds its name.
        std::fs::create_dir(dir.join("toy.csv")).unwrap();
        assert!(run::<ToyReport>(&options(&dir), &options(&dir), &NoProgress).is_err());
        assert!(
            !dir.join("toy.json").exists(),
            "the earlier JSON would describe another run beside this one's files"
        );
    }

    #[test]
    fn a_complete_run_writes_its_files_atomically_and_lists_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("toy");
        // A file of the same name from an earlier run is replaced whole, by
        // a rename: a reader that had it open still reads the old file (a
        // write in place would have truncated it under the reader).
        std::fs::create_dir_all(&dir).unwrap();
        let earlier = "an earlier, longer run's JSON";
        std::fs::write(dir.join("toy.json"), earlier).unwrap();
        let mut reader = std::fs::File::open(dir.join("toy.json")).unwrap();
        let done = run::<ToyReport>(&options(&dir), &options(&dir), &NoProgress).unwrap();
        let mut read = String::new();
        std::io::Read::read_to_string(&mut reader, &mut read).unwrap();
        assert_eq!(read, earlier);
        assert_eq!(listing(&dir), ["toy.csv", "toy.json"], "no temporary left");
        assert!(!done.result.header.interrupted);
        assert_eq!(done.result.header.rounds_completed, Some(5));
        assert_eq!(done.result.medians.len(), 3);
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("toy.json")).unwrap()).unwrap();
        assert_eq!(
            json["files"],
            serde_json::json!([
                dir.join("toy.csv").display().to_string(),
                dir.join("toy.json").display().to_string()
            ])
        );
        // The derived field comes after the report's own, computed from them.
        let text = std::fs::read_to_string(dir.join("toy.json")).unwrap();
        let at = |key: &str| text.find(&format!("\n  \"{key}\": ")).unwrap();
        assert!(
            at("medians") < at("files") && at("files") < at("fastest"),
            "{text}"
        );
        let medians = &done.result.medians;
        let fastest = json["fastest"].as_u64().unwrap() as usize;
        assert_eq!(medians[fastest], *medians.iter().min().unwrap());
        let csv = std::fs::read_to_string(dir.join("toy.csv")).unwrap();
        assert!(csv.starts_with("condition,median_ns\n0,"), "{csv}");
        assert!(done.summary.facts.iter().all(|(k, _)| k != "interrupted"));
    }

    #[test]
    fn a_stopped_run_records_its_interruption_in_header_and_summary() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("toy");
        // Stops after the first round's three conditions.
        let done = run::<ToyReport>(&options(&dir), &options(&dir), &StopAfter::new(3)).unwrap();
        let header = &done.result.header;
        assert!(header.interrupted);
        assert_eq!(header.rounds_requested, Some(5));
        assert!(header.rounds_completed.is_some_and(|n| n < 5), "{header:?}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("toy.json")).unwrap()).unwrap();
        assert_eq!(json["header"]["interrupted"], true);
        let said = done.summary.interrupted_note();
        assert!(said.contains("rounds finished before the stop"), "{said}");
        assert!(said.ends_with(&dir.display().to_string()), "{said}");
    }
}
