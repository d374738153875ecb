//! Extreme value theory for execution times: a probabilistic WCET (pWCET)
//! from measured jobs, or the reasons the measurements do not support one.
//!
//! The method is measurement-based probabilistic timing analysis as
//! Cucu-Grosjean et al. describe it ("Measurement-based probabilistic
//! timing analysis for multi-path programs", ECRTS 2012) on the block
//! maxima model of Coles ("An Introduction to Statistical Modeling of
//! Extreme Values", 2001, Chapter 3):
//!
//! 1. the jobs, in the order they ran, are cut into blocks of `b` jobs and
//!    each block's maximum is kept (a trailing partial block is dropped);
//! 2. the block maxima are tested for independence (runs test, Ljung–Box)
//!    and identical distribution (first half against second half,
//!    two-sample Kolmogorov–Smirnov) — [`iid`];
//! 3. a GEV and a Gumbel distribution are fitted by probability-weighted
//!    moments (Hosking, Wallis and Wood 1985) — [`pwm`]; the Gumbel is the
//!    model unless Hosking et al.'s test finds the shape significantly
//!    non-zero (two-sided, 5 %);
//! 4. the model's goodness of fit is the Anderson–Darling statistic with a
//!    parametric-bootstrap p-value — [`goodness`];
//! 5. the pWCET at a per-job exceedance probability p is the model's
//!    quantile at the block level: if jobs exceed x with probability p,
//!    a block of b independent jobs does with 1 − (1 − p)^b, so the pWCET
//!    is x with −ln F(x) = −b ln(1 − p).
//!
//! The four tests (runs, Ljung–Box, two halves, Anderson–Darling) share a
//! family-wise significance level α (default 5 %) by Bonferroni: each
//! rejects at α/4. A fit is *supported* only with at least
//! [`EvtOptions::min_blocks`] blocks, a shape in the estimators' range, and
//! no test rejecting; otherwise [`EvtReport::problems`] says why, and the
//! fitted numbers are reported for inspection but marked unsupported.
//!
//! Two conservative choices: when the chosen model is a GEV with ξ < 0 (a
//! bounded tail, whose end point is itself an estimate), the pWCET is the
//! larger of the GEV's and the Gumbel's quantiles; and a pWCET is never
//! below the largest job observed.

pub mod gev;
pub mod goodness;
pub mod iid;
pub mod pwm;

pub use gev::Gev;
pub use iid::TestResult;
use serde::{Deserialize, Serialize};

/// The per-job exceedance probability a pWCET is stated at by default.
pub const DEFAULT_EXCEEDANCE: f64 = 1e-9;

/// The fewest blocks a fit is attempted on by default.
pub const DEFAULT_MIN_BLOCKS: u64 = 30;

/// Jobs per block by default.
pub const DEFAULT_BLOCK_SIZE: u64 = 10;

/// How to fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvtOptions {
    /// Jobs per block (b ≥ 1).
    pub block_size: u64,
    /// Per-job exceedance probabilities to state the pWCET at, each in (0, 1).
    pub exceedances: Vec<f64>,
    /// The fewest blocks a fit is supported with.
    pub min_blocks: u64,
    /// The family-wise significance level α of the four tests.
    pub significance: f64,
    /// Bootstrap replicates of the goodness-of-fit p-value.
    pub bootstrap_replicates: u32,
    /// Seed of the bootstrap.
    pub seed: u64,
}

impl Default for EvtOptions {
    /// Blocks of 10 jobs, pWCET at 10⁻⁹ per job, at least 30 blocks, α = 5 %,
    /// 199 bootstrap replicates, seed 1.
    fn default() -> Self {
        Self {
            block_size: DEFAULT_BLOCK_SIZE,
            exceedances: vec![DEFAULT_EXCEEDANCE],
            min_blocks: DEFAULT_MIN_BLOCKS,
            significance: 0.05,
            bootstrap_replicates: 199,
            seed: 1,
        }
    }
}

/// The distribution used for the pWCET.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// Gumbel (shape not significantly non-zero).
    Gumbel,
    /// GEV (shape significantly non-zero).
    Gev,
}

/// The goodness of fit of the model to the block maxima.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GoodnessOfFit {
    /// Anderson–Darling A².
    pub anderson_darling: f64,
    /// Parametric-bootstrap p-value.
    pub p_value: f64,
    /// Bootstrap replicates behind the p-value.
    pub replicates: u32,
}

