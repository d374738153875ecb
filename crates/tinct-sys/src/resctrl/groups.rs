//! Cache reservation through resctrl control groups (Intel RDT CAT, AMD
//! L3 QoS): the hardware counterpart of page coloring (kim2013 Section
//! III-C reserves cache partitions by coloring; CAT reserves ways).
//!
//! * [`Resctrl`]: a mounted resctrl filesystem (any directory: tests use a
//!   fake tree in a temporary directory);
//! * [`ResctrlLock`]: the advisory lock the kernel documentation asks every
//!   resctrl user to hold while changing groups (`flock` on the mount
//!   directory);
//! * [`Group`]: one control group (per core or per task): its
//!   `schemata` (`L3:<id>=<mask>`), CPUs (`cpus_list`), tasks (`tasks`),
//!   and the monitoring counters in `mon_data` (`llc_occupancy`,
//!   `mbm_total_bytes`, `mbm_local_bytes`) when the kernel offers them. A
//!   group is removed on [`Group::remove`] or when dropped;
//! * [`partition_mask`]: the plan's cache partitions (1..=N_P) → capacity
//!   bit mask bits.
//!
//! A write the kernel rejects fails with `EINVAL` and an explanation in
//! `info/last_cmd_status`; that text is part of the error.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use tinct_base::InputError;

use crate::error::{Error, Result};

/// Where resctrl is normally mounted.
pub const DEFAULT_MOUNT: &str = "/sys/fs/resctrl";

/// A mounted resctrl filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resctrl {
    mount: PathBuf,
}

/// What `info/L3` says about L3 cache allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct L3Allocation {
    /// Bits in the full capacity bit mask (`cbm_mask`).
    pub cbm_bits: u32,
    /// Smallest number of bits a mask must have (`min_cbm_bits`).
    pub min_cbm_bits: u32,
    /// Number of control groups, including the default one (`num_closids`).
    pub num_closids: u32,
    /// True if masks may have holes (`sparse_masks` = 1; Intel CAT before
    /// some generations requires contiguous masks).
    pub sparse_masks: bool,
    /// Cache instances (domains) from the default group's `schemata`.
    pub domains: Vec<u32>,
}

/// The advisory resctrl lock; released when dropped.
#[derive(Debug)]
pub struct ResctrlLock {
    _directory: File,
}

/// One monitoring reading of one L3 domain.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DomainReading {
    /// The L3 domain (cache instance) id.
    pub domain: u32,
    /// `llc_occupancy` in bytes, if offered and available.
    pub llc_occupancy: Option<u64>,
    /// `mbm_total_bytes`, if offered and available.
    pub mbm_total_bytes: Option<u64>,
    /// `mbm_local_bytes`, if offered and available.
    pub mbm_local_bytes: Option<u64>,
}

/// A resctrl control group, removed when dropped (unless [`Group::keep`]).
#[derive(Debug)]
pub struct Group {
    resctrl: Resctrl,
    name: String,
    dir: PathBuf,
    removed: bool,
}

