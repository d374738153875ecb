//! What tinct knows about whether page colouring isolates tasks on this
//! machine: tinct-sys's colour probe on the last-level cache, as a run
//! records it ([`crate::runtime::RunResult::colouring`]) and as the
//! attribution of late jobs weighs it (tinct-verify's `attribution`).

use serde::{Deserialize, Serialize};

/// What tinct knows about whether page colouring isolates tasks here
/// (tinct-sys's colour probe on the last-level cache).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Colouring {
    /// Not probed.
    #[default]
    Unknown,
    /// Same-colour lines conflict: colouring partitions the cache.
    Effective,
    /// No conflicts: colours do not partition the cache here (a VM whose
    /// guest colours are not host colours).
    NotEffective,
    /// The probe could not tell.
    Inconclusive,
}

impl Colouring {
    /// In words, for outputs.
    pub fn describe(self) -> &'static str {
        match self {
            Colouring::Unknown => "not probed",
            Colouring::Effective => "effective (the colour probe finds same-colour conflicts)",
            Colouring::NotEffective => {
                "NOT effective (the colour probe finds no same-colour conflicts: colours do not \
                 partition the cache here)"
            }
            Colouring::Inconclusive => "not shown effective (the colour probe is inconclusive)",
        }
    }

    /// Runs tinct-sys's colour probe on the last-level cache (`rounds`
    /// alternations of the conflict and control chases; about a second
    /// with 5) and returns its finding with the probe's explanation.
    /// `llc_bits` are the colour bits in force (consecutive), which the
    /// probe then tests instead of the way-size rule's: the finding is
    /// about the colours the run uses.
    pub fn probe(rounds: usize, llc_bits: Option<&[u32]>) -> (Colouring, String) {
        let options = tinct_sys::color_probe::ProbeOptions {
            rounds,
            llc_bits: llc_bits
                .and_then(|bits| bits.first().zip(bits.last()))
                .map(|(&low, &high)| (low, high + 1)),
            ..Default::default()
        };
        match tinct_sys::color_probe::probe_colors(options) {
            Ok(report) => match report.last_level() {
                Some(level) => (
                    Colouring::of_probe(level.verdict),
                    level.explanation.clone(),
                ),
                None => (
                    Colouring::Unknown,
                    "the colour probe found no colourable last-level cache".into(),
                ),
            },
            Err(e) => (Colouring::Unknown, format!("the colour probe failed: {e}")),
        }
    }

    /// [`Self::probe`] of the colour bits in force before a workload is
    /// read (`--color-bits` as `color_bits_flag`, else `TINCT_COLOR_BITS`,
    /// the machine file or the derived rule; a task set's own bits are not
    /// known yet), or of the way-size rule's when none resolve. Bits a
    /// source gives that are not usable (a bad flag or variable, an
    /// unreadable machine file) are refused, not probed around.
    pub fn probe_in_force(
        rounds: usize,
        color_bits_flag: Option<&str>,
    ) -> crate::Result<(Colouring, String)> {
        let page = tinct_sys::system::PageSize::read(&tinct_sys::SysRoot::live())
            .map_or(4096, |p| p.bytes);
        let in_force = match tinct_sys::color_source::resolve(
            tinct_sys::color_source::ColorRequest::flag("--color-bits", color_bits_flag),
            page,
        ) {
            Ok(resolved) => Some(resolved.bits),
            Err(tinct_sys::color_source::ColorSourceError::Unknown { .. }) => None,
            Err(refused) => return Err(refused.into()),
        };
        Ok(Colouring::probe(rounds, in_force.as_deref()))
    }

    /// From the colour probe's verdict on the last-level cache.
    pub fn of_probe(verdict: tinct_sys::color_probe::Verdict) -> Colouring {
        match verdict {
            tinct_sys::color_probe::Verdict::Effective => Colouring::Effective,
            tinct_sys::color_probe::Verdict::NotEffective => Colouring::NotEffective,
            tinct_sys::color_probe::Verdict::Inconclusive => Colouring::Inconclusive,
        }
    }
}
