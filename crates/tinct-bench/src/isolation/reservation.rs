//! How `tinct bench isolation` reserves the cache for its victim: page
//! coloring (kim2013 Section III-C) or hardware cache allocation through
//! resctrl (Intel RDT CAT / AMD L3 QoS), the hardware counterpart that
//! reserves ways instead of sets.
//!
//! With resctrl, the victim thread and the aggressor threads go into two
//! control groups whose L3 capacity masks are disjoint (the victim gets the
//! low bits, the aggressors the rest). The groups are removed when the
//! [`ResctrlReservation`] is dropped, so also when the run fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use tinct_sys::resctrl::{DomainReading, Group, L3Allocation, Resctrl};

use crate::choice::Choice;
use crate::{Error, Result};

/// The `--reservation` choice.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReservationChoice {
    /// Reserve by page coloring.
    Coloring,
    /// Reserve by resctrl L3 cache allocation (fails if not offered).
    Resctrl,
    /// resctrl when mounted and offering L3 allocation, else coloring.
    #[default]
    Auto,
}

impl Choice for ReservationChoice {
    const ALL: &'static [Self] = &[
        ReservationChoice::Coloring,
        ReservationChoice::Resctrl,
        ReservationChoice::Auto,
    ];

    fn doc(self) -> &'static str {
        match self {
            ReservationChoice::Coloring => "Reserve by page coloring",
            ReservationChoice::Resctrl => "Reserve by resctrl L3 cache allocation",
            ReservationChoice::Auto => {
                "resctrl when mounted and offering L3 allocation, else coloring"
            }
        }
    }
}

impl std::str::FromStr for ReservationChoice {
    type Err = String;

    /// The choice called `name`.
    fn from_str(name: &str) -> std::result::Result<Self, String> {
        Self::from_name(name)
            .ok_or_else(|| format!("expected coloring, resctrl or auto, found `{name}`"))
    }
}

/// The mechanism chosen, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mechanism {
    /// Page coloring; the text says why it was chosen.
    Coloring(String),
    /// resctrl at this mount, with this L3 allocation.
    Resctrl(Resctrl, L3Allocation),
}

/// Picks the mechanism for `choice` with resctrl looked for at `root`.
/// `--reservation resctrl` without L3 allocation at `root` is bad input.
pub fn choose(choice: ReservationChoice, root: &Path) -> Result<Mechanism> {
    let resctrl = Resctrl::at(root);
    let offered = resctrl.l3();
    match (choice, offered) {
        (ReservationChoice::Coloring, _) => Ok(Mechanism::Coloring(
            "asked for (--reservation coloring)".into(),
        )),
        (_, Ok(l3)) => Ok(Mechanism::Resctrl(resctrl, l3)),
        (ReservationChoice::Resctrl, Err(e)) => Err(Error::option(
            "--reservation resctrl",
            "a resctrl L3 cache allocation",
            format!("no resctrl L3 cache allocation at {}: {e}", root.display()),
        )),
        (ReservationChoice::Auto, Err(e)) => Ok(Mechanism::Coloring(format!(
            "auto: no resctrl L3 cache allocation at {} ({e})",
            root.display()
        ))),
    }
}

/// Splits the L3 capacity mask into two disjoint contiguous masks: the
/// victim's low bits (`victim_percent` of them, at least `min_cbm_bits`)
/// and the aggressors' remaining high bits (also at least `min_cbm_bits`).
pub fn split_masks(l3: &L3Allocation, victim_percent: u32) -> Result<(u64, u64)> {
    let bits = l3.cbm_bits;
    let min = l3.min_cbm_bits.max(1);
    if bits < 2 * min || bits > 64 {
        return Err(Error::option(
            "--reservation resctrl",
            format!(
                "an L3 capacity mask that splits into two disjoint masks of at least {min} \
                 bits each (min_cbm_bits)"
            ),
            format!("a mask of {bits} bits"),
        ));
    }
    let victim_bits = (bits * victim_percent / 100).clamp(min, bits - min);
    let full = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    let victim = (1u64 << victim_bits) - 1;
    Ok((victim, full & !victim))
}