fn io_error(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Resctrl {
    /// resctrl mounted at `mount` (a fake tree in tests).
    pub fn at(mount: impl Into<PathBuf>) -> Self {
        Self {
            mount: mount.into(),
        }
    }

    /// The live filesystem at its mount point from `/proc/mounts`; an error
    /// that says how to mount it if it is not mounted.
    pub fn live() -> Result<Self> {
        let status = super::ResctrlStatus::read(&crate::SysRoot::live())?;
        match status.mount_point {
            Some(mount) => Ok(Self::at(mount)),
            None => Err(Error::InvalidArgument(format!(
                "resctrl is not mounted{}",
                if status.filesystem_available {
                    format!(": mount it with `mount -t resctrl resctrl {DEFAULT_MOUNT}`")
                } else {
                    " and this kernel has no resctrl (see `tinct doctor`)".to_string()
                }
            ))),
        }
    }

    /// The mount point.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// Takes the resctrl lock (`flock(LOCK_EX)` on the mount directory),
    /// waiting for other users to release it.
    pub fn lock(&self) -> Result<ResctrlLock> {
        let directory = File::open(&self.mount).map_err(|e| io_error(&self.mount, e))?;
        rustix::fs::flock(&directory, rustix::fs::FlockOperation::LockExclusive).map_err(|e| {
            Error::syscall(
                format!("flock({}, LOCK_EX)", self.mount.display()),
                e.into(),
            )
        })?;
        Ok(ResctrlLock {
            _directory: directory,
        })
    }

    fn read(&self, rel: &str) -> Result<String> {
        let path = self.mount.join(rel);
        std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))
    }

    fn parse_number(&self, rel: &str, radix: u32) -> Result<u64> {
        let text = self.read(rel)?;
        let line = text.lines().next().unwrap_or("").trim();
        u64::from_str_radix(line, radix).map_err(|_| {
            let expected = if radix == 16 {
                "a hexadecimal bit mask"
            } else {
                "an integer"
            };
            let file = self.mount.join(rel).display().to_string();
            Error::Input(InputError::new(file, "", expected, format!("{line:?}")).at_line(Some(1)))
        })
    }

    /// `info/L3` and the L3 domains; an error if L3 allocation is not offered.
    pub fn l3(&self) -> Result<L3Allocation> {
        let cbm = self.parse_number("info/L3/cbm_mask", 16)?;
        let sparse = match self.read("info/L3/sparse_masks") {
            Ok(text) => text.trim() == "1",
            Err(_) => false,
        };
        let schemata = self.read("schemata")?;
        Ok(L3Allocation {
            cbm_bits: cbm.count_ones(),
            min_cbm_bits: self.parse_number("info/L3/min_cbm_bits", 10)? as u32,
            num_closids: self.parse_number("info/L3/num_closids", 10)? as u32,
            sparse_masks: sparse,
            domains: l3_domains(&schemata).map_err(|found| {
                let file = self.mount.join("schemata").display().to_string();
                Error::Input(
                    InputError::new(
                        file,
                        "",
                        "an L3 line such as L3:0=ffff;1=ffff",
                        format!("{found:?}"),
                    )
                    .at_line(Some(1)),
                )
            })?,
        })
    }

    /// `info/last_cmd_status`, trimmed (empty if unreadable).
    pub fn last_command_status(&self) -> String {
        self.read("info/last_cmd_status")
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    }

    /// Creates control group `name` (a directory under the mount). Hold
    /// the [`ResctrlLock`] while creating and configuring groups.
    pub fn create_group(&self, name: &str) -> Result<Group> {
        if name.is_empty() || name.contains('/') || name == "info" || name.starts_with("mon_") {
            return Err(Error::InvalidArgument(format!(
                "resctrl group name {name:?}: expected a plain name (not info, mon_*, no '/')"
            )));
        }
        let dir = self.mount.join(name);
        std::fs::create_dir(&dir).map_err(|e| {
            let status = self.last_command_status();
            let hint = if e.raw_os_error() == Some(libc::ENOSPC) {
                " (all CLOSIDs are in use: remove unused groups)"
            } else {
                ""
            };
            Error::Syscall {
                call: format!("mkdir {}{hint}{}", dir.display(), status_suffix(&status)),
                source: e,
            }
        })?;
        Ok(Group {
            resctrl: self.clone(),
            name: name.to_string(),
            dir,
            removed: false,
        })
    }
}

fn status_suffix(status: &str) -> String {
    if status.is_empty() || status == "ok" {
        String::new()
    } else {
        format!("; the kernel says (info/last_cmd_status): {status}")
    }
}

/// The domain ids of the `L3:` line of a schemata file.
fn l3_domains(schemata: &str) -> std::result::Result<Vec<u32>, String> {
    let line = schemata
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("L3:"))
        .ok_or_else(|| schemata.lines().next().unwrap_or("").to_string())?;
    line["L3:".len()..]
        .split(';')
        .map(|entry| {
            entry
                .split_once('=')
                .and_then(|(id, _)| id.trim().parse().ok())
                .ok_or_else(|| line.to_string())
        })
        .collect()
}

/// The `L3:<id>=<mask>;...` line for `masks` (domain, mask).
pub fn schemata_line(masks: &[(u32, u64)]) -> String {
    let entries: Vec<String> = masks
        .iter()
        .map(|(domain, mask)| format!("{domain}={mask:x}"))
        .collect();
    format!("L3:{}\n", entries.join(";"))
}

