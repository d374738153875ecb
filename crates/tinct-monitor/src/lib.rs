//! `tinct monitor`: continuous sampling of a process's counters, thread by
//! thread, at a chosen rate — the miss ratio and IPC where the CPU counts
//! them, and the kernel's context switches, migrations, page faults and
//! CPU time everywhere — timestamped, written as CSV, JSON and an SVG plot
//! in the manner of sebek2002 Fig. 6 (the miss ratio of each task over
//! time), with the measured overhead of the sampling itself.
//!
//! sebek2002 (Section 3.2) samples the PMU from a probe task or an
//! interrupt routine and names the probe's cost; here a sampler thread
//! reads every thread's counter groups (tinct-sys [`Counters`]) at each
//! tick, and [`overhead`] measures what that costs a reference workload,
//! side by side.
//!
//! - [`record`]: attach to a running process or start a command, sample
//!   until it ends, a duration passes or the stop flag is raised (Ctrl-C),
//!   and return everything recorded;
//! - [`sampler`], [`threads`], [`sample`]: the sampling itself;
//! - [`overhead`]: the cost of sampling;
//! - [`output`]: the files;
//! - [`text`]: the summary, the live line and the sharing as people read them;
//! - [`sharing`]: which tasks of a tinct run share cache lines, from their
//!   per-job address streams replayed through tinct-sim (any machine).
//!
//! Its errors are tinct-rt's [`RtError`]; the workloads of the overhead
//! measurement and of the sharing check are tinct-rt's kernels and job log.
#![forbid(unsafe_code)]

pub mod output;
pub mod overhead;
pub mod sample;
pub mod sampler;
pub mod sharing;
pub mod text;
pub mod threads;

use sample::Sample;
use sampler::Sampler;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tinct_base::InputError;
use tinct_rt::{Result, RtError};
use tinct_sim::sharing::MemorySample;
use tinct_sys::perf::memory_sampling::{Mechanism, Sampling};
use tinct_sys::perf::{Availability, CounterEvent, Counters};

pub use overhead::Overhead;
pub use tinct_sys::perf::PerfEvent;

/// The highest sampling rate accepted (one sample every 100 µs).
pub const MAX_RATE_HZ: u32 = 10_000;

/// What to monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Start this command (program and arguments) and monitor it until it exits.
    Command(Vec<String>),
    /// Attach to this running process.
    Pid(i32),
}

/// How to monitor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    /// The process.
    pub target: Target,
    /// One row per thread per sample (else one row summed over the threads).
    pub per_thread: bool,
    /// Samples per second.
    pub rate_hz: u32,
    /// Stop after this long (ns); `None`: until the process ends or Ctrl-C.
    pub duration_ns: Option<u64>,
    /// The events: [`PerfEvent::MONITORING`] and any more asked for.
    pub events: Vec<CounterEvent>,
    /// Precise memory sampling to run on every thread as well (sharing
    /// detection), where the CPU has it.
    pub memory_sampling: Option<Mechanism>,
}

impl Params {
    /// Monitoring `target` at `rate_hz` with the default events.
    pub fn new(target: Target, rate_hz: u32) -> Params {
        Params {
            target,
            per_thread: false,
            rate_hz,
            duration_ns: None,
            events: PerfEvent::MONITORING.iter().map(|&e| e.into()).collect(),
            memory_sampling: None,
        }
    }

    /// Counts these events too, each named as perf names it
    /// (`cache-misses`, `cpu/event=0xd2,umask=0x4/`, `msr/tsc/`, `r412e`)
    /// and read against the PMUs under `root`; the error is the first
    /// name's that is not one.
    pub fn add_events(
        &mut self,
        names: &[String],
        root: &tinct_sys::SysRoot,
    ) -> std::result::Result<(), tinct_base::InputError> {
        for name in names {
            self.events.push(tinct_sys::perf::parse_event(name, root)?);
        }
        Ok(())
    }

