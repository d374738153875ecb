//! Pages: size, transparent huge pages, pagemap PFNs, RLIMIT_MEMLOCK.

use super::{finding, subject, unreadable};
use crate::{Facts, Finding, Level};
use tinct_base::units::human_bytes;
use tinct_sys::privilege::{Capability, PagemapProbe};
use tinct_sys::system::ThpMode;

pub(super) fn page_size(facts: &Facts) -> Finding {
    match &facts.page_size {
        Some(p) => finding(
            subject::PAGE_SIZE,
            Level::Ok,
            format!("{} (from {})", human_bytes(p.bytes), p.source.label()),
            None,
        ),
        None => unreadable(subject::PAGE_SIZE, facts, "page size"),
    }
}

pub(super) fn thp(facts: &Facts) -> Finding {
    match &facts.thp {
        Some(Some(ThpMode::Always)) => finding(
            subject::THP,
            Level::Warning,
            "always: huge pages span every color; tinct-mem refuses them per mapping, other programs get them",
            Some("echo madvise > /sys/kernel/mm/transparent_hugepage/enabled".into()),
        ),
        Some(Some(mode)) => finding(
            subject::THP,
            Level::Ok,
            match mode {
                ThpMode::Madvise => {
                    "madvise: only where asked (tinct-mem asks for none)".to_string()
                }
                ThpMode::Never => "never".to_string(),
                ThpMode::Other(other) => other.clone(),
                ThpMode::Always => unreachable!(),
            },
            None,
        ),
        Some(None) => finding(
            subject::THP,
            Level::Ok,
            "not supported by this kernel",
            None,
        ),
        None => unreadable(subject::THP, facts, "transparent huge pages"),
    }
}

pub(super) const PAGEMAP_FIX: &str =
    "run as root, or `sudo setcap cap_sys_admin+ep $(command -v tinct)`";

pub(super) fn pagemap(facts: &Facts) -> Finding {
    match &facts.pagemap_probe {
        Some(PagemapProbe::Readable { pfn }) => finding(
            subject::PAGEMAP,
            Level::Ok,
            format!("readable: a touched page has PFN {pfn:#x}"),
            None,
        ),
        Some(PagemapProbe::PfnHidden) => finding(
            subject::PAGEMAP,
            Level::Blocker,
            "PFNs read as 0 (no CAP_SYS_ADMIN): page coloring cannot see physical addresses",
            Some(PAGEMAP_FIX.into()),
        ),
        Some(PagemapProbe::NotPresent) => finding(
            subject::PAGEMAP,
            Level::Blocker,
            "a touched page is reported not present",
            Some("check that /proc/self/pagemap is a working procfs file (kernel CONFIG_PROC_PAGE_MONITOR)".into()),
        ),
        Some(PagemapProbe::Unreadable { message }) => finding(
            subject::PAGEMAP,
            Level::Blocker,
            format!("/proc/self/pagemap unreadable: {message}"),
            Some(format!("{PAGEMAP_FIX}; the kernel needs CONFIG_PROC_PAGE_MONITOR")),
        ),
        None => {
            let expectation = match &facts.privileges {
                Some(p) if p.is_root() || p.has(Capability::SysAdmin) => {
                    "; CapEff has CAP_SYS_ADMIN, so PFNs are expected to be readable"
                }
                Some(_) => "; CapEff lacks CAP_SYS_ADMIN, so PFNs would read as 0",
                None => "",
            };
            finding(
                subject::PAGEMAP,
                Level::NotProbed,
                format!("not probed (fixture tree){expectation}"),
                None,
            )
        }
    }
}

pub(super) fn memlock(facts: &Facts) -> Finding {
    let Some(limit) = &facts.memlock else {
        return unreadable(subject::MEMLOCK, facts, "RLIMIT_MEMLOCK");
    };
    let soft = limit.soft_bytes.map_or("unlimited".into(), human_bytes);
    let has_ipc_lock = facts.privileges.is_some_and(|p| p.has(Capability::IpcLock));
    if limit.soft_bytes.is_none() {
        finding(
            subject::MEMLOCK,
            Level::Ok,
            format!("soft limit {soft}"),
            None,
        )
    } else if has_ipc_lock {
        finding(
            subject::MEMLOCK,
            Level::Ok,
            format!("soft limit {soft}, but CAP_IPC_LOCK lets this process lock any amount"),
            None,
        )
    } else {
        finding(
            subject::MEMLOCK,
            Level::Warning,
            format!(
                "soft limit {soft}: coloured pools and areas beyond it stay unlocked (said in \
                 their reports), where compaction can move pages out of their colours"
            ),
            Some(
                "`ulimit -l unlimited` (or `<user> - memlock unlimited` in /etc/security/limits.conf), \
                 or `sudo setcap cap_ipc_lock+ep $(command -v tinct)`"
                    .into(),
            ),
        )
    }
}
