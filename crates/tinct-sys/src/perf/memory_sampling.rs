//! Precise memory sampling: the CPU records, for one memory access in
//! every N, its data address and where the data came from — on Intel the
//! PEBS load-latency facility (`cpu/mem-loads,ldlat=…/`, with `mem-stores`)
//! whose data source says whether the load's snoop hit a line another core
//! had modified (HITM); on AMD the instruction-based sampling op PMU
//! (`ibs_op`). That is the hardware way to find the threads that share
//! data and the addresses (gracioli Section IV; `perf c2c` works this way).
//!
//! [`detect`] says whether the machine under a [`SysRoot`] has either, from
//! sysfs; [`Sampling::open`] opens it on threads of a process and
//! [`Sampling::drain`] collects the samples. Where the CPU has neither (a
//! VM), the reason is given instead — and tinct's own runtime can still be
//! checked by replaying its job streams (tinct-sim's `sharing`).

use super::events::{CounterEvent, Encoding};
use super::pmu::{DEVICES, Pmu};
use super::reason::describe_error;
use crate::error::Result;
use crate::root::SysRoot;
use perf_event::events::Raw;
use perf_event::{Builder, SampleFlag, Sampler};

/// Load-latency threshold (cycles) of the Intel sampler: loads slower
/// than an L1 hit, where cross-core transfers are.
pub const LOAD_LATENCY_CYCLES: u64 = 30;
/// One sample every this many qualifying events.
pub const SAMPLE_PERIOD: u64 = 2000;

/// A precise memory sampling facility of the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case", tag = "kind"))]
pub enum Mechanism {
    /// Intel PEBS load latency (`mem-loads` with `ldlat`) and PEBS stores.
    IntelLoadLatency {
        /// The load event, with its latency threshold.
        loads: CounterEvent,
        /// The store event, where the kernel names one.
        stores: Option<CounterEvent>,
    },
    /// AMD instruction-based sampling of ops.
    AmdIbsOp {
        /// The `ibs_op` event.
        op: CounterEvent,
    },
}

impl Mechanism {
    /// A short name.
    pub fn name(&self) -> &'static str {
        match self {
            Mechanism::IntelLoadLatency { .. } => "Intel PEBS load latency (HITM)",
            Mechanism::AmdIbsOp { .. } => "AMD IBS op sampling",
        }
    }

    fn events(&self) -> Vec<&CounterEvent> {
        match self {
            Mechanism::IntelLoadLatency { loads, stores } => {
                std::iter::once(loads).chain(stores).collect()
            }
            Mechanism::AmdIbsOp { op } => vec![op],
        }
    }
}

/// What the machine under a root offers for precise memory sampling.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Support {
    /// The facility, if sysfs shows one.
    pub mechanism: Option<Mechanism>,
    /// Why there is none, if there is none.
    pub missing: Option<String>,
}

/// Looks for PEBS load latency (`cpu/events/mem-loads` and an `ldlat`
/// format field) or AMD IBS (`ibs_op`) under `root`.
pub fn detect(root: &SysRoot) -> Result<Support> {
    if root.exists(&format!("{DEVICES}/cpu/events/mem-loads")) {
        let cpu = Pmu::read(root, "cpu")?;
        if cpu.has_field("ldlat") {
            let encode = |terms: &str| {
                cpu.encode(terms)
                    .map(|e| CounterEvent::new(format!("cpu/{terms}/"), e))
            };
            let loads = encode(&format!("mem-loads,ldlat={LOAD_LATENCY_CYCLES}"));
            let stores = cpu
                .event_terms("mem-stores")
                .and_then(|_| encode("mem-stores").ok());
            if let Ok(loads) = loads {
                return Ok(Support {
                    mechanism: Some(Mechanism::IntelLoadLatency { loads, stores }),
                    missing: None,
                });
            }
        }
    }
    if root.exists(&format!("{DEVICES}/ibs_op/type")) {
        let ibs = Pmu::read(root, "ibs_op")?;
        // cnt_ctl=1 counts dispatched ops (rather than cycles) between samples.
        let terms = if ibs.has_field("cnt_ctl") {
            "cnt_ctl=1"
        } else {
            ""
        };
        let encoding = if terms.is_empty() {
            Ok(Encoding::new(ibs.pmu_type, 0))
        } else {
            ibs.encode(terms)
        };
        if let Ok(encoding) = encoding {
            return Ok(Support {
                mechanism: Some(Mechanism::AmdIbsOp {
                    op: CounterEvent::new(format!("ibs_op/{terms}/"), encoding),
                }),
                missing: None,
            });
        }
    }
    Ok(Support {
        mechanism: None,
        missing: Some(format!(
            "no precise memory sampling: {} has neither Intel PEBS load latency \
             (cpu/events/mem-loads with an ldlat field) nor AMD IBS (ibs_op)",
            root.path(DEVICES).display()
        )),
    })
}