/// One resctrl group of the run, as recorded in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupRecord {
    /// The group's name (its directory under the mount).
    pub name: String,
    /// Its L3 capacity bit mask (the same on every domain).
    pub mask: String,
    /// The `schemata` line written.
    pub schemata: String,
    /// Thread ids written to the group's `tasks` over the run.
    pub threads: Vec<i32>,
    /// `mon_data` readings at the end of the run (empty if not offered).
    pub monitoring: Vec<DomainReading>,
}

/// What resctrl reserved, as recorded in the JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResctrlRecord {
    /// The resctrl mount.
    pub mount: String,
    /// The L3 allocation offered.
    pub l3: L3Allocation,
    /// The victim's group.
    pub victim: GroupRecord,
    /// The aggressors' group.
    pub aggressors: GroupRecord,
}

/// The two control groups of a resctrl-reserved run; removed when dropped.
#[derive(Debug)]
pub struct ResctrlReservation {
    resctrl: Resctrl,
    l3: L3Allocation,
    victim: Group,
    aggressors: Group,
    victim_mask: u64,
    aggressor_mask: u64,
    victim_threads: Mutex<Vec<i32>>,
    aggressor_threads: Mutex<Vec<i32>>,
}

impl ResctrlReservation {
    /// Creates `tinct-isolation-<pid>-victim` and `-aggressors` with
    /// disjoint masks on every L3 domain, under the resctrl lock.
    pub fn create(resctrl: Resctrl, l3: L3Allocation, victim_percent: u32) -> Result<Self> {
        let (victim_mask, aggressor_mask) = split_masks(&l3, victim_percent)?;
        if l3.num_closids < 3 {
            return Err(Error::option(
                "--reservation resctrl",
                "3 CLOSIDs (num_closids: two groups besides the default one)",
                format!("{} CLOSIDs", l3.num_closids),
            ));
        }
        let _lock = resctrl.lock()?;
        let prefix = format!("tinct-isolation-{}", std::process::id());
        let victim = resctrl.create_group(&format!("{prefix}-victim"))?;
        let aggressors = resctrl.create_group(&format!("{prefix}-aggressors"))?;
        let on_domains = |mask: u64| -> Vec<(u32, u64)> {
            l3.domains.iter().map(|&domain| (domain, mask)).collect()
        };
        victim.set_l3_masks(&on_domains(victim_mask))?;
        aggressors.set_l3_masks(&on_domains(aggressor_mask))?;
        Ok(Self {
            resctrl,
            l3,
            victim,
            aggressors,
            victim_mask,
            aggressor_mask,
            victim_threads: Mutex::default(),
            aggressor_threads: Mutex::default(),
        })
    }

    /// Moves the calling thread into the victim's group.
    pub fn enter_victim(&self) -> Result<()> {
        enter(&self.victim, &self.victim_threads)
    }

    /// Moves the calling thread into the aggressors' group.
    pub fn enter_aggressors(&self) -> Result<()> {
        enter(&self.aggressors, &self.aggressor_threads)
    }

    /// Moves the calling thread back to the default group (the mount's
    /// own `tasks` file), where it competes for the whole cache.
    pub fn enter_default(&self) -> Result<()> {
        let path: PathBuf = self.resctrl.mount().join("tasks");
        let tid = tinct_sys::sched::gettid();
        std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .and_then(|mut file| file.write_all(format!("{tid}\n").as_bytes()))
            .map_err(|e| {
                Error::Measurement(format!(
                    "cannot move thread {tid} to the default resctrl group ({}): {e}{}",
                    path.display(),
                    status_suffix(&self.resctrl.last_command_status())
                ))
            })
    }

