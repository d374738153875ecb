//! The proof that a run's colouring isolates, next to
//! every run that claims isolation.
//!
//! After the run, the frames each task's working set was given (read back
//! through pagemap, [`tinct_rt::memory::Backing::verify`]) go through
//! tinct-sim's model of this machine's last-level cache
//! ([`tinct_sim::isolation::check`]): per task, the cache sets its lines
//! can occupy, and every other task whose lines map to some of them. A line
//! evicts only lines of its own set (kim2013 Section III-C: pages of
//! different colours never share a set), so two tasks whose sets are
//! disjoint cannot evict each other's working sets, whatever they access
//! and whatever the replacement policy. On a virtual machine, where timing
//! cannot show isolation (guest colours are not host colours), this proof
//! from the frames still holds for the modelled cache.
//!
//! Each pair of tasks that share sets is explained against the plan
//! ([`Sharing`]): tasks on one CPU whose partitions the plan shares (never
//! at the same time: the plan pays for it as preemption delay, kim2013
//! Eq. 2), partitions the plan shares between tasks that can run at the
//! same time, a working set without partitions (heap pages of any colour),
//! and — the alarm — tasks whose partitions the plan keeps disjoint.
//!
//! A task's job loop runs on a stack of its own colours
//! ([`tinct_rt::memory::TASK_STACK_BYTES`]), whose frames count with its
//! working set's. Everything else the run's threads can touch — code,
//! libraries, the heap, thread stacks, tinct's bookkeeping — is the
//! residue: the process's resident pages outside the placed memory
//! ([`tinct_sys::footprint`]), read when every task's jobs had ended. It is
//! uncoloured and touched from every CPU (by the task threads and by
//! tinct's own), so wherever its sets meet a task's, another core can
//! evict that task's partition, which kim2013 Eq. 2 assumes cannot happen:
//! the verdict is then [`IsolationStatus::IsolatedExcept`], with the
//! residue's size and sets, never ISOLATED. The kernel's own memory is not
//! covered.

use serde::{Deserialize, Serialize};
use tinct_base::geometry::{CacheGeometry, PageColors};
use tinct_base::units::human_bytes;
use tinct_core::PartitionSet;
use tinct_rt::memory::{ColorLayout, Placement};
use tinct_rt::runtime::TaskRun;
use tinct_rt::spec::RunSpec;
use tinct_sim::isolation::{TaskFrames, check};
use tinct_sys::SysRoot;
use tinct_sys::footprint::Footprint;
use tinct_sys::topology::Topology;

/// This machine's last-level cache as tinct-sim models it: the
/// [`CacheGeometry`] of the part the model indexes, named in words, with
/// the page size frames are numbered in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LlcModel {
    /// In words: `L3 32 MiB 16-way` (and, for a sliced cache, which part is
    /// modelled).
    pub name: String,
    /// The model's geometry.
    pub geometry: CacheGeometry,
    /// The page size frames are numbered in, bytes.
    pub page_size: u64,
}

impl LlcModel {
    /// The model of this machine's last-level cache, from sysfs (ways,
    /// line size), for this process's pages. Its sets are indexed by the
    /// address span of one way as this machine's colour rule derives it
    /// (one slice's way for a sliced cache, `tinct_sys::cache_slices`), or,
    /// where that span is larger than `index_span_bytes` (`2^high bit` of
    /// the colour bits in force, [`ColorLayout::index_span_bytes`]) or
    /// cannot be derived, by the colour bits' span. A span smaller than
    /// the cache's own makes fewer, larger sets: lines that share a
    /// modelled set may not share a real one, so the model can only
    /// overstate sharing, never hide it; and colour bits the cache does
    /// not have (more than the derived span) are caught, since the model
    /// keeps the derived index. Where the index cannot be derived, colour
    /// bits within those safe to assume
    /// ([`tinct_base::geometry::assumed_safe_bits`]) index the model, and bits
    /// beyond them are no model at all: nothing here could tell whether the
    /// cache has them, so the proof says it is not available rather than
    /// proving isolation from the very bits it would check.
    pub fn of_machine(index_span_bytes: u64) -> Result<LlcModel, String> {
        // The cache the colour rule sees (`TINCT_TOPOLOGY_ROOT`, else `/`).
        let topology = Topology::read(&SysRoot::cache_topology()).map_err(|e| e.to_string())?;
        let llc = topology
            .last_level_caches()
            .first()
            .copied()
            .ok_or("sysfs lists no cache")?;
        let ways = llc
            .ways
            .filter(|&w| w > 0)
            .ok_or_else(|| format!("{} reports no associativity", llc.name()))?;
        let line = u64::from(llc.line_bytes.unwrap_or(64));
        let page = rustix::param::page_size() as u64;
        let derived =
            tinct_sys::cache_slices::machine_color_geometry(&SysRoot::cache_topology(), page)
                .ok()
                .filter(|g| g.colors.address_bits.is_some())
                .map(|g| g.colors.way_bytes);
        if derived.is_none() {
            let whole_way = llc.size_bytes / u64::from(ways);
            let safe = tinct_base::geometry::assumed_safe_bits(whole_way, line, page);
            // The span the safe bits index: the way of their colours.
            let safe_span = PageColors::of_bits(&safe, page).map_or(page, |c| c.way_bytes);
            if index_span_bytes > safe_span {
                return Err(format!(
                    "this machine's {} set index cannot be derived, and the colour bits in force \
                     reach above those safe to assume ({}): whether the cache has them cannot be \
                     told here, so isolation is not proven (give bits within them, or check the \
                     bits on bare metal with `tinct doctor --probe-colors --color-bits ...`)",
                    llc.name(),
                    safe.first()
                        .zip(safe.last())
                        .map_or("none".to_string(), |(a, b)| format!("bits {a}-{b}"))
                ));
            }
        }
        let span = derived.map_or(index_span_bytes, |d| d.min(index_span_bytes));
        let modelled = span.saturating_mul(u64::from(ways));
        let geometry =
            CacheGeometry::new(modelled, ways, line).map_err(|e| format!("{}: {e}", llc.name()))?;
        let mut name = format!("{} {} {ways}-way", llc.name(), human_bytes(llc.size_bytes));
        if derived.is_none() {
            name.push_str(&format!(
                ", modelled as {} by the colour bits in force, which lie within those safe to \
                 assume (its own set index cannot be derived here)",
                human_bytes(modelled)
            ));
        } else if modelled < llc.size_bytes {
            name.push_str(&format!(
                ", modelled as {} (one slice, or the colour bits' span: coarser than the cache, \
                 which can only overstate sharing)",
                human_bytes(modelled)
            ));
        }
        Ok(LlcModel {
            name,
            geometry,
            page_size: rustix::param::page_size() as u64,
        })
    }
}

