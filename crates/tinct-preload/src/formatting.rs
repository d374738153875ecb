//! How the shim words numbers in its messages and reports: a list of
//! banks or controllers (`any` when none was asked) and sizes in MiB;
//! times in milliseconds are tinct-base's one rule (`ms_with_unit`).

/// A list of banks or controllers as `0-3,6`, or `any` when none was asked.
pub fn list_or_any(list: Option<&[u32]>) -> String {
    list.map_or("any".into(), tinct_base::list::format_list)
}

/// `bytes` in MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}
