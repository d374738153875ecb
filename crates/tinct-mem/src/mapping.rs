//! Physical address → (color, DRAM bank, DRAM controller) mapping.
//!
//! Pure arithmetic, no OS calls. Every index (color, bank, controller) is a
//! small integer built from *address functions*: function `i` contributes
//! output bit `i`, equal to the parity of `address & mask_i`. This is the
//! format DRAM mapping tools such as DRAMA print (`0x2040,0x44000,...`). A
//! plain bit list (`[12, 13, 14]`) is the special case of one-bit masks.
//!
//! Page colors follow kim2013 Section II-B: the color index is the part of
//! the cache set index above the page offset, so an LLC with way size `W`
//! and page size `P` has `W / P` colors, selected by address bits
//! `[log2 P, log2 W)`.

#[cfg(feature = "serde")]
use serde::de::{self, Deserializer, SeqAccess, Visitor};
#[cfg(feature = "serde")]
use std::fmt;

use crate::error::MemError;
use tinct_base::geometry::PageColors;

/// Highest physical address bit tinct accepts in a function (x86-64 and
/// arm64 physical addresses fit in 52 bits; pagemap PFNs have 55 bits).
pub const MAX_ADDRESS_BIT: u32 = 63;

/// A set of XOR address functions producing a small index.
///
/// `index(addr)` = Σ_i parity(addr & mask_i) << i.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct XorFunctions {
    masks: Vec<u64>,
}

impl XorFunctions {
    /// No functions: every address maps to index 0 (one class).
    pub fn none() -> Self {
        Self::default()
    }