    /// Reads the groups' monitoring counters, removes both groups and
    /// returns the record of the run.
    pub fn finish(self) -> Result<ResctrlRecord> {
        let record = |group: &Group, mask: u64, threads: Mutex<Vec<i32>>| -> Result<GroupRecord> {
            Ok(GroupRecord {
                name: group.name().to_string(),
                mask: format!("{mask:#x}"),
                schemata: group.schemata()?.trim().to_string(),
                threads: threads.into_inner().unwrap_or_else(PoisonError::into_inner),
                monitoring: group.read_monitoring()?,
            })
        };
        let victim = record(&self.victim, self.victim_mask, self.victim_threads)?;
        let aggressors = record(
            &self.aggressors,
            self.aggressor_mask,
            self.aggressor_threads,
        )?;
        let _lock = self.resctrl.lock()?;
        self.victim.remove()?;
        self.aggressors.remove()?;
        Ok(ResctrlRecord {
            mount: self.resctrl.mount().display().to_string(),
            l3: self.l3,
            victim,
            aggressors,
        })
    }
}

/// Writes the calling thread's id to `group`'s tasks and notes it.
fn enter(group: &Group, threads: &Mutex<Vec<i32>>) -> Result<()> {
    let tid = tinct_sys::sched::gettid();
    group.assign_tasks(&[tid])?;
    let mut threads = threads.lock().unwrap_or_else(PoisonError::into_inner);
    if !threads.contains(&tid) {
        threads.push(tid);
    }
    Ok(())
}

