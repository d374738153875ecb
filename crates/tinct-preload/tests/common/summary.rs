//! The shim's summary at exit (`TINCT_STATS=1`), read by the tests of the
//! shim and of `tinct exec`, which include this file (tinct-preload is a
//! cdylib: no Rust crate can link it for a helper).

/// The requests Algorithm 1's step `step` (`exact`, `restricted`,
/// `unrestricted` or `split`) served, from the summary line `... requests by
/// Algorithm 1 step: exact N, ...` in the shim's stderr `text`; the failure
/// shows the text.
pub fn requests_by_step(text: &str, step: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.contains("requests by Algorithm 1 step"))
        .unwrap_or_else(|| panic!("no step line:\n{text}"));
    let after = line
        .split(&format!("{step} "))
        .nth(1)
        .unwrap_or_else(|| panic!("no step {step} in: {line}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}
