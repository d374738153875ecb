//! What this process may do: root, capabilities, SCHED_FIFO, physical frame
//! numbers from `/proc/self/pagemap`.

use crate::error::Result;
use crate::root::SysRoot;
use std::os::unix::fs::FileExt;

/// Linux capabilities tinct cares about (numbers from `linux/capability.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "SCREAMING_SNAKE_CASE"))]
pub enum Capability {
    /// `CAP_IPC_LOCK` (14): lock memory beyond `RLIMIT_MEMLOCK`.
    IpcLock,
    /// `CAP_SYS_ADMIN` (21): among much else, read PFNs from pagemap.
    SysAdmin,
    /// `CAP_SYS_NICE` (23): real-time scheduling policies and priorities.
    SysNice,
}

impl Capability {
    /// The capability's bit number.
    pub fn bit(self) -> u32 {
        match self {
            Self::IpcLock => 14,
            Self::SysAdmin => 21,
            Self::SysNice => 23,
        }
    }

    /// Name as `setcap` spells it, e.g. `cap_sys_nice`.
    pub fn setcap_name(self) -> &'static str {
        match self {
            Self::IpcLock => "cap_ipc_lock",
            Self::SysAdmin => "cap_sys_admin",
            Self::SysNice => "cap_sys_nice",
        }
    }
}

/// Identity and effective capabilities of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Privileges {
    /// Effective user id (from `Uid:` in `/proc/self/status`).
    pub effective_uid: u32,
    /// The `CapEff` mask.
    pub effective_capabilities: u64,
}

impl Privileges {
    /// Reads `Uid:` and `CapEff:` from `/proc/self/status` under `root`.
    pub fn read(root: &SysRoot) -> Result<Self> {
        let rel = "/proc/self/status";
        let status = root.read(rel)?;
        let field = |name: &str| {
            status
                .lines()
                .enumerate()
                .find_map(|(i, line)| Some((i + 1, line.strip_prefix(name)?.trim())))
                .ok_or_else(|| root.parse_error(rel, 1, &format!("a `{name}` line"), ""))
        };
        let (line, uids) = field("Uid:")?;
        let effective_uid = uids
            .split_whitespace()
            .nth(1)
            .and_then(|u| u.parse().ok())
            .ok_or_else(|| {
                root.parse_error(rel, line, "real, effective, saved and fs uids", uids)
            })?;
        let (line, mask) = field("CapEff:")?;
        let effective_capabilities = u64::from_str_radix(mask, 16)
            .map_err(|_| root.parse_error(rel, line, "a hexadecimal capability mask", mask))?;
        Ok(Self {
            effective_uid,
            effective_capabilities,
        })
    }

    /// True for effective uid 0.
    pub fn is_root(&self) -> bool {
        self.effective_uid == 0
    }

    /// True if `capability` is in the effective set.
    pub fn has(&self, capability: Capability) -> bool {
        self.effective_capabilities & (1u64 << capability.bit()) != 0
    }
}

/// The outcome of trying something for real.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "result", rename_all = "snake_case"))]
pub enum Probe {
    /// It worked.
    Ok,
    /// It failed with this errno.
    Failed {
        /// The raw errno, if there was one.
        errno: Option<i32>,
        /// The error text.
        message: String,
    },
}

impl Probe {
    /// True for [`Probe::Ok`].
    pub fn is_ok(&self) -> bool {
        matches!(self, Probe::Ok)
    }

    pub(crate) fn from_io(error: &std::io::Error) -> Self {
        Probe::Failed {
            errno: error.raw_os_error(),
            message: error.to_string(),
        }
    }
}

