//! Performance counters: hardware and software perf events.

use super::{finding, subject, unreadable};
use crate::{Facts, Finding, Level};
use tinct_sys::perf::{EventProbe, errno_name};
use tinct_sys::privilege::Probe;

pub(super) const VPMU_FIX: &str = "run on bare metal or enable vPMU (KVM/QEMU: `-cpu host,pmu=on`; libvirt: \
    `<pmu state='on'/>`; cloud: an instance type with PMU access); timing-based benches work without it";

pub(super) fn perf_hardware(facts: &Facts) -> Finding {
    let pmus = facts.event_sources.as_ref().map(|s| s.cpu_pmus.clone());
    match &facts.perf_event_probes {
        Some(probes) => {
            let hardware: Vec<&EventProbe> = probes.iter().filter(|p| p.hardware).collect();
            let (opened, failed) = describe(&hardware);
            if failed.is_empty() {
                finding(
                    subject::PERF_HARDWARE,
                    Level::Ok,
                    format!("open: {opened}"),
                    None,
                )
            } else {
                let pmu_note = match &pmus {
                    Some(p) if p.is_empty() => "; no CPU PMU in /sys/bus/event_source/devices",
                    _ => "",
                };
                let opened_note = if opened.is_empty() {
                    String::new()
                } else {
                    format!("open: {opened}; ")
                };
                finding(
                    subject::PERF_HARDWARE,
                    Level::Warning,
                    format!("{opened_note}failing: {failed}{pmu_note}"),
                    Some(VPMU_FIX.into()),
                )
            }
        }
        None => match pmus {
            Some(p) if p.is_empty() => finding(
                subject::PERF_HARDWARE,
                Level::Warning,
                "no CPU PMU in /sys/bus/event_source/devices (opening not probed)",
                Some(VPMU_FIX.into()),
            ),
            Some(p) => finding(
                subject::PERF_HARDWARE,
                Level::NotProbed,
                format!("CPU PMU present: {} (opening not probed)", p.join(", ")),
                None,
            ),
            None => unreadable(subject::PERF_HARDWARE, facts, "perf event sources"),
        },
    }
}

pub(super) fn perf_software(facts: &Facts) -> Finding {
    let paranoid = facts
        .perf_event_paranoid
        .map_or(String::new(), |p| format!(" (perf_event_paranoid = {p})"));
    let Some(probes) = &facts.perf_event_probes else {
        return finding(
            subject::PERF_SOFTWARE,
            Level::NotProbed,
            format!("not probed (fixture tree){paranoid}"),
            None,
        );
    };
    let software: Vec<&EventProbe> = probes.iter().filter(|p| !p.hardware).collect();
    let (opened, failed) = describe(&software);
    if failed.is_empty() {
        finding(
            subject::PERF_SOFTWARE,
            Level::Ok,
            format!("open: {opened}{paranoid}"),
            None,
        )
    } else {
        finding(
            subject::PERF_SOFTWARE,
            Level::Warning,
            format!("open: {opened}; failing: {failed}{paranoid}"),
            Some("`sysctl -w kernel.perf_event_paranoid=1`, or run as root".into()),
        )
    }
}

/// "a, b" for the events that opened and "c, d (ENOENT)" for the others,
/// grouped by errno.
pub(super) fn describe(probes: &[&EventProbe]) -> (String, String) {
    let opened: Vec<&str> = probes
        .iter()
        .filter(|p| p.probe.is_ok())
        .map(|p| p.event.name())
        .collect();
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for probe in probes {
        if let Probe::Failed { errno, message } = &probe.probe {
            let reason = errno
                .and_then(errno_name)
                .map_or_else(|| message.clone(), str::to_string);
            match groups.iter_mut().find(|(r, _)| *r == reason) {
                Some((_, names)) => names.push(probe.event.name()),
                None => groups.push((reason, vec![probe.event.name()])),
            }
        }
    }
    let failed: Vec<String> = groups
        .iter()
        .map(|(reason, names)| format!("{} ({reason})", names.join(", ")))
        .collect();
    (opened.join(", "), failed.join("; "))
}
