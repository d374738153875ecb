//! The acceptance tests of the EVT fit: samples drawn (seeded) from known
//! distributions, the estimates against the truth with stated tolerances,
//! and samples that are not extreme-value shaped reported as such.

use super::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr_free::normal;

/// Jobs of a known GEV: μ = 1 ms, σ = 20 µs.
fn job_distribution(shape: f64) -> Gev {
    Gev {
        location: 1e6,
        scale: 2e4,
        shape,
    }
}

/// `n` jobs (ns) drawn from `d`, seeded.
fn jobs_from(d: &Gev, n: usize, seed: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    goodness::draw(d, n, &mut rng)
        .into_iter()
        .map(|x| x.round() as u64)
        .collect()
}

/// The per-job quantile at exceedance p: x with 1 − F(x) = p.
fn true_pwcet(d: &Gev, p: f64) -> f64 {
    d.quantile_of_minus_log(-(-p).ln_1p())
}

/// The fitted model's own quantile at per-job exceedance p (before the
/// conservative rules).
fn model_pwcet(report: &EvtReport, p: f64) -> f64 {
    let model = match report.model.unwrap() {
        Model::Gumbel => report.gumbel.unwrap(),
        Model::Gev => report.gev.unwrap(),
    };
    model.quantile_of_minus_log(-(report.block_size as f64) * (-p).ln_1p())
}

const BLOCK: u64 = 20;
const JOBS: usize = 20_000; // 1000 blocks

fn fit_jobs(jobs: &[u64]) -> EvtReport {
    fit(
        jobs,
        &EvtOptions {
            block_size: BLOCK,
            ..Default::default()
        },
    )
    .unwrap()
}

/// Tolerances, stated: the shape within 0.1, the block scale within 10 %,
/// the block location within 0.15 block scales (over 100 seeds at 1000
/// blocks the worst were 0.07, 6.2 % and 0.083); and the model's pWCET at
/// 10⁻⁹ per job, as its excess over the jobs' location μ, between
/// (1 − `under`) and (1 + `over`) times the true excess. The pWCET
/// extrapolates eight orders of magnitude beyond the sample, and a heavy
/// tail (ξ > 0) magnifies any error in ξ, so that case is given 5000
/// blocks (over 30 seeds: −20 % to +19 %; with 1000 blocks −40 % to
/// +124 %). Underestimates are the dangerous side and get the tighter bound.
struct Tolerance {
    jobs: usize,
    under: f64,
    over: f64,
}

fn check_known_gev(shape: f64, tolerance: Tolerance, seeds: std::ops::Range<u64>) {
    let d = job_distribution(shape);
    // Max-stability: the block maxima are GEV with the same ξ.
    let block = d.maximum_of(BLOCK as f64);
    let truth = true_pwcet(&d, 1e-9);
    let mut supported = 0;
    for seed in seeds.clone() {
        let r = fit_jobs(&jobs_from(&d, tolerance.jobs, seed));
        assert_eq!(r.blocks, (tolerance.jobs as u64) / BLOCK);
        let gev = r.gev.unwrap();
        assert!((gev.shape - shape).abs() <= 0.1, "seed {seed}: ξ {gev:?}");
        assert!(
            (gev.scale / block.scale - 1.0).abs() <= 0.1,
            "seed {seed}: σ {} vs {}",
            gev.scale,
            block.scale
        );
        assert!(
            (gev.location - block.location).abs() <= 0.15 * block.scale,
            "seed {seed}: μ {} vs {}",
            gev.location,
            block.location
        );
        let error = (model_pwcet(&r, 1e-9) - d.location) / (truth - d.location) - 1.0;
        assert!(
            (-tolerance.under..=tolerance.over).contains(&error),
            "seed {seed} ξ {shape}: pWCET excess off by {error:.3} ({:?})",
            r.model
        );
        // What is reported is never below the model, the truth of a
        // bounded tail, or the largest job.
        let reported = r.pwcet[0].ns.unwrap() as f64;
        assert!(reported >= model_pwcet(&r, 1e-9).ceil());
        assert!(reported >= r.observed_max_ns as f64);
        if shape < 0.0 && r.model == Some(Model::Gev) {
            assert!(
                reported >= truth,
                "seed {seed}: bounded tail kept conservative"
            );
        }
        supported += usize::from(r.supported);
    }
    // Four tests at 1.25 % each: a false alarm in at most ~5 % of samples.
    let runs = (seeds.end - seeds.start) as usize;
    assert!(
        supported * 10 >= runs * 8,
        "ξ {shape}: only {supported} of {runs} fits supported"
    );
}