/// Tries SCHED_FIFO priority 1 on a short-lived thread, then puts the thread
/// back to SCHED_OTHER before it exits. The calling thread is never changed.
pub fn probe_sched_fifo() -> Probe {
    let attempt = std::thread::spawn(|| -> Probe {
        match crate::sched::set_fifo(1) {
            Ok(()) => match crate::sched::set_other() {
                Ok(()) => Probe::Ok,
                Err(e) => Probe::Failed {
                    errno: None,
                    message: format!("SCHED_FIFO worked but going back failed: {e}"),
                },
            },
            Err(crate::Error::Syscall { source, .. }) => Probe::from_io(&source),
            Err(e) => Probe::Failed {
                errno: None,
                message: e.to_string(),
            },
        }
    });
    attempt.join().unwrap_or_else(|_| Probe::Failed {
        errno: None,
        message: "the probe thread panicked".into(),
    })
}

/// What a pagemap entry of a touched page looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(tag = "result", rename_all = "snake_case"))]
pub enum PagemapProbe {
    /// The page is present and its PFN is nonzero: physical addresses are visible.
    Readable {
        /// The frame number that was read (as evidence).
        pfn: u64,
    },
    /// The entry reads, but the PFN is zeroed (no `CAP_SYS_ADMIN`).
    PfnHidden,
    /// The touched page is not reported present (unexpected).
    NotPresent,
    /// `/proc/self/pagemap` could not be opened or read.
    Unreadable {
        /// The error text.
        message: String,
    },
}

/// Bit 63 of a pagemap entry: page present.
pub const PAGEMAP_PRESENT: u64 = 1 << 63;
/// Bits 0-54 of a pagemap entry: the page frame number.
pub const PAGEMAP_PFN_MASK: u64 = (1 << 55) - 1;

/// Touches a heap page and reads its entry from `/proc/self/pagemap`
/// (bit 63 present, bits 0-54 PFN; see the kernel's `admin-guide/mm/pagemap`).
pub fn probe_pagemap() -> PagemapProbe {
    let page = rustix::param::page_size();
    let mut buffer = vec![0u8; 2 * page];
    let start = buffer.as_ptr() as usize;
    let offset_in_buffer = start.next_multiple_of(page) - start;
    // Touch the page so that it is backed by a frame; black_box keeps the
    // store from being optimized away.
    std::hint::black_box(&mut buffer)[offset_in_buffer] = 0xA5;
    let address = start + offset_in_buffer;
    let entry = std::fs::File::open("/proc/self/pagemap").and_then(|file| {
        let mut bytes = [0u8; 8];
        file.read_exact_at(&mut bytes, (address / page * 8) as u64)?;
        Ok(u64::from_ne_bytes(bytes))
    });
    std::hint::black_box(&buffer);
    match entry {
        Err(e) => PagemapProbe::Unreadable {
            message: e.to_string(),
        },
        Ok(entry) if entry & PAGEMAP_PRESENT == 0 => PagemapProbe::NotPresent,
        Ok(entry) => match entry & PAGEMAP_PFN_MASK {
            0 => PagemapProbe::PfnHidden,
            pfn => PagemapProbe::Readable { pfn },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_uid_and_capabilities_from_status() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(
            dir.path().join("proc/self/status"),
            "Name:\tx\nUid:\t1000\t0\t0\t0\nCapEff:\t0000000000800000\n",
        )
        .unwrap();
        let privileges = Privileges::read(&SysRoot::at(dir.path())).unwrap();
        assert!(privileges.is_root());
        assert!(privileges.has(Capability::SysNice));
        assert!(!privileges.has(Capability::SysAdmin));
        assert!(!privileges.has(Capability::IpcLock));
    }

    #[test]
    fn a_bad_capability_mask_names_the_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("proc/self")).unwrap();
        std::fs::write(
            dir.path().join("proc/self/status"),
            "Uid:\t0\t0\t0\t0\nCapEff:\tzz\n",
        )
        .unwrap();
        let err = Privileges::read(&SysRoot::at(dir.path()))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("proc/self/status:2: expected") && err.contains("hexadecimal"),
            "{err}"
        );
    }
}
