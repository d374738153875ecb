//! The measuring loops of `tinct bench calibrate`: the latency sweep, the
//! bandwidth, Δ, then the overheads (as `tinct bench overheads` measures
//! them), every part interleaved by the harness and ended early by a stop.

use super::chase::{self, ChaseBuffer, Layout};
use super::plan::{Geometry, Plan};
use super::stream::PartitionBuffer;
use super::{Bandwidth, LatencyPoint, Refill};
use crate::harness::memory_pass;
use crate::harness::output::toml_line;
use crate::harness::pin::PinGuard;
use crate::harness::{Durations, Interleaved, Progress, RunHeader, unless_stopped};
use crate::{Error, Result};
use tinct_core::calibration::{Overheads, RefillRecord};
use tinct_core::units::{Bytes, Nanos};

/// What a run measured; a part a stop (Ctrl-C) came before is absent.
pub struct Measured {
    /// The latency sweep, the sizes finished.
    pub latency: Vec<LatencyPoint>,
    /// Why the sweep has no huge-page chase (at some sizes), if so.
    pub huge_missing: Option<String>,
    /// Bandwidth.
    pub bandwidth: Option<Bandwidth>,
    /// Δ.
    pub refill: Option<Refill>,
    /// The platform overheads.
    pub overheads: Option<Overheads>,
}

/// Measures what `plan` says, in order; a stop ([`Progress::stop_requested`])
/// keeps the parts finished and leaves the others absent.
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<Measured> {
    let pin = PinGuard::pin(plan.cpu)?;
    let header = &plan.header;
    progress.start(plan.progress_steps, "calibrate");

    let mut latency = Vec::with_capacity(plan.sizes.len());
    let mut huge_missing = plan.huge_missing.clone();
    // Ctrl-C: the steps finished are the result, the others absent.
    for (i, &size) in plan.sizes.iter().enumerate() {
        progress.set_message(&Bytes(size).to_string());
        let Some((point, why_not_huge)) = unless_stopped(progress, || {
            latency_point(
                size,
                &plan.geometry,
                header,
                LatencyRun {
                    steps: plan.steps,
                    reps: plan.reps,
                    seed: plan.seed.wrapping_add(i as u64),
                    huge: huge_missing.is_none(),
                },
                progress,
            )
        })?
        else {
            break;
        };
        latency.push(point);
        if huge_missing.is_none() {
            huge_missing = why_not_huge;
        }
    }

    progress.set_message("bandwidth");
    let mut big: Vec<u64> = if progress.stop_requested() {
        Vec::new()
    } else {
        vec![1; (plan.wipe_bytes / 8) as usize]
    };
    let bandwidth = unless_stopped(progress, || {
        measure_bandwidth(&mut big, plan.bandwidth_reps, plan.seed, progress)
    })?;

    progress.set_message("refill");
    let refill = unless_stopped(progress, || {
        measure_refill(
            &RefillSetup {
                llc_bytes: plan.geometry.llc,
                partitions: plan.partitions,
                page_bytes: plan.geometry.page,
                reps: plan.refill_reps,
                seed: plan.seed,
            },
            &big,
            progress,
        )
    })?;
    drop(big);
    // Unpinned: the release latency runs a thread on every CPU of --cpus.
    drop(pin);
    let overheads = unless_stopped(progress, || {
        crate::overheads::measure(&plan.overheads, progress)
    })?
    .map(|m| m.overheads);
    progress.finish();
    Ok(Measured {
        latency,
        huge_missing,
        bandwidth,
        refill,
        overheads,
    })
}

fn fits_in(size: u64, header: &RunHeader) -> String {
    header
        .machine
        .caches
        .iter()
        .filter(|c| c.size_bytes >= size)
        .min_by_key(|c| c.level)
        .map_or_else(|| "memory".to_string(), |c| c.name.clone())
}

/// How to sample one size of the latency sweep.
#[derive(Debug, Clone, Copy)]
struct LatencyRun {
    steps: u64,
    reps: u32,
    seed: u64,
    /// Also chase within transparent huge pages.
    huge: bool,
}

/// One size of the sweep, and why it has no huge-page chase if `run.huge`
/// asked for one and the kernel did not back the buffer.
fn latency_point(
    size: u64,
    geometry: &Geometry,
    header: &RunHeader,
    run: LatencyRun,
    progress: &dyn Progress,
) -> Result<(LatencyPoint, Option<String>)> {
    let LatencyRun {
        steps,
        reps,
        seed,
        huge,
    } = run;
    let page_bytes = geometry.page as usize;
    let mut buffers = vec![
        ChaseBuffer::new(size as usize, Layout::RandomLines, seed),
        ChaseBuffer::new(size as usize, Layout::PageLocal { page_bytes }, seed),
    ];
    let mut why_not_huge = None;
    if huge {
        let (buffer, backed) =
            ChaseBuffer::in_huge_pages(size as usize, Layout::RandomLines, seed)?;
        let wanted = (buffer.lines() * chase::LINE_BYTES) as u64;
        if backed >= wanted {
            buffers.push(buffer);
        } else {
            why_not_huge = Some(format!(
                "THP unavailable: the kernel backed {} of a {} buffer with huge pages \
                 (THP defrag setting or fragmented memory)",
                Bytes(backed),
                Bytes(wanted)
            ));
        }
    }
    let conditions = ["random", "page_local", "huge_random"];
    // Every page was written when the cycle was linked; one pass (capped:
    // beyond the caches a partial pass is as good as a whole one) warms the
    // caches and TLBs before the first sample.
    for buffer in &mut buffers {
        let lines = buffer.lines() as u64;
        buffer.chase(lines.min(steps * 4));
    }
    let samples = Interleaved::new(conditions.into_iter().take(buffers.len()), reps)
        .warmup(1)
        .seed(seed)
        .run::<Error>(progress, |c| Ok(buffers[c].chase(steps)))?;
    let random = samples.stats(0).ok_or_else(no_samples)?;
    let page_local = samples.stats(1).ok_or_else(no_samples)?;
    let huge_random = (buffers.len() > 2)
        .then(|| samples.stats(2).ok_or_else(no_samples))
        .transpose()?;
    let point = LatencyPoint {
        size_bytes: size,
        fits_in: fits_in(size, header),
        accesses_per_sample: steps,
        huge_random,
        random,
        page_local,
    };
    Ok((point, why_not_huge))
}

