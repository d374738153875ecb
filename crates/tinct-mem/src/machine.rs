//! The address mapping of the running machine, from sysfs.

use tinct_sys::SysRoot;
use tinct_sys::topology::ColorGeometry;

use crate::error::MemError;
use crate::mapping::{AddressMapping, LayoutSpec, XorFunctions};
use crate::shim_config::COLOR_BITS;

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
