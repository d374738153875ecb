//! Cache partitioning: resctrl and the backend summary (coloring, resctrl, both, none).

use super::memory::PAGEMAP_FIX;
use super::{finding, subject, unreadable};
use crate::{Backend, Facts, Finding, Level};
use tinct_sys::privilege::{Capability, PagemapProbe};

pub(super) fn resctrl(facts: &Facts) -> Finding {
    let Some(status) = &facts.resctrl else {
        return unreadable(subject::RESCTRL, facts, "resctrl");
    };
    let flags = if status.cpu_flags.is_empty() {
        "CPU flags: none of cat_l3/cdp_l3/mba/cqm".to_string()
    } else {
        format!("CPU flags: {}", status.cpu_flags.join(" "))
    };
    if let (Some(mount), Some(info)) = (&status.mount_point, &status.info) {
        let mut offers = Vec::new();
        for (name, cat) in [
            ("L3", &info.l3),
            ("L3CODE", &info.l3_code),
            ("L3DATA", &info.l3_data),
            ("L2", &info.l2),
        ] {
            if let Some(cat) = cat {
                offers.push(format!(
                    "{name} cbm_mask {} ({} bits, min {}, {} CLOSIDs)",
                    cat.cbm_mask,
                    cat.cbm_bits,
                    cat.min_cbm_bits.map_or("?".into(), |b| b.to_string()),
                    cat.num_closids.map_or("?".into(), |n| n.to_string())
                ));
            }
        }
        if let Some(mb) = &info.memory_bandwidth {
            offers.push(format!(
                "MB min {}% step {}%",
                mb.min_bandwidth.map_or("?".into(), |v| v.to_string()),
                mb.bandwidth_gran.map_or("?".into(), |v| v.to_string())
            ));
        }
        if let Some(mon) = &info.l3_monitoring {
            offers.push(format!("L3_MON {}", mon.features.join(" ")));
        }
        let level = if status.offers_cache_allocation() {
            Level::Ok
        } else {
            Level::Warning
        };
        return finding(
            subject::RESCTRL,
            level,
            format!(
                "mounted at {}: {}; {flags}",
                mount.display(),
                offers.join("; ")
            ),
            None,
        );
    }
    if status.filesystem_available && status.cpu_has_cache_allocation() {
        return finding(
            subject::RESCTRL,
            Level::Warning,
            format!("not mounted, but mountable; {flags}"),
            Some("mount -t resctrl resctrl /sys/fs/resctrl".into()),
        );
    }
    let found = if status.filesystem_available {
        format!("the kernel supports resctrl but the CPU offers no cache allocation; {flags}")
    } else {
        format!("not available (no resctrl in /proc/filesystems); {flags}")
    };
    finding(
        subject::RESCTRL,
        Level::Warning,
        found,
        Some(
            "page coloring (tinct-mem) works without it; for hardware cache allocation use a CPU with \
             Intel CAT / AMD L3 QoS and a kernel with CONFIG_X86_CPU_RESCTRL (on a VM the hypervisor must expose it)"
                .into(),
        ),
    )
}

pub(super) fn backend(facts: &Facts) -> (Backend, Finding) {
    let llc_colors = super::llc_colors(facts).and_then(|g| g.ok().map(|g| g.colors.colors));
    let geometry_allows = llc_colors.is_some_and(|c| c > 1);
    let (pfns_visible, pfn_evidence) = match (&facts.pagemap_probe, &facts.privileges) {
        (Some(PagemapProbe::Readable { .. }), _) => (true, "PFNs readable"),
        (Some(_), _) => (false, "PFNs not readable"),
        (None, Some(p)) if p.is_root() || p.has(Capability::SysAdmin) => {
            (true, "CAP_SYS_ADMIN (not probed)")
        }
        (None, _) => (false, "no CAP_SYS_ADMIN (not probed)"),
    };
    let coloring = geometry_allows && pfns_visible;
    let resctrl = facts.resctrl.as_ref().is_some_and(|r| {
        r.offers_cache_allocation()
            || (r.mount_point.is_none() && r.filesystem_available && r.cpu_has_cache_allocation())
    });
    let backend = match (coloring, resctrl) {
        (true, true) => Backend::Both,
        (true, false) => Backend::Coloring,
        (false, true) => Backend::Resctrl,
        (false, false) => Backend::None,
    };
    let coloring_text = format!(
        "page coloring: {}, {}, {} LLC colors",
        if coloring { "yes" } else { "no" },
        pfn_evidence,
        llc_colors.map_or("unknown".into(), |c| c.to_string())
    );
    let resctrl_text = format!("resctrl: {}", if resctrl { "yes" } else { "no" });
    let vm_note = if facts.hypervisor == Some(true) && coloring {
        "; this is a VM: guest-physical colors may not be host cache colors, so timing here cannot prove isolation"
    } else {
        ""
    };
    let found = format!(
        "{} ({coloring_text}; {resctrl_text}){vm_note}",
        backend.label()
    );
    let summary = match backend {
        Backend::None => finding(
            subject::BACKEND,
            Level::Blocker,
            found,
            Some(format!("for page coloring: {PAGEMAP_FIX}")),
        ),
        _ if !vm_note.is_empty() => finding(subject::BACKEND, Level::Warning, found, None),
        _ => finding(subject::BACKEND, Level::Ok, found, None),
    };
    (backend, summary)
}
