//! Scheduling: SCHED_FIFO, RT throttling, kernel preemption, governors, isolation.

use super::{finding, subject, unreadable};
use crate::{Facts, Finding, Level};
use tinct_sys::cpulist::format_cpu_list;
use tinct_sys::privilege::{Capability, Probe};
use tinct_sys::system::Preemption;

pub(super) fn sched_fifo(facts: &Facts) -> Finding {
    match &facts.sched_fifo_probe {
        Some(Probe::Ok) => finding(
            subject::SCHED_FIFO,
            Level::Ok,
            "settable (tried priority 1 on a short-lived thread)",
            None,
        ),
        Some(Probe::Failed { message, .. }) => finding(
            subject::SCHED_FIFO,
            Level::Blocker,
            format!("cannot be set: {message}"),
            Some(
                "run as root, or `sudo setcap cap_sys_nice+ep $(command -v tinct)`, or allow it in \
                 /etc/security/limits.conf: `<user> - rtprio 99`"
                    .into(),
            ),
        ),
        None => {
            let expectation = match &facts.privileges {
                Some(p) if p.is_root() || p.has(Capability::SysNice) => "; CapEff has CAP_SYS_NICE",
                Some(_) => "; CapEff lacks CAP_SYS_NICE (needs RLIMIT_RTPRIO)",
                None => "",
            };
            finding(
                subject::SCHED_FIFO,
                Level::NotProbed,
                format!("not probed (fixture tree){expectation}"),
                None,
            )
        }
    }
}

pub(super) fn rt_throttling(facts: &Facts) -> Finding {
    let Some(rt) = &facts.rt_throttling else {
        return unreadable(subject::RT_THROTTLING, facts, "RT throttling");
    };
    if rt.is_disabled() {
        return finding(
            subject::RT_THROTTLING,
            Level::Ok,
            format!(
                "disabled (sched_rt_runtime_us = {}, period {} us)",
                rt.runtime_us, rt.period_us
            ),
            None,
        );
    }
    finding(
        subject::RT_THROTTLING,
        Level::Warning,
        format!(
            "{}/{} us: real-time tasks are stopped for {} us of every {} us once they use up their share",
            rt.runtime_us,
            rt.period_us,
            rt.throttled_us(),
            rt.period_us
        ),
        Some(
            "for measurements with long busy phases: `sysctl -w kernel.sched_rt_runtime_us=-1` \
             (only with a watchdog; a runaway SCHED_FIFO task then owns its CPU)"
                .into(),
        ),
    )
}

pub(super) fn kernel(facts: &Facts) -> Finding {
    let Some(kernel) = &facts.kernel else {
        return unreadable(subject::KERNEL, facts, "kernel");
    };
    let found = format!(
        "{} ({}), preemption: {}",
        kernel.release,
        kernel.version,
        kernel.preemption.label()
    );
    let rt_fix =
        "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64 / linux-image-rt-arm64)";
    match kernel.preemption {
        Preemption::Rt => finding(subject::KERNEL, Level::Ok, found, None),
        Preemption::Full | Preemption::Lazy => finding(
            subject::KERNEL,
            Level::Warning,
            found,
            Some(format!("for hard deadlines {rt_fix}")),
        ),
        Preemption::Dynamic => finding(
            subject::KERNEL,
            Level::Warning,
            format!("{found}: mount debugfs to read /sys/kernel/debug/sched/preempt"),
            Some(format!("boot with `preempt=full`, or {rt_fix}")),
        ),
        Preemption::None | Preemption::Voluntary | Preemption::Unknown => finding(
            subject::KERNEL,
            Level::Warning,
            found,
            Some(format!(
                "boot with `preempt=full` if the kernel is PREEMPT_DYNAMIC, or {rt_fix}"
            )),
        ),
    }
}

pub(super) fn governor(facts: &Facts) -> Finding {
    let Some(governors) = &facts.governors else {
        return unreadable(subject::GOVERNOR, facts, "frequency governor");
    };
    let known: Vec<_> = governors
        .iter()
        .filter_map(|g| Some((g.cpu, g.governor.as_deref()?)))
        .collect();
    if known.is_empty() {
        return finding(
            subject::GOVERNOR,
            Level::Ok,
            "no cpufreq driver: the frequency is not scaled by this kernel (typical in a VM)",
            None,
        );
    }
    let mut distinct: Vec<&str> = known.iter().map(|(_, g)| *g).collect();
    distinct.sort_unstable();
    distinct.dedup();
    let slow: Vec<u32> = known
        .iter()
        .filter(|(_, g)| *g != "performance")
        .map(|(c, _)| *c)
        .collect();
    let found = format!("{} on {} CPUs", distinct.join(", "), known.len());
    if slow.is_empty() {
        finding(subject::GOVERNOR, Level::Ok, found, None)
    } else {
        finding(
            subject::GOVERNOR,
            Level::Warning,
            format!(
                "{found}; not `performance` on CPUs {}",
                format_cpu_list(&slow)
            ),
            Some(
                "`cpupower frequency-set -g performance` (or write `performance` to \
                 /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor)"
                    .into(),
            ),
        )
    }
}

pub(super) fn isolation(facts: &Facts) -> Finding {
    let Some(iso) = &facts.isolation else {
        return unreadable(subject::ISOLATION, facts, "CPU isolation");
    };
    let nohz = match &iso.nohz_full {
        None => "nohz_full not built in".to_string(),
        Some(cpus) if cpus.is_empty() => "no nohz_full CPUs".to_string(),
        Some(cpus) => format!("nohz_full CPUs {}", format_cpu_list(cpus)),
    };
    if !iso.isolated.is_empty() {
        let cmdline = iso
            .cmdline_isolcpus
            .as_deref()
            .map_or(String::new(), |v| format!(" (isolcpus={v})"));
        return finding(
            subject::ISOLATION,
            Level::Ok,
            format!(
                "isolated CPUs {}{cmdline}; {nohz}",
                format_cpu_list(&iso.isolated)
            ),
            None,
        );
    }
    let Some(online) = facts.topology.as_ref().map(|t| t.online_cpus.clone()) else {
        return finding(
            subject::ISOLATION,
            Level::Warning,
            format!("no isolated CPUs; {nohz}"),
            Some(
                "the online CPUs are unknown (see the CPUs finding); isolate all but one CPU with \
                 `isolcpus=domain,managed_irq,LIST nohz_full=LIST rcu_nocbs=LIST`"
                    .into(),
            ),
        );
    };
    let candidates: Vec<u32> = online.iter().copied().skip(1).collect();
    let fix = if candidates.is_empty() {
        "with one CPU there is nothing to isolate".to_string()
    } else {
        let list = format_cpu_list(&candidates);
        format!(
            "add `isolcpus=domain,managed_irq,{list} nohz_full={list} rcu_nocbs={list}` to the kernel command line \
             (keep CPU {} for the system)",
            online.first().copied().unwrap_or(0)
        )
    };
    finding(
        subject::ISOLATION,
        Level::Warning,
        format!("no isolated CPUs: every CPU also runs other work and kernel housekeeping; {nohz}"),
        Some(fix),
    )
}