impl Group {
    /// The group's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The group's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `text` to the group's `file` with one `write` call; a
    /// rejected write carries `info/last_cmd_status`.
    fn write_file(&self, file: &str, text: &str) -> Result<()> {
        let path = self.dir.join(file);
        let result = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        result.map_err(|source| {
            let status = self.resctrl.last_command_status();
            Error::Syscall {
                call: format!(
                    "write {:?} to {}{}",
                    text.trim_end(),
                    path.display(),
                    status_suffix(&status)
                ),
                source,
            }
        })
    }

    /// Sets the L3 capacity bit mask of each listed domain
    /// (`L3:<id>=<mask>`); domains not listed keep theirs.
    pub fn set_l3_masks(&self, masks: &[(u32, u64)]) -> Result<()> {
        if masks.is_empty() {
            return Err(Error::InvalidArgument("no L3 masks to write".into()));
        }
        self.write_file("schemata", &schemata_line(masks))
    }

    /// Moves `cpus` into this group (tasks running there without a group
    /// of their own use its masks): "a group per core".
    pub fn assign_cpus(&self, cpus: &[u32]) -> Result<()> {
        self.write_file("cpus_list", &format!("{}\n", crate::format_cpu_list(cpus)))
    }

    /// Moves tasks (thread ids) into this group: "a group per task". The
    /// kernel takes one id per write.
    pub fn assign_tasks(&self, tids: &[i32]) -> Result<()> {
        let path = self.dir.join("tasks");
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        for tid in tids {
            file.write_all(format!("{tid}\n").as_bytes())
                .map_err(|source| {
                    let status = self.resctrl.last_command_status();
                    Error::Syscall {
                        call: format!(
                            "write {tid} to {}{}",
                            path.display(),
                            status_suffix(&status)
                        ),
                        source,
                    }
                })?;
        }
        Ok(())
    }

    /// The current `schemata` text.
    pub fn schemata(&self) -> Result<String> {
        let path = self.dir.join("schemata");
        std::fs::read_to_string(&path).map_err(|e| io_error(&path, e))
    }

    /// Monitoring counters per L3 domain (`mon_data/mon_L3_<id>/...`);
    /// empty if the kernel offers no monitoring. A counter the kernel
    /// reports as `Unavailable` or `Error` is `None`.
    pub fn read_monitoring(&self) -> Result<Vec<DomainReading>> {
        let mon = self.dir.join("mon_data");
        let entries = match std::fs::read_dir(&mon) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_error(&mon, e)),
        };
        let mut readings = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(domain) = name.strip_prefix("mon_L3_").and_then(|d| d.parse().ok()) else {
                continue;
            };
            let counter = |file: &str| {
                std::fs::read_to_string(entry.path().join(file))
                    .ok()
                    .and_then(|t| t.trim().parse().ok())
            };
            readings.push(DomainReading {
                domain,
                llc_occupancy: counter("llc_occupancy"),
                mbm_total_bytes: counter("mbm_total_bytes"),
                mbm_local_bytes: counter("mbm_local_bytes"),
            });
        }
        readings.sort_by_key(|r| r.domain);
        Ok(readings)
    }

    /// Keeps the group after this value is dropped (it then outlives the
    /// process, e.g. for a long-running task started elsewhere).
    pub fn keep(mut self) {
        self.removed = true;
    }

    /// Removes the group (its tasks and CPUs return to the default group).
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        remove_group_dir(&self.dir)
    }
}

/// `rmdir` of a group. The kernel removes the files of a resctrl group
/// with the directory; a fake tree's files are removed first.
fn remove_group_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
            std::fs::remove_dir_all(dir).map_err(|e| io_error(dir, e))
        }
        Err(e) => Err(io_error(dir, e)),
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.removed {
            let _ = remove_group_dir(&self.dir);
        }
    }
}

