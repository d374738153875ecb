//! A fake resctrl mount in a directory, so that tests of everything that
//! writes resctrl groups (this crate, `tinct exec`, the isolation bench)
//! run without the kernel's filesystem.

use std::path::Path;

/// Writes the files of a resctrl mount under `root` as the kernel lays
/// them out for L3 allocation: `domains` L3 domains (0, 1, ...) with
/// `cbm_bits`-bit capacity masks (all bits set), `min_cbm_bits` 1, 8
/// CLOSIDs, and `info/last_cmd_status` = `ok`. Groups created under it
/// are plain directories; the files the kernel would put in them appear
/// when written.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("tinct-fake-resctrl-{}", std::process::id()));
/// tinct_sys::resctrl::fake::write_tree(&dir, 2, 8)?;
/// let l3 = tinct_sys::resctrl::Resctrl::at(&dir).l3().unwrap();
/// assert_eq!((l3.cbm_bits, l3.domains.clone()), (8, vec![0, 1]));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn write_tree(root: &Path, domains: u32, cbm_bits: u32) -> std::io::Result<()> {
    let full_mask = 1u64.checked_shl(cbm_bits).map_or(u64::MAX, |bit| bit - 1);
    let schemata: Vec<String> = (0..domains).map(|d| format!("{d}={full_mask:x}")).collect();
    for (rel, text) in [
        ("info/L3/cbm_mask", format!("{full_mask:x}\n")),
        ("info/L3/min_cbm_bits", "1\n".to_string()),
        ("info/L3/num_closids", "8\n".to_string()),
        ("info/last_cmd_status", "ok\n".to_string()),
        ("schemata", format!("L3:{}\n", schemata.join(";"))),
    ] {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text)?;
    }
    Ok(())
}