/// One precise memory sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RawSample {
    /// Thread that made the access.
    pub tid: u32,
    /// Data address.
    pub address: u64,
    /// True for a store.
    pub store: bool,
    /// True if a load's snoop hit a modified line in another core's cache.
    pub hitm: bool,
}

/// Precise memory sampling on a set of threads.
pub struct Sampling {
    samplers: Vec<Sampler>,
}

impl std::fmt::Debug for Sampling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampling")
            .field("samplers", &self.samplers.len())
            .finish()
    }
}

/// Pages of each sampler's ring buffer (a power of two, plus the header page).
const RING_PAGES: usize = 64;

impl Sampling {
    /// Opens `mechanism`'s events on every thread of `tids`, sampling and
    /// enabled. `Err` is the kernel's reason (for the first that fails).
    pub fn open(mechanism: &Mechanism, tids: &[i32]) -> std::result::Result<Sampling, String> {
        let page = rustix::param::page_size();
        let mut samplers = Vec::new();
        for &tid in tids {
            for event in mechanism.events() {
                let e = event.encoding;
                let mut builder =
                    Builder::new(Raw::new(e.config).config1(e.config1).config2(e.config2));
                builder.attrs_mut().type_ = e.pmu_type;
                builder
                    .observe_pid(tid)
                    .sample_period(SAMPLE_PERIOD)
                    .sample(SampleFlag::TID | SampleFlag::ADDR | SampleFlag::DATA_SRC)
                    .enabled(true);
                let counter = builder
                    .build()
                    .map_err(|err| format!("{}: {}", event.name, describe_error(&err)))?;
                let sampler = counter
                    .sampled((RING_PAGES + 1) * page)
                    .map_err(|err| format!("{}: mmap: {}", event.name, describe_error(&err)))?;
                samplers.push(sampler);
            }
        }
        Ok(Sampling { samplers })
    }

    /// Appends every sample waiting in the ring buffers to `out`.
    pub fn drain(&mut self, out: &mut Vec<RawSample>) {
        for sampler in &mut self.samplers {
            while let Some(record) = sampler.next_record() {
                let Ok(perf_event::data::Record::Sample(sample)) = record.parse_record() else {
                    continue;
                };
                let (Some(tid), Some(address)) = (sample.tid(), sample.addr()) else {
                    continue;
                };
                let source = sample.data_src();
                let store =
                    source.is_some_and(|s| s.mem_op().contains(perf_event::data::MemOp::STORE));
                let hitm = source
                    .is_some_and(|s| s.mem_snoop().contains(perf_event::data::MemSnoop::HITM));
                out.push(RawSample {
                    tid,
                    address,
                    store,
                    hitm,
                });
            }
        }
    }
}

/// Tries to open `support`'s facility on the calling thread: `Ok`, or the
/// reason it cannot sample here (sysfs, or the kernel's errno).
pub fn probe(support: &Support) -> std::result::Result<(), String> {
    let Some(mechanism) = &support.mechanism else {
        return Err(support
            .missing
            .clone()
            .unwrap_or_else(|| "no precise memory sampling".into()));
    };
    Sampling::open(mechanism, &[crate::sched::gettid()]).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_facility_the_reason_names_both_kinds() {
        let root = SysRoot::at("/nonexistent");
        let support = detect(&root).unwrap();
        assert_eq!(support.mechanism, None);
        let why = probe(&support).unwrap_err();
        assert!(why.contains("PEBS") && why.contains("IBS"), "{why}");
    }
}