#[test]
fn a_known_gumbel_is_recovered_within_tolerance() {
    // Over 30 seeds: −3.6 % to +5.7 %, and +60 % once, where the shape
    // test wrongly chose a GEV (the 5 % it allows) — an overestimate.
    let tolerance = Tolerance {
        jobs: JOBS,
        under: 0.1,
        over: 0.7,
    };
    check_known_gev(0.0, tolerance, 0..10);
    // ξ = 0 is not significantly non-zero: the model is the Gumbel.
    let r = fit_jobs(&jobs_from(&job_distribution(0.0), JOBS, 3));
    assert_eq!(r.model, Some(Model::Gumbel));
    assert!(r.shape_test.unwrap().p_value >= 0.05);
}

#[test]
fn a_known_heavy_tailed_gev_is_recovered_within_tolerance() {
    let tolerance = Tolerance {
        jobs: 5 * JOBS,
        under: 0.3,
        over: 0.3,
    };
    check_known_gev(0.1, tolerance, 0..6);
    let r = fit_jobs(&jobs_from(&job_distribution(0.1), JOBS, 3));
    assert_eq!(
        r.model,
        Some(Model::Gev),
        "ξ = 0.1 is significant at 1000 blocks"
    );
}

#[test]
fn a_known_bounded_gev_is_recovered_within_tolerance() {
    // Over 30 seeds: −7.1 % to +9.2 %.
    let tolerance = Tolerance {
        jobs: JOBS,
        under: 0.15,
        over: 0.15,
    };
    check_known_gev(-0.2, tolerance, 0..10);
    let r = fit_jobs(&jobs_from(&job_distribution(-0.2), JOBS, 3));
    assert_eq!(r.model, Some(Model::Gev));
    // The reported pWCET keeps the Gumbel tail beyond the bounded one.
    let gumbel = r.gumbel.unwrap();
    let y = -(BLOCK as f64) * (-1e-9f64).ln_1p();
    assert_eq!(
        r.pwcet[0].ns,
        Some(gumbel.quantile_of_minus_log(y).ceil() as u64)
    );
}

#[test]
fn a_bimodal_sample_is_reported_as_not_extreme_value_shaped() {
    // A slow path (+300 µs, 15 block scales) in a job with probability q such
    // that half the blocks contain one: 1 − (1 − q)^20 = 1/2.
    let q = 1.0 - 0.5f64.powf(1.0 / BLOCK as f64);
    let fast = jobs_from(&job_distribution(0.0), JOBS, 5);
    let mut rng = ChaCha8Rng::seed_from_u64(6);
    let jobs: Vec<u64> = fast
        .into_iter()
        .map(|ns| {
            if rand::Rng::random_bool(&mut rng, q) {
                ns + 300_000
            } else {
                ns
            }
        })
        .collect();
    let r = fit_jobs(&jobs);
    assert!(!r.supported);
    assert!(
        r.problems.iter().any(|p| p.starts_with("goodness of fit")),
        "{:?}",
        r.problems
    );
    assert!(r.goodness_of_fit.unwrap().p_value < r.test_level);
    assert_eq!(
        r.supported_pwcet(1e-9),
        None,
        "no pWCET from an unsupported fit"
    );
    assert!(
        r.pwcet[0].ns.is_some(),
        "the numbers stay visible for inspection"
    );
}

