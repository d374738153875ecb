//! Planning `tinct bench coherence`: the sizes, the loop mode and the
//! false-sharing increments checked, and the thread placements and the
//! Fig. 9 events this machine offers found, before anything runs.

use super::Params;
use super::placement::{self, Placement};
use crate::harness::RunSettings;
use crate::{Error, Result};

const QUICK_SIZES: [usize; 2] = [64, 512];
const FULL_SIZES: [usize; 6] = [64, 128, 256, 512, 1024, 2048];
/// Element updates per function per run of the quick mode: long enough
/// (a few ms) that thread start-up and wake-up skew do not decide the
/// orderings (see the README for how this was checked).
const QUICK_WORK: u64 = 1 << 21;
/// Repetitions of the quick mode.
const QUICK_REPS: u32 = 5;

/// The validated parameters and the machine's placements: what to measure.
pub struct Plan {
    /// Quick, reps, seed, and the CPUs (the sequential version's first).
    pub run: RunSettings,
    /// Array dimensions swept (ROWS = COLS).
    pub sizes: Vec<usize>,
    /// How many times a run goes over the arrays.
    pub loops: Loops,
    /// Increments per thread in the false-sharing variant.
    pub increments: u64,
    /// SCHED_FIFO priority of the measuring threads, if any.
    pub fifo: Option<u8>,
    /// The thread placements measured (same CPU, SMT siblings, cores
    /// sharing the LLC, other dies, the OS's choice), those this machine
    /// has.
    pub placements: Vec<Placement>,
    /// The counters of gracioli's Figure 9, where this machine has them.
    pub fig9: super::fig9::Fig9Events,
}

/// How many times a run goes over the arrays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loops {
    /// The same element updates per function at every size.
    EqualWork(u64),
    /// The paper's fixed repetition count.
    Fixed(u64),
}

impl Loops {
    /// Repetitions of the loop over `elements` elements.
    pub fn repetitions(self, elements: usize) -> u64 {
        match self {
            Loops::EqualWork(work) => (work / elements as u64).max(1),
            Loops::Fixed(repetitions) => repetitions,
        }
    }
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::measure::Measured;

    /// Checks the parameters and finds the placements this machine offers.
    fn plan(params: &Params) -> Result<Plan> {
        let common = &params.common;
        let quick = common.quick;
        let reps = common.reps_or(QUICK_REPS, 10)?;
        let sizes = match &params.sizes {
            Some(sizes) => sizes.clone(),
            None if quick => QUICK_SIZES.to_vec(),
            None => FULL_SIZES.to_vec(),
        };
        if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > 16384) {
            return Err(Error::option(
                "--sizes",
                "array dimensions in 1..=16384",
                bad.to_string(),
            ));
        }
        let loops = match (params.work, params.repetitions) {
            (Some(_), Some(_)) => {
                return Err(Error::option(
                    "--work and --repetitions",
                    "one of them",
                    "both",
                ));
            }
            (_, Some(0)) => {
                return Err(Error::option("--repetitions", "at least 1", "0"));
            }
            (_, Some(repetitions)) => Loops::Fixed(repetitions),
            (Some(work), None) => Loops::EqualWork(work),
            (None, None) => Loops::EqualWork(if quick { QUICK_WORK } else { 1 << 24 }),
        };
        let increments = params
            .increments
            .unwrap_or(if quick { 1 << 20 } else { 1 << 25 });
        if loops == Loops::EqualWork(0) || increments == 0 {
            return Err(Error::option("--work and --increments", "at least 1", "0"));
        }
        let cpus = common.cpus(1)?;
        let topology = tinct_sys::topology::Topology::read(&tinct_sys::SysRoot::live())?;
        let placements = placement::placements(&topology, &cpus);
        let fig9 = super::fig9::resolve(&tinct_sys::SysRoot::live())?;
        Ok(Plan {
            run: common.settings(reps, cpus),
            sizes,
            loops,
            increments,
            fifo: params.fifo,
            placements,
            fig9,
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(self, progress)
    }
}
