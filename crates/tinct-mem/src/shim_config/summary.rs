//! The summary the shim prints on stderr at exit (`TINCT_STATS=1`): the
//! words the shim prints it with, and a reader of its lines for whoever
//! checks a run (the shim's tests, `tinct exec`'s tests). One place for
//! both sides, as the rest of the contract in [`crate::shim_config`]
//! (`libtinct_preload.so` is a cdylib: no test can link it for a helper).
//!
//! With banks or controllers requested the summary has the line
//!
//! ```text
//! tinct-preload[PID]: banks B controllers C (bank mode M): requests by Algorithm 1 step: exact N, restricted N, unrestricted N, split N; pages in use by step: exact N, ...
//! ```
//!
//! that [`requests_by_step`] reads.

/// The words before the request counts of the bank line.
pub const REQUESTS_BY_STEP: &str = "requests by Algorithm 1 step";

/// The names of chandru-mueller Algorithm 1's steps in the summary (the
/// bank mode names of [`crate::Modes::parse`], and `exact`), in the order
/// of [`crate::Step`].
pub const STEP_NAMES: [&str; 4] = ["exact", "restricted", "unrestricted", "split"];

/// The requests that Algorithm 1's step `step` (one of [`STEP_NAMES`])
/// served, from the first line of `text` (the shim's stderr) that says
/// `requests by Algorithm 1 step: exact N, restricted N, ...;`. The error
/// says what is missing and shows the text, so a test can `unwrap` it.
pub fn requests_by_step(text: &str, step: &str) -> Result<u64, String> {
    if !STEP_NAMES.contains(&step) {
        return Err(format!(
            "step {step:?}: expected one of {}",
            STEP_NAMES.join(", ")
        ));
    }
    let marker = format!("{REQUESTS_BY_STEP}: ");
    let counts = text
        .lines()
        .find_map(|line| line.split_once(&marker))
        .map(|(_, after)| after.split(';').next().unwrap_or_default())
        .ok_or_else(|| format!("no line saying {REQUESTS_BY_STEP:?} in:\n{text}"))?;
    counts
        .split(", ")
        .find_map(|pair| {
            pair.strip_prefix(step)
                .and_then(|count| count.strip_prefix(' '))
        })
        .ok_or_else(|| format!("no step {step} in {REQUESTS_BY_STEP}: {counts}"))?
        .trim()
        .parse()
        .map_err(|e| format!("step {step} in {REQUESTS_BY_STEP}: {counts}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = "tinct-preload[4242]: banks 1 controllers 0 (bank mode restricted,split): \
                        requests by Algorithm 1 step: exact 120, restricted 7, unrestricted 0, \
                        split 3; pages in use by step: exact 96, restricted 5, unrestricted 9, \
                        split 2";

    #[test]
    fn the_request_counts_are_read_from_the_bank_line_of_a_summary() {
        let text = format!(
            "tinct-preload[4242]: colors 0-3 of 64 (placement by physical frame); ...\n{LINE}\n\
             tinct-preload[4242]: pages in use per controller:bank: c0:b1:96 c0:b0:16\n"
        );
        let counts: Vec<u64> = STEP_NAMES
            .iter()
            .map(|step| requests_by_step(&text, step).unwrap())
            .collect();
        // Not the "pages in use by step" counts after the `;`, and
        // `restricted` is not read out of `unrestricted`.
        assert_eq!(counts, [120, 7, 0, 3]);
    }

    #[test]
    fn a_missing_line_or_step_is_an_error_that_shows_the_text() {
        let error = requests_by_step("tinct-preload[1]: colors 0-3\n", "exact").unwrap_err();
        assert!(error.contains("colors 0-3"), "{error}");
        let error = requests_by_step(LINE, "fallback").unwrap_err();
        assert!(error.contains("expected one of exact"), "{error}");
        let error = requests_by_step(
            "tinct-preload[1]: requests by Algorithm 1 step: exact 1",
            "split",
        )
        .unwrap_err();
        assert!(error.contains("no step split"), "{error}");
    }

    #[test]
    fn the_step_names_are_the_bank_modes_and_exact() {
        assert_eq!(STEP_NAMES[0], "exact");
        for (name, mode) in STEP_NAMES[1..].iter().zip([
            crate::Modes::CONTROLLER_RESTRICTED,
            crate::Modes::CONTROLLER_UNRESTRICTED,
            crate::Modes::SPLIT,
        ]) {
            assert_eq!(crate::Modes::parse(name).unwrap(), mode, "{name}");
        }
    }
}
