//! The measuring loops of `tinct bench crpd`: the context switch (Table 1,
//! [`super::switch`]), then one CRPD sweep per level ([`super::sweep`])
//! against the preempter ([`super::partner`]), all on one CPU under
//! SCHED_FIFO where allowed.

use super::partner::Partner;
use super::plan::Plan;
use super::{CrpdResult, DEFAULT_FIFO_PRIORITY, SwitchCost, sweep, switch};
use crate::harness::Progress;
use crate::harness::pin::PinGuard;
use crate::{Error, Result};

/// Restores SCHED_OTHER on drop.
struct FifoGuard;

impl Drop for FifoGuard {
    fn drop(&mut self) {
        let _ = tinct_sys::sched::set_other();
    }
}

/// Measures what `plan` says: the context switch, then each level's sweep;
/// a stop keeps the levels swept so far (none if it came before the
/// context switch's first round ended).
pub(super) fn measure(plan: &Plan, progress: &dyn Progress) -> Result<CrpdResult> {
    let _pin = PinGuard::pin(plan.cpu)?;
    let mut header = plan.header.clone();
    let fifo = (!plan.no_fifo && tinct_sys::sched::set_fifo(DEFAULT_FIFO_PRIORITY).is_ok())
        .then_some(DEFAULT_FIFO_PRIORITY);
    let _fifo_guard = fifo.map(|_| FifoGuard);
    let policy = fifo.map_or("other".to_string(), |p| format!("fifo({p})"));
    // Under SCHED_FIFO the switch's cases also measure their wake-ups alone.
    let wakeup_steps = fifo.map_or(0, |_| {
        u64::from(plan.reps + 1) * (2 + u64::from(plan.other_cpu.is_some()))
    });
    progress.start(plan.progress_steps + wakeup_steps, "crpd");

    progress.set_message("context switch");
    let (switch, switch_counters) = switch::measure(
        &switch::Setup {
            cpu: plan.cpu,
            other_cpu: plan.other_cpu,
            fifo,
            reps: plan.reps,
            seed: plan.seed,
            wipe_bytes: plan.switch_wipe_bytes,
            measure_wakeup: true,
        },
        progress,
    )?;
    header.counters.extend(switch_counters);
    if switch.is_none() {
        // Stopped before the first round ended: the header alone.
        progress.finish();
        return Ok(CrpdResult {
            header,
            policy,
            switch,
            levels: Vec::new(),
        });
    }

    let partner = Partner::start(plan.cpu, &plan.wipers, fifo)?;
    let mut sweeps = Vec::with_capacity(plan.levels.len());
    for (i, cache) in plan.levels.iter().enumerate() {
        if progress.stop_requested() {
            break; // Ctrl-C: the levels swept so far are the result
        }
        let setup = sweep::Setup {
            cache,
            kind: plan.kind,
            wipe_index: i,
            fractions: &plan.fractions,
            words_per_line: &plan.words_per_line,
            code_order: plan.code_order,
            reps: plan.reps,
            seed: plan.seed,
        };
        let (sweep, counters) = sweep::sweep_level(&partner, &setup, progress)?;
        if sweep.points.is_empty() {
            break; // stopped before its first fraction's first round ended
        }
        sweeps.push(sweep);
        header.counters.extend(counters);
    }
    progress.finish();
    drop(partner);
    // The harness records the rounds and the stop (harness::bench).
    Ok(CrpdResult {
        header,
        policy,
        switch,
        levels: sweeps,
    })
}

/// The context-switch cost alone (Sebek 2002 Table 1), measured as
/// [`measure()`](super::measure()) does: for callers that need δ without
/// the CRPD sweeps (the machine calibration's overheads). Pins the calling thread to `cpu` and,
/// with `fifo`, runs it under SCHED_FIFO (restored on return) with the
/// preempting task one level above; returns the cost and the SCHED_FIFO
/// priority it ran at (`None`: the policy could not be set, SCHED_OTHER).
pub fn context_switch(
    cpu: u32,
    llc_bytes: u64,
    reps: u32,
    seed: u64,
    fifo: Option<u8>,
    progress: &dyn Progress,
) -> Result<(SwitchCost, Option<u8>)> {
    let _pin = PinGuard::pin(cpu)?;
    let fifo = fifo.filter(|&p| tinct_sys::sched::set_fifo(p).is_ok());
    let _fifo_guard = fifo.map(|_| FifoGuard);
    let setup = switch::Setup {
        cpu,
        other_cpu: None,
        fifo,
        reps,
        seed,
        wipe_bytes: llc_bytes.saturating_mul(2).max(4 << 20),
        measure_wakeup: false,
    };
    let (cost, _counters) = switch::measure(&setup, progress)?;
    let cost = cost.ok_or_else(|| {
        Error::Measurement("no context-switch samples: stopped before the first round".into())
    })?;
    Ok((cost, fifo))
}