/// The pWCET at one exceedance probability.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pwcet {
    /// Probability that one job exceeds `ns`.
    pub exceedance: f64,
    /// The pWCET in ns, rounded up (`None`: not a representable time).
    pub ns: Option<u64>,
    /// True if the fitted quantile was below the largest observed job and
    /// the pWCET was raised to it.
    pub raised_to_observed_max: bool,
}

/// Everything a fit found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvtReport {
    /// Jobs given.
    pub jobs: u64,
    /// Jobs per block.
    pub block_size: u64,
    /// Whole blocks (the jobs of a trailing partial block are not used).
    pub blocks: u64,
    /// The largest job observed, ns.
    pub observed_max_ns: u64,
    /// Runs test of the block maxima (independence).
    pub runs_test: Option<TestResult>,
    /// Ljung–Box test of the block maxima (independence).
    pub ljung_box: Option<TestResult>,
    /// Lags of the Ljung–Box test.
    pub ljung_box_lags: u64,
    /// First against second half of the block maxima (identical distribution).
    pub two_halves_ks: Option<TestResult>,
    /// The Gumbel fit.
    pub gumbel: Option<Gev>,
    /// The GEV fit.
    pub gev: Option<Gev>,
    /// Hosking et al.'s test of ξ = 0 on the GEV fit.
    pub shape_test: Option<TestResult>,
    /// The model the pWCET comes from.
    pub model: Option<Model>,
    /// The model's goodness of fit.
    pub goodness_of_fit: Option<GoodnessOfFit>,
    /// The level each test rejects at (α / 4).
    pub test_level: f64,
    /// True if the data support the fit (no entry in `problems`).
    pub supported: bool,
    /// Why the data do not support a fit, one sentence each.
    pub problems: Vec<String>,
    /// The pWCET at each requested exceedance probability (empty without a model).
    pub pwcet: Vec<Pwcet>,
}

impl EvtReport {
    /// The pWCET at `exceedance` if the fit is supported and it was asked for.
    pub fn supported_pwcet(&self, exceedance: f64) -> Option<u64> {
        if !self.supported {
            return None;
        }
        self.pwcet
            .iter()
            .find(|p| p.exceedance == exceedance)
            .and_then(|p| p.ns)
    }
}

/// Errors in the options (not in the data: the data's shortcomings are
/// [`EvtReport::problems`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvtError {
    /// A block must hold at least one job.
    #[error("the block size must be at least 1 job, found 0")]
    ZeroBlock,
    /// An exceedance probability outside (0, 1).
    #[error("an exceedance probability must lie strictly between 0 and 1, found {0}")]
    Exceedance(String),
    /// A significance level outside (0, 1).
    #[error("the significance level must lie strictly between 0 and 1, found {0}")]
    Significance(String),
}

/// The maximum of each whole block of `block` jobs, in order.
pub fn block_maxima(jobs: &[u64], block: usize) -> Vec<u64> {
    jobs.chunks_exact(block.max(1))
        .map(|b| b.iter().copied().max().unwrap_or(0))
        .collect()
}

