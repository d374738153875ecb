//! `[platform]`: N_C, N_P, M_total, Δ, the page-colour bits and the DRAM
//! mapping the runtime places memory with, the overheads the analysis
//! charges and the cache domains placement works with.

use super::{Field, Reporter, platform_field};
use crate::format::Seg;
use crate::format::locate::path;
use crate::format::raw::{RawOverheads, RawPlatform, Scalar};
use crate::format::{InputError, LoadOptions};
use crate::model::{Overheads, Platform};
use crate::partitions::MAX_PARTITIONS;
use crate::units::Nanos;

pub(super) fn validate_platform(
    raw: &RawPlatform,
    reporter: &Reporter<'_>,
    options: &LoadOptions,
) -> Result<Platform, InputError> {
    let field = |name: &str| Field {
        reporter,
        at: path(&["platform", name]),
        name: platform_field(name),
    };
    let cores = field("cores").integer(&raw.cores, 1, 4096, "the number of cores")?;
    let partitions = field("partitions").integer(
        &raw.partitions,
        1,
        i64::from(MAX_PARTITIONS),
        "the number of cache partitions N_P",
    )?;
    let memory_field = field("memory");
    let memory = memory_field.size(&raw.memory)?;
    if memory.0 < u64::from(partitions) {
        return Err(memory_field.fail(
            format!("at least one byte per partition ({partitions} partitions)"),
            memory.to_string(),
        ));
    }
    let refill = match (&raw.refill, options.default_refill) {
        (Some(value), _) => field("refill").duration(value)?,
        (None, Some(calibration)) => calibration.for_partitions(partitions),
        (None, None) => {
            return Err(field("refill").fail(
                "Δ, the time to refill one cache partition, e.g. refill = \"45.3us\" \
                 (measure it with `tinct bench calibrate`, or pass --calibration FILE)",
                "no `refill` key and no calibration",
            ));
        }
    };
    let overheads = match &raw.overheads {
        None => Overheads::NONE,
        Some(raw) => validate_overheads(raw, reporter)?,
    };
    let cache_domains = match &raw.cache_domains {
        None => None,
        Some(domains) => Some(validate_cache_domains(
            domains,
            cores,
            &field("cache_domains"),
        )?),
    };
    let color_bits = raw
        .color_bits
        .as_ref()
        .map(|bits| validate_color_bits(bits, partitions, reporter))
        .transpose()?;
    let dram_map = raw
        .dram_map
        .as_ref()
        .map(|path| {
            let relative = std::path::Path::new(reporter.file)
                .parent()
                .unwrap_or(std::path::Path::new(""))
                .join(path);
            crate::dram_map::DramMap::load(&relative)
                .map(|map| crate::model::PlatformDramMap {
                    path: path.clone(),
                    map,
                })
                .map_err(|e| {
                    field("dram_map").fail(
                        "a DRAM mapping file written by `tinct bench dram-map` (relative to \
                         this task set)",
                        e.to_string(),
                    )
                })
        })
        .transpose()?;
    Ok(Platform {
        cores,
        partitions,
        memory,
        refill,
        color_bits,
        dram_map,
        overheads,
        cache_domains,
    })
}

/// `overheads = { context_switch, release_latency, tick, tick_period }`:
/// durations, each optional (absent is zero; `tick_period` absent means the
/// tick is not charged periodically).
fn validate_overheads(
    raw: &RawOverheads,
    reporter: &Reporter<'_>,
) -> Result<Overheads, InputError> {
    let field = |name: &str| Field {
        reporter,
        at: path(&["platform", "overheads", name]),
        name: platform_field(&format!("overheads.{name}")),
    };
    let duration = |name: &str, value: &Option<_>| match value {
        None => Ok(Nanos::ZERO),
        Some(v) => field(name).duration(v),
    };
    let tick_period = match &raw.tick_period {
        None => None,
        Some(value) => {
            let f = field("tick_period");
            let period = f.duration(value)?;
            if period == Nanos::ZERO {
                return Err(f.fail("a tick period above zero", "0"));
            }
            Some(period)
        }
    };
    let overheads = Overheads {
        context_switch: duration("context_switch", &raw.context_switch)?,
        release_latency: duration("release_latency", &raw.release_latency)?,
        tick: duration("tick", &raw.tick)?,
        tick_period,
    };
    if let Some(period) = tick_period
        && overheads.tick >= period
    {
        return Err(field("tick").fail(
            format!(
                "a tick cost below the tick period {period} (the tick would use the whole core)"
            ),
            overheads.tick.to_string(),
        ));
    }
    Ok(overheads)
}