/// The cache model a proof used, as `summary.json` records it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFacts {
    /// The cache in words (`L3 32 MiB 16-way`).
    pub name: String,
    /// Its sets.
    pub sets: u64,
    /// Its page colours for the run's page size.
    pub colors: u64,
    /// The page size the frames were mapped with, bytes.
    pub page_size: u64,
}

/// The verdict of a proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IsolationStatus {
    /// No two tasks that can run at the same time can evict each other's
    /// working sets, every set shared on one CPU is shared by the plan,
    /// and nothing else the run's threads touch can occupy the sets of a
    /// task's partitions.
    Isolated,
    /// The working sets (and stacks) are isolated as for
    /// [`IsolationStatus::Isolated`], but what the run's threads touch
    /// outside them ([`RunIsolation::residue`]) can occupy sets of the
    /// tasks' partitions, or was not read: another core can evict lines
    /// of a partition through it.
    IsolatedExcept,
    /// Some pair of tasks can evict each other other than as planned on
    /// one CPU ([`RunIsolation::pairs`] names them).
    NotIsolated,
    /// The proof could not be made ([`RunIsolation::reason`] says why).
    Unavailable,
    /// No task's working set has partitions: the run claims no isolation.
    NotClaimed,
}

/// Why two tasks' working sets share cache sets, against the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Sharing {
    /// Both pinned to one CPU, and the plan gives them these partitions in
    /// common: they never run at the same time, and the analysis pays for
    /// the sharing as preemption delay (kim2013 Eq. 2).
    PlannedOnOneCpu {
        /// The partitions both have.
        partitions: Vec<u32>,
    },
    /// The plan gives these partitions to both although they can run at
    /// the same time (on different CPUs).
    PlannedAcrossCpus {
        /// The partitions both have.
        partitions: Vec<u32>,
    },
    /// At least one of them has no partitions: its working set came from
    /// the heap, in pages of any colour.
    Uncolored,
    /// The plan keeps their partitions disjoint, yet their pages share
    /// sets: the colouring does not isolate.
    DisjointInPlan,
}

impl Sharing {
    /// Whether this sharing breaks the isolation the run claims (anything
    /// but sharing the plan made on one CPU).
    pub fn breaks_isolation(&self) -> bool {
        !matches!(self, Sharing::PlannedOnOneCpu { .. })
    }

    /// In a few words.
    pub fn describe(&self) -> String {
        match self {
            Sharing::PlannedOnOneCpu { partitions } => format!(
                "same CPU, partitions {} shared by the plan",
                partition_set(partitions)
            ),
            Sharing::PlannedAcrossCpus { partitions } => format!(
                "can run at the same time, partitions {} shared by the plan",
                partition_set(partitions)
            ),
            Sharing::Uncolored => "an uncoloured (heap) working set".into(),
            Sharing::DisjointInPlan => "DISJOINT partitions in the plan".into(),
        }
    }
}

/// One task of a pair.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairMember {
    /// The task.
    pub task: String,
    /// The one CPU it is pinned to (`None`: several CPUs or none).
    pub cpu: Option<u32>,
    /// Its partitions S(i) in the plan (empty: none).
    pub partitions: Vec<u32>,
}

/// Two tasks whose working sets share cache sets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvictingPair {
    /// The two tasks, in run order.
    pub tasks: [PairMember; 2],
    /// Sets both can occupy.
    pub sets: u64,
    /// Why, against the plan.
    pub sharing: Sharing,
}

impl EvictingPair {
    /// One line: who, where, how many sets, and why.
    pub fn describe(&self) -> String {
        let [a, b] = &self.tasks;
        let alarm = match &self.sharing {
            Sharing::DisjointInPlan => format!(
                "although the plan gives them disjoint partitions {} and {}: the colouring does \
                 not isolate",
                partition_set(&a.partitions),
                partition_set(&b.partitions)
            ),
            other => format!("({})", other.describe()),
        };
        format!(
            "tasks '{}' ({}) and '{}' ({}) can evict each other in {} cache sets {alarm}",
            a.task,
            cpu_words(a.cpu),
            b.task,
            cpu_words(b.cpu),
            self.sets
        )
    }

