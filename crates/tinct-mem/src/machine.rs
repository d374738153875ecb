//! The address mapping of the running machine, from sysfs.

use tinct_sys::SysRoot;
use tinct_sys::topology::Topology;

use crate::error::MemError;
use crate::mapping::{AddressMapping, CacheGeometry, LayoutSpec, color_functions_from_geometry};

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

/// This machine's mapping under `spec`: colors from the LLC geometry unless
/// the spec gives them, banks and controllers only if the spec gives them.
pub fn machine_mapping(spec: &LayoutSpec) -> Result<AddressMapping, MemError> {
    let page_size = rustix::param::page_size() as u64;
    let defaults_needed = spec.color_bits.is_none() && spec.color_functions.is_none();
    let default_colors = if defaults_needed {
        color_functions_from_geometry(llc_geometry(&SysRoot::live())?, page_size)?
    } else {
        Default::default()
    };
    spec.resolve(page_size, default_colors)
}
