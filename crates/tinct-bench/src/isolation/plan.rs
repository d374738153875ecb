//! Planning `tinct bench isolation`: sizes, the reservation mechanism, the
//! victim's and the aggressors' colour sets and, for page colouring, the
//! coloured arena with each thread's pages (kim2013 Section III-C).

use super::Params;
use super::reservation::{self, Mechanism};
use crate::harness::RunSettings;
use crate::page_placement::PagedMemory;
use crate::{Error, Result};
use tinct_core::units::Bytes;
use tinct_mem::PageId;

/// Arena slack over the pages each colour set must hold.
const ARENA_SLACK: f64 = 1.5;

/// What a run measures, checked against this machine.
pub struct Plan {
    /// Quick, reps, seed; the CPUs are the victim's first, then one per
    /// aggressor.
    pub run: RunSettings,
    pub fifo: Option<u8>,
    pub jobs_per_round: u32,
    pub mechanism: Mechanism,
    /// Percentage of the colours (or of the L3 mask) for the victim.
    pub victim_percent: u32,
    pub mapping: tinct_mem::AddressMapping,
    /// Page colours of the LLC.
    pub colors: u32,
    /// The colours' bits and their source, in words.
    pub color_source: String,
    /// Colours `0..victim_colors` are the victim's, the rest the aggressors'.
    pub victim_colors: u32,
    pub page_bytes: u64,
    pub victim_pages: usize,
    pub aggressor_pages: usize,
    /// The machine, described before anything is measured.
    pub machine: crate::harness::Machine,
}

impl Plan {
    /// True when resctrl reserves the cache (else page colouring does).
    pub fn by_resctrl(&self) -> bool {
        matches!(self.mechanism, Mechanism::Resctrl(..))
    }

    /// The aggressors' CPUs.
    pub fn aggressor_cpus(&self) -> &[u32] {
        &self.run.cpus[1..]
    }
}

impl crate::harness::Plan for Plan {
    type Params = Params;
    type Measured = super::measure::Measured;

    /// Checks the parameters and chooses the reservation and the colour sets.
    fn plan(params: &Params) -> Result<Plan> {
        let machine = crate::harness::Machine::describe();
        let llc_bytes = machine.llc().map_or(32 << 20, |c| c.size_bytes);
        let common = &params.common;
        let quick = common.quick;
        let reps = common.reps_or(3, 10)?;
        let cpus = common.cpus(2)?;
        let victim_bytes = size_or(
            "--victim-size",
            params.victim_size,
            if quick { 2 << 20 } else { llc_bytes / 4 },
        )?;
        let aggressor_bytes = size_or(
            "--aggressor-size",
            params.aggressor_size,
            if quick { 8 << 20 } else { 2 * llc_bytes },
        )?;
        let jobs_per_round = params.jobs.unwrap_or(if quick { 10 } else { 50 });
        if jobs_per_round == 0 {
            return Err(Error::option("--jobs", "at least 1", "0"));
        }
        if params.victim_colors == 0 || params.victim_colors >= 100 {
            return Err(Error::option(
                "--victim-colors",
                "a percentage in 1..=99",
                params.victim_colors.to_string(),
            ));
        }
        let mechanism = reservation::choose(params.reservation, &params.resctrl_root)?;
        // Colouring needs the machine's colour bits (`--color-bits`,
        // TINCT_COLOR_BITS, the machine file or the derived rule); resctrl
        // reserves ways and needs none.
        let (color_bits, color_source) = match (common.colors(), &mechanism) {
            (Ok(resolved), _) => (resolved.bits.clone(), resolved.describe()),
            (Err(e), Mechanism::Resctrl(..)) => (Vec::new(), format!("none needed (resctrl): {e}")),
            (Err(e), _) => return Err(e),
        };
        let spec = tinct_mem::mapping::LayoutSpec {
            color_bits: Some(color_bits),
            ..Default::default()
        };
        let mapping = tinct_mem::machine_mapping(&spec)
            .map_err(|e| Error::Measurement(format!("page colors of this machine: {e}")))?;
        let colors = mapping.colors();
        if colors < 2 && !matches!(mechanism, Mechanism::Resctrl(..)) {
            return Err(Error::Measurement(format!(
                "the last-level cache has {colors} page color: reservation by coloring needs at least 2"
            )));
        }
        let page_bytes = mapping.page_size;
        Ok(Plan {
            machine,
            run: common.settings(reps, cpus),
            fifo: params.fifo,
            jobs_per_round,
            mechanism,
            victim_percent: params.victim_colors,
            victim_colors: (colors * params.victim_colors / 100).clamp(1, colors.max(2) - 1),
            colors,
            color_source,
            mapping,
            page_bytes,
            victim_pages: victim_bytes.div_ceil(page_bytes) as usize,
            aggressor_pages: aggressor_bytes.div_ceil(page_bytes) as usize,
        })
    }

    fn measure(&self, progress: &dyn crate::harness::Progress) -> Result<super::measure::Measured> {
        super::measure::measure(self, progress)
    }
}

/// `size` (default `default`), at least one page.
fn size_or(option: &str, size: Option<Bytes>, default: u64) -> Result<u64> {
    let bytes = size.map_or(default, |b| b.0);
    if bytes < 4096 {
        return Err(Error::option(
            option.to_string(),
            "at least one page (4KiB)",
            format!("{bytes} bytes"),
        ));
    }
    Ok(bytes)
}

/// For page colouring: the arena and each thread's pages in it (the
/// victim's from its colours first, then each aggressor's from the others).
pub(super) fn colored_arena(plan: &Plan) -> Result<(PagedMemory, Vec<Vec<PageId>>)> {
    let (colors, victim_colors) = (plan.colors, plan.victim_colors);
    let victim_set: Vec<u32> = (0..victim_colors).collect();
    let aggressor_set: Vec<u32> = (victim_colors..colors).collect();
    let aggressors = plan.aggressor_cpus().len();
    let victim_bytes = plan.victim_pages as u64 * plan.page_bytes;
    let aggressor_bytes = plan.aggressor_pages as u64 * plan.page_bytes;
    // Sizing with slack in floats; the fit check below is exact.
    let victim_need = victim_bytes as f64 * f64::from(colors) / f64::from(victim_colors);
    let aggressor_need = (aggressor_bytes * aggressors as u64) as f64 * f64::from(colors)
        / f64::from(colors - victim_colors);
    let arena_bytes = (victim_need.max(aggressor_need) * ARENA_SLACK) as u64;
    let victim_share = plan.victim_pages.div_ceil(victim_set.len());
    let aggressor_share = aggressors * plan.aggressor_pages.div_ceil(aggressor_set.len());
    let mut arena = PagedMemory::new_fitting(&plan.mapping, arena_bytes, |memory| {
        victim_set
            .iter()
            .all(|&c| memory.free_in_color(c) >= victim_share)
            && aggressor_set
                .iter()
                .all(|&c| memory.free_in_color(c) >= aggressor_share)
    })?;
    let mut groups = vec![arena.take_colored(&victim_set, plan.victim_pages)?];
    for _ in 0..aggressors {
        groups.push(arena.take_colored(&aggressor_set, plan.aggressor_pages)?);
    }
    Ok((arena, groups))
}