/// `cache_domains = [[0, 1], [2, 3]]`: every core of the platform in exactly
/// one non-empty domain.
fn validate_cache_domains(
    raw: &[Vec<i64>],
    cores: u32,
    field: &Field<'_, '_>,
) -> Result<Vec<Vec<u32>>, InputError> {
    let mut seen = vec![false; cores as usize];
    let mut domains = Vec::with_capacity(raw.len());
    for (d, list) in raw.iter().enumerate() {
        if list.is_empty() {
            return Err(field.fail(
                "non-empty groups of cores",
                format!("domain #{} is empty", d + 1),
            ));
        }
        let mut domain = Vec::with_capacity(list.len());
        for &core in list {
            let Some(slot) = usize::try_from(core)
                .ok()
                .filter(|&c| c < cores as usize)
                .map(|c| &mut seen[c])
            else {
                return Err(field.fail(
                    format!("cores of the platform's {cores} (0 to {})", cores - 1),
                    format!("core {core} in domain #{}", d + 1),
                ));
            };
            if *slot {
                return Err(field.fail(
                    "every core in exactly one domain",
                    format!("core {core} twice"),
                ));
            }
            *slot = true;
            domain.push(core as u32);
        }
        domains.push(domain);
    }
    if let Some(missing) = seen.iter().position(|&s| !s) {
        return Err(field.fail(
            "every core of the platform in one domain",
            format!("core {missing} in none"),
        ));
    }
    Ok(domains)
}

/// Largest number of colour bits (2^16 colours, the most tinct-mem's
/// address functions express).
const MAX_COLOR_BITS: usize = 16;

/// `color_bits = [12, 13, ...]`: strictly increasing address bits from 6
/// (above a cache line) to 63, at most 16 of them, giving at least one
/// colour per partition.
fn validate_color_bits(
    bits: &[Scalar],
    partitions: u32,
    reporter: &Reporter<'_>,
) -> Result<Vec<u32>, InputError> {
    let list = Field {
        reporter,
        at: path(&["platform", "color_bits"]),
        name: platform_field("color_bits"),
    };
    if bits.is_empty() || bits.len() > MAX_COLOR_BITS {
        return Err(list.fail(
            format!("1 to {MAX_COLOR_BITS} physical address bits, such as [12, 13, 14, 15, 16]"),
            format!("{} bits", bits.len()),
        ));
    }
    let mut out: Vec<u32> = Vec::with_capacity(bits.len());
    for (i, value) in bits.iter().enumerate() {
        let element = Field {
            reporter,
            at: vec![
                Seg::Key("platform".into()),
                Seg::Key("color_bits".into()),
                Seg::Index(i),
            ],
            name: platform_field("color_bits"),
        };
        let bit = element.integer(value, 6, 63, "a physical address bit above the cache line")?;
        if out.last().is_some_and(|&previous| bit <= previous) {
            return Err(element.fail(
                "strictly increasing bits",
                format!("{bit} after {}", out[out.len() - 1]),
            ));
        }
        out.push(bit);
    }
    let colors = 1u64 << out.len();
    if colors < u64::from(partitions) {
        return Err(list.fail(
            format!(
                "at least one colour per partition: {partitions} partitions need at least {} bits",
                partitions.next_power_of_two().trailing_zeros()
            ),
            format!("{} bits ({colors} colours)", out.len()),
        ));
    }
    Ok(out)
}