    /// Turns on the CPU's precise memory sampling (Intel HITM, AMD IBS;
    /// gracioli Section IV) when the machine under `root` has it and it
    /// opens here; returns why not otherwise, for `sharing.json`.
    pub fn enable_memory_sampling(
        &mut self,
        root: &tinct_sys::SysRoot,
    ) -> tinct_sys::Result<Option<String>> {
        let support = tinct_sys::perf::memory_sampling::detect(root)?;
        Ok(match tinct_sys::perf::memory_sampling::probe(&support) {
            Ok(()) => {
                self.memory_sampling = support.mechanism;
                None
            }
            Err(why) => Some(why),
        })
    }
}

/// Why the recording ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ended {
    /// The monitored command exited.
    CommandExited,
    /// The monitored process exited.
    ProcessExited,
    /// The duration passed.
    Duration,
    /// The stop flag was raised (SIGINT / SIGTERM).
    Interrupted,
}

/// One event of a recording and whether it counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventStatus {
    /// The event's name (the CSV column).
    pub event: String,
    /// Counting, or unavailable with the kernel's reason.
    pub availability: Availability,
}

/// Everything one monitoring run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// The command or `pid N`.
    pub target: String,
    /// The process monitored.
    pub pid: i32,
    /// Rows per thread (true) or summed over the threads (false).
    pub per_thread: bool,
    /// Samples per second asked for.
    pub rate_hz: u32,
    /// Seconds since the Unix epoch when monitoring started.
    pub started_unix_s: u64,
    /// How long it monitored, ns.
    pub duration_ns: u64,
    /// Why it ended.
    pub ended: Ended,
    /// The command's exit code (`None` for a process attached to, or a
    /// command ended by a signal).
    pub exit_code: Option<i32>,
    /// The events, each counting or with the kernel's reason.
    pub events: Vec<EventStatus>,
    /// Threads seen.
    pub threads_seen: usize,
    /// A command's counts over its whole life, one per event (scaled; `None`
    /// where the event does not count): every process and thread it
    /// started included, short-lived ones and those that ended before the
    /// first sample too, as `perf stat` counts them. Processes still
    /// running when it ended are not in them. `None` for a process
    /// attached to (`--pid`) and in a `monitor.json` of an older tinct.
    #[serde(default)]
    pub totals: Option<Vec<Option<u64>>>,
    /// The samples, in time order.
    pub samples: Vec<Sample>,
    /// Precise memory samples, when memory sampling ran (none in a
    /// `monitor.json` of a tinct without memory sampling).
    #[serde(default)]
    pub memory_samples: Vec<MemorySample>,
    /// Why memory sampling asked for did not run on some thread (the
    /// kernel's reason), if so.
    pub memory_sampling_failed: Option<String>,
}

impl Recording {
    /// The event names, in the order of each sample's counts.
    pub fn event_names(&self) -> Vec<String> {
        self.events.iter().map(|e| e.event.clone()).collect()
    }

    /// `cycles: unavailable: ENOENT ...` for each event that does not count.
    pub fn missing(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|e| !e.availability.is_counting())
            .map(|e| format!("{}: {}", e.event, e.availability))
            .collect()
    }
}

/// A bad option of `tinct monitor`.
fn bad(field: &str, expected: &str, found: impl ToString) -> RtError {
    RtError::Input(InputError {
        file: "tinct monitor".into(),
        line: None,
        field: field.into(),
        expected: expected.into(),
        found: found.to_string(),
    })
}

