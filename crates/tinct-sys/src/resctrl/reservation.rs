//! One process's L3 reservation through resctrl, from start to end: take
//! the resctrl lock, create the group `tinct-<pid>`, write the mask of the
//! requested partitions on every L3 domain and move this process into the
//! group, so that the program it starts next inherits the reservation
//! (kim2013 Section III-C reserves partitions; CAT reserves ways). The
//! group is removed when the [`L3Reservation`] is removed or dropped.

use std::fmt;

use super::groups::{Group, Resctrl, partition_mask};
use crate::error::Error;

/// A reservation in force: this process belongs to [`L3Reservation::group`].
#[derive(Debug)]
pub struct L3Reservation {
    /// The control group this process joined.
    pub group: Group,
    /// The capacity bit mask written on every domain.
    pub mask: u64,
    /// The partitions reserved (1-based, as S(i) in a plan).
    pub partitions: Vec<u32>,
    /// N_P, the number of partitions the mask bits were split into.
    pub n_p: u32,
    /// The L3 domains (cache instances) the mask was written on.
    pub domains: Vec<u32>,
}

impl L3Reservation {
    /// Removes the group (this process and its children return to the
    /// default group).
    pub fn remove(self) -> crate::Result<()> {
        self.group.remove()
    }
}

impl fmt::Display for L3Reservation {
    /// `L3 mask 0x3c (partitions 2-3 of 4) on domains [0, 1], resctrl group tinct-42`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L3 mask {:#x} (partitions {} of {}) on domains {:?}, resctrl group {}",
            self.mask,
            crate::format_cpu_list(&self.partitions),
            self.n_p,
            self.domains,
            self.group.name()
        )
    }
}

/// Why a reservation could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReservationError {
    /// resctrl is not mounted (or not there at all).
    #[error("{0}")]
    NoResctrl(#[source] Error),
    /// resctrl is there but offers no L3 allocation.
    #[error("this machine offers no L3 allocation: {0}")]
    NoL3Allocation(#[source] Error),
    /// The partitions cannot be expressed as a mask of this machine: bad
    /// input (partition out of range, N_P larger than the mask bits, ...).
    #[error("{0}")]
    Partitions(#[source] Error),
    /// Locking, creating, writing or joining the group failed.
    #[error("{0}")]
    Os(#[source] Error),
}

impl ReservationError {
    /// True if the request itself is wrong (the caller's input), not the machine.
    pub fn is_bad_request(&self) -> bool {
        matches!(self, Self::Partitions(_))
    }
}

/// Reserves cache `partitions` (1-based) of `n_p` (default: one per mask
/// bit) for this process and everything it starts afterwards, on resctrl
/// at `mount` (`None`: where `/proc/mounts` says).
pub fn reserve_l3_for_this_process(
    mount: Option<&std::path::Path>,
    n_p: Option<u32>,
    partitions: &[u32],
) -> Result<L3Reservation, ReservationError> {
    let resctrl = match mount {
        Some(dir) => Resctrl::at(dir),
        None => Resctrl::live().map_err(ReservationError::NoResctrl)?,
    };
    let l3 = resctrl.l3().map_err(ReservationError::NoL3Allocation)?;
    let n_p = n_p.unwrap_or(l3.cbm_bits);
    let mask = partition_mask(&l3, n_p, partitions).map_err(ReservationError::Partitions)?;
    let _lock = resctrl.lock().map_err(ReservationError::Os)?;
    let group = resctrl
        .create_group(&format!("tinct-{}", std::process::id()))
        .map_err(ReservationError::Os)?;
    let masks: Vec<(u32, u64)> = l3.domains.iter().map(|&d| (d, mask)).collect();
    group.set_l3_masks(&masks).map_err(ReservationError::Os)?;
    group
        .assign_tasks(&[std::process::id() as i32])
        .map_err(ReservationError::Os)?;
    Ok(L3Reservation {
        group,
        mask,
        partitions: partitions.to_vec(),
        n_p,
        domains: l3.domains,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_writes_the_mask_joins_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        super::super::fake::write_tree(dir.path(), 2, 8).unwrap();
        let reservation = reserve_l3_for_this_process(Some(dir.path()), Some(4), &[2, 3]).unwrap();
        let group_dir = reservation.group.dir().to_path_buf();
        assert_eq!(
            std::fs::read_to_string(group_dir.join("schemata")).unwrap(),
            "L3:0=3c;1=3c\n"
        );
        assert_eq!(
            std::fs::read_to_string(group_dir.join("tasks")).unwrap(),
            format!("{}\n", std::process::id())
        );
        let text = reservation.to_string();
        assert!(
            text.starts_with("L3 mask 0x3c (partitions 2-3 of 4) on domains [0, 1]"),
            "{text}"
        );
        reservation.remove().unwrap();
        assert!(!group_dir.exists());
    }

    #[test]
    fn errors_say_whose_fault_it_is() {
        let dir = tempfile::tempdir().unwrap();
        super::super::fake::write_tree(dir.path(), 1, 8).unwrap();
        let bad = reserve_l3_for_this_process(Some(dir.path()), Some(4), &[9]).unwrap_err();
        assert!(bad.is_bad_request(), "{bad}");
        assert_eq!(
            bad.to_string(),
            "partitions: expected partitions 1..=4, found 9"
        );
        let empty = tempfile::tempdir().unwrap();
        let none = reserve_l3_for_this_process(Some(empty.path()), None, &[1]).unwrap_err();
        assert!(!none.is_bad_request());
        assert!(
            none.to_string().contains("offers no L3 allocation"),
            "{none}"
        );
    }
}
