//! Which tasks share cache lines, and how (gracioli Section IV: find the
//! threads that share data, and the addresses, so that a scheduler or a
//! designer can keep them apart).
//!
//! Each task's accesses (address, size, read or write) are replayed line by
//! line: a line touched by two or more tasks is *shared*; it is *true
//! sharing* when a word one task writes is also accessed by another (the
//! coherence protocol must move the data), *false sharing* when the tasks
//! write different words of the line (the line moves although the data
//! need not), and *read-only* when nobody writes it (copies coexist in the
//! S state, no coherence traffic). Only the first two cost what gracioli's
//! benchmark measures. Words are 8 bytes; lines up to 512 bytes.
//!
//! The same analysis serves precise memory samples from the CPU (Intel
//! PEBS load latency with its snoop result, AMD IBS): a sampled load whose
//! snoop hit another core's modified line (HITM) is named even when the
//! writer itself was not sampled ([`from_memory_samples`]).

use crate::SimError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One access of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Access {
    /// Byte address.
    pub address: u64,
    /// Bytes accessed (at least 1).
    pub bytes: u32,
    /// True for a store.
    pub write: bool,
}

impl Access {
    /// A load of `bytes` at `address`.
    pub fn read(address: u64, bytes: u32) -> Access {
        Access {
            address,
            bytes,
            write: false,
        }
    }

    /// A store of `bytes` at `address`.
    pub fn write(address: u64, bytes: u32) -> Access {
        Access {
            address,
            bytes,
            write: true,
        }
    }
}

/// The accesses of one task (for instance one job of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskAccesses {
    /// The task's name.
    pub name: String,
    /// Its accesses, in any order.
    pub accesses: Vec<Access>,
}

/// How a line is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SharingKind {
    /// A word written by one task is accessed by another.
    True,
    /// Tasks write different words of the line.
    False,
    /// Nobody writes the line.
    ReadOnly,
}

/// One task's use of a shared line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineUse {
    /// The task.
    pub task: String,
    /// Loads of the line.
    pub reads: u64,
    /// Stores to the line.
    pub writes: u64,
    /// Bit `w` set: word `w` of the line was read.
    pub words_read: u64,
    /// Bit `w` set: word `w` of the line was written.
    pub words_written: u64,
}

/// A line touched by two or more tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedLine {
    /// Address of the line's first byte.
    pub line: u64,
    /// How it is shared.
    pub kind: SharingKind,
    /// Each task's use of it.
    pub tasks: Vec<LineUse>,
}

/// What two tasks share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharingPair {
    /// One task.
    pub a: String,
    /// The other task.
    pub b: String,
    /// Lines of true sharing between them.
    pub true_sharing: u64,
    /// Lines of false sharing between them.
    pub false_sharing: u64,
    /// Lines both only read.
    pub read_only: u64,
    /// Up to eight of the lines they share with a writer, lowest first.
    pub example_lines: Vec<u64>,
}

impl SharingPair {
    /// True if the pair shares a line somebody writes (coherence traffic).
    pub fn contended(&self) -> bool {
        self.true_sharing + self.false_sharing > 0
    }
}

/// The sharing between a set of tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharingReport {
    /// Line size used.
    pub line_bytes: u64,
    /// Every shared line, by address.
    pub lines: Vec<SharedLine>,
    /// Every pair of tasks that shares at least one line.
    pub pairs: Vec<SharingPair>,
}

impl SharingReport {
    /// The pairs that share a written line.
    pub fn contended_pairs(&self) -> impl Iterator<Item = &SharingPair> {
        self.pairs.iter().filter(|p| p.contended())
    }
}

/// Per line, per task: (reads, writes, words read, words written).
type Uses = BTreeMap<u64, BTreeMap<usize, (u64, u64, u64, u64)>>;

