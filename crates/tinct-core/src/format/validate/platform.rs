//! `[platform]`: N_C, N_P, M_total, Δ, the overheads the analysis charges
//! and the cache domains placement works with.

use super::{Field, Reporter, platform_field};
use crate::format::locate::path;
use crate::format::raw::{RawOverheads, RawPlatform};
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
    Ok(Platform {
        cores,
        partitions,
        memory,
        refill,
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