    /// True for the alarm the run prints loudly: two tasks that can run at
    /// the same time evict each other although the plan says their
    /// partitions are disjoint.
    pub fn is_alarm(&self) -> bool {
        self.sharing == Sharing::DisjointInPlan && !same_cpu(&self.tasks[0], &self.tasks[1])
    }
}

/// Another task that can evict a task's lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evictor {
    /// The other task.
    pub task: String,
    /// Sets both can occupy.
    pub sets: u64,
    /// Why, against the plan.
    pub sharing: Sharing,
}

/// One task's part of the proof (`summary.json`: `tasks[i].isolation`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskIsolation {
    /// Distinct frames of its working set and its stack.
    pub pages: u64,
    /// The model's colours of those frames, as ranges (`0-127`).
    pub colors: String,
    /// Cache sets its lines can occupy.
    pub sets: u64,
    /// Sets of the modelled cache.
    pub total_sets: u64,
    /// Every other task whose lines can evict its lines (empty: none).
    pub evicted_by: Vec<Evictor>,
    /// Of its [`TaskIsolation::sets`], those the run's uncoloured residue
    /// ([`RunIsolation::residue`]) can occupy too (`None`: not known).
    pub residue_sets: Option<u64>,
}

impl TaskIsolation {
    /// One line for task `name`: its sets and who can evict it.
    pub fn describe(&self, name: &str) -> String {
        if self.pages == 0 {
            return format!("{name}: no working set");
        }
        let share = 100.0 * self.sets as f64 / self.total_sets.max(1) as f64;
        let others = if self.evicted_by.is_empty() {
            "no other task can evict its lines".to_string()
        } else {
            let list: Vec<String> = self
                .evicted_by
                .iter()
                .map(|e| format!("{} ({} sets, {})", e.task, e.sets, e.sharing.describe()))
                .collect();
            format!("can be evicted by {}", list.join(", "))
        };
        let residue = match self.residue_sets {
            Some(0) => "; the uncoloured residue reaches none of its sets".to_string(),
            Some(n) => format!("; the uncoloured residue can occupy {n} of its sets"),
            None => String::new(),
        };
        format!(
            "{name}: {} pages in colours {}, can occupy {} of {} sets ({share:.1} %); \
             {others}{residue}",
            self.pages, self.colors, self.sets, self.total_sets
        )
    }
}

/// Resident bytes of one kind of memory in the residue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidueKind {
    /// What it is (`code`, `file data`, ...).
    pub kind: String,
    /// Its resident bytes.
    pub bytes: u64,
}

/// What the run's threads can touch outside the memory placed for the
/// tasks: uncoloured, and touched from every CPU (`summary.json`:
/// `isolation.residue`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residue {
    /// Its resident bytes (`None`: not read).
    pub bytes: Option<u64>,
    /// The bytes by kind.
    pub kinds: Vec<ResidueKind>,
    /// The model's colours of its frames, as ranges.
    pub colors: String,
    /// Cache sets its lines can occupy.
    pub sets: u64,
    /// Sets of the tasks' partitions (the coloured tasks' sets, together)
    /// it can occupy.
    pub sets_in_partitions: u64,
    /// What was not read, and why (the run's own pages; a program body's
    /// process, of which only the shim's heap is known).
    pub unread: Vec<String>,
}

impl Residue {
    /// In words: its size by kind and the sets it reaches, or what was not
    /// read.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(bytes) = self.bytes {
            let kinds: Vec<String> = self
                .kinds
                .iter()
                .map(|k| format!("{} {}", k.kind, human_bytes(k.bytes)))
                .collect();
            parts.push(format!(
                "{} the run's threads touch uncoloured ({}) can occupy {} sets, {} of them \
                 sets of the tasks' partitions",
                human_bytes(bytes),
                kinds.join(", "),
                self.sets,
                self.sets_in_partitions
            ));
        }
        parts.extend(self.unread.iter().cloned());
        parts.join("; ")
    }
}

/// The run's proof (`summary.json`: `isolation`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunIsolation {
    /// The verdict.
    pub status: IsolationStatus,
    /// Why the proof is unavailable or not claimed.
    pub reason: Option<String>,
    /// The cache model the frames went through.
    pub model: Option<ModelFacts>,
    /// The colour rule the run's pool used (as `tinct doctor` words it).
    pub color_rule: Option<String>,
    /// Every pair of tasks whose working sets share cache sets.
    pub pairs: Vec<EvictingPair>,
    /// What the run's threads touch outside the placed memory (`None`: the
    /// proof was not made).
    pub residue: Option<Residue>,
}

impl RunIsolation {
    /// A proof that was not made (a summary made outside
    /// [`crate::run_in_dir`], or a run directory of an older tinct).
    pub fn not_checked() -> RunIsolation {
        RunIsolation::unavailable("not checked: the summary was made without the run's frames")
    }

    fn unavailable(reason: impl Into<String>) -> RunIsolation {
        RunIsolation {
            status: IsolationStatus::Unavailable,
            reason: Some(reason.into()),
            model: None,
            color_rule: None,
            pairs: Vec::new(),
            residue: None,
        }
    }