/// Fits the jobs (execution times in ns, in the order they ran).
pub fn fit(jobs: &[u64], options: &EvtOptions) -> Result<EvtReport, EvtError> {
    check(options)?;
    let block = usize::try_from(options.block_size).unwrap_or(usize::MAX);
    let maxima: Vec<f64> = block_maxima(jobs, block)
        .into_iter()
        .map(|m| m as f64)
        .collect();
    let test_level = options.significance / 4.0;
    let mut report = EvtReport {
        jobs: jobs.len() as u64,
        block_size: options.block_size,
        blocks: maxima.len() as u64,
        observed_max_ns: jobs.iter().copied().max().unwrap_or(0),
        runs_test: iid::runs_test(&maxima),
        ljung_box: iid::ljung_box(&maxima),
        ljung_box_lags: iid::ljung_box_lags(maxima.len()) as u64,
        two_halves_ks: iid::two_halves_ks(&maxima),
        gumbel: None,
        gev: None,
        shape_test: None,
        model: None,
        goodness_of_fit: None,
        test_level,
        supported: false,
        problems: Vec::new(),
        pwcet: Vec::new(),
    };
    if report.blocks < options.min_blocks.max(3) {
        report.problems.push(format!(
            "too few blocks: {} block(s) of {} jobs, at least {} needed ({} jobs or more)",
            report.blocks,
            options.block_size,
            options.min_blocks.max(3),
            options.min_blocks.max(3).saturating_mul(options.block_size)
        ));
        return Ok(report);
    }
    judge_iid(&mut report);
    let mut sorted = maxima.clone();
    sorted.sort_by(f64::total_cmp);
    report.gumbel = pwm::fit_gumbel(&sorted);
    report.gev = pwm::fit_gev(&sorted);
    let (Some(gumbel), Some(gev)) = (report.gumbel, report.gev) else {
        report
            .problems
            .push("the block maxima have no spread: no distribution can be fitted".into());
        return Ok(report);
    };
    if gev.shape.abs() >= pwm::MAX_SHAPE {
        report.problems.push(format!(
            "the fitted shape ξ = {:.3} lies outside the range of the PWM estimators (|ξ| < {})",
            gev.shape,
            pwm::MAX_SHAPE
        ));
    }
    let shape_test = pwm::shape_test(gev.shape, sorted.len());
    report.shape_test = Some(TestResult {
        statistic: shape_test.0,
        p_value: shape_test.1,
    });
    let model = if shape_test.1 < 0.05 {
        Model::Gev
    } else {
        Model::Gumbel
    };
    report.model = Some(model);
    let chosen = match model {
        Model::Gumbel => gumbel,
        Model::Gev => gev,
    };
    let refit = match model {
        Model::Gumbel => pwm::fit_gumbel,
        Model::Gev => pwm::fit_gev,
    };
    let a2 = goodness::anderson_darling(&sorted, &chosen);
    let p_value = goodness::bootstrap_p_value(
        a2,
        &chosen,
        sorted.len(),
        options.bootstrap_replicates,
        options.seed,
        refit,
    );
    report.goodness_of_fit = Some(GoodnessOfFit {
        anderson_darling: a2,
        p_value,
        replicates: options.bootstrap_replicates,
    });
    if p_value < test_level {
        report.problems.push(format!(
            "goodness of fit: the block maxima are not {}-shaped (Anderson–Darling A² = {a2:.3}, bootstrap p = {p_value:.4} < {test_level})",
            match model {
                Model::Gumbel => "Gumbel",
                Model::Gev => "GEV",
            },
        ));
    }
    report.pwcet = options
        .exceedances
        .iter()
        .map(|&p| {
            pwcet(
                &chosen,
                &gumbel,
                report.observed_max_ns,
                options.block_size,
                p,
            )
        })
        .collect();
    report.supported = report.problems.is_empty();
    Ok(report)
}

fn check(options: &EvtOptions) -> Result<(), EvtError> {
    if options.block_size == 0 {
        return Err(EvtError::ZeroBlock);
    }
    if let Some(bad) = options
        .exceedances
        .iter()
        .find(|p| !(**p > 0.0 && **p < 1.0))
    {
        return Err(EvtError::Exceedance(bad.to_string()));
    }
    if !(options.significance > 0.0 && options.significance < 1.0) {
        return Err(EvtError::Significance(options.significance.to_string()));
    }
    Ok(())
}

/// Adds a problem for every i.i.d. test that rejects.
fn judge_iid(report: &mut EvtReport) {
    let level = report.test_level;
    let tests = [
        (
            report.runs_test,
            "independence: the runs test finds the block maxima clustered",
        ),
        (
            report.ljung_box,
            "independence: the Ljung–Box test finds the block maxima autocorrelated",
        ),
        (
            report.two_halves_ks,
            "identical distribution: the first and second half of the block maxima differ (two-sample Kolmogorov–Smirnov)",
        ),
    ];
    for (result, what) in tests {
        match result {
            Some(r) if r.p_value < level => report
                .problems
                .push(format!("{what} (p = {:.4} < {level})", r.p_value)),
            Some(_) => {}
            None => report.problems.push(format!(
                "{}: the test cannot run on these block maxima (too few distinct values)",
                what.split(':').next().unwrap_or(what)
            )),
        }
    }
}

/// The pWCET at per-job exceedance `p` for blocks of `block` jobs.
fn pwcet(chosen: &Gev, gumbel: &Gev, observed_max: u64, block: u64, p: f64) -> Pwcet {
    // −ln F_block(x) = −b ln(1 − p): exact for i.i.d. jobs, and ln_1p keeps
    // it accurate for p ≪ 1.
    let y = -(block as f64) * (-p).ln_1p();
    let mut quantile = chosen.quantile_of_minus_log(y);
    if chosen.shape < 0.0 {
        quantile = quantile.max(gumbel.quantile_of_minus_log(y));
    }
    let raised = quantile < observed_max as f64;
    let value = quantile.max(observed_max as f64).ceil();
    Pwcet {
        exceedance: p,
        // u64::MAX as f64 rounds up to 2^64, which does not fit: strictly below.
        ns: (value.is_finite() && value < u64::MAX as f64).then_some(value as u64),
        raised_to_observed_max: raised,
    }
}

#[cfg(test)]
mod tests;