/// Monitors `params.target` until it ends, the duration passes or `stop`
/// is raised, calling `live` with each sample's rows as they come. A run
/// stopped early returns what it recorded.
pub fn record(
    params: &Params,
    stop: &AtomicBool,
    live: &mut dyn FnMut(&[Sample]),
) -> Result<Recording> {
    if params.rate_hz == 0 || params.rate_hz > MAX_RATE_HZ {
        return Err(bad(
            "--rate",
            &format!("1 to {MAX_RATE_HZ} samples per second"),
            params.rate_hz,
        ));
    }
    if params.duration_ns == Some(0) {
        return Err(bad("--duration", "a positive duration", "0"));
    }
    // Opened before the command starts, counting from its exec on (see
    // `Recording::totals`); none for a process attached to.
    let mut lifetime = None;
    let (mut child, pid, target) = match &params.target {
        Target::Command(argv) => {
            lifetime = Some(Counters::open(
                &params.events,
                tinct_sys::perf::Target::ChildrenFromExec,
            ));
            let Some((program, args)) = argv.split_first() else {
                return Err(bad("command", "a program to run after --", "nothing"));
            };
            let child = std::process::Command::new(program)
                .args(args)
                .spawn()
                .map_err(|e| {
                    bad(
                        "command",
                        "a program that can be started",
                        format!("{program}: {e}"),
                    )
                })?;
            let pid = child.id() as i32;
            (Some(child), pid, argv.join(" "))
        }
        Target::Pid(pid) => {
            if !threads::alive(*pid) {
                return Err(bad("--pid", "a running process", pid));
            }
            (None, *pid, format!("pid {pid}"))
        }
    };
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut sampler = Sampler::new(pid, params.per_thread, params.events.clone());
    let mut memory = MemoryWatch::new(params.memory_sampling.clone());
    let start = Instant::now();
    let new = sampler.discover();
    memory.watch(&sampler, new);
    let period = Duration::from_nanos(1_000_000_000 / u64::from(params.rate_hz));
    let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let mut samples = Vec::new();
    let mut exit_code = None;
    let mut last_t = 0u64;
    let mut next = period;
    let ended = loop {
        let stopped = stop.load(Ordering::Relaxed);
        let exited = match child.as_mut() {
            Some(child) => match child.try_wait() {
                Ok(Some(status)) => {
                    exit_code = status.code();
                    Some(Ended::CommandExited)
                }
                _ => None,
            },
            None => (!threads::alive(pid)).then_some(Ended::ProcessExited),
        };
        let elapsed = start.elapsed();
        let over = params.duration_ns.is_some_and(|d| ns(elapsed) >= d);
        if elapsed >= next || stopped || exited.is_some() || over {
            let t = ns(elapsed);
            let rows = sampler.sample(t, t - last_t);
            memory.drain();
            last_t = t;
            live(&rows);
            samples.extend(rows);
            if stopped {
                break Ended::Interrupted;
            }
            if let Some(ended) = exited {
                break ended;
            }
            if over {
                break Ended::Duration;
            }
            let new = sampler.discover();
            memory.watch(&sampler, new);
            next += period;
            if next < elapsed {
                // Behind (a stalled host): the next tick is one period from now.
                next = elapsed + period;
            }
            continue;
        }
        std::thread::sleep((next - elapsed).min(Duration::from_millis(5)));
    };
    if let Some(mut child) = child.take()
        && ended != Ended::CommandExited
    {
        // Our command outlived the monitoring: end it rather than leave it.
        let _ = child.kill();
        if let Ok(status) = child.wait() {
            exit_code = status.code();
        }
    }
    // The command was waited for: every process of it that ended has
    // added its counts.
    let totals = lifetime.map(|mut counters| match counters.read() {
        Ok(counts) => counts
            .into_iter()
            .map(|c| c.and_then(|c| c.scaled().value()))
            .collect(),
        Err(_) => vec![None; params.events.len()],
    });
    let availability = sampler
        .availability()
        .map(<[Availability]>::to_vec)
        .unwrap_or_else(|| {
            // No thread was ever opened (it exited at once): probe on ourselves.
            Counters::open(&params.events, tinct_sys::perf::Target::CallingThread)
                .availability()
                .to_vec()
        });
    Ok(Recording {
        target,
        pid,
        per_thread: params.per_thread,
        rate_hz: params.rate_hz,
        started_unix_s,
        duration_ns: ns(start.elapsed()),
        ended,
        exit_code,
        events: params
            .events
            .iter()
            .zip(availability)
            .map(|(e, availability)| EventStatus {
                event: e.name.clone(),
                availability,
            })
            .collect(),
        threads_seen: sampler.threads_seen(),
        totals,
        samples,
        memory_samples: memory.samples,
        memory_sampling_failed: memory.failed,
    })
}