/// Finds every line two or more of `tasks` touch, and how.
pub fn shared_lines(tasks: &[TaskAccesses], line_bytes: u64) -> Result<SharingReport, SimError> {
    if !line_bytes.is_power_of_two() || !(8..=512).contains(&line_bytes) {
        return Err(SimError::invalid(
            "sharing.line_bytes",
            "a power of two from 8 to 512",
            line_bytes,
        ));
    }
    let mut uses: Uses = BTreeMap::new();
    for (t, task) in tasks.iter().enumerate() {
        for access in &task.accesses {
            let bytes = u64::from(access.bytes.max(1));
            let end = access.address.checked_add(bytes - 1).ok_or_else(|| {
                SimError::invalid(
                    "sharing.access",
                    "an access that ends below 2^64",
                    format!("{} bytes at {:#x}", bytes, access.address),
                )
            })?;
            let mut line = access.address & !(line_bytes - 1);
            loop {
                let first = access.address.max(line);
                let last = end.min(line + line_bytes - 1);
                let words = word_mask((first - line) / 8, (last - line) / 8);
                let entry = uses.entry(line).or_default().entry(t).or_default();
                if access.write {
                    entry.1 += 1;
                    entry.3 |= words;
                } else {
                    entry.0 += 1;
                    entry.2 |= words;
                }
                match line.checked_add(line_bytes) {
                    Some(next) if next <= end => line = next,
                    _ => break,
                }
            }
        }
    }
    let mut lines = Vec::new();
    let mut pairs: BTreeMap<(usize, usize), SharingPair> = BTreeMap::new();
    for (line, by_task) in uses {
        if by_task.len() < 2 {
            continue;
        }
        let kind = line_kind(&by_task);
        let ids: Vec<usize> = by_task.keys().copied().collect();
        for (i, &a) in ids.iter().enumerate() {
            for &b in &ids[i + 1..] {
                let pair_kind = line_kind(
                    &by_task
                        .iter()
                        .filter(|(t, _)| **t == a || **t == b)
                        .map(|(t, u)| (*t, *u))
                        .collect(),
                );
                let pair = pairs.entry((a, b)).or_insert_with(|| SharingPair {
                    a: tasks[a].name.clone(),
                    b: tasks[b].name.clone(),
                    true_sharing: 0,
                    false_sharing: 0,
                    read_only: 0,
                    example_lines: Vec::new(),
                });
                match pair_kind {
                    SharingKind::True => pair.true_sharing += 1,
                    SharingKind::False => pair.false_sharing += 1,
                    SharingKind::ReadOnly => pair.read_only += 1,
                }
                if pair_kind != SharingKind::ReadOnly && pair.example_lines.len() < 8 {
                    pair.example_lines.push(line);
                }
            }
        }
        lines.push(SharedLine {
            line,
            kind,
            tasks: by_task
                .into_iter()
                .map(|(t, (reads, writes, words_read, words_written))| LineUse {
                    task: tasks[t].name.clone(),
                    reads,
                    writes,
                    words_read,
                    words_written,
                })
                .collect(),
        });
    }
    Ok(SharingReport {
        line_bytes,
        lines,
        pairs: pairs.into_values().collect(),
    })
}

/// Bits `first..=last` set.
fn word_mask(first: u64, last: u64) -> u64 {
    let width = last - first + 1;
    let ones = if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    ones << first
}

/// True, false or read-only sharing among the uses of one line.
fn line_kind(by_task: &BTreeMap<usize, (u64, u64, u64, u64)>) -> SharingKind {
    let mut written_by_some = false;
    for (t, &(_, _, _, written)) in by_task {
        if written == 0 {
            continue;
        }
        written_by_some = true;
        let others_touch = by_task
            .iter()
            .filter(|(o, _)| *o != t)
            .any(|(_, &(_, _, read, wrote))| (read | wrote) & written != 0);
        if others_touch {
            return SharingKind::True;
        }
    }
    if written_by_some {
        SharingKind::False
    } else {
        SharingKind::ReadOnly
    }
}

/// One sample of a CPU's precise memory sampling.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemorySample {
    /// The thread that made the access (`name [tid]`).
    pub thread: String,
    /// Data address.
    pub address: u64,
    /// True for a store.
    pub store: bool,
    /// True if the load's snoop hit a modified line in another core (HITM).
    pub hitm: bool,
}

/// A line whose sampled loads hit another core's modified copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HitmLine {
    /// Address of the line.
    pub line: u64,
    /// The loading thread.
    pub thread: String,
    /// HITM loads sampled.
    pub samples: u64,
}