/// The capacity bit mask of a set of the plan's cache partitions.
///
/// The `n_p` partitions (numbered 1..=N_P, as S(i) in kim2013) split the
/// `l3.cbm_bits` mask bits evenly: partition k gets bits
/// `[floor((k-1)·B/N_P), floor(k·B/N_P))`. The union must have at least
/// `min_cbm_bits` bits and, unless the hardware accepts sparse masks, be
/// contiguous. A request that cannot be met is bad input
/// ([`Error::Input`]) with the field `N_P` or `partitions`, which a front
/// end renames to its options.
pub fn partition_mask(l3: &L3Allocation, n_p: u32, partitions: &[u32]) -> Result<u64> {
    let bits = l3.cbm_bits;
    let refused = |field: &str, expected: String, found: String| {
        Error::Input(InputError::new("", field, expected, found))
    };
    if n_p == 0 || n_p > bits {
        return Err(refused(
            "N_P",
            format!(
                "1..={bits} cache partitions, the bits of the L3 capacity mask (plan with at most \
                 {bits} partitions on this machine)"
            ),
            n_p.to_string(),
        ));
    }
    if partitions.is_empty() {
        return Err(refused(
            "partitions",
            "at least one partition".into(),
            "none".into(),
        ));
    }
    let mut mask = 0u64;
    for &k in partitions {
        if k == 0 || k > n_p {
            return Err(refused(
                "partitions",
                format!("partitions 1..={n_p}"),
                k.to_string(),
            ));
        }
        let low = (k - 1) * bits / n_p;
        let high = k * bits / n_p;
        mask |= ((1u64 << (high - low)) - 1) << low;
    }
    if mask.count_ones() < l3.min_cbm_bits {
        return Err(refused(
            "partitions",
            format!(
                "a mask of at least {} (min_cbm_bits) bits, as the hardware needs: give the task \
                 more partitions",
                l3.min_cbm_bits
            ),
            format!(
                "{partitions:?}, mask {mask:#x} with {} bits",
                mask.count_ones()
            ),
        ));
    }
    let contiguous = (mask >> mask.trailing_zeros()).count_ones()
        == 64 - (mask >> mask.trailing_zeros()).leading_zeros();
    if !contiguous && !l3.sparse_masks {
        return Err(refused(
            "partitions",
            "consecutive partitions: this CPU does not accept a non-contiguous mask \
             (info/L3/sparse_masks is not 1)"
                .into(),
            format!("{partitions:?}, the non-contiguous mask {mask:#x}"),
        ));
    }
    Ok(mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l3(bits: u32, min: u32, sparse: bool) -> L3Allocation {
        L3Allocation {
            cbm_bits: bits,
            min_cbm_bits: min,
            num_closids: 16,
            sparse_masks: sparse,
            domains: vec![0],
        }
    }

    #[test]
    fn partitions_split_the_mask_evenly() {
        let cat = l3(16, 1, false);
        assert_eq!(partition_mask(&cat, 4, &[1]).unwrap(), 0x000f);
        assert_eq!(partition_mask(&cat, 4, &[2, 3]).unwrap(), 0x0ff0);
        assert_eq!(partition_mask(&cat, 16, &[16]).unwrap(), 0x8000);
        // 11 bits in 3 partitions: 3, 4, 4 bits, all used.
        let odd = l3(11, 1, false);
        assert_eq!(partition_mask(&odd, 3, &[1]).unwrap(), 0b000_0000_0111);
        assert_eq!(partition_mask(&odd, 3, &[1, 2, 3]).unwrap(), 0x7ff);
    }

    #[test]
    fn impossible_masks_say_why() {
        let cat = l3(16, 2, false);
        let too_many = partition_mask(&cat, 32, &[1]).unwrap_err().to_string();
        assert!(too_many.contains("at most 16 partitions"), "{too_many}");
        let small = partition_mask(&cat, 16, &[3]).unwrap_err().to_string();
        assert!(small.contains("at least 2 (min_cbm_bits)"), "{small}");
        let holes = partition_mask(&cat, 4, &[1, 3]).unwrap_err().to_string();
        assert!(holes.contains("non-contiguous mask 0xf0f"), "{holes}");
        assert_eq!(
            partition_mask(&l3(16, 1, true), 4, &[1, 3]).unwrap(),
            0x0f0f
        );
        let Error::Input(range) = partition_mask(&cat, 4, &[5]).unwrap_err() else {
            panic!("a partition out of range is bad input");
        };
        assert_eq!(
            range,
            InputError::new("", "partitions", "partitions 1..=4", "5")
        );
    }

    #[test]
    fn schemata_lines_and_domains() {
        assert_eq!(schemata_line(&[(0, 0xf), (1, 0xff0)]), "L3:0=f;1=ff0\n");
        assert_eq!(
            l3_domains("    MB:0=100;1=100\n    L3:0=7ff;1=7ff\n").unwrap(),
            vec![0, 1]
        );
        assert!(l3_domains("MB:0=100\n").is_err());
    }
}