    /// The verdict in one line.
    pub fn headline(&self) -> String {
        let reason = self.reason.as_deref().unwrap_or("");
        match self.status {
            IsolationStatus::Isolated => {
                let planned = self.pairs.len();
                let mut line = "ISOLATED: no two tasks that can run at the same time can evict \
                                each other's working sets"
                    .to_string();
                if planned > 0 {
                    line.push_str(&format!(
                        "; {planned} pair(s) on one CPU share sets as the plan shares their \
                         partitions (preemption delay, kim2013 Eq. 2)"
                    ));
                }
                line
            }
            IsolationStatus::IsolatedExcept => format!(
                "ISOLATED EXCEPT: no two tasks that can run at the same time can evict each \
                 other's working sets and stacks, but {}",
                self.residue
                    .as_ref()
                    .map(Residue::describe)
                    .unwrap_or_default()
            ),
            IsolationStatus::NotIsolated => format!(
                "NOT ISOLATED: {} pair(s) of tasks can evict each other's working sets",
                self.pairs
                    .iter()
                    .filter(|p| p.sharing.breaks_isolation())
                    .count()
            ),
            IsolationStatus::Unavailable => format!("proof not available: {reason}"),
            IsolationStatus::NotClaimed => format!("not claimed: {reason}"),
        }
    }

    /// The model and the colour rule in one line, when the proof was made.
    pub fn model_line(&self) -> Option<String> {
        let m = self.model.as_ref()?;
        let mut line = format!(
            "tinct-sim model of the {}: {} sets, {} colours of {} B pages",
            m.name, m.sets, m.colors, m.page_size
        );
        if let Some(rule) = &self.color_rule {
            line.push_str(&format!("; colour rule of the run: {rule}"));
        }
        Some(line)
    }

    /// What the analysis' bounds do not cover, when the residue reaches
    /// the partitions (or was not read): kim2013 Eq. 2 charges a task's
    /// own core only.
    pub fn analysis_note(&self) -> Option<String> {
        (self.status == IsolationStatus::IsolatedExcept).then(|| {
            "the analysis (kim2013 Eq. 1-3) assumes no other core evicts a task's partitions; \
             the residue above can, so the bounds do not cover its evictions (colour it, or \
             measure C^p with it present)"
                .to_string()
        })
    }

    /// The loud lines: two tasks that can run at the same time evict each
    /// other although the plan says their partitions are disjoint.
    pub fn alarms(&self) -> Vec<String> {
        self.pairs
            .iter()
            .filter(|p| p.is_alarm())
            .map(EvictingPair::describe)
            .collect()
    }
}

/// What the proof needs of one task.
#[derive(Clone, Debug)]
pub struct TaskMemory<'a> {
    /// The task's name.
    pub name: &'a str,
    /// The one CPU it is pinned to (`None`: several CPUs or none).
    pub cpu: Option<u32>,
    /// Its partitions S(i) in the plan.
    pub partitions: &'a [u32],
    /// Where its working set lived, with the frames read after the run.
    pub placement: &'a Placement,
    /// Its body is a program: a process of its own, whose memory beyond
    /// the shim's coloured heap is not read.
    pub program: bool,
}

impl<'a> TaskMemory<'a> {
    /// The task of a run.
    pub fn of(task: &'a TaskRun) -> TaskMemory<'a> {
        let spec = &task.spec;
        let only = |cpus: &Option<Vec<u32>>| match cpus.as_deref() {
            Some([cpu]) => Some(*cpu),
            _ => None,
        };
        let cpu = only(&spec.cpus).filter(|&cpu| {
            spec.phases
                .iter()
                .all(|p| p.cpus.is_none() || only(&p.cpus) == Some(cpu))
        });
        TaskMemory {
            name: &spec.name,
            cpu,
            partitions: &spec.partitions,
            placement: &task.placement,
            program: spec.program.is_some(),
        }
    }
}

/// A proof: the run's part and each task's (in run order; `None` when the
/// proof is unavailable or not claimed); a run's summary takes it with
/// [`crate::output::Summary::attach_isolation`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proof {
    /// The run's part.
    pub run: RunIsolation,
    /// Each task's part.
    pub tasks: Vec<Option<TaskIsolation>>,
}

impl Proof {
    fn without(tasks: usize, run: RunIsolation) -> Proof {
        Proof {
            run,
            tasks: vec![None; tasks],
        }
    }
}

/// The proof of a run of `spec` whose tasks ended as `tasks`, with the
/// run's footprint outside their placed memory (or why it was not read):
/// this machine's last-level cache model, the colour rule of `spec`, and
/// [`prove_with`].
pub fn prove(spec: &RunSpec, tasks: &[TaskRun], footprint: Result<&Footprint, String>) -> Proof {
    let memories: Vec<TaskMemory<'_>> = tasks.iter().map(TaskMemory::of).collect();
    if !claims_isolation(&memories) {
        return prove_with(&memories, Err(String::new()), None, footprint);
    }
    if let Some(program) = tasks
        .iter()
        .find(|t| t.spec.program.is_some() && matches!(t.placement, Placement::None))
    {
        // No partitions: its pages can be of any colour, so no working
        // set is safe from it.
        return Proof::without(
            tasks.len(),
            RunIsolation::unavailable(format!(
                "task '{}' runs a program without partitions, whose memory is not coloured: \
                 its pages can be of any colour, so it can evict every coloured working set",
                program.spec.name
            )),
        );
    }
    let layout =
        ColorLayout::of_spec(spec).map_err(|e| format!("this run's page colours are unknown: {e}"));
    let model = layout.as_ref().map_err(Clone::clone).and_then(|layout| {
        LlcModel::of_machine(layout.index_span_bytes)
            .map_err(|e| format!("this machine's last-level cache cannot be modelled: {e}"))
    });
    let rule = layout.ok().map(|layout| layout.rule);
    prove_with(
        &memories,
        model.as_ref().map_err(Clone::clone),
        rule,
        footprint,
    )
}