/// Precise memory sampling on the threads as they are discovered.
struct MemoryWatch {
    mechanism: Option<Mechanism>,
    sampling: Vec<Sampling>,
    raw: Vec<tinct_sys::perf::memory_sampling::RawSample>,
    names: std::collections::BTreeMap<u32, String>,
    samples: Vec<MemorySample>,
    failed: Option<String>,
}

impl MemoryWatch {
    fn new(mechanism: Option<Mechanism>) -> MemoryWatch {
        MemoryWatch {
            mechanism,
            sampling: Vec::new(),
            raw: Vec::new(),
            names: Default::default(),
            samples: Vec::new(),
            failed: None,
        }
    }

    fn watch(&mut self, sampler: &Sampler, tids: Vec<i32>) {
        let Some(mechanism) = &self.mechanism else {
            return;
        };
        for tid in tids {
            self.names
                .insert(tid as u32, format!("{} [{tid}]", sampler.name_of(tid)));
            match Sampling::open(mechanism, &[tid]) {
                Ok(sampling) => self.sampling.push(sampling),
                Err(why) => {
                    self.failed.get_or_insert(why);
                }
            }
        }
    }

    fn drain(&mut self) {
        for sampling in &mut self.sampling {
            sampling.drain(&mut self.raw);
        }
        for raw in self.raw.drain(..) {
            self.samples.push(MemorySample {
                thread: self
                    .names
                    .get(&raw.tid)
                    .cloned()
                    .unwrap_or_else(|| raw.tid.to_string()),
                address: raw.address,
                store: raw.store,
                hitm: raw.hitm,
            });
        }
    }
}

