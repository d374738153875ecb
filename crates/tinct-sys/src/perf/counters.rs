//! Counters of one thread (or of the calling thread and the threads it
//! creates), opened as event groups and read atomically.
//!
//! Events are grouped by the PMU that counts them: the CPU's events
//! (generic hardware, cache and raw) in one group, each other hardware PMU
//! in its own. One `read()` of a group leader with `PERF_FORMAT_GROUP |
//! PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |
//! PERF_FORMAT_TOTAL_TIME_RUNNING` returns every member's value from the
//! same instant with the group's enabled and running times, so ratios such
//! as IPC or a miss ratio compare counts of one interval, and a multiplexed
//! group is scaled as a whole ([`Count::scaled`]).
//!
//! Each software event is a group of its own. They are never multiplexed,
//! a hardware group the PMU cannot schedule cannot take them down with it,
//! and the kernel does not keep mixed software groups straight: on Linux
//! 6.18 a task-clock member under a page-fault leader reads 0, page faults
//! under a task-clock leader read 0, and a disabled group of them reads 0
//! (tests/perf_live.rs keeps the separate groups honest).
//!
//! Reading allocates nothing: each group owns a buffer sized when it was
//! opened, and [`Counters::read_into`] fills a caller's slice, so it may run
//! between the jobs of a real-time task.
//!
//! What is counted: hardware events in user space only (as `perf stat -e
//! cycles:u`, as tinct always did); software events in user and kernel
//! space, because a context switch or a migration happens in the kernel
//! and a user-only count of them is always 0. Where perf_event_paranoid
//! forbids kernel counting (EACCES, not root), software events are
//! reported unavailable with that reason.
//!
//! An event that does not open is kept with the kernel's reason
//! ([`Availability::Unavailable`]) and reads as `None`: never a zero.

use super::count::Count;
use super::events::{
    CounterEvent, PerfEvent, TYPE_HARDWARE, TYPE_HW_CACHE, TYPE_RAW, TYPE_SOFTWARE,
};
use super::reason::{Availability, describe_error};
use crate::error::{Error, Result};
use perf_event::events::Raw;
use perf_event::{Builder, Counter, ReadFormat};
use std::os::fd::AsRawFd;

/// Whose events are counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The calling thread only.
    CallingThread,
    /// Thread (or process) `tid`, from another thread. Needs permission to
    /// trace it (same user with perf_event_paranoid ≤ 2, or root).
    Thread(i32),
    /// The calling thread and every thread and process it creates after
    /// the counters are opened (`inherit`): the totals of a measurement
    /// that spawns its own worker threads.
    CallingThreadAndChildren,
    /// The processes the calling thread starts after the counters are
    /// opened, from their `exec` on, and everything they start in turn
    /// (`inherit` and `enable_on_exec`; the calling thread's own work is
    /// not counted): what `perf stat` counts of a command. Each process
    /// and thread adds its counts when it exits, so they are read once the
    /// command has ended.
    ChildrenFromExec,
}

/// Which group an event belongs to: events of one hardware PMU share a
/// group; each software event is a group of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GroupKey {
    Software(u64),
    Cpu,
    Pmu(u32),
}

impl GroupKey {
    fn of(event: &CounterEvent) -> GroupKey {
        match event.encoding.pmu_type {
            TYPE_SOFTWARE => GroupKey::Software(event.encoding.config),
            TYPE_HARDWARE | TYPE_HW_CACHE | TYPE_RAW => GroupKey::Cpu,
            other => GroupKey::Pmu(other),
        }
    }
}

/// One opened group: its leader, its members and their kernel ids.
struct OpenGroup {
    leader: Counter,
    /// Members after the leader (kept open for as long as the group lives).
    _members: Vec<Counter>,
    /// Kernel id of each event of the group, leader first.
    ids: Vec<u64>,
    /// Index into `Counters::events` of each id.
    events: Vec<usize>,
    /// Read buffer: nr, time_enabled, time_running, (value, id) per member.
    buffer: Vec<u64>,
}

