//! resctrl (Intel RDT CAT, AMD L3 QoS), in three parts:
//!
//! - [`detect`]: is it mounted, mountable, advertised by the CPU, and what
//!   `info/` offers ([`ResctrlStatus`], read under a [`crate::SysRoot`]);
//! - [`groups`]: a mounted resctrl ([`Resctrl`]), its lock, control
//!   [`Group`]s with their L3 masks, CPUs, tasks and monitoring counters,
//!   and the plan's partitions → capacity bit mask ([`partition_mask`]);
//! - [`reservation`]: the whole life of one process's reservation (lock,
//!   group, masks on every domain, join), as `tinct exec --l3-partitions`
//!   uses it;
//! - [`fake`]: a fake resctrl mount in a directory, for tests.

pub mod detect;
pub mod fake;
pub mod groups;
pub mod reservation;

pub use detect::{
    BandwidthAllocation, CacheAllocation, Monitoring, RESCTRL_CPU_FLAGS, ResctrlInfo, ResctrlStatus,
};
pub use groups::{
    DEFAULT_MOUNT, DomainReading, Group, L3Allocation, Resctrl, ResctrlLock, partition_mask,
    schemata_line,
};
pub use reservation::{L3Reservation, ReservationError, reserve_l3_for_this_process};
