//! Task-set files (TOML and JSON) through `tinct_core::format::parse`.
//!
//! An accepted set must
//! - write back (`format::to_toml`) to a file that re-reads equal;
//! - analyze without panic (`tinct_core::analysis::analyze`), with verdicts
//!   that agree with the numbers (see [`check_analysis`]).
//!
//! A rejected one must name the file, a field and what was expected.

use tinct_core::analysis::{self, Analysis};
use tinct_core::format::{self, InputError, Syntax};

/// The name the checks give the input in messages.
const FILE: &str = "fuzz-input";

/// The TOML target.
pub fn check_toml(data: &[u8]) {
    check(data, Syntax::Toml);
}

/// The JSON target.
pub fn check_json(data: &[u8]) {
    check(data, Syntax::Json);
}

fn check(data: &[u8], syntax: Syntax) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let set = match format::parse(text, FILE, syntax) {
        Ok(set) => set,
        Err(error) => return check_error(&error),
    };
    let written = format::to_toml(&set, &[]);
    match format::parse(&written, FILE, Syntax::Toml) {
        // `task_lines` point into the file read, so they differ; the set does not.
        Ok(reread) => assert!(
            reread.platform == set.platform && reread.tasks == set.tasks,
            "written as\n{written}\nre-read as {reread:?}\nnot equal to {set:?}"
        ),
        Err(error) => panic!("an accepted set written as\n{written}\ndoes not re-read: {error}"),
    }
    if let Ok(analysis) = analysis::analyze(&set) {
        check_analysis(&analysis);
    }
}

/// A refusal names the file, a field, what was expected and what was found.
fn check_error(error: &InputError) {
    assert_eq!(error.file, FILE, "{error}");
    assert!(!error.field.trim().is_empty(), "no field named: {error}");
    assert!(
        !error.expected.trim().is_empty(),
        "nothing expected: {error}"
    );
}

/// The verdicts agree with the numbers behind them (kim2013 Eq. 2):
/// - a response time with cache interference (CInt) is the sum of its
///   breakdown (C + 2δ + ω + J + B + interference + hp warm-up + CRPD +
///   interrupts, the fixed point of Eq. 2 plus the jitter; under EDF the
///   interference is the rest of the bound), at least C and at most D;
/// - cache interference never helps: CInt schedulable implies NoCInt
///   schedulable with a response time no larger;
/// - a task is schedulable exactly when it has a response time, and the
///   set only when every task and every core is.
///
/// Wrapped arithmetic breaks these (a wrapped sum is smaller than its
/// terms), which is how a wrong SCHEDULABLE shows up here.
pub fn check_analysis(analysis: &Analysis) {
    for task in &analysis.tasks {
        let name = &task.name;
        assert_eq!(task.schedulable, task.wcrt_ns.is_some(), "task {name}");
        assert_eq!(
            task.schedulable_nocint,
            task.wcrt_nocint_ns.is_some(),
            "task {name}"
        );
        if let Some(wcrt) = task.wcrt_ns {
            let b = &task.breakdown;
            let sum = u128::from(b.wcet_ns)
                + u128::from(b.overhead_ns)
                + u128::from(b.warmup_ns)
                + u128::from(b.jitter_ns)
                + u128::from(b.blocking_ns)
                + u128::from(b.interference_ns)
                + u128::from(b.hp_warmup_ns)
                + u128::from(b.crpd_ns)
                + u128::from(b.interrupts_ns);
            assert_eq!(u128::from(wcrt), sum, "task {name}: R ≠ its terms {b:?}");
            assert!(
                task.wcet_ns <= wcrt && wcrt <= task.deadline_ns,
                "task {name}: C ≤ R ≤ D fails: {task:?}"
            );
            let nocint = task.wcrt_nocint_ns.unwrap_or_else(|| {
                panic!("task {name}: schedulable with cache interference, not without: {task:?}")
            });
            assert!(
                task.wcet_ns <= nocint && nocint <= wcrt,
                "task {name}: C ≤ R NoCInt ≤ R CInt fails: {task:?}"
            );
        }
    }
    if analysis.schedulable {
        assert!(
            analysis.tasks.iter().all(|t| t.schedulable),
            "SCHEDULABLE with a task that is not: {analysis:?}"
        );
        assert!(
            analysis
                .cores
                .iter()
                .all(|c| c.schedulable && c.memory_feasible),
            "SCHEDULABLE with a core that is not: {analysis:?}"
        );
        assert!(analysis.shared_across_cores.is_empty(), "{analysis:?}");
    }
}