fn claims_isolation(tasks: &[TaskMemory<'_>]) -> bool {
    tasks.iter().any(|t| {
        matches!(
            t.placement,
            Placement::Colored { .. } | Placement::Uncolored { .. }
        )
    })
}

/// The proof for `tasks` through `model` (or why there is no model), with
/// the run's colour rule in words and the run's footprint outside the
/// tasks' placed memory (the residue; or why it was not read). Pure: the
/// tests feed it synthetic frames.
pub fn prove_with(
    tasks: &[TaskMemory<'_>],
    model: Result<&LlcModel, String>,
    color_rule: Option<String>,
    footprint: Result<&Footprint, String>,
) -> Proof {
    if !claims_isolation(tasks) {
        return Proof::without(
            tasks.len(),
            RunIsolation {
                status: IsolationStatus::NotClaimed,
                ..RunIsolation::unavailable(
                    "no task's working set has cache partitions, so no colouring is claimed",
                )
            },
        );
    }
    if let Some((task, reason)) = tasks.iter().find_map(|t| match t.placement {
        Placement::Uncolored { reason, .. } => Some((t.name, reason)),
        _ => None,
    }) {
        return Proof::without(
            tasks.len(),
            RunIsolation::unavailable(format!(
                "the working sets were not coloured ({reason}), so neither the placement of \
                 '{task}' nor any other is known"
            )),
        );
    }
    if let Some(task) = tasks.iter().find(|t| frames_unknown(t.placement)) {
        return Proof::without(
            tasks.len(),
            RunIsolation::unavailable(format!(
                "the frames of task '{}''s working set could not be read through pagemap",
                task.name
            )),
        );
    }
    let model = match model {
        Ok(model) => model,
        Err(reason) => return Proof::without(tasks.len(), RunIsolation::unavailable(reason)),
    };
    let page_size = model.page_size;
    let mut frames: Vec<TaskFrames> = tasks
        .iter()
        .map(|t| TaskFrames::new(t.name, t.placement.placed_frames().collect()))
        .collect();
    // The residue, last: an evictor of every task whose sets it meets.
    let residue_index = tasks.len();
    if let Ok(footprint) = &footprint {
        frames.push(TaskFrames::new(
            "the uncoloured residue",
            footprint.frames().collect(),
        ));
    }
    let report = match check(&model.geometry, page_size, &frames) {
        Ok(report) => report,
        Err(e) => {
            return Proof::without(
                tasks.len(),
                RunIsolation::unavailable(format!("the cache model refused the frames: {e}")),
            );
        }
    };
    let mut pairs = Vec::new();
    let mut per_task = Vec::with_capacity(tasks.len());
    for (index, (task, isolation)) in tasks.iter().zip(&report.tasks).enumerate() {
        let residue_sets = footprint.is_ok().then(|| {
            isolation
                .evicted_by
                .iter()
                .find(|shared| shared.index == residue_index)
                .map_or(0, |shared| shared.sets)
        });
        let evicted_by = isolation
            .evicted_by
            .iter()
            .filter(|shared| shared.index != residue_index)
            .map(|shared| {
                let other = shared.index;
                let sharing = sharing(task, &tasks[other]);
                if other > index {
                    pairs.push(EvictingPair {
                        tasks: [member(task), member(&tasks[other])],
                        sets: shared.sets,
                        sharing: sharing.clone(),
                    });
                }
                Evictor {
                    task: shared.task.clone(),
                    sets: shared.sets,
                    sharing,
                }
            })
            .collect();
        let colors: Vec<u32> = isolation
            .colors
            .iter()
            .map(|&c| u32::try_from(c).unwrap_or(u32::MAX))
            .collect();
        per_task.push(Some(TaskIsolation {
            pages: isolation.pages,
            colors: tinct_sys::format_cpu_list(&colors),
            sets: isolation.sets,
            total_sets: report.total_sets,
            evicted_by,
            residue_sets,
        }));
    }
    let residue = residue_of(tasks, &footprint, report.tasks.get(residue_index), model);
    let status = if pairs.iter().any(|p| p.sharing.breaks_isolation()) {
        IsolationStatus::NotIsolated
    } else if residue.bytes.is_none()
        || !residue.unread.is_empty()
        || residue.sets_in_partitions > 0
    {
        IsolationStatus::IsolatedExcept
    } else {
        IsolationStatus::Isolated
    };
    Proof {
        run: RunIsolation {
            status,
            reason: None,
            model: Some(ModelFacts {
                name: model.name.clone(),
                sets: report.total_sets,
                colors: report.colors,
                page_size,
            }),
            color_rule,
            pairs,
            residue: Some(residue),
        },
        tasks: per_task,
    }
}

/// The residue of a proof: the footprint's size by kind, its colours and
/// sets (`modelled`: the cache model's view of its frames), the sets of
/// the coloured tasks' memory, together, that it can occupy too (through
/// `model`), and what was not read.
fn residue_of(
    tasks: &[TaskMemory<'_>],
    footprint: &Result<&Footprint, String>,
    modelled: Option<&tinct_sim::isolation::TaskIsolation>,
    model: &LlcModel,
) -> Residue {
    let mut unread: Vec<String> = tasks
        .iter()
        .filter(|t| t.program && matches!(t.placement, Placement::Colored { .. }))
        .map(|t| {
            format!(
                "task '{}' runs a program, of whose process only the coloured heap is read: \
                 its code, stacks and other memory are uncoloured and not measured",
                t.name
            )
        })
        .collect();
    // The union of the coloured tasks' sets against the residue's.
    let reached = |footprint: &Footprint| {
        let coloured: Vec<u64> = tasks
            .iter()
            .filter(|t| matches!(t.placement, Placement::Colored { .. }))
            .flat_map(|t| t.placement.placed_frames())
            .collect();
        let both = [
            TaskFrames::new("the coloured tasks", coloured),
            TaskFrames::new("the residue", footprint.frames().collect()),
        ];
        check(&model.geometry, model.page_size, &both)
            .map(|r| r.tasks[0].evicted_by.first().map_or(0, |s| s.sets))
            .map_err(|e| format!("the cache model refused the residue's frames: {e}"))
    };
    match footprint {
        Ok(footprint) => Residue {
            bytes: Some(footprint.bytes()),
            kinds: footprint
                .kinds
                .iter()
                .map(|(kind, pages)| ResidueKind {
                    kind: kind.describe().to_string(),
                    bytes: pages.pages * footprint.page_size,
                })
                .collect(),
            colors: modelled.map_or_else(String::new, |m| {
                let colors: Vec<u32> = m
                    .colors
                    .iter()
                    .map(|&c| u32::try_from(c).unwrap_or(u32::MAX))
                    .collect();
                tinct_sys::format_cpu_list(&colors)
            }),
            sets: modelled.map_or(0, |m| m.sets),
            sets_in_partitions: reached(footprint).unwrap_or_else(|why| {
                unread.push(why);
                0
            }),
            unread,
        },
        Err(why) => {
            unread.insert(
                0,
                format!(
                    "what the run's threads touch outside the working sets and stacks (code, \
                     libraries, tinct's bookkeeping) was not read ({why}), so which sets it \
                     can occupy is unknown"
                ),
            );
            Residue {
                unread,
                ..Residue::default()
            }
        }
    }
}

/// A working set or stack whose frames were not read (pagemap refused).
/// A task with partitions and no working set has a coloured stack alone:
/// no working-set frames is then what was placed, not a failed read.
fn frames_unknown(placement: &Placement) -> bool {
    match placement {
        Placement::Heap { bytes, frames } => *bytes > 0 && frames.is_empty(),
        Placement::Colored {
            pages_outside_colors,
            bytes,
            frames,
            stack_bytes,
            stack_frames,
            ..
        } => {
            pages_outside_colors.is_none()
                || (*bytes > 0 && frames.is_empty())
                || (*stack_bytes > 0 && stack_frames.is_empty())
        }
        Placement::None | Placement::Uncolored { .. } => false,
    }
}

fn member(task: &TaskMemory<'_>) -> PairMember {
    PairMember {
        task: task.name.to_string(),
        cpu: task.cpu,
        partitions: task.partitions.to_vec(),
    }
}

fn same_cpu(a: &PairMember, b: &PairMember) -> bool {
    a.cpu.is_some() && a.cpu == b.cpu
}

/// Why `a` and `b`, whose pages share sets, do so against the plan.
fn sharing(a: &TaskMemory<'_>, b: &TaskMemory<'_>) -> Sharing {
    let colored = |t: &TaskMemory<'_>| matches!(t.placement, Placement::Colored { .. });
    if !colored(a) || !colored(b) {
        return Sharing::Uncolored;
    }
    let common: Vec<u32> = a
        .partitions
        .iter()
        .copied()
        .filter(|p| b.partitions.contains(p))
        .collect();
    match (common.is_empty(), a.cpu.is_some() && a.cpu == b.cpu) {
        (true, _) => Sharing::DisjointInPlan,
        (false, true) => Sharing::PlannedOnOneCpu { partitions: common },
        (false, false) => Sharing::PlannedAcrossCpus { partitions: common },
    }
}

fn partition_set(partitions: &[u32]) -> String {
    PartitionSet::from_iter(partitions.iter().copied()).to_string()
}

fn cpu_words(cpu: Option<u32>) -> String {
    cpu.map_or("any CPU".into(), |c| format!("CPU {c}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 MiB, 8 ways, 64 B lines: 2048 sets, 32 colours of 4 KiB pages.
    fn model() -> LlcModel {
        LlcModel {
            name: "L2 1 MiB 8-way".into(),
            geometry: CacheGeometry::new(1 << 20, 8, 64).unwrap(),
            page_size: 4096,
        }
    }

    /// Four frames of each colour in `colors` (frame = group × 32 + colour),
    /// from frame group `first` on.
    fn frames(colors: &[u64], first: u64) -> Vec<u64> {
        (first..first + 4)
            .flat_map(|group| colors.iter().map(move |&c| group * 32 + c))
            .collect()
    }

    /// A footprint of nothing: the residue reaches no set.
    fn no_residue() -> Footprint {
        Footprint {
            page_size: 4096,
            kinds: Vec::new(),
        }
    }

    fn colored(partitions: &[u32], frames: Vec<u64>) -> Placement {
        Placement::Colored {
            bytes: frames.len() as u64 * 4096,
            partitions: partitions.to_vec(),
            colors: String::new(),
            color_count: 0,
            machine_colors: 32,
            pages: frames.len() as u64,
            stack_bytes: 0,
            stack_frames: Vec::new(),
            pages_outside_colors: Some(0),
            frame_drift: None,
            frames,
        }
    }

    fn task<'a>(
        name: &'a str,
        cpu: u32,
        partitions: &'a [u32],
        p: &'a Placement,
    ) -> TaskMemory<'a> {
        TaskMemory {
            name,
            cpu: Some(cpu),
            partitions,
            placement: p,
            program: false,
        }
    }

    #[test]
    fn disjoint_partitions_on_disjoint_colours_are_isolated() {
        let (a, b, c) = (
            colored(&[1], frames(&[0, 1], 0)),
            colored(&[2], frames(&[2, 3], 4)),
            colored(&[1], frames(&[0, 1], 8)),
        );
        let tasks = [
            task("a", 0, &[1], &a),
            task("b", 1, &[2], &b),
            task("c", 0, &[1], &c),
        ];
        let proof = prove_with(&tasks, Ok(&model()), Some("rule".into()), Ok(&no_residue()));
        assert_eq!(proof.run.status, IsolationStatus::Isolated, "{proof:?}");
        // a and c share partition 1 on CPU 0, as planned.
        assert_eq!(proof.run.pairs.len(), 1);
        assert_eq!(
            proof.run.pairs[0].sharing,
            Sharing::PlannedOnOneCpu {
                partitions: vec![1]
            }
        );
        assert!(proof.run.alarms().is_empty());
        let b = proof.tasks[1].as_ref().unwrap();
        assert_eq!((b.pages, b.sets, b.total_sets), (8, 128, 2048));
        assert_eq!(b.colors, "2-3");
        assert!(b.evicted_by.is_empty());
        assert!(
            b.describe("b")
                .contains("no other task can evict its lines")
        );
        assert!(proof.run.headline().starts_with("ISOLATED"));
        assert!(
            proof
                .run
                .model_line()
                .unwrap()
                .contains("2048 sets, 32 colours")
        );
    }

    #[test]
    fn pairs_are_named_and_a_broken_colouring_is_an_alarm() {
        let (a, b, c, h) = (
            colored(&[1], frames(&[0, 1], 0)),
            // Planned disjoint from a, but its pages are of colour 1 too.
            colored(&[2], frames(&[1, 2], 4)),
            // Planned to share partition 1 with a across CPUs.
            colored(&[1, 3], frames(&[0, 5], 8)),
            Placement::Heap {
                bytes: 4096,
                frames: vec![12 * 32 + 9],
            },
        );
        let tasks = [
            task("a", 0, &[1], &a),
            task("b", 1, &[2], &b),
            task("c", 1, &[1, 3], &c),
            task("h", 1, &[], &h),
        ];
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&no_residue()));
        assert_eq!(proof.run.status, IsolationStatus::NotIsolated);
        let named: Vec<(&str, &str, &Sharing)> = proof
            .run
            .pairs
            .iter()
            .map(|p| {
                (
                    p.tasks[0].task.as_str(),
                    p.tasks[1].task.as_str(),
                    &p.sharing,
                )
            })
            .collect();
        assert_eq!(
            named,
            vec![
                ("a", "b", &Sharing::DisjointInPlan),
                (
                    "a",
                    "c",
                    &Sharing::PlannedAcrossCpus {
                        partitions: vec![1]
                    }
                ),
            ]
        );
        let alarms = proof.run.alarms();
        assert_eq!(alarms.len(), 1, "{alarms:?}");
        assert!(
            alarms[0].contains("'a' (CPU 0) and 'b' (CPU 1)")
                && alarms[0].contains("64 cache sets")
                && alarms[0].contains("disjoint partitions {1} and {2}"),
            "{}",
            alarms[0]
        );
        let a = proof.tasks[0].as_ref().unwrap();
        let evictors: Vec<&str> = a.evicted_by.iter().map(|e| e.task.as_str()).collect();
        assert_eq!(evictors, ["b", "c"]);
        assert!(proof.tasks[3].as_ref().unwrap().evicted_by.is_empty());
        assert!(proof.run.headline().starts_with("NOT ISOLATED: 2 pair(s)"));
    }

    #[test]
    fn a_heap_working_set_sharing_sets_is_named_as_uncoloured() {
        let (a, h) = (
            colored(&[1], frames(&[0], 0)),
            Placement::Heap {
                bytes: 4096,
                frames: vec![32 * 7],
            },
        );
        let tasks = [task("a", 0, &[1], &a), task("h", 0, &[], &h)];
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&no_residue()));
        assert_eq!(proof.run.status, IsolationStatus::NotIsolated);
        assert_eq!(proof.run.pairs[0].sharing, Sharing::Uncolored);
        assert!(proof.run.alarms().is_empty(), "same CPU, and not planned");
    }

    #[test]
    fn without_frames_or_a_model_the_proof_says_why() {
        let uncolored = Placement::Uncolored {
            bytes: 4096,
            partitions_requested: vec![1],
            reason: "--uncolored: physical frame numbers are unreadable (PFNs read as 0)".into(),
        };
        let tasks = [task("u", 0, &[1], &uncolored)];
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&no_residue()));
        assert_eq!(proof.run.status, IsolationStatus::Unavailable);
        assert!(
            proof.run.headline().contains("--uncolored") && proof.run.headline().contains("PFNs"),
            "{}",
            proof.run.headline()
        );
        assert_eq!(proof.tasks, vec![None]);

        let unread = Placement::Heap {
            bytes: 4096,
            frames: vec![],
        };
        let a = colored(&[1], frames(&[0], 0));
        let tasks = [task("a", 0, &[1], &a), task("h", 1, &[], &unread)];
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&no_residue()));
        assert!(proof.run.headline().contains("task 'h''s working set"));

        let tasks = [task("a", 0, &[1], &a)];
        let proof = prove_with(&tasks, Err("no cache".into()), None, Ok(&no_residue()));
        assert_eq!(proof.run.reason.as_deref(), Some("no cache"));

        let heap = Placement::Heap {
            bytes: 4096,
            frames: vec![1],
        };
        let proof = prove_with(
            &[task("h", 0, &[], &heap)],
            Ok(&model()),
            None,
            Ok(&no_residue()),
        );
        assert_eq!(proof.run.status, IsolationStatus::NotClaimed);
    }

    #[test]
    fn a_task_on_several_cpus_shares_no_cpu() {
        let a = colored(&[1], frames(&[0], 0));
        let b = colored(&[2], frames(&[0], 4));
        let mut tasks = [task("a", 0, &[1], &a), task("b", 0, &[2], &b)];
        tasks[1].cpu = None;
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&no_residue()));
        assert!(proof.run.pairs[0].is_alarm(), "b may run beside a");
        assert!(proof.run.alarms()[0].contains("'b' (any CPU)"));
    }

    /// A footprint of `frames` of code and `heap` of anonymous memory.
    fn residue(code: Vec<u64>, heap: Vec<u64>) -> Footprint {
        use tinct_sys::footprint::{MappingKind, ResidentPages};
        let kind = |kind, frames: Vec<u64>| {
            (
                kind,
                ResidentPages {
                    pages: frames.len() as u64,
                    frames,
                },
            )
        };
        Footprint {
            page_size: 4096,
            kinds: vec![
                kind(MappingKind::Code, code),
                kind(MappingKind::Anonymous, heap),
            ],
        }
    }

    #[test]
    fn a_residue_in_a_tasks_colours_makes_the_verdict_isolated_except() {
        let (a, b) = (
            colored(&[1], frames(&[0, 1], 0)),
            colored(&[2], frames(&[2, 3], 4)),
        );
        let tasks = [task("a", 0, &[1], &a), task("b", 1, &[2], &b)];
        // One page of code in colour 1 (a's), two of heap in colour 9
        // (nobody's): 64 sets each.
        let footprint = residue(vec![32 * 20 + 1], vec![32 * 21 + 9, 32 * 22 + 9]);
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&footprint));
        assert_eq!(proof.run.status, IsolationStatus::IsolatedExcept);
        let r = proof.run.residue.as_ref().unwrap();
        assert_eq!(r.bytes, Some(3 * 4096));
        assert_eq!((r.sets, r.sets_in_partitions), (128, 64));
        assert_eq!(r.colors, "1,9");
        assert_eq!(
            r.kinds,
            [
                ResidueKind {
                    kind: "code".into(),
                    bytes: 4096
                },
                ResidueKind {
                    kind: "heap, thread stacks and other anonymous memory".into(),
                    bytes: 8192
                }
            ]
        );
        let residue_sets = |i: usize| proof.tasks[i].as_ref().unwrap().residue_sets;
        assert_eq!((residue_sets(0), residue_sets(1)), (Some(64), Some(0)));
        // The residue is no task: no pair, no evictor names it.
        assert!(proof.run.pairs.is_empty(), "{:?}", proof.run.pairs);
        assert!(proof.tasks[0].as_ref().unwrap().evicted_by.is_empty());
        let headline = proof.run.headline();
        assert!(
            headline.starts_with("ISOLATED EXCEPT: ")
                && headline.contains("12 KiB the run's threads touch uncoloured (code 4 KiB")
                && headline.contains("64 of them sets of the tasks' partitions"),
            "{headline}"
        );
        assert!(
            proof
                .run
                .analysis_note()
                .unwrap()
                .contains("kim2013 Eq. 1-3")
        );
        assert!(
            proof.tasks[0]
                .as_ref()
                .unwrap()
                .describe("a")
                .contains("the uncoloured residue can occupy 64 of its sets")
        );
    }

    #[test]
    fn a_residue_outside_every_tasks_colours_leaves_the_run_isolated() {
        let (a, b) = (
            colored(&[1], frames(&[0, 1], 0)),
            colored(&[2], frames(&[2, 3], 4)),
        );
        let tasks = [task("a", 0, &[1], &a), task("b", 1, &[2], &b)];
        let footprint = residue(vec![32 * 20 + 7], vec![32 * 21 + 8]);
        let proof = prove_with(&tasks, Ok(&model()), None, Ok(&footprint));
        assert_eq!(proof.run.status, IsolationStatus::Isolated, "{proof:?}");
        assert_eq!(proof.run.residue.as_ref().unwrap().sets_in_partitions, 0);
        assert!(proof.run.analysis_note().is_none());
    }

    #[test]
    fn an_unread_residue_or_a_programs_process_is_no_isolation() {
        let a = colored(&[1], frames(&[0], 0));
        let tasks = [task("a", 0, &[1], &a)];
        let proof = prove_with(&tasks, Ok(&model()), None, Err("pagemap refused".into()));
        assert_eq!(proof.run.status, IsolationStatus::IsolatedExcept);
        assert_eq!(proof.tasks[0].as_ref().unwrap().residue_sets, None);
        assert!(
            proof
                .run
                .headline()
                .contains("was not read (pagemap refused)"),
            "{}",
            proof.run.headline()
        );

        let mut program = task("p", 0, &[1], &a);
        program.program = true;
        let proof = prove_with(&[program], Ok(&model()), None, Ok(&no_residue()));
        assert_eq!(proof.run.status, IsolationStatus::IsolatedExcept);
        assert!(
            proof.run.headline().contains("task 'p' runs a program"),
            "{}",
            proof.run.headline()
        );
    }
}
