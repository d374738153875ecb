//! The address mapping of the running machine, from sysfs.

use tinct_sys::SysRoot;
use tinct_sys::topology::{ColorGeometry, Topology};

use crate::error::MemError;
use crate::mapping::{AddressMapping, CacheGeometry, LayoutSpec, XorFunctions};

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
/// slice hash; see `tinct_sys::cache_slices`), with the reason.
pub fn machine_color_geometry(page_bytes: u64) -> Result<ColorGeometry, MemError> {
    tinct_sys::cache_slices::machine_color_geometry(&SysRoot::live(), page_bytes).map_err(|e| {
        MemError::Mapping(format!(
            "{e} (give the colour bits explicitly: color_bits = [...] or --color-bits)"
        ))
    })
}

/// This machine's mapping under `spec`: colors from the LLC (way-size or
/// sliced rule, [`machine_color_geometry`]) unless the spec gives them,
/// banks and controllers only if the spec gives them.
pub fn machine_mapping(spec: &LayoutSpec) -> Result<AddressMapping, MemError> {
    let page_size = rustix::param::page_size() as u64;
    let defaults_needed = spec.color_bits.is_none() && spec.color_functions.is_none();
    let default_colors = if defaults_needed {
        let geometry = machine_color_geometry(page_size)?;
        let bits = geometry.colors.color_bits().map_err(|e| {
            MemError::Mapping(format!(
                "{e} ({}: {}; color_bits = [...] or --color-bits)",
                geometry.rule, geometry.reason
            ))
        })?;
        XorFunctions::from_bits(&bits.collect::<Vec<u32>>())?
    } else {
        Default::default()
    };
    spec.resolve(page_size, default_colors)
}
