//! How the shim words numbers in its messages and reports: a list of
//! banks or controllers (`any` when none was asked), sizes in MiB, times
//! in milliseconds.

/// A list of banks or controllers as `0-3,6`, or `any` when none was asked.
pub fn list_or_any(list: Option<&[u32]>) -> String {
    list.map_or("any".into(), tinct_sys::format_cpu_list)
}

/// `bytes` in MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

/// `ns` in milliseconds with two decimals.
pub fn ms(ns: u64) -> String {
    format!("{:.2} ms", ns as f64 / 1e6)
}