#[test]
fn an_autocorrelated_sample_is_reported_as_dependent() {
    // AR(1) with φ = 0.99 around 1 ms: slow waves far longer than a block.
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut deviation = 0.0f64;
    let jobs: Vec<u64> = (0..JOBS)
        .map(|_| {
            deviation = 0.99 * deviation + 2e4 * normal(&mut rng);
            (1e6 + deviation).max(1.0) as u64
        })
        .collect();
    let r = fit_jobs(&jobs);
    assert!(!r.supported);
    assert!(
        r.problems.iter().any(|p| p.starts_with("independence")),
        "{:?}",
        r.problems
    );
    assert!(r.ljung_box.unwrap().p_value < 1e-6);
}

#[test]
fn a_drifting_sample_is_reported_as_not_identically_distributed() {
    // The second half of the run is 5 % slower (a step, like a frequency change).
    let mut jobs = jobs_from(&job_distribution(0.0), JOBS, 12);
    for ns in &mut jobs[JOBS / 2..] {
        *ns += 50_000;
    }
    let r = fit_jobs(&jobs);
    assert!(!r.supported);
    assert!(
        r.problems
            .iter()
            .any(|p| p.starts_with("identical distribution")),
        "{:?}",
        r.problems
    );
}

#[test]
fn too_few_blocks_are_refused_with_the_numbers() {
    let jobs = jobs_from(&job_distribution(0.0), 295, 1);
    let r = fit_jobs(&jobs);
    assert_eq!((r.blocks, r.jobs), (14, 295));
    assert!(!r.supported && r.model.is_none() && r.pwcet.is_empty());
    assert_eq!(
        r.problems,
        vec![
            "too few blocks: 14 block(s) of 20 jobs, at least 30 needed (600 jobs or more)"
                .to_string()
        ]
    );
}

#[test]
fn a_sample_without_spread_is_refused() {
    let r = fit_jobs(&vec![1_000_000; 2000]);
    assert!(!r.supported);
    assert!(
        r.problems.iter().any(|p| p.contains("no spread")),
        "{:?}",
        r.problems
    );
}

#[test]
fn bad_options_are_errors() {
    let jobs = [1, 2, 3];
    let with = |o: EvtOptions| fit(&jobs, &o);
    assert_eq!(
        with(EvtOptions {
            block_size: 0,
            ..Default::default()
        }),
        Err(EvtError::ZeroBlock)
    );
    for p in [0.0, 1.0, -1e-9, f64::NAN] {
        assert!(matches!(
            with(EvtOptions {
                exceedances: vec![p],
                ..Default::default()
            }),
            Err(EvtError::Exceedance(_))
        ));
    }
    assert!(matches!(
        with(EvtOptions {
            significance: 1.5,
            ..Default::default()
        }),
        Err(EvtError::Significance(_))
    ));
}

#[test]
fn block_maxima_drop_the_partial_block() {
    assert_eq!(block_maxima(&[3, 1, 4, 1, 5, 9, 2], 3), vec![4, 9]);
    assert_eq!(block_maxima(&[3, 1], 3), Vec::<u64>::new());
}

#[test]
fn the_report_round_trips_through_json() {
    let r = fit(
        &jobs_from(&job_distribution(0.0), 2000, 2),
        &EvtOptions {
            exceedances: vec![1e-9, 1e-12],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(r.pwcet.len(), 2);
    assert!(
        r.pwcet[1].ns > r.pwcet[0].ns,
        "rarer exceedance, larger pWCET"
    );
    let json = serde_json::to_string(&r).unwrap();
    assert_eq!(serde_json::from_str::<EvtReport>(&json).unwrap(), r);
}

/// Standard normal draws by Box–Muller (the tests need no rand_distr).
mod rand_distr_free {
    use rand::Rng;

    pub(super) fn normal(rng: &mut impl Rng) -> f64 {
        let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        let v: f64 = rng.random();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}