/// Counters of one target, grouped by PMU (see the module documentation).
pub struct Counters {
    events: Vec<CounterEvent>,
    availability: Vec<Availability>,
    groups: Vec<OpenGroup>,
}

impl std::fmt::Debug for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counters")
            .field("events", &self.events)
            .field("availability", &self.availability)
            .finish_non_exhaustive()
    }
}

impl Counters {
    /// Opens `events` for `target`, disabled (see [`Counters::enable`]).
    /// Never fails as a whole: an event that does not open is kept as
    /// unavailable with the kernel's reason.
    pub fn open(events: &[CounterEvent], target: Target) -> Counters {
        let mut availability = vec![Availability::Counting; events.len()];
        let mut groups = Vec::new();
        let mut keys: Vec<GroupKey> = Vec::new();
        for event in events {
            let key = GroupKey::of(event);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        for key in keys {
            let mut leader: Option<Counter> = None;
            let mut members = Vec::new();
            let mut ids = Vec::new();
            let mut indices = Vec::new();
            let order: Vec<usize> = (0..events.len())
                .filter(|&i| GroupKey::of(&events[i]) == key)
                .collect();
            for index in order {
                let event = &events[index];
                match open_one(event, target, leader.as_mut()) {
                    Ok(counter) => {
                        ids.push(counter.id());
                        indices.push(index);
                        match leader {
                            None => leader = Some(counter),
                            Some(_) => members.push(counter),
                        }
                    }
                    Err(why) => availability[index] = Availability::Unavailable(why),
                }
            }
            if let Some(leader) = leader {
                let buffer = vec![0u64; 3 + 2 * ids.len()];
                groups.push(OpenGroup {
                    leader,
                    _members: members,
                    ids,
                    events: indices,
                    buffer,
                });
            }
        }
        Counters {
            events: events.to_vec(),
            availability,
            groups,
        }
    }

    /// The events, in the order they were asked for.
    pub fn events(&self) -> &[CounterEvent] {
        &self.events
    }

    /// Whether each event counts, in the order of [`Counters::events`].
    pub fn availability(&self) -> &[Availability] {
        &self.availability
    }

    /// True if at least one event is counting.
    pub fn any(&self) -> bool {
        !self.groups.is_empty()
    }

    /// The events that do not count, each with the kernel's reason.
    pub fn unavailable(&self) -> Vec<(&CounterEvent, &str)> {
        self.events
            .iter()
            .zip(&self.availability)
            .filter_map(|(event, a)| Some((event, a.reason()?)))
            .collect()
    }

    /// The events that do not count, in one line (`cycles: <reason>; ...`),
    /// or `None` when all count.
    pub fn unavailable_reason(&self) -> Option<String> {
        let missing = self.unavailable();
        (!missing.is_empty()).then(|| {
            missing
                .iter()
                .map(|(event, why)| format!("{}: {why}", event.name))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    /// Starts counting (every group, each at once).
    pub fn enable(&mut self) -> Result<()> {
        for group in &mut self.groups {
            group
                .leader
                .enable_group()
                .map_err(|e| Error::syscall("PERF_EVENT_IOC_ENABLE", e))?;
        }
        Ok(())
    }

    /// Stops counting.
    pub fn disable(&mut self) -> Result<()> {
        for group in &mut self.groups {
            group
                .leader
                .disable_group()
                .map_err(|e| Error::syscall("PERF_EVENT_IOC_DISABLE", e))?;
        }
        Ok(())
    }

    /// Sets every count to zero (the enabled and running times keep going).
    pub fn reset(&mut self) -> Result<()> {
        for group in &mut self.groups {
            group
                .leader
                .reset_group()
                .map_err(|e| Error::syscall("PERF_EVENT_IOC_RESET", e))?;
        }
        Ok(())
    }

    /// Reads every group into `out` (the order of [`Counters::events`];
    /// extra slots are left as they are): each counting event's value with
    /// its group's times, `None` for an unavailable event. One `read()` per
    /// group, no allocation. A group whose read fails leaves its events at
    /// `None`, the others are read, and the first failure is returned.
    pub fn read_into(&mut self, out: &mut [Option<Count>]) -> Result<()> {
        for slot in out.iter_mut().take(self.events.len()) {
            *slot = None;
        }
        // A group that cannot be read leaves its events without a count;
        // the other groups are still read.
        let mut first_error = None;
        for group in &mut self.groups {
            let parsed = read_words(&group.leader, &mut group.buffer).and_then(|words| {
                parse_group(&group.buffer[..words], &group.ids, &group.events, out)
                    .map_err(std::io::Error::other)
            });
            if let Err(e) = parsed {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            None => Ok(()),
            Some(e) => Err(Error::syscall("read(perf event group)", e)),
        }
    }

    /// Reads every group (allocates the result; see [`Counters::read_into`]).
    pub fn read(&mut self) -> Result<Vec<Option<Count>>> {
        let mut out = vec![None; self.events.len()];
        self.read_into(&mut out)?;
        Ok(out)
    }
}

/// The builder of one event for `target`: its encoding, the group read
/// format and the counting scope of the module documentation.
fn builder_for(event: &CounterEvent, target: Target) -> Builder<'static> {
    let encoding = event.encoding;
    let mut builder = Builder::new(
        Raw::new(encoding.config)
            .config1(encoding.config1)
            .config2(encoding.config2),
    );
    builder.attrs_mut().type_ = encoding.pmu_type;
    builder.read_format(
        ReadFormat::GROUP
            | ReadFormat::ID
            | ReadFormat::TOTAL_TIME_ENABLED
            | ReadFormat::TOTAL_TIME_RUNNING,
    );
    match target {
        Target::CallingThread => {}
        Target::Thread(tid) => {
            builder.observe_pid(tid);
        }
        Target::CallingThreadAndChildren => {
            builder.inherit(true);
        }
        Target::ChildrenFromExec => {
            builder.inherit(true).enable_on_exec(true);
        }
    }
    // The CPU's events count user space only; software events and other
    // PMUs (msr, uncore-like) count everything, or they would count nothing.
    // (PMUs such as msr refuse any exclude bit: EINVAL.)
    let user_only = GroupKey::of(event) == GroupKey::Cpu;
    builder.exclude_kernel(user_only).exclude_hv(user_only);
    builder
}

/// Opens `event` on the calling thread alone and closes it again: `Ok`, or
/// the kernel's error (what `tinct doctor` probes).
pub(super) fn try_open(event: &CounterEvent) -> std::io::Result<()> {
    builder_for(event, Target::CallingThread).build().map(drop)
}

/// Opens one event for `target`, as a member of `leader`'s group or as a
/// new group leader. `Err` is the reason it does not count.
fn open_one(
    event: &CounterEvent,
    target: Target,
    leader: Option<&mut Counter>,
) -> std::result::Result<Counter, String> {
    let builder = builder_for(event, target);
    let opened = match leader {
        Some(leader) => builder.build_with_group(leader),
        None => builder.build(),
    };
    opened.map_err(|e| {
        let kernel_side = GroupKey::of(event) != GroupKey::Cpu;
        if e.raw_os_error() == Some(libc::EACCES) && kernel_side {
            let what = if counts_in_kernel_only(event) {
                format!("{} happen in the kernel, and counting", event.name)
            } else {
                "counting".to_string()
            };
            format!(
                "{} ({what} kernel events needs perf_event_paranoid <= 1, CAP_PERFMON or root)",
                describe_error(&e)
            )
        } else {
            describe_error(&e)
        }
    })
}

/// Context switches and migrations: a user-space-only count of them is 0.
fn counts_in_kernel_only(event: &CounterEvent) -> bool {
    event.encoding == PerfEvent::ContextSwitches.encoding()
        || event.encoding == PerfEvent::CpuMigrations.encoding()
}

/// One `read()` of a group leader into `buffer`; the number of words read.
fn read_words(leader: &Counter, buffer: &mut [u64]) -> std::io::Result<usize> {
    let bytes = std::mem::size_of_val(buffer);
    // SAFETY: the descriptor belongs to `leader`, which stays open for the
    // call; `buffer` is writable memory of exactly `bytes` bytes that the
    // kernel fills and does not keep.
    let read = unsafe { libc::read(leader.as_raw_fd(), buffer.as_mut_ptr().cast(), bytes) };
    match read {
        n if n < 0 => Err(std::io::Error::last_os_error()),
        0 => Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the kernel could not schedule the group (it is in an error state)",
        )),
        n => Ok(n as usize / std::mem::size_of::<u64>()),
    }
}

/// Parses one `PERF_FORMAT_GROUP | ID | TOTAL_TIME_ENABLED |
/// TOTAL_TIME_RUNNING` reading: `nr, time_enabled, time_running` then
/// `value, id` per member. The value of the member with kernel id
/// `ids[i]` goes to `out[events[i]]`. A member missing from the reading
/// leaves its slot as it was (no count, never a zero).
pub(super) fn parse_group(
    words: &[u64],
    ids: &[u64],
    events: &[usize],
    out: &mut [Option<Count>],
) -> std::result::Result<(), String> {
    let [nr, enabled, running, rest @ ..] = words else {
        return Err(format!(
            "a group reading of {} words is too short",
            words.len()
        ));
    };
    let nr = usize::try_from(*nr).map_err(|_| "member count beyond usize".to_string())?;
    if rest.len() < nr.saturating_mul(2) {
        return Err(format!(
            "a group reading announces {nr} members but holds {} words of them",
            rest.len()
        ));
    }
    for pair in rest[..2 * nr].chunks_exact(2) {
        let (value, id) = (pair[0], pair[1]);
        if let Some(i) = ids.iter().position(|&known| known == id)
            && let Some(slot) = out.get_mut(events[i])
        {
            *slot = Some(Count {
                value,
                time_enabled_ns: *enabled,
                time_running_ns: *running,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::count::Scaled;

    #[test]
    fn a_group_reading_is_parsed_by_id_with_its_times() {
        // Two members with ids 70 and 71 for events 2 and 0; event 1 was
        // unavailable and is not in the group. Multiplexed 1/4 of the time.
        let words = [2, 4000, 1000, 250, 71, 99, 70];
        let mut out = [None; 3];
        parse_group(&words, &[70, 71], &[2, 0], &mut out).unwrap();
        let zero = out[0].unwrap();
        assert_eq!(zero.value, 250);
        assert_eq!(zero.scaled(), Scaled::Estimated(1000));
        assert_eq!(out[1], None, "not in the reading: no count");
        assert_eq!(out[2].unwrap().value, 99);
        assert_eq!(out[2].unwrap().scaled(), Scaled::Estimated(396));
    }

    #[test]
    fn a_short_or_inconsistent_reading_is_an_error() {
        let mut out = [None; 1];
        assert!(parse_group(&[1, 2], &[5], &[0], &mut out).is_err());
        assert!(parse_group(&[2, 10, 10, 1, 5], &[5], &[0], &mut out).is_err());
        // An unknown id (a member added by someone else) is ignored.
        parse_group(&[1, 10, 10, 7, 99], &[5], &[0], &mut out).unwrap();
        assert_eq!(out[0], None);
    }

    #[test]
    fn events_are_grouped_by_pmu() {
        let sw = CounterEvent::from(PerfEvent::TaskClock);
        let hw = CounterEvent::from(PerfEvent::Cycles);
        let cache = CounterEvent::from(PerfEvent::LlcMisses);
        let msr = CounterEvent::new("msr/tsc/", super::super::Encoding::new(9, 0));
        assert_eq!(GroupKey::of(&sw), GroupKey::Software(1));
        assert_eq!(GroupKey::of(&hw), GroupKey::of(&cache));
        assert_eq!(GroupKey::of(&msr), GroupKey::Pmu(9));
    }
}
