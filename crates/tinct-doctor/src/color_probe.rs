//! The finding of `tinct doctor --probe-colors`: whether page colouring
//! partitions this machine's last-level cache, as measured by
//! [`tinct_sys::color_probe::probe_colors`], with the fix when it does not.

use super::{Finding, Level};
use tinct_sys::color_probe::{ProbeReport, Verdict};

/// The subject of the probe's finding.
pub const SUBJECT: &str = "color probe";

/// The finding of a colour probe (or of its failure to run).
pub fn finding(probe: &Result<ProbeReport, tinct_sys::Error>) -> Finding {
    let (level, found, fix) = match probe {
        Err(e) => (
            Level::Warning,
            format!("could not run: {e}"),
            Some("run `tinct doctor --probe-colors` as root (frame numbers are needed)".into()),
        ),
        Ok(report) => match report.last_level() {
            None => (
                Level::Warning,
                "no cache level could be probed (too few colors or pages of one color)".into(),
                None,
            ),
            Some(llc) => {
                let all: Vec<String> = report
                    .levels
                    .iter()
                    .map(|l| format!("{} {} (ratio {:.2})", l.cache, l.verdict.label(), l.ratio))
                    .collect();
                let level = match llc.verdict {
                    Verdict::Effective => Level::Ok,
                    _ => Level::Warning,
                };
                (
                    level,
                    all.join("; "),
                    fix(llc.verdict, report.virtual_machine),
                )
            }
        },
    };
    Finding {
        subject: SUBJECT.into(),
        level,
        found,
        fix,
    }
}

/// What to do about a last-level cache verdict.
fn fix(verdict: Verdict, virtual_machine: bool) -> Option<String> {
    match verdict {
        Verdict::Effective => None,
        Verdict::NotEffective if virtual_machine => Some(
            "guest-physical colors are not host cache colors here: measure isolation on bare \
             metal, or have the hypervisor back the guest with huge pages; colors still work \
             functionally (tinct-mem, tinct-sim)"
                .to_string(),
        ),
        Verdict::NotEffective => Some(
            "the cache is probably sliced or hashed: give the color functions explicitly \
             (color_functions in [platform]) or use resctrl"
                .to_string(),
        ),
        Verdict::Inconclusive => {
            Some("rerun on an idle machine (noise decides nothing); see the numbers".to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_that_cannot_run_is_a_warning_with_the_fix() {
        let finding = finding(&Err(tinct_sys::Error::InvalidArgument("no pagemap".into())));
        assert_eq!(finding.subject, SUBJECT);
        assert_eq!(finding.level, Level::Warning);
        assert!(finding.found.contains("no pagemap"), "{}", finding.found);
        assert!(finding.fix.is_some_and(|f| f.contains("as root")));
    }

    #[test]
    fn fixes_are_single_spaced_sentences() {
        for verdict in [Verdict::NotEffective, Verdict::Inconclusive] {
            for vm in [false, true] {
                let text = fix(verdict, vm).expect("a fix");
                assert!(!text.contains("  "), "{text:?}");
            }
        }
        assert_eq!(fix(Verdict::Effective, false), None);
    }
}