    /// One function per listed bit: bit `bits[i]` becomes output bit `i`.
    pub fn from_bits(bits: &[u32]) -> Result<Self, MemError> {
        let masks = bits
            .iter()
            .map(|&bit| {
                if bit > MAX_ADDRESS_BIT {
                    Err(MemError::Mapping(format!(
                        "address bit {bit} is out of range: expected 0..={MAX_ADDRESS_BIT}"
                    )))
                } else {
                    Ok(1u64 << bit)
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_masks(masks)
    }

    /// Functions given as XOR masks. Masks must be non-zero and linearly
    /// independent would be ideal; tinct only rejects zero and duplicate
    /// masks, which can never produce all index values.
    pub fn from_masks(masks: Vec<u64>) -> Result<Self, MemError> {
        if masks.len() > 16 {
            return Err(MemError::Mapping(format!(
                "{} address functions give 2^{} classes: expected at most 16 functions",
                masks.len(),
                masks.len()
            )));
        }
        for (i, &mask) in masks.iter().enumerate() {
            if mask == 0 {
                return Err(MemError::Mapping(format!(
                    "address function {i} is the mask 0x0: expected a non-zero mask"
                )));
            }
            if masks[..i].contains(&mask) {
                return Err(MemError::Mapping(format!(
                    "address function {i} (mask {mask:#x}) repeats an earlier function"
                )));
            }
        }
        Ok(Self { masks })
    }

    /// Parses a DRAMA-style comma-separated list of hexadecimal masks,
    /// e.g. `"0x2040,0x44000"`. Whitespace around entries is ignored. An
    /// empty string means no functions.
    pub fn parse(text: &str) -> Result<Self, MemError> {
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(Self::none());
        }
        let masks = trimmed
            .split(',')
            .enumerate()
            .map(|(i, entry)| {
                parse_mask(entry.trim())
                    .map_err(|why| MemError::Mapping(format!("function {i} in {text:?}: {why}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Self::from_masks(masks)
    }

    /// The masks, output bit 0 first.
    pub fn masks(&self) -> &[u64] {
        &self.masks
    }

    /// Number of distinct index values (2^number of functions).
    pub fn count(&self) -> u32 {
        1u32 << self.masks.len()
    }

    /// The index of a physical address.
    #[inline]
    pub fn index(&self, address: u64) -> u32 {
        let mut index = 0u32;
        for (bit, &mask) in self.masks.iter().enumerate() {
            index |= ((address & mask).count_ones() & 1) << bit;
        }
        index
    }

    /// Lowest address bit any function reads (`None` without functions).
    pub fn lowest_bit(&self) -> Option<u32> {
        self.masks.iter().map(|m| m.trailing_zeros()).min()
    }

    /// The part of these functions a page allocator can control: the
    /// functions of their span that read no bit inside a page of
    /// `page_size` bytes (lightest first), and how many index bits that
    /// loses. DRAM mappings often mix sub-page bits into a function
    /// (Skylake: bits 8, 9, 12, 13, 14, 15); two such functions can still
    /// XOR to a page-granular one.
    pub fn page_granular(&self, page_size: u64) -> (XorFunctions, usize) {
        let space = crate::gf2::Basis::spanning(self.masks.iter().copied());
        let kept = space.without_bits(page_size - 1);
        let lost = space.rank() - kept.rank();
        (
            XorFunctions {
                masks: kept.lightest(),
            },
            lost,
        )
    }

    /// Errors when a function reads bits inside a page of `page_size`
    /// bytes: such a function varies within one page, so no page allocator
    /// can control it.
    pub fn check_page_granular(&self, what: &str, page_size: u64) -> Result<(), MemError> {
        let page_shift = page_size.trailing_zeros();
        for (i, &mask) in self.masks.iter().enumerate() {
            if mask.trailing_zeros() < page_shift {
                return Err(MemError::Mapping(format!(
                    "{what} function {i} (mask {mask:#x}) reads address bit {}, inside a \
                     {page_size}-byte page: expected only bits >= {page_shift}, because a page \
                     allocator cannot choose bits below the page size",
                    mask.trailing_zeros()
                )));
            }
        }
        Ok(())
    }
}

fn parse_mask(entry: &str) -> Result<u64, String> {
    let digits = entry
        .strip_prefix("0x")
        .or_else(|| entry.strip_prefix("0X"))
        .ok_or_else(|| format!("expected a hexadecimal mask such as 0x2040, found {entry:?}"))?;
    let digits = digits.replace('_', "");
    u64::from_str_radix(&digits, 16)
        .map_err(|_| format!("expected a hexadecimal mask such as 0x2040, found {entry:?}"))
}

/// One address function as written in a file: a mask string (`"0x2040"`),
/// an integer mask, or a list of address bits whose parity forms the
/// function (`[6, 13]` = mask `0x2040`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionSpec(pub u64);

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for FunctionSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecVisitor;
        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = FunctionSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an address function: a hexadecimal mask string such as \"0x2040\", an integer mask, or a list of address bits such as [6, 13]")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<FunctionSpec, E> {
                parse_mask(v.trim()).map(FunctionSpec).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<FunctionSpec, E> {
                Ok(FunctionSpec(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<FunctionSpec, E> {
                u64::try_from(v)
                    .map(FunctionSpec)
                    .map_err(|_| E::custom(format!("expected a non-negative mask, found {v}")))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FunctionSpec, A::Error> {
                let mut mask = 0u64;
                while let Some(bit) = seq.next_element::<u32>()? {
                    if bit > MAX_ADDRESS_BIT {
                        return Err(de::Error::custom(format!(
                            "address bit {bit} is out of range: expected 0..={MAX_ADDRESS_BIT}"
                        )));
                    }
                    mask |= 1u64 << bit;
                }
                if mask == 0 {
                    return Err(de::Error::custom(
                        "empty bit list: expected at least one address bit, such as [6, 13]",
                    ));
                }
                Ok(FunctionSpec(mask))
            }
        }
        deserializer.deserialize_any(SpecVisitor)
    }
}

/// Color functions of a cache's page colours (kim2013 Section III-C, the
/// calculation of [`PageColors`], which tinct-sys and tinct-sim use too:
/// e.g. `PageColors::of_cache(size, ways, page)`, `colors = way_size /
/// page_size`, bits `[log2 page_size, log2 way_size)`); an error asking for
/// explicit bits when they are not known.
pub fn color_functions_from_geometry(colors: &PageColors) -> Result<XorFunctions, MemError> {
    let bits = colors.color_bits().map_err(|e| {
        MemError::Mapping(format!(
            "{e} (color_bits = [...] or color_functions = [...])"
        ))
    })?;
    XorFunctions::from_bits(&bits.collect::<Vec<u32>>())
}

/// Where a physical page lies: its cache color, DRAM bank and controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PageClass {
    /// Cache color (0..colors).
    pub color: u32,
    /// DRAM bank within its controller (0..banks).
    pub bank: u32,
    /// DRAM controller (0..controllers).
    pub controller: u32,
}

/// The complete address mapping of a platform.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AddressMapping {
    /// Page size in bytes.
    pub page_size: u64,
    /// Color functions.
    pub color: XorFunctions,
    /// Bank functions (bank index within a controller).
    pub bank: XorFunctions,
    /// Controller (channel) functions.
    pub controller: XorFunctions,
}

impl AddressMapping {
    /// Builds a mapping and checks every function is page granular.
    pub fn new(
        page_size: u64,
        color: XorFunctions,
        bank: XorFunctions,
        controller: XorFunctions,
    ) -> Result<Self, MemError> {
        if !page_size.is_power_of_two() || page_size < 64 {
            return Err(MemError::Mapping(format!(
                "page size {page_size}: expected a power of two of at least 64 bytes"
            )));
        }
        color.check_page_granular("color", page_size)?;
        bank.check_page_granular("bank", page_size)?;
        controller.check_page_granular("controller", page_size)?;
        Ok(Self {
            page_size,
            color,
            bank,
            controller,
        })
    }

    /// Colors only (one bank, one controller), from a cache's page colours.
    pub fn from_colors(colors: &PageColors) -> Result<Self, MemError> {
        Self::new(
            colors.page_bytes,
            color_functions_from_geometry(colors)?,
            XorFunctions::none(),
            XorFunctions::none(),
        )
    }

    /// Number of colors.
    pub fn colors(&self) -> u32 {
        self.color.count()
    }

    /// Number of banks per controller.
    pub fn banks(&self) -> u32 {
        self.bank.count()
    }

    /// Number of controllers.
    pub fn controllers(&self) -> u32 {
        self.controller.count()
    }

    /// Classifies the page holding physical address `address`.
    #[inline]
    pub fn classify(&self, address: u64) -> PageClass {
        PageClass {
            color: self.color.index(address),
            bank: self.bank.index(address),
            controller: self.controller.index(address),
        }
    }

    /// Classifies a page frame number.
    #[inline]
    pub fn classify_frame(&self, frame: u64) -> PageClass {
        self.classify(frame.wrapping_mul(self.page_size))
    }

    /// For each colour, whether any address of that colour can lie in one
    /// of the `wanted` (controller, bank) classes (`None`: every bank, or
    /// every controller). Bank or controller functions that read colour
    /// bits tie some banks to some colours (bank bits 13-14 with colour
    /// bits 12-20: colour `c` is always bank `(c >> 1) & 3`); this finds
    /// every such tie exactly, by the linear dependencies over GF(2)
    /// between the colour, bank and controller masks.
    pub fn colors_reaching(&self, banks: Option<&[u32]>, controllers: Option<&[u32]>) -> Vec<bool> {
        let masks: Vec<u64> = self
            .color
            .masks()
            .iter()
            .chain(self.bank.masks())
            .chain(self.controller.masks())
            .copied()
            .collect();
        let (nc, nb) = (self.color.masks().len(), self.bank.masks().len());
        // Each dependency: a set of functions whose masks XOR to zero, so
        // their index bits XOR to zero for every address.
        let dependencies = crate::gf2::dependencies(&masks);
        let constraint = |colour: u32, bank: u32, controller: u32| {
            let bits =
                u64::from(colour) | u64::from(bank) << nc | u64::from(controller) << (nc + nb);
            dependencies
                .iter()
                .all(|d| (d & bits).count_ones() % 2 == 0)
        };
        let bank_list: Vec<u32> =
            banks.map_or_else(|| (0..self.banks()).collect(), <[u32]>::to_vec);
        let controller_list: Vec<u32> =
            controllers.map_or_else(|| (0..self.controllers()).collect(), <[u32]>::to_vec);
        (0..self.colors())
            .map(|colour| {
                controller_list
                    .iter()
                    .any(|&k| bank_list.iter().any(|&b| constraint(colour, b, k)))
            })
            .collect()
    }
}

/// Mapping from the analysis' `N_P` cache partitions (numbered `1..=N_P`,
/// kim2013 Section III) to groups of page colors.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PartitionColors {
    groups: Vec<Vec<u32>>,
}

impl PartitionColors {
    /// Default split: partition `k` gets colors
    /// `[(k-1)·colors/N_P, k·colors/N_P)`.
    pub fn even(colors: u32, partitions: u32) -> Result<Self, MemError> {
        if partitions == 0 || partitions > colors {
            return Err(MemError::Mapping(format!(
                "{partitions} cache partitions over {colors} page colors: expected 1..={colors} \
                 partitions (each partition needs at least one color)"
            )));
        }
        let (colors, partitions) = (u64::from(colors), u64::from(partitions));
        let groups = (1..=partitions)
            .map(|k| {
                let start = (k - 1) * colors / partitions;
                let end = k * colors / partitions;
                (start as u32..end as u32).collect()
            })
            .collect();
        Ok(Self { groups })
    }

    /// Explicit groups: `groups[k-1]` are the colors of partition `k`.
    /// Groups must be non-empty, in range and pairwise disjoint.
    pub fn explicit(groups: Vec<Vec<u32>>, colors: u32) -> Result<Self, MemError> {
        let mut owner = vec![0usize; colors as usize];
        for (index, group) in groups.iter().enumerate() {
            let partition = index + 1;
            if group.is_empty() {
                return Err(MemError::Mapping(format!(
                    "partition {partition} has no colors: expected at least one"
                )));
            }
            for &color in group {
                let Some(slot) = owner.get_mut(color as usize) else {
                    return Err(MemError::Mapping(format!(
                        "partition {partition} lists color {color}: expected a color in 0..{colors}"
                    )));
                };
                if *slot != 0 {
                    return Err(MemError::Mapping(format!(
                        "color {color} is listed in partitions {} and {partition}: expected \
                         disjoint partitions",
                        *slot
                    )));
                }
                *slot = partition;
            }
        }
        Ok(Self { groups })
    }

    /// Number of partitions `N_P`.
    pub fn partitions(&self) -> u32 {
        self.groups.len() as u32
    }

    /// Colors of partition `k` (1-based, as in the paper).
    pub fn colors_of(&self, partition: u32) -> Result<&[u32], MemError> {
        partition
            .checked_sub(1)
            .and_then(|i| self.groups.get(i as usize))
            .map(Vec::as_slice)
            .ok_or_else(|| {
                MemError::Mapping(format!(
                    "partition {partition}: expected 1..={}",
                    self.groups.len()
                ))
            })
    }

    /// Union of the colors of several partitions, in partition order.
    pub fn colors_of_all(&self, partitions: &[u32]) -> Result<Vec<u32>, MemError> {
        let mut colors = Vec::new();
        for &partition in partitions {
            colors.extend_from_slice(self.colors_of(partition)?);
        }
        Ok(colors)
    }
}

/// The memory-layout keys tinct proposes for a task set's `[platform]`
/// table. Every key is optional; missing ones come from the machine.
///
/// ```toml
/// color_bits = [12, 13, 14, 15, 16, 17, 18, 19, 20]   # or:
/// color_functions = ["0x1000", "0x2000"]             # XOR masks (hashed caches)
/// bank_functions = ["0x2040", "0x44000", [14, 18]]   # DRAMA-style masks or bit lists
/// controller_functions = ["0x100000"]
/// partition_colors = [[0, 1], [2, 3]]                # partition k = entry k-1
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(deny_unknown_fields))]
pub struct LayoutSpec {
    /// Color index bits, lowest first (one function per bit).
    #[cfg_attr(feature = "serde", serde(default))]
    pub color_bits: Option<Vec<u32>>,
    /// Color functions as XOR masks or bit lists (for hashed caches).
    #[cfg_attr(feature = "serde", serde(default))]
    pub color_functions: Option<Vec<FunctionSpec>>,
    /// DRAM bank functions.
    #[cfg_attr(feature = "serde", serde(default))]
    pub bank_functions: Option<Vec<FunctionSpec>>,
    /// DRAM controller (channel) functions.
    #[cfg_attr(feature = "serde", serde(default))]
    pub controller_functions: Option<Vec<FunctionSpec>>,
    /// Explicit colors of each partition `1..=N_P`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub partition_colors: Option<Vec<Vec<u32>>>,
}

impl LayoutSpec {
    /// Resolves the spec into a mapping. `default_colors` is used when
    /// neither `color_bits` nor `color_functions` is given (normally the
    /// functions derived from the machine's LLC).
    pub fn resolve(
        &self,
        page_size: u64,
        default_colors: XorFunctions,
    ) -> Result<AddressMapping, MemError> {
        let color = match (&self.color_bits, &self.color_functions) {
            (Some(_), Some(_)) => {
                return Err(MemError::Mapping(
                    "both color_bits and color_functions are given: expected at most one".into(),
                ));
            }
            (Some(bits), None) => XorFunctions::from_bits(bits)?,
            (None, Some(functions)) => masks_of(functions)?,
            (None, None) => default_colors,
        };
        let bank = self
            .bank_functions
            .as_deref()
            .map(masks_of)
            .transpose()?
            .unwrap_or_default();
        let controller = self
            .controller_functions
            .as_deref()
            .map(masks_of)
            .transpose()?
            .unwrap_or_default();
        AddressMapping::new(page_size, color, bank, controller)
    }

    /// Resolves the partition → colors mapping for `partitions` = N_P.
    pub fn partitions(
        &self,
        mapping: &AddressMapping,
        partitions: u32,
    ) -> Result<PartitionColors, MemError> {
        match &self.partition_colors {
            Some(groups) => {
                let explicit = PartitionColors::explicit(groups.clone(), mapping.colors())?;
                if explicit.partitions() != partitions {
                    return Err(MemError::Mapping(format!(
                        "partition_colors lists {} partitions: expected N_P = {partitions}",
                        explicit.partitions()
                    )));
                }
                Ok(explicit)
            }
            None => PartitionColors::even(mapping.colors(), partitions),
        }
    }
}

fn masks_of(functions: &[FunctionSpec]) -> Result<XorFunctions, MemError> {
    XorFunctions::from_masks(functions.iter().map(|f| f.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_select_address_bits_in_order() {
        let f = XorFunctions::from_bits(&[12, 13, 14]).unwrap();
        assert_eq!(f.count(), 8);
        assert_eq!(f.index(0x0000), 0);
        assert_eq!(f.index(0x1000), 1);
        assert_eq!(f.index(0x2000), 2);
        assert_eq!(f.index(0x5000), 5);
        assert_eq!(f.index(0x8000), 0, "bit 15 is not a color bit");
    }

    #[test]
    fn xor_masks_are_parities() {
        let f = XorFunctions::parse("0x2040, 0x44000").unwrap();
        assert_eq!(f.masks(), &[0x2040, 0x44000]);
        assert_eq!(f.index(0x2000), 1);
        assert_eq!(f.index(0x2040), 0, "both bits of mask 0 set: parity 0");
        assert_eq!(f.index(0x4000), 2);
        assert_eq!(f.index(0x44000), 0);
        assert_eq!(f.index(0x46000), 1);
    }

    #[test]
    fn parse_errors_name_the_entry() {
        let err = XorFunctions::parse("0x2040,zz").unwrap_err().to_string();
        assert!(
            err.contains("function 1") && err.contains("\"zz\""),
            "{err}"
        );
        let err = XorFunctions::parse("0x0").unwrap_err().to_string();
        assert!(err.contains("non-zero"), "{err}");
        let err = XorFunctions::parse("0x10,0x10").unwrap_err().to_string();
        assert!(err.contains("repeats"), "{err}");
    }

    #[test]
    fn geometry_of_this_machine_gives_512_colors() {
        let colors = PageColors::of_cache(32 << 20, 16, 4096).unwrap();
        let f = color_functions_from_geometry(&colors).unwrap();
        assert_eq!(f.count(), 512);
        assert_eq!(f.lowest_bit(), Some(12));
        assert_eq!(f.masks().last(), Some(&(1u64 << 20)));
    }

    #[test]
    fn sliced_geometry_is_rejected_with_a_hint() {
        let colors = PageColors::of_cache(30 << 20, 20, 4096).unwrap();
        let err = color_functions_from_geometry(&colors)
            .unwrap_err()
            .to_string();
        assert!(err.contains("color_bits"), "{err}");
    }

    #[test]
    fn the_page_granular_part_keeps_what_pages_can_control() {
        // Skylake i5-6200U (heechul/drama): the last function reads bits 8
        // and 9; no combination of it with the others avoids them.
        let skylake = XorFunctions::parse("0x44000,0x88000,0x110000,0x220000,0xf300").unwrap();
        let (pages, lost) = skylake.page_granular(4096);
        assert_eq!(lost, 1);
        assert_eq!(pages.count(), 16);
        assert!(pages.masks().iter().all(|m| m & 0xfff == 0));
        // Two sub-page functions whose XOR is page-granular.
        let mixed = XorFunctions::parse("0x2040,0x20040").unwrap();
        let (pages, lost) = mixed.page_granular(4096);
        assert_eq!((pages.masks(), lost), (&[0x22000u64][..], 1));
    }

    #[test]
    fn sub_page_functions_are_rejected() {
        let bank = XorFunctions::parse("0x2040").unwrap();
        let err = AddressMapping::new(4096, XorFunctions::none(), bank, XorFunctions::none())
            .unwrap_err()
            .to_string();
        assert!(err.contains("bit 6"), "{err}");
    }

    #[test]
    fn bank_functions_on_colour_bits_tie_colours_to_banks() {
        // Colours by bits 12-20, banks by bits 13 and 14: colour c is bank
        // (c >> 1) & 3 always.
        let mapping = AddressMapping::new(
            4096,
            XorFunctions::from_bits(&(12..21).collect::<Vec<_>>()).unwrap(),
            XorFunctions::parse("0x2000,0x4000").unwrap(),
            XorFunctions::none(),
        )
        .unwrap();
        let reach = mapping.colors_reaching(Some(&[1, 2]), None);
        for colour in 0..512u32 {
            let bank = (colour >> 1) & 3;
            assert_eq!(
                reach[colour as usize],
                bank == 1 || bank == 2,
                "colour {colour}"
            );
        }
        // XOR masks mixing colour and other bits tie nothing.
        let hashed = AddressMapping::new(
            4096,
            XorFunctions::from_bits(&[12, 13]).unwrap(),
            XorFunctions::parse("0x22000").unwrap(),
            XorFunctions::parse("0x101000").unwrap(),
        )
        .unwrap();
        assert!(
            hashed
                .colors_reaching(Some(&[0]), Some(&[1]))
                .iter()
                .all(|&r| r)
        );
        // Bank functions that are combinations of colour bits: bank bit 0
        // = a12 ^ a13, bank bit 1 = a13, so bank 1 (bits 1, 0) means a13 =
        // 0 and a12 = 1: colour 1 only.
        let tied = AddressMapping::new(
            4096,
            XorFunctions::from_bits(&[12, 13]).unwrap(),
            XorFunctions::parse("0x3000,0x2000").unwrap(),
            XorFunctions::none(),
        )
        .unwrap();
        assert_eq!(
            tied.colors_reaching(Some(&[1]), None),
            vec![false, true, false, false]
        );
        assert_eq!(tied.colors_reaching(None, None), vec![true; 4]);
    }

    #[test]
    fn even_partitions_cover_all_colors_once() {
        let p = PartitionColors::even(32, 5).unwrap();
        let all: Vec<u32> = (1..=5)
            .flat_map(|k| p.colors_of(k).unwrap().to_vec())
            .collect();
        assert_eq!(all, (0..32).collect::<Vec<_>>());
        assert_eq!(p.colors_of(1).unwrap(), &[0, 1, 2, 3, 4, 5]);
        assert!(p.colors_of(0).is_err());
        assert!(p.colors_of(6).is_err());
        assert!(PartitionColors::even(4, 5).is_err());
    }

    #[test]
    fn explicit_partitions_must_be_disjoint() {
        let err = PartitionColors::explicit(vec![vec![0, 1], vec![1]], 4)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("color 1") && err.contains("partitions 1 and 2"),
            "{err}"
        );
        assert!(PartitionColors::explicit(vec![vec![4]], 4).is_err());
    }

    #[test]
    fn layout_spec_from_toml() {
        let spec: LayoutSpec = toml::from_str(
            r#"
            color_bits = [12, 13]
            bank_functions = ["0x4000", [15, 17]]
            controller_functions = [0x100000]
            partition_colors = [[0, 1], [2, 3]]
            "#,
        )
        .unwrap();
        let mapping = spec.resolve(4096, XorFunctions::none()).unwrap();
        assert_eq!(mapping.colors(), 4);
        assert_eq!(mapping.bank.masks(), &[0x4000, (1 << 15) | (1 << 17)]);
        assert_eq!(mapping.controllers(), 2);
        let parts = spec.partitions(&mapping, 2).unwrap();
        assert_eq!(parts.colors_of(2).unwrap(), &[2, 3]);
        assert!(spec.partitions(&mapping, 3).is_err());
    }

    #[test]
    fn layout_spec_reports_bad_masks_with_position() {
        let err = toml::from_str::<LayoutSpec>("bank_functions = [\"2040\"]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("0x2040") && err.contains("line 1"), "{err}");
        let err = toml::from_str::<LayoutSpec>("color_bits = [12]\nbank_functions = [[]]")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("empty bit list") && err.contains("line 2"),
            "{err}"
        );
        let err = toml::from_str::<LayoutSpec>("colour_bits = [12]")
            .unwrap_err()
            .to_string();
        assert!(err.contains("colour_bits"), "{err}");
    }
}
