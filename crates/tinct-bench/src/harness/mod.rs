//! The framework shared by every bench.
//!
//! A bench implements [`Bench`] and runs through [`bench::run`], which owns
//! the steps every bench repeats. Inside its steps, a bench typically:
//! 1. takes a parameter struct holding [`BenchOptions`] and a [`Progress`];
//! 2. pins its measuring thread with [`pin::PinGuard`];
//! 3. describes the machine with [`Machine::describe`];
//! 4. measures conditions interleaved with [`Interleaved`] (so drift on a
//!    shared machine hits every condition alike), reducing samples to
//!    [`Durations`], with performance counter totals per condition
//!    ([`counters`]) that go into the header with [`RunHeader::add_counters`];
//! 5. writes its CSV and SVG through [`OutputDir`] ([`run`] writes the JSON
//!    and returns the result with its [`Summary`], data the caller renders,
//!    as [`Finished`]).
//!
//! Every result type derives `Deserialize`: tests read a bench's JSON back
//! into its type and write it again unchanged.

pub mod bench;
pub mod counters;
pub mod header;
pub mod interleaved;
pub mod machine;
pub mod memory_pass;
pub mod options;
pub mod output;
pub mod pin;
pub mod progress;
pub mod ratio;
pub mod summary;
pub mod summary_text;

pub(crate) use bench::report_fields;
pub use bench::{Bench, Plan, as_written, run};
pub use counters::{ConditionCounters, EventTotal, MissRate};
pub use header::RunHeader;
pub use interleaved::Interleaved;
pub use machine::Machine;
pub use options::{BenchOptions, RunSettings};
pub use output::{
    Columns, DISTRIBUTION_COLUMNS, DurationColumns, OutputDir, WithDerived, serialize_derived,
    write_atomically,
};
pub use progress::{NoProgress, Progress, StopAfter, unless_stopped};
pub use ratio::Ratio;
pub(crate) use ratio::ratio_keys;
pub use summary::{Finished, Summary};
pub use tinct_report::stats::{Counts, Durations};
pub use tinct_report::{LineChart, Series, SeriesStyle};
