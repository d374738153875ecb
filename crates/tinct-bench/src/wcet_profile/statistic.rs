//! Which statistic of the measured jobs becomes C^p (`--use`): the
//! largest observed job (kim2013's WCET estimate), a high nearest-rank
//! percentile, or the pWCET at a per-job exceedance probability from the
//! EVT fit (tinct-report `stats::evt`).

use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use tinct_report::stats::evt::EvtReport;
use tinct_report::stats::nearest_rank_ppm;

/// A statistic of one condition's jobs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The largest job.
    Max,
    /// The nearest-rank percentile at this many parts per million
    /// (999 000: p99.9).
    Percentile(u32),
    /// The pWCET at this per-job exceedance probability.
    Pwcet(f64),
}

impl Statistic {
    /// `max`, `pN` with up to four decimals (`p99.9`, `p99.99`), or
    /// `pwcet:P` with 0 < P < 1 (`pwcet:1e-9`).
    pub fn parse(text: &str) -> Result<Statistic> {
        let bad = |why: &str| {
            Error::option(
                "--use",
                format!(
                    "max, a percentile such as p99.9, or pwcet:PROBABILITY such as pwcet:1e-9; {why}"
                ),
                format!("`{text}`"),
            )
        };
        if text == "max" {
            return Ok(Statistic::Max);
        }
        if let Some(probability) = text.strip_prefix("pwcet:") {
            let p: f64 = probability
                .parse()
                .map_err(|_| bad("the probability is not a number"))?;
            return if p > 0.0 && p < 1.0 {
                Ok(Statistic::Pwcet(p))
            } else {
                Err(bad("the probability must lie strictly between 0 and 1"))
            };
        }
        let Some(percent) = text.strip_prefix('p') else {
            return Err(bad("unknown statistic"));
        };
        let (whole, fraction) = percent.split_once('.').unwrap_or((percent, ""));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(whole) || !(fraction.is_empty() || digits(fraction)) || fraction.len() > 4 {
            return Err(bad("a percentile has at most four decimals"));
        }
        let whole: u32 = whole.parse().map_err(|_| bad("not a percentile"))?;
        let fraction: u32 = format!("{fraction:0<4}")
            .parse()
            .map_err(|_| bad("not a percentile"))?;
        let ppm = whole
            .checked_mul(10_000)
            .and_then(|w| w.checked_add(fraction))
            .filter(|&ppm| ppm > 0 && ppm <= 1_000_000)
            .ok_or_else(|| bad("a percentile lies in (0, 100]"))?;
        Ok(Statistic::Percentile(ppm))
    }

    /// The statistic of `sorted` jobs (ns) and their EVT fit; `Err` says
    /// why it does not exist.
    pub fn of(&self, sorted: &[u64], evt: &EvtReport) -> std::result::Result<u64, String> {
        match *self {
            Statistic::Max => sorted.last().copied().ok_or_else(|| "no jobs".into()),
            Statistic::Percentile(ppm) => {
                nearest_rank_ppm(sorted, ppm).ok_or_else(|| "no jobs".into())
            }
            Statistic::Pwcet(p) => {
                if !evt.supported {
                    return Err(format!(
                        "the data do not support an EVT fit: {}",
                        evt.problems.join("; ")
                    ));
                }
                evt.supported_pwcet(p).ok_or_else(|| {
                    format!("no pWCET at {p:e} (not requested, or not a representable time)")
                })
            }
        }
    }

    /// The exceedance probability this statistic needs from the EVT fit.
    pub fn exceedance(&self) -> Option<f64> {
        match *self {
            Statistic::Pwcet(p) => Some(p),
            _ => None,
        }
    }
}

impl std::str::FromStr for Statistic {
    type Err = Error;

    /// As [`Statistic::parse`].
    fn from_str(text: &str) -> Result<Statistic> {
        Statistic::parse(text)
    }
}

impl std::fmt::Display for Statistic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Statistic::Max => f.write_str("max"),
            Statistic::Percentile(ppm) => {
                let (whole, fraction) = (ppm / 10_000, ppm % 10_000);
                if fraction == 0 {
                    write!(f, "p{whole}")
                } else {
                    let fraction = format!("{fraction:04}");
                    write!(f, "p{whole}.{}", fraction.trim_end_matches('0'))
                }
            }
            Statistic::Pwcet(p) => write!(f, "pwcet:{p:e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinct_report::stats::evt::{EvtOptions, fit};

    #[test]
    fn statistics_parse_and_print_back() {
        for (text, statistic) in [
            ("max", Statistic::Max),
            ("p99.9", Statistic::Percentile(999_000)),
            ("p99.99", Statistic::Percentile(999_900)),
            ("p50", Statistic::Percentile(500_000)),
            ("p100", Statistic::Percentile(1_000_000)),
            ("pwcet:1e-9", Statistic::Pwcet(1e-9)),
        ] {
            assert_eq!(Statistic::parse(text).unwrap(), statistic, "{text}");
            assert_eq!(statistic.to_string(), text);
        }
        for bad in [
            "min",
            "p",
            "p0",
            "p100.1",
            "p99.99999",
            "p9x",
            "p-1",
            "pwcet:0",
            "pwcet:1",
            "pwcet:x",
            "pwcet:",
            "p.5",
        ] {
            let err = Statistic::parse(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("found `{bad}`")), "{bad}: {err}");
        }
    }

    #[test]
    fn each_statistic_of_a_sample() {
        let sorted: Vec<u64> = (1..=1000).collect();
        let evt = fit(&sorted, &EvtOptions::default()).unwrap();
        assert_eq!(Statistic::Max.of(&sorted, &evt), Ok(1000));
        assert_eq!(Statistic::Percentile(999_000).of(&sorted, &evt), Ok(999));
        // Sorted jobs are the opposite of i.i.d.: no pWCET, and the reason.
        let err = Statistic::Pwcet(1e-9).of(&sorted, &evt).unwrap_err();
        assert!(err.contains("do not support"), "{err}");
        assert_eq!(Statistic::Pwcet(1e-9).exceedance(), Some(1e-9));
        assert_eq!(Statistic::Max.exceedance(), None);
    }
}