/// The sharing found in precise memory samples: the lines shared between
/// sampled threads (as [`shared_lines`]), and every line a thread's loads
/// found modified in another core (HITM), most frequent first.
pub fn from_memory_samples(
    samples: &[MemorySample],
    line_bytes: u64,
) -> Result<(SharingReport, Vec<HitmLine>), SimError> {
    let mut threads: BTreeMap<&str, Vec<Access>> = BTreeMap::new();
    let mut hitm: BTreeMap<(u64, &str), u64> = BTreeMap::new();
    for s in samples {
        let access = Access {
            address: s.address,
            bytes: 8,
            write: s.store,
        };
        threads.entry(&s.thread).or_default().push(access);
        if s.hitm && !s.store {
            *hitm
                .entry((s.address & !(line_bytes - 1), &s.thread))
                .or_default() += 1;
        }
    }
    let tasks: Vec<TaskAccesses> = threads
        .into_iter()
        .map(|(name, accesses)| TaskAccesses {
            name: name.to_string(),
            accesses,
        })
        .collect();
    let report = shared_lines(&tasks, line_bytes)?;
    let mut lines: Vec<HitmLine> = hitm
        .into_iter()
        .map(|((line, thread), samples)| HitmLine {
            line,
            thread: thread.to_string(),
            samples,
        })
        .collect();
    lines.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.line.cmp(&b.line)));
    Ok((report, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, accesses: Vec<Access>) -> TaskAccesses {
        TaskAccesses {
            name: name.into(),
            accesses,
        }
    }

    #[test]
    fn true_false_and_read_only_sharing_are_told_apart() {
        let tasks = vec![
            // a writes word 0 of line 0x1000, reads line 0x2000, writes word 1 of 0x3000.
            task(
                "a",
                vec![
                    Access::write(0x1000, 8),
                    Access::read(0x2000, 8),
                    Access::write(0x3008, 8),
                ],
            ),
            // b reads word 0 of 0x1000 (true), reads 0x2000 (read-only),
            // writes word 2 of 0x3000 (false), and has a private line.
            task(
                "b",
                vec![
                    Access::read(0x1000, 8),
                    Access::read(0x2010, 8),
                    Access::write(0x3010, 8),
                    Access::write(0x9000, 8),
                ],
            ),
        ];
        let r = shared_lines(&tasks, 64).unwrap();
        let kinds: Vec<(u64, SharingKind)> = r.lines.iter().map(|l| (l.line, l.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                (0x1000, SharingKind::True),
                (0x2000, SharingKind::ReadOnly),
                (0x3000, SharingKind::False)
            ]
        );
        assert_eq!(r.pairs.len(), 1);
        let p = &r.pairs[0];
        assert_eq!((p.true_sharing, p.false_sharing, p.read_only), (1, 1, 1));
        assert_eq!(p.example_lines, vec![0x1000, 0x3000]);
        assert!(p.contended());
        let a_on_3000 = &r.lines[2].tasks[0];
        assert_eq!((a_on_3000.words_written, a_on_3000.writes), (0b10, 1));
    }

    #[test]
    fn an_access_across_a_line_boundary_touches_both_lines() {
        let tasks = vec![
            task("a", vec![Access::write(0x103c, 8)]), // bytes 0x103c..=0x1043
            task("b", vec![Access::read(0x1040, 4)]),
        ];
        let r = shared_lines(&tasks, 64).unwrap();
        assert_eq!(r.lines.len(), 1);
        assert_eq!(
            (r.lines[0].line, r.lines[0].kind),
            (0x1040, SharingKind::True)
        );
        assert!(shared_lines(&tasks, 48).is_err());
    }

    #[test]
    fn private_accesses_share_nothing() {
        let tasks: Vec<TaskAccesses> = (0..4u64)
            .map(|t| {
                task(
                    &t.to_string(),
                    (0..100)
                        .map(|i| Access::write((t << 20) | (i * 8), 8))
                        .collect(),
                )
            })
            .collect();
        let r = shared_lines(&tasks, 64).unwrap();
        assert!(r.lines.is_empty() && r.pairs.is_empty());
    }

    #[test]
    fn hitm_samples_name_the_line_even_without_the_writer() {
        let sample = |thread: &str, address, store, hitm| MemorySample {
            thread: thread.into(),
            address,
            store,
            hitm,
        };
        let samples = vec![
            sample("reader [1]", 0x5008, false, true),
            sample("reader [1]", 0x5010, false, true),
            sample("writer [2]", 0x5008, true, false),
            sample("reader [1]", 0x7000, false, true),
        ];
        let (report, hitm) = from_memory_samples(&samples, 64).unwrap();
        assert_eq!(hitm[0].line, 0x5000);
        assert_eq!(hitm[0].samples, 2);
        assert_eq!(hitm[1].line, 0x7000, "writer not sampled, line still named");
        let pair = &report.pairs[0];
        assert_eq!(
            (pair.a.as_str(), pair.b.as_str()),
            ("reader [1]", "writer [2]")
        );
        assert_eq!(pair.true_sharing, 1);
    }
}
