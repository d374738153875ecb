//! CPU, color and bank lists (`tinct_sys::parse_cpu_list`, the kernel's
//! `0-3,8` syntax that `--cpus`, `--colors`, `--banks` and `TINCT_COLORS`
//! use) and DRAM/color address functions (`tinct_mem::XorFunctions::parse`,
//! the DRAMA `0x2040,0x44000` syntax of `--bank-functions`).

use tinct_mem::XorFunctions;
use tinct_sys::{MAX_LIST_LEN, format_cpu_list, parse_cpu_list};

/// The CPU-list target: an accepted list is sorted and unique, holds at
/// most [`MAX_LIST_LEN`] numbers, and its compact form
/// (`format_cpu_list`) parses back to it.
pub fn check_cpu_list(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let Ok(list) = parse_cpu_list(text) else {
        return;
    };
    assert!(
        list.windows(2).all(|w| w[0] < w[1]),
        "{text:?} gave an unsorted list"
    );
    assert!(
        list.len() <= MAX_LIST_LEN,
        "{text:?}: {} numbers",
        list.len()
    );
    let compact = format_cpu_list(&list);
    assert_eq!(
        parse_cpu_list(&compact).ok().as_ref(),
        Some(&list),
        "{text:?} formats as {compact:?}"
    );
}

/// The address-function target: accepted functions are at most 16
/// distinct non-zero masks, every address gets an index below `count()`,
/// and the masks written back in hexadecimal parse to the same functions.
pub fn check_address_functions(data: &[u8]) {
    let Some(text) = crate::text(data) else {
        return;
    };
    let Ok(functions) = XorFunctions::parse(text) else {
        return;
    };
    let masks = functions.masks();
    assert!(masks.len() <= 16, "{text:?}: {} functions", masks.len());
    for (i, mask) in masks.iter().enumerate() {
        assert!(
            *mask != 0 && !masks[..i].contains(mask),
            "{text:?}: {masks:x?}"
        );
    }
    assert_eq!(u64::from(functions.count()), 1u64 << masks.len());
    for address in [0, u64::MAX, 0x5555_5555_5555_5555, text.len() as u64 * 4096] {
        assert!(functions.index(address) < functions.count());
    }
    let written = masks
        .iter()
        .map(|mask| format!("{mask:#x}"))
        .collect::<Vec<_>>()
        .join(",");
    assert_eq!(
        XorFunctions::parse(&written).ok().as_ref(),
        Some(&functions),
        "{text:?} written as {written:?}"
    );
}