fn no_samples() -> Error {
    Error::Measurement("no samples were taken (--reps 0?)".into())
}

/// Read and write passes over `buffer`, interleaved.
pub fn measure_bandwidth(
    buffer: &mut [u64],
    reps: u32,
    seed: u64,
    progress: &dyn Progress,
) -> Result<Bandwidth> {
    let mut value = 0u64;
    let samples = Interleaved::new(["read", "write"], reps)
        .warmup(1)
        .seed(seed)
        .run::<Error>(progress, |c| {
            value += 1;
            Ok(if c == 0 {
                memory_pass::read_pass(buffer)
            } else {
                memory_pass::write_pass(buffer, value)
            })
        })?;
    let read = samples.stats(0).ok_or_else(no_samples)?;
    let write = samples.stats(1).ok_or_else(no_samples)?;
    let bytes = (buffer.len() * 8) as u64;
    let gbps = |s: &Durations| bytes as f64 / s.median.max(1) as f64;
    Ok(Bandwidth {
        buffer_bytes: bytes,
        read_gb_per_s: gbps(&read),
        write_gb_per_s: gbps(&write),
        read,
        write,
    })
}

/// What [`measure_refill`] needs.
#[derive(Debug, Clone, Copy)]
pub struct RefillSetup {
    /// LLC capacity in bytes.
    pub llc_bytes: u64,
    /// N_P.
    pub partitions: u32,
    /// Page size in bytes.
    pub page_bytes: u64,
    /// Repetitions per condition.
    pub reps: u32,
    /// Seed.
    pub seed: u64,
}

/// Measures Δ (see the module documentation). `wipe` must be at least twice
/// the LLC: reading it evicts the partition.
pub fn measure_refill(
    setup: &RefillSetup,
    wipe: &[u64],
    progress: &dyn Progress,
) -> Result<Refill> {
    let partition = (setup.llc_bytes / u64::from(setup.partitions.max(1))).max(setup.page_bytes);
    let pages = PartitionBuffer::new(partition as usize, setup.page_bytes as usize, setup.seed);
    let mut chase = ChaseBuffer::new(pages.bytes(), Layout::RandomLines, setup.seed ^ 0x5a5a);
    let chase_steps = chase.lines() as u64;
    let samples = Interleaved::new(
        ["cold_pages", "warm_pages", "cold_chase", "warm_chase"],
        setup.reps,
    )
    .warmup(1)
    .seed(setup.seed)
    .run::<Error>(progress, |c| {
        match c {
            0 | 2 => {
                memory_pass::read_pass(wipe);
            }
            1 => {
                pages.pass();
            }
            _ => {
                chase.chase(chase_steps);
            }
        }
        Ok(match c {
            0 | 1 => pages.pass(),
            _ => chase.chase(chase_steps),
        })
    })?;
    let stats: Vec<Durations> = (0..4)
        .map(|c| samples.stats(c).ok_or_else(no_samples))
        .collect::<Result<_>>()?;
    let refill_ns = stats[0].median.saturating_sub(stats[1].median);
    let refill_latency_bound_ns = stats[2].median.saturating_sub(stats[3].median);
    if refill_ns == 0 {
        return Err(Error::Measurement(format!(
            "the refill pass over {} was not slower after wiping the cache (cold median {} ns, warm median {} ns): \
             is the wipe buffer ({}) really larger than the LLC?",
            Bytes(pages.bytes() as u64),
            stats[0].median,
            stats[1].median,
            Bytes((wipe.len() * 8) as u64)
        )));
    }
    let rounded = Nanos(refill_ns.div_ceil(100) * 100);
    Ok(Refill {
        delta: RefillRecord {
            partitions: setup.partitions,
            refill_ns,
        },
        llc_bytes: setup.llc_bytes,
        partition_bytes: pages.bytes() as u64,
        cold_pages: stats[0],
        warm_pages: stats[1],
        cold_chase: stats[2],
        warm_chase: stats[3],
        refill_latency_bound_ns,
        refill: rounded.to_string(),
        platform_line: toml_line("refill", rounded.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refill_is_positive_and_bounded_by_the_chase() {
        let setup = RefillSetup {
            llc_bytes: 1 << 20,
            partitions: 4,
            page_bytes: 4096,
            reps: 3,
            seed: 1,
        };
        // A 64 MiB wipe evicts a 256 KiB partition from any cache of this machine.
        let wipe = vec![1u64; 8 << 20];
        let refill = measure_refill(&setup, &wipe, &crate::harness::NoProgress).unwrap();
        assert_eq!(refill.partition_bytes, 256 << 10);
        assert!(refill.delta.refill_ns > 0);
        assert!(refill.platform_line.starts_with("refill = \""));
        let parsed = tinct_core::units::parse_duration(&refill.refill).unwrap();
        assert!(parsed.0 >= refill.delta.refill_ns && parsed.0 < refill.delta.refill_ns + 100);
    }
}
