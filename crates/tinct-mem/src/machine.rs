//! The address mapping of the running machine, from sysfs.

use tinct_sys::SysRoot;
use tinct_sys::topology::{ColorGeometry, Topology};

use crate::error::MemError;
use crate::mapping::{AddressMapping, CacheGeometry, LayoutSpec, XorFunctions};
use crate::shim_config::COLOR_BITS;

/// Geometry of the last-level cache under `root` (the first instance; all
/// instances of one level have the same geometry).
pub fn llc_geometry(root: &SysRoot) -> Result<CacheGeometry, MemError> {
    let topology = Topology::read(root)?;
    let llc = topology
        .last_level_caches()
        .into_iter()
        .next()
        .ok_or_else(|| {
            MemError::Mapping(format!(
                "no cache found under {}: give the color bits explicitly",
                root.path("/sys/devices/system/cpu").display()
            ))
        })?;
    let ways = llc.ways.filter(|&w| w > 0).ok_or_else(|| {
        MemError::Mapping(format!(
            "{} reports no associativity: give the color bits explicitly",
            llc.name()
        ))
    })?;
    Ok(CacheGeometry {
        size: llc.size_bytes,
        ways: u64::from(ways),
    })
}

/// This machine's LLC page colours for pages of `page_bytes`, under the
/// rule the evidence supports (way size, or sliced: colour bits below the
/// slice hash; see `tinct_sys::cache_slices`), with the reason. The
/// topology is read where [`SysRoot::cache_topology`] says. This is the
/// derived rule alone, for the shim given no bits; a command resolves its
/// bits with `tinct_sys::color_source` (flag, environment, task set,
/// machine file, then this rule).
pub fn machine_color_geometry(page_bytes: u64) -> Result<ColorGeometry, MemError> {
    tinct_sys::cache_slices::machine_color_geometry(&SysRoot::cache_topology(), page_bytes).map_err(
        |e| {
            MemError::Mapping(format!(
                "{e} (give the colour bits: TINCT_COLOR_BITS=12-15)"
            ))
        },
    )
}

/// This machine's mapping under `spec`: colors from the spec if it gives
/// them, else from `TINCT_COLOR_BITS` (as `tinct exec` and the commands
/// hand them to the shim), else from the LLC (way-size or sliced rule,
/// [`machine_color_geometry`]); banks and controllers only if the spec
/// gives them.
pub fn machine_mapping(spec: &LayoutSpec) -> Result<AddressMapping, MemError> {
    let page_size = rustix::param::page_size() as u64;
    let defaults_needed = spec.color_bits.is_none() && spec.color_functions.is_none();
    let given = std::env::var(COLOR_BITS)
        .ok()
        .filter(|text| defaults_needed && !text.trim().is_empty());
    let default_colors = if let Some(text) = given {
        let bits = tinct_base::list::parse_list(&text).map_err(|e| {
            MemError::Mapping(format!(
                "{COLOR_BITS}={text:?}: expected physical address bits such as 12-16 ({e})"
            ))
        })?;
        XorFunctions::from_bits(&bits)?
    } else if defaults_needed {
        let geometry = machine_color_geometry(page_size)?;
        let bits = geometry.colors.color_bits().map_err(|e| {
            MemError::Mapping(format!(
                "{e} ({}: {}; give the colour bits: TINCT_COLOR_BITS=12-15)",
                geometry.rule, geometry.reason
            ))
        })?;
        XorFunctions::from_bits(&bits.collect::<Vec<u32>>())?
    } else {
        Default::default()
    };
    spec.resolve(page_size, default_colors)
}