/// Raises the returned flag on SIGINT or SIGTERM (the first Ctrl-C stops
/// monitoring; the files are still written; a second one exits at once):
/// the process's one stop flag, [`tinct_sys::signals::stop_on_signals`].
pub fn stop_on_signals() -> std::sync::Arc<AtomicBool> {
    tinct_sys::signals::stop_on_signals().shared()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(_: &[Sample]) {}

    #[test]
    fn named_events_are_added_and_sampling_absent_from_a_machine_says_why() {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tinct-sys/tests/fixtures");
        let mut params = Params::new(Target::Pid(1), 10);
        let defaults = params.events.len();
        let root = tinct_sys::SysRoot::at(fixtures.join("pmu-intel-icx"));
        params
            .add_events(&["cache-misses".into(), "r412e".into()], &root)
            .unwrap();
        assert_eq!(params.events.len(), defaults + 2);
        let error = params
            .add_events(&["no-such-event".into()], &root)
            .unwrap_err();
        assert_eq!(error.file, "");
        assert_eq!(error.field, "\"no-such-event\"");
        assert!(error.expected.starts_with("a generic event ("), "{error}");
        assert_eq!(params.events.len(), defaults + 2);

        let kvm = tinct_sys::SysRoot::at(fixtures.join("kvm-epyc"));
        let why = params.enable_memory_sampling(&kvm).unwrap();
        assert!(why.is_some_and(|why| !why.is_empty()));
        assert_eq!(params.memory_sampling, None);
    }

    #[test]
    fn a_short_command_is_sampled_until_it_exits() {
        let mut params = Params::new(
            Target::Command(vec!["sh".into(), "-c".into(), "sleep 0.2; exit 3".into()]),
            200,
        );
        params.per_thread = true;
        let stop = AtomicBool::new(false);
        let mut seen = 0;
        let r = record(&params, &stop, &mut |rows| seen += rows.len()).unwrap();
        assert_eq!(r.ended, Ended::CommandExited);
        assert_eq!(r.exit_code, Some(3));
        assert_eq!(seen, r.samples.len());
        assert!(
            r.samples.len() >= 5,
            "{} samples in {} ns",
            r.samples.len(),
            r.duration_ns
        );
        assert!(
            r.samples.windows(2).all(|w| w[0].t_ns <= w[1].t_ns),
            "time order"
        );
        let names = r.event_names();
        for s in &r.samples {
            assert_eq!(s.counts.len(), names.len());
            for (count, status) in s.counts.iter().zip(&r.events) {
                if !status.availability.is_counting() {
                    assert_eq!(*count, None, "{}: no count, never a zero", status.event);
                }
            }
        }
    }

    /// A command too short for any sample, and a grandchild no sample
    /// sees, are in the totals (counted from exec, as `perf stat` does).
    #[test]
    fn the_totals_hold_what_no_sample_saw() {
        if !tinct_sys::testing::privileged_or_skip("software counters of other processes") {
            return;
        }
        let stop = AtomicBool::new(false);
        let index = |r: &Recording, event: PerfEvent| {
            r.events
                .iter()
                .position(|e| e.event == event.name())
                .unwrap()
        };
        // 1 Hz: the command ends long before the first sample is due.
        let script =
            "python3 -c 'b = bytearray(32 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1'; true";
        let params = Params::new(
            Target::Command(vec!["sh".into(), "-c".into(), script.into()]),
            1,
        );
        let r = record(&params, &stop, &mut quiet).unwrap();
        assert_eq!((r.ended, r.exit_code), (Ended::CommandExited, Some(0)));
        let totals = r.totals.as_ref().expect("a command has totals");
        assert_eq!(totals.len(), r.events.len());
        let faults = totals[index(&r, PerfEvent::PageFaults)].expect("page faults count");
        assert!(
            faults >= (32 << 20) / 4096 / 2,
            "the grandchild's 8192 faults: {faults}"
        );
        let clock = totals[index(&r, PerfEvent::TaskClock)].expect("the task clock counts");
        assert!(clock > 0, "{totals:?}");
        for (total, status) in totals.iter().zip(&r.events) {
            if !status.availability.is_counting() {
                assert_eq!(*total, None, "{}: no count, never a zero", status.event);
            }
        }
        // The samples, at 1 Hz, saw at most the end: the totals are more.
        let sampled: u64 = r
            .samples
            .iter()
            .filter_map(|s| s.counts[index(&r, PerfEvent::PageFaults)])
            .sum();
        assert!(sampled <= faults, "{sampled} sampled > {faults} in all");
        // A process attached to has no totals.
        let attached = Params::new(Target::Pid(std::process::id() as i32), 10);
        let r = record(&attached, &AtomicBool::new(true), &mut quiet).unwrap();
        assert_eq!(r.totals, None);
    }

    #[test]
    fn bad_options_are_refused_by_name() {
        let stop = AtomicBool::new(false);
        let cases = [
            (Params::new(Target::Pid(i32::MAX), 100), "--pid"),
            (Params::new(Target::Command(vec![]), 100), "command"),
            (
                Params::new(Target::Command(vec!["/nonexistent/x".into()]), 100),
                "command",
            ),
            (Params::new(Target::Pid(1), 0), "--rate"),
        ];
        for (params, field) in cases {
            let err = record(&params, &stop, &mut quiet).unwrap_err().to_string();
            assert!(err.contains(field) && err.contains("expected"), "{err}");
        }
    }

    #[test]
    fn a_raised_stop_flag_ends_the_recording_and_keeps_what_it_has() {
        let params = Params::new(Target::Command(vec!["sleep".into(), "5".into()]), 100);
        let stop = AtomicBool::new(false);
        let mut calls = 0;
        let r = record(&params, &stop, &mut |_| {
            calls += 1;
            if calls == 3 {
                stop.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
        assert_eq!(r.ended, Ended::Interrupted);
        assert!(r.samples.len() >= 3);
        assert!(
            r.duration_ns < 4_000_000_000,
            "the command was ended, not waited for"
        );
    }
}
