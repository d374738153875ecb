//! How much slower one condition ran than another: the ratios of two
//! measured distributions at the statistics the reports compare (WCET, p99,
//! median), derived in one place rather than divided by hand at each site.
//!
//! A report keeps both distributions and a [`Ratio`] of them, written
//! either as an object of its own (`{"wcet": …, "p99": …, "median": …}`)
//! or flattened into its parent under a prefix declared with
//! `ratio_keys!` (`shared_over_sequential_wcet`, …), so that each JSON
//! key a report has always written stays.

use super::Durations;
use serde::{Deserialize, Serialize};
use tinct_report::stats::ratio;

/// One distribution over another at the WCET (largest sample), the 99th
/// percentile and the median; each 0 where the other's is 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ratio {
    /// WCET over WCET.
    pub wcet: f64,
    /// p99 over p99.
    pub p99: f64,
    /// Median over median.
    pub median: f64,
}

impl Ratio {
    /// `numerator` over `denominator`.
    pub fn of(numerator: &Durations, denominator: &Durations) -> Ratio {
        Ratio {
            wcet: ratio(numerator.max, denominator.max),
            p99: ratio(numerator.p99, denominator.p99),
            median: ratio(numerator.median, denominator.median),
        }
    }

    /// `WCET 1.52x, p99 1.31x, median 1.10x`, for a summary.
    pub fn describe(&self) -> String {
        format!(
            "WCET {:.2}x, p99 {:.2}x, median {:.2}x",
            self.wcet, self.p99, self.median
        )
    }
}

/// Declares a module for `#[serde(flatten, with = "NAME")]` on a [`Ratio`]
/// field: the ratio written as the keys `<PREFIX>wcet`, `<PREFIX>p99` and
/// `<PREFIX>median` of its parent.
/// (Doc comments written on a use are for the reader of the report type.)
macro_rules! ratio_keys {
    ($(#[$doc:meta])* $name:ident = $prefix:literal) => {
        serde_with::with_prefix!(pub(crate) $name $prefix);
    };
}
pub(crate) use ratio_keys;

#[cfg(test)]
mod tests {
    use super::*;

    ratio_keys!(shared_over = "shared_over_");

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Parent {
        name: String,
        #[serde(flatten, with = "shared_over")]
        shared_over: Ratio,
        #[serde(flatten, with = "private_over")]
        private_over: Ratio,
    }

    ratio_keys!(private_over = "private_over_");

    fn durations(samples: &[u64]) -> Durations {
        Durations::of(samples).unwrap()
    }

    #[test]
    fn a_ratio_divides_each_statistic_and_is_zero_over_zero() {
        let r = Ratio::of(&durations(&[10, 20, 40]), &durations(&[5, 10, 10]));
        assert_eq!((r.wcet, r.p99, r.median), (4.0, 4.0, 2.0));
        assert_eq!(r.describe(), "WCET 4.00x, p99 4.00x, median 2.00x");
        let zero = Ratio::of(&durations(&[10]), &durations(&[0]));
        assert_eq!(zero.median, 0.0);
    }

    #[test]
    fn flattened_ratios_keep_their_prefixed_keys_and_read_back() {
        let parent = Parent {
            name: "x".into(),
            shared_over: Ratio::of(&durations(&[30]), &durations(&[10])),
            private_over: Ratio::of(&durations(&[5]), &durations(&[10])),
        };
        let json = serde_json::to_value(&parent).unwrap();
        assert_eq!(json["shared_over_wcet"], 3.0);
        assert_eq!(json["shared_over_median"], 3.0);
        assert_eq!(json["private_over_p99"], 0.5);
        assert_eq!(json["name"], "x");
        let back: Parent = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back, parent);
        // A missing statistic is refused, never read as a default (the
        // error names the statistic; serde_json's adds the file position).
        let mut partial = json;
        partial.as_object_mut().unwrap().remove("private_over_p99");
        let refused = serde_json::from_value::<Parent>(partial).unwrap_err();
        assert!(refused.to_string().contains("`p99`"), "{refused}");
    }
}
