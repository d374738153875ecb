//! Inputs the fuzz targets (fuzz/, `scripts/fuzz.sh`) found, with the
//! right outcome.

use tinct_sys::{MAX_LIST_LEN, parse_cpu_list};

/// fuzz targets `cpu_list` and `shim_config`: `0-900000016,3` (and
/// `TINCT_COLORS=2-2222222220`) expanded into a vector of gigabytes and
/// timed out. A list longer than the limit is refused, naming the item.
#[test]
fn huge_ranges_are_refused_before_expanding() {
    for (text, item) in [
        ("0-900000016,3", "0-900000016"),
        ("2-2222222220", "2-2222222220"),
        ("0-4294967295:1", "0-4294967295:1"),
        ("0-65535,70000-70001", "70000-70001"),
    ] {
        let err = parse_cpu_list(text).unwrap_err().to_string();
        assert!(
            err.contains(&format!("{item:?}")) && err.contains(&MAX_LIST_LEN.to_string()),
            "{text}: {err}"
        );
    }
}

#[test]
fn lists_up_to_the_limit_are_read() {
    let last = MAX_LIST_LEN as u32 - 1;
    assert_eq!(
        parse_cpu_list(&format!("0-{last}")).unwrap().len(),
        MAX_LIST_LEN
    );
    // Strides count what they take, and single large numbers stay the
    // caller's to judge.
    assert_eq!(
        parse_cpu_list("0-4294967295:65536").unwrap().len(),
        MAX_LIST_LEN
    );
    assert_eq!(parse_cpu_list("4294967295").unwrap(), vec![u32::MAX]);
}