fn status_suffix(status: &str) -> String {
    if status.is_empty() || status == "ok" {
        String::new()
    } else {
        format!("; the kernel says (info/last_cmd_status): {status}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l3(bits: u32, min: u32) -> L3Allocation {
        L3Allocation {
            cbm_bits: bits,
            min_cbm_bits: min,
            num_closids: 8,
            sparse_masks: false,
            domains: vec![0, 1],
        }
    }

    #[test]
    fn choices_parse_by_name_and_unknown_names_are_refused() {
        for &choice in ReservationChoice::ALL {
            assert_eq!(choice.name().parse::<ReservationChoice>(), Ok(choice));
        }
        assert_eq!(
            "cat".parse::<ReservationChoice>(),
            Err("expected coloring, resctrl or auto, found `cat`".to_string())
        );
    }

    #[test]
    fn masks_are_disjoint_cover_the_cbm_and_respect_min_bits() {
        assert_eq!(split_masks(&l3(8, 1), 50).unwrap(), (0x0f, 0xf0));
        assert_eq!(split_masks(&l3(11, 1), 50).unwrap(), (0x01f, 0x7e0));
        // 1% of 12 bits is 0: raised to min_cbm_bits; 99% leaves min bits.
        assert_eq!(split_masks(&l3(12, 2), 1).unwrap(), (0x003, 0xffc));
        assert_eq!(split_masks(&l3(12, 2), 99).unwrap(), (0x3ff, 0xc00));
        for bits in 2..=20 {
            for percent in [1, 25, 50, 75, 99] {
                let (v, a) = split_masks(&l3(bits, 1), percent).unwrap();
                assert_eq!(v & a, 0);
                assert_eq!(v | a, (1u64 << bits) - 1);
                assert!(v.count_ones() >= 1 && a.count_ones() >= 1);
            }
        }
        assert!(matches!(
            split_masks(&l3(3, 2), 50),
            Err(Error::Input(e)) if e.expected.contains("min_cbm_bits")
        ));
    }

    #[test]
    fn auto_uses_resctrl_only_when_l3_allocation_is_offered() {
        let fake = tempfile::tempdir().unwrap();
        tinct_sys::resctrl::fake::write_tree(fake.path(), 2, 8).unwrap();
        let empty = tempfile::tempdir().unwrap();
        match choose(ReservationChoice::Auto, fake.path()).unwrap() {
            Mechanism::Resctrl(_, l3) => assert_eq!((l3.cbm_bits, l3.domains), (8, vec![0, 1])),
            other => panic!("expected resctrl, found {other:?}"),
        }
        match choose(ReservationChoice::Auto, empty.path()).unwrap() {
            Mechanism::Coloring(why) => assert!(why.contains("no resctrl"), "{why}"),
            other => panic!("expected coloring, found {other:?}"),
        }
        assert!(matches!(
            choose(ReservationChoice::Coloring, fake.path()).unwrap(),
            Mechanism::Coloring(_)
        ));
        let err = choose(ReservationChoice::Resctrl, empty.path()).unwrap_err();
        assert!(
            matches!(&err, Error::Input(e) if e.field == "--reservation resctrl"),
            "{err}"
        );
    }

    #[test]
    fn groups_get_disjoint_schemata_and_threads_and_are_removed() {
        let fake = tempfile::tempdir().unwrap();
        tinct_sys::resctrl::fake::write_tree(fake.path(), 2, 8).unwrap();
        let Mechanism::Resctrl(resctrl, l3) =
            choose(ReservationChoice::Resctrl, fake.path()).unwrap()
        else {
            panic!("expected resctrl");
        };
        let reservation = ResctrlReservation::create(resctrl, l3, 50).unwrap();
        let pid = std::process::id();
        let victim_dir = fake.path().join(format!("tinct-isolation-{pid}-victim"));
        let aggressor_dir = fake
            .path()
            .join(format!("tinct-isolation-{pid}-aggressors"));
        assert_eq!(
            std::fs::read_to_string(victim_dir.join("schemata")).unwrap(),
            "L3:0=f;1=f\n"
        );
        assert_eq!(
            std::fs::read_to_string(aggressor_dir.join("schemata")).unwrap(),
            "L3:0=f0;1=f0\n"
        );
        reservation.enter_victim().unwrap();
        std::thread::scope(|s| {
            s.spawn(|| reservation.enter_aggressors().unwrap());
        });
        reservation.enter_default().unwrap();
        let me = tinct_sys::sched::gettid().to_string();
        let victim_tasks = std::fs::read_to_string(victim_dir.join("tasks")).unwrap();
        assert_eq!(victim_tasks.trim(), me);
        let aggressor_tasks = std::fs::read_to_string(aggressor_dir.join("tasks")).unwrap();
        let aggressor_tid: i32 = aggressor_tasks.trim().parse().unwrap();
        assert_ne!(aggressor_tid.to_string(), me);
        let default_tasks = std::fs::read_to_string(fake.path().join("tasks")).unwrap();
        assert_eq!(default_tasks.trim(), me);
        let domain = victim_dir.join("mon_data/mon_L3_00");
        std::fs::create_dir_all(&domain).unwrap();
        std::fs::write(domain.join("llc_occupancy"), "4096\n").unwrap();
        let record = reservation.finish().unwrap();
        assert_eq!(record.victim.monitoring.len(), 1);
        assert_eq!(record.victim.monitoring[0].llc_occupancy, Some(4096));
        assert_eq!(record.victim.monitoring[0].mbm_total_bytes, None);
        assert!(record.aggressors.monitoring.is_empty());
        assert_eq!(
            (record.victim.mask.as_str(), record.aggressors.mask.as_str()),
            ("0xf", "0xf0")
        );
        assert_eq!(record.victim.threads, [me.parse::<i32>().unwrap()]);
        assert_eq!(record.aggressors.threads, [aggressor_tid]);
        assert!(!victim_dir.exists() && !aggressor_dir.exists());
    }

    #[test]
    fn groups_are_removed_when_dropped() {
        let fake = tempfile::tempdir().unwrap();
        tinct_sys::resctrl::fake::write_tree(fake.path(), 2, 8).unwrap();
        let Mechanism::Resctrl(resctrl, l3) = choose(ReservationChoice::Auto, fake.path()).unwrap()
        else {
            panic!("expected resctrl");
        };
        drop(ResctrlReservation::create(resctrl, l3, 50).unwrap());
        let left: Vec<_> = std::fs::read_dir(fake.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().starts_with("tinct-"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
